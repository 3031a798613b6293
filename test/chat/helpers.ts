// Shared pieces of the chat endpoint tests: a chat handler reached through
// the AI SDK's own client (DefaultChatTransport with a fetch that calls the
// handler), and a model stream that holds mid-way until the test lets it go.
import { Chat } from '@ai-sdk/react'
import { DefaultChatTransport, type ChatInit, type UIMessage } from 'ai'
import type { Agent, SessionEvent, StreamChunk } from '../../src/index.js'
import type { ChatHandler } from '../../src/chat/index.js'

export const API = 'http://chat.test/api/chat'

/** The AI SDK's transport, talking to `handler` in-process (no network). */
export function transportFor(handler: ChatHandler, options: { body?: object } = {}): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport({ api: API, fetch: (input, init) => handler(new Request(input as string, init)), ...options })
}

/** A `useChat` chat (the React package's Chat class, used without rendering) against `handler`. */
export function chatFor(handler: ChatHandler, id: string, init: Partial<ChatInit<UIMessage>> = {}): Chat<UIMessage> {
  return new Chat({ id, transport: transportFor(handler), ...init })
}

/** A gate a held stream waits at. */
export interface Gate {
  readonly open: () => void
  readonly wait: (signal: AbortSignal) => Promise<void>
}

export function gate(): Gate {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return {
    open,
    wait: (signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason)
        signal.addEventListener('abort', () => reject(signal.reason), { once: true })
        void opened.then(resolve)
      }),
  }
}

/** The chunks of `chunks`, holding at `at` (a chunk index) until `held` opens; an abort ends it like a provider's. */
export function heldStream(chunks: readonly StreamChunk[], at: number, held: Gate, signal: AbortSignal): AsyncIterable<StreamChunk> {
  return (async function* () {
    for (let i = 0; i < chunks.length; i++) {
      if (i === at) await held.wait(signal)
      yield chunks[i]
    }
  })()
}

/** Resolves when the agent's log has an event matching `match` (checking what is there first). */
export function logged(agent: Agent, match: (e: SessionEvent) => boolean): Promise<SessionEvent> {
  const found = agent.session.events.find(match)
  if (found) return Promise.resolve(found)
  return new Promise((resolve) => {
    const sub = agent.session.events$.subscribe((e) => {
      if (match(e)) {
        queueMicrotask(() => sub.unsubscribe())
        resolve(e)
      }
    })
  })
}

/** The agent's logged events of one type. */
export const typesOf = (agent: Agent, type: string) => agent.session.events.filter((e) => e.type === type)

/** The text of a UI message's text parts. */
export const textOf = (message: UIMessage | undefined) => (message?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('')

/** Wait until `predicate` holds, checking after each tick. */
export async function until(predicate: () => boolean, what: string, tries = 2000): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (predicate()) return
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  throw new Error(`timed out waiting for ${what}`)
}

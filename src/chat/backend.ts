// What the chat endpoint needs from whoever drives a chat's session: read and
// follow its log, send a message, stop the turn, answer an approval. Two
// implementations: local agents (this process drives the session) and a
// session client (another process does; the log and a mailbox connect them).
import { Observable } from 'rxjs'
import { Agent } from '../agent/agent.js'
import { ConfigError } from '../errors.js'
import type { InboxTarget, SessionEvent, UserMessage } from '../session/schemas.js'
import { ChatError } from './errors.js'

/** The small interface the chat handler runs on; give `agent` or `client` to `createChatHandler` instead, usually. */
export interface ChatBackend {
  /** The chat's log as it stands. */
  read(chatId: string): Promise<readonly SessionEvent[]>
  /** The chat's events from `fromSeq` on: those already logged, then each new one, in seq order. */
  watch(chatId: string, fromSeq: number): Observable<SessionEvent>
  /** Whether a turn runs (or is about to): a message then steers it. */
  running(chatId: string): Promise<boolean>
  send(chatId: string, message: UserMessage, target: InboxTarget): Promise<void>
  /**
   * End the running turn (`aborted{user}`); queued messages are discarded unless `keepInbox`; tool bodies that ignore
   * the abort are abandoned after `graceMs` (their calls close TOOL_OUTCOME_UNKNOWN).
   */
  cancel(chatId: string, options: { keepInbox: boolean; graceMs?: number }): Promise<void>
  approve(chatId: string, callId: string): Promise<void>
  deny(chatId: string, callId: string, reason: string): Promise<void>
}

/** The part of `createSessionClient({ store })` (agentchart/stores) the chat endpoint uses. */
export interface ChatSessionClient {
  send(sessionId: string, message: UserMessage, target: InboxTarget, wakeup: boolean): unknown
  cancel(sessionId: string, cause?: { kind: 'user' }, options?: { keepInbox?: boolean; graceMs?: number }): unknown
  watch(sessionId: string, options?: { fromSeq?: number }): Observable<SessionEvent>
  status(sessionId: string): unknown
  approve?(sessionId: string, callId: string): unknown
  deny?(sessionId: string, callId: string, reason: string): unknown
}

/** The events of a live session from `fromSeq`, each once and in order (an append made while delivering comes after). */
function followSession(agent: Agent, fromSeq: number): Observable<SessionEvent> {
  const session = agent.session
  return new Observable<SessionEvent>((subscriber) => {
    let next = fromSeq
    const catchUp = (upTo: number) => {
      while (next < upTo && !subscriber.closed) {
        const event = session.at(next)
        if (event === undefined) return
        next++
        subscriber.next(event)
      }
    }
    const subscription = session.events$.subscribe((event) => {
      catchUp(event.seq)
      if (event.seq === next) {
        next++
        subscriber.next(event)
      }
    })
    catchUp(session.length)
    return subscription
  })
}

/** Local agents, looked up by chat id once each (the promise is kept; a failed lookup is tried again next time). */
export function agentBackend(lookup: (chatId: string) => Agent | Promise<Agent>): ChatBackend {
  if (typeof lookup !== 'function') throw new ConfigError('agent must be a function of the chat id returning an Agent', { path: 'agent' })
  const agents = new Map<string, Promise<Agent>>()
  const agentOf = (chatId: string): Promise<Agent> => {
    let found = agents.get(chatId)
    if (!found) {
      found = Promise.resolve()
        .then(() => lookup(chatId))
        .then((agent) => {
          if (!(agent instanceof Agent)) throw new ChatError('CHAT_NO_AGENT', `agent(${JSON.stringify(chatId)}) did not return an Agent`)
          return agent
        })
      found.catch(() => agents.delete(chatId))
      agents.set(chatId, found)
    }
    return found
  }
  return {
    read: async (chatId) => (await agentOf(chatId)).session.events,
    watch: (chatId, fromSeq) =>
      new Observable<SessionEvent>((subscriber) => {
        let inner: { unsubscribe(): void } | null = null
        let closed = false
        agentOf(chatId).then(
          (agent) => {
            if (!closed) inner = followSession(agent, fromSeq).subscribe(subscriber)
          },
          (error: unknown) => subscriber.error(error),
        )
        return () => {
          closed = true
          inner?.unsubscribe()
        }
      }),
    running: async (chatId) => (await agentOf(chatId)).status === 'running',
    send: async (chatId, message, target) => (await agentOf(chatId)).send(message, target, true),
    cancel: async (chatId, { keepInbox, graceMs }) =>
      (await agentOf(chatId)).cancel({ kind: 'user' }, { keepInbox, ...(graceMs !== undefined ? { graceMs } : {}) }),
    approve: async (chatId, callId) => (await agentOf(chatId)).approve(callId),
    deny: async (chatId, callId, reason) => (await agentOf(chatId)).deny(callId, reason),
  }
}

/** The committed length a client's `status()` reports. */
function committedLengthOf(status: unknown): number {
  const s = (status ?? {}) as Record<string, unknown>
  const length = s.committedLength ?? s.committed ?? s.length
  if (typeof length !== 'number') throw new ChatError('CHAT_BACKEND', 'the session client status() reported no committed length')
  return length
}

/** A session client: the session may be driven by any process (its worker), the chat endpoint only talks to the store. */
export function clientBackend(client: ChatSessionClient): ChatBackend {
  for (const method of ['send', 'cancel', 'watch', 'status'] as const) {
    if (typeof client?.[method] !== 'function')
      throw new ConfigError(`client must be a session client (createSessionClient): no ${method}()`, { path: 'client' })
  }
  const status = async (chatId: string): Promise<Record<string, unknown>> => ((await client.status(chatId)) ?? {}) as Record<string, unknown>
  return {
    read: async (chatId) => {
      const length = committedLengthOf(await status(chatId))
      if (length === 0) return []
      return new Promise<SessionEvent[]>((resolve, reject) => {
        const events: SessionEvent[] = []
        const subscription = client.watch(chatId, { fromSeq: 0 }).subscribe({
          next: (event) => {
            events.push(event)
            if (events.length >= length) {
              resolve(events)
              queueMicrotask(() => subscription.unsubscribe())
            }
          },
          error: reject,
        })
      })
    },
    watch: (chatId, fromSeq) => client.watch(chatId, { fromSeq }),
    running: async (chatId) => {
      const s = await status(chatId)
      // a turn waiting for a person's answer is still open: a message steers it (or answers it) as over a local agent
      return s.phase === 'running' || s.phase === 'awaiting-approval' || s.status === 'running'
    },
    send: async (chatId, message, target) => {
      await client.send(chatId, message, target, true)
    },
    cancel: async (chatId, { keepInbox, graceMs }) => {
      await client.cancel(chatId, { kind: 'user' }, { keepInbox, ...(graceMs !== undefined ? { graceMs } : {}) })
    },
    approve: async (chatId, callId) => {
      if (typeof client.approve !== 'function') throw new ChatError('CHAT_UNSUPPORTED', 'this session client cannot answer approvals (no approve())')
      await client.approve(chatId, callId)
    },
    deny: async (chatId, callId, reason) => {
      if (typeof client.deny !== 'function') throw new ChatError('CHAT_UNSUPPORTED', 'this session client cannot answer approvals (no deny())')
      await client.deny(chatId, callId, reason)
    },
  }
}

// `agentchart view`: serve the viewer for a stored log (read-only), or, with
// no log, for a paced demo agent running live (a failed request and its retry,
// parallel reads and an exclusive write, a steer, a cancel), so the statechart
// can be watched moving without any model or network.
import { existsSync } from 'node:fs'
import { basename } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod/v4'
import type { Agent } from '../agent/agent.js'
import { createAgent } from '../agent/create.js'
import type { ModelRequest } from '../adapters/types.js'
import { scriptedModel, type ScriptEntry } from '../adapters/scripted.js'
import type { SessionEvent, StreamChunk } from '../session/schemas.js'
import { errorResponse, textResponse, toolCallResponse } from '../testing/responses.js'
import { defineTool } from '../tools/define.js'
import { serveViewer, type ViewerHandle } from '../viewer/server.js'
import { NotAStoreError, openSqliteReader, type SqliteReader } from '../stores/sqlite-reader.js'
import { formatReplay, replayEvents, replayFile, type ReplayResult } from './replay.js'

export interface ViewCommand {
  /** A stored session log (JSON array or JSONL). */
  log?: string
  /** A SQLite store file (sqliteStore); with `session`, which of its sessions (default: the most recently updated). */
  store?: string
  session?: string
  host?: string
  port?: number
}

/** Where the command writes, and the signal that ends it (Ctrl-C by default). */
export interface ViewIO {
  out(text: string): void
  err(text: string): void
  stop: AbortSignal
}

/** Milliseconds between two chunks of the demo's streams: slow enough to watch. */
const CHUNK_MS = 120
const ROUNDS = 20

/** A response streamed at a human pace; stops quietly when the request is aborted. */
function paced(chunks: readonly StreamChunk[], onStart?: () => void): ScriptEntry {
  return (request: ModelRequest) => ({
    async *[Symbol.asyncIterator]() {
      onStart?.()
      for (const chunk of chunks) {
        try {
          await sleep(CHUNK_MS, undefined, { signal: request.signal })
        } catch {
          return
        }
        yield chunk
      }
      // a stream told to wait for its cancel (the demo's long report)
      if (chunks.at(-1)?.type !== 'finish') await new Promise((resolve) => request.signal.addEventListener('abort', resolve, { once: true }))
    },
  })
}

/** The demo agent: its tools take a moment, its model streams slowly, its driver sends the next prompts. */
function demoAgent(stop: AbortSignal): { agent: Agent; run: Promise<void> } {
  const read = defineTool({
    name: 'read',
    description: 'Read a file',
    input: z.object({ path: z.string() }),
    executionMode: 'parallel',
    execute: async ({ path }, { signal }) => {
      await sleep(700 + path.length * 40, undefined, { signal }).catch(() => {})
      return `contents of ${path}`
    },
  })
  const write = defineTool({
    name: 'write',
    description: 'Write a file',
    input: z.object({ path: z.string() }),
    executionMode: 'exclusive',
    execute: async ({ path }, { signal }) => {
      await sleep(1200, undefined, { signal }).catch(() => {})
      return `wrote ${path}`
    },
  })
  let agent: Agent
  const script: ScriptEntry[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    script.push(
      paced(errorResponse({ message: 'the provider is overloaded', code: 'SERVER' })),
      paced(
        toolCallResponse(
          [
            { id: `r${round}a`, name: 'read', arguments: '{"path":"notes/a.md"}' },
            { id: `r${round}b`, name: 'read', arguments: '{"path":"notes/b.md"}' },
            { id: `w${round}`, name: 'write', arguments: '{"path":"notes/merged.md"}' },
          ],
          'I will read both notes, then write the merged file.',
        ),
      ),
      paced(textResponse('Merged notes/a.md and notes/b.md into notes/merged.md.')),
      paced(textResponse('Here is a summary of what changed in the notes today, file by file and line by line.'), () => {
        setTimeout(() => agent.steer('Keep it to one line, please.'), CHUNK_MS * 4).unref()
      }),
      paced(textResponse('One line: the two notes are merged.')),
      paced([
        { type: 'block-start', index: 0, blockType: 'text' },
        ...'Starting a very long report on every note ever written'.split(' ').map((word): StreamChunk => ({ type: 'text-delta', index: 0, text: `${word} ` })),
      ]),
    )
  }
  agent = createAgent({
    model: scriptedModel(script),
    tools: [read, write],
    systemPrompt: 'You keep the notes folder tidy.',
    logger: { error: () => {} },
  })
  agent.on('agent/request-error', async ({ signal }) => {
    await sleep(900, undefined, { signal }).catch(() => {})
    return { kind: 'retry' }
  })
  const pause = (ms: number) => sleep(ms, undefined, { signal: stop }).catch(() => {})
  const run = (async () => {
    for (let round = 1; round <= ROUNDS && !stop.aborted; round++) {
      agent.followup(`Round ${round}: merge the two notes.`)
      await agent.whenIdle()
      await pause(1500)
      if (stop.aborted) break
      agent.followup('Summarise what changed.')
      await agent.whenIdle()
      await pause(1500)
      if (stop.aborted) break
      agent.followup('Now write a long report.')
      await pause(CHUNK_MS * 8)
      agent.cancel({ kind: 'user' })
      await agent.whenIdle()
      await pause(3000)
    }
  })()
  return { agent, run }
}

/**
 * Serve the viewer until `io.stop` aborts: a stored log read-only, or the live demo.
 * Why: `agentchart view --log file.jsonl` is how a finished session is looked at, offline.
 */
export async function runView(command: ViewCommand, io: ViewIO): Promise<number> {
  const options = {
    ...(command.host !== undefined ? { host: command.host } : {}),
    ...(command.port !== undefined ? { port: command.port } : {}),
    print: false as const,
  }
  let viewer: ViewerHandle
  let demo: { agent: Agent; run: Promise<void> } | null = null
  const stored = command.log !== undefined ? await fromLog(command.log) : command.store !== undefined ? fromStore(command.store, command.session, io) : null
  if (stored !== null) {
    if ('exit' in stored) return stored.exit
    const { result, title, linked } = stored
    if (result.kind === 'invalid') {
      for (const line of formatReplay(result)) io.err(line)
      return 1
    }
    // a log that breaks an invariant is still worth looking at: say so, and show it
    for (const v of result.violations) io.err(`warning: violation ${v.rule} at seq ${v.seq}: ${v.message}`)
    viewer = await serveViewer({ events: result.events, id: title }, { ...options, title, ...(linked ? { sessions: (id: string) => linked.get(id) } : {}) })
    io.out(`${result.events.length} events, ${result.turns} turn${result.turns === 1 ? '' : 's'} (read-only)`)
  } else {
    demo = demoAgent(io.stop)
    viewer = await serveViewer(demo.agent, { ...options, title: 'demo agent (scripted, paced)' })
    io.out('a demo agent on a scripted model, paced to be watched')
  }
  if (options.host !== undefined && !['127.0.0.1', '::1', 'localhost'].includes(options.host)) {
    io.err(`warning: listening on ${options.host}: anyone who can reach it and has the URL can read this session`)
  }
  io.out(`agentchart viewer: ${viewer.url}`)
  io.out('press Ctrl-C to stop')
  if (!io.stop.aborted) await new Promise((resolve) => io.stop.addEventListener('abort', resolve, { once: true }))
  await viewer.close()
  if (demo) {
    await demo.agent.dispose()
    await demo.run.catch(() => {}) // a send racing the disposal is refused; the demo is over anyway
  }
  return 0
}

type Stored = { result: ReplayResult; title: string; linked?: ReadonlyMap<string, readonly SessionEvent[]> } | { exit: number }

/** A stored child log as the viewer shows it, or undefined when it is missing or not a session log. */
function validLog(raw: readonly unknown[] | undefined): readonly SessionEvent[] | undefined {
  if (raw === undefined) return undefined
  const result = replayEvents(raw)
  return result.kind === 'invalid' ? undefined : result.events
}

/** The sessions a log's calls name as their subagents (`meta.subagent.sessionId`), and theirs, that `load` finds. */
function linkedSessions(events: readonly SessionEvent[], load: (id: string) => readonly SessionEvent[] | undefined): Map<string, readonly SessionEvent[]> {
  const found = new Map<string, readonly SessionEvent[]>()
  const visit = (log: readonly SessionEvent[], depth: number) => {
    if (depth > 8) return
    for (const event of log) {
      if (event.type !== 'tool/result') continue
      const meta = event.data.meta as { subagent?: { sessionId?: unknown } } | undefined
      const id = meta?.subagent?.sessionId
      if (typeof id !== 'string' || found.has(id)) continue
      const child = load(id)
      if (!child) continue
      found.set(id, child)
      visit(child, depth + 1)
    }
  }
  visit(events, 0)
  return found
}

/** A JSON/JSONL log file, validated like a resumed session's seed. */
async function fromLog(file: string): Promise<Stored> {
  return { result: await replayFile(file), title: basename(file) }
}

/**
 * One session of a SQLite store, read without taking its lease (a driver may
 * still be appending; the view is the log as committed when it was opened).
 * The file is opened read-only: a viewer never creates, migrates or switches
 * the journal mode of a database, whoever's it is.
 */
function fromStore(path: string, sessionId: string | undefined, io: ViewIO): Stored {
  if (!existsSync(path)) {
    io.err(`no store at ${path}`)
    return { exit: 1 }
  }
  let reader: SqliteReader
  try {
    reader = openSqliteReader(path)
  } catch (error) {
    io.err(error instanceof NotAStoreError ? error.message : `cannot read the store at ${path}: ${(error as Error).message}`)
    return { exit: 1 }
  }
  try {
    let id = sessionId
    if (id === undefined) {
      const [latest] = reader.list(1)
      if (latest === undefined) {
        io.err(`the store at ${path} holds no sessions`)
        return { exit: 1 }
      }
      id = latest
    }
    const events = reader.load(id)
    if (events === undefined) {
      const known = reader.list(10)
      io.err(`the store at ${path} has no session ${JSON.stringify(id)}${known.length ? ` (it has ${known.map((k) => JSON.stringify(k)).join(', ')})` : ''}`)
      return { exit: 1 }
    }
    // the subagents' sessions beside it, read now: the page opens them from the same store
    const result = replayEvents(events)
    if (result.kind === 'invalid') return { result, title: id }
    return { result, title: `${basename(path)} · ${id}`, linked: linkedSessions(result.events, (child) => validLog(reader.load(child))) }
  } finally {
    reader.close()
  }
}

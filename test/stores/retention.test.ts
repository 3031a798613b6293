// Chunk retention (docs/persistence.md): under the default 'fold' a finished
// step's streamed chunks take one stored row per run instead of one per token,
// and the stored log still loads, resumes, forks, replays and passes the
// invariants exactly as the session logged it; 'keep' keeps a row per event.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { z } from 'zod'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/main.js'
import { ConfigError, createAgent, defineTool, type SessionEvent, type StreamChunk } from '../../src/index.js'
import { memoryStore, postgresStore, sqliteStore, type ChunkRetention } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { plain } from './support.js'

let dir = ''
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentchart-retention-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const TURNS = 20

const lookup = defineTool({
  name: 'lookup',
  description: 'looks an order up',
  input: z.object({ order: z.string() }),
  execute: ({ order }) => `order ${order} shipped`,
})

/** An answer streamed as a provider streams it: one text delta per word. */
function streamed(text: string): StreamChunk[] {
  const words = text.split(/(?<= )/)
  return [
    { type: 'block-start', index: 0, blockType: 'text' },
    ...words.map((word): StreamChunk => ({ type: 'text-delta', index: 0, text: word })),
    { type: 'block-end', index: 0, block: { type: 'text', text } },
    { type: 'finish', reason: { kind: 'stop' } },
  ]
}

/** Twenty streamed turns (every fifth uses a tool first). */
function script(): ScriptEntry[] {
  const entries: ScriptEntry[] = []
  for (let turn = 1; turn <= TURNS; turn++) {
    if (turn % 5 === 0) entries.push(toolCallResponse([{ id: `c${turn}`, name: 'lookup', arguments: `{"order":"A-${turn}"}` }]))
    entries.push(streamed(`Answer ${turn}: your order is on its way and should arrive within three working days, thank you.`))
  }
  return entries
}

const rows = (path: string) => {
  const db = new BetterSqlite3(path, { readonly: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM agentchart_events').get() as { n: number }).n
  } finally {
    db.close()
  }
}

/**
 * Runs the conversation over a SQLite file. `maxEvents: 1` commits every event on its own, as a slow real
 * stream does: each chunk has its own row until its step's message is committed, then the rows are folded.
 */
async function converse(path: string, chunks: ChunkRetention | undefined, sessionId = 'chat'): Promise<SessionEvent[]> {
  const store = sqliteStore({ path, ...(chunks ? { chunks } : {}) })
  const agent = await createAgent({ model: scriptedModel(script()), tools: [lookup], store, sessionId, commits: { maxEvents: 1 } })
  for (let turn = 1; turn <= TURNS; turn++) {
    const result = await agent.run(`question ${turn}`)
    expect(result).toMatchObject({ end: { kind: 'completed' } })
  }
  const events = [...agent.session.events]
  await agent.dispose()
  await store.close()
  return events
}

describe('chunk retention', () => {
  it('fold (the default): a 20-turn streamed conversation stores far fewer rows than events, and still resumes, forks and replays', async () => {
    const path = join(dir, 'fold.db')
    const events = await converse(path, undefined)
    const chunks = events.filter((e) => e.type === 'assistant/chunk').length
    const stored = rows(path)
    expect(chunks).toBeGreaterThan(events.length / 2)
    // one row per non-chunk event plus one per streamed step (25 steps: 20 answers and 5 tool calls)
    expect(stored).toBe(events.length - chunks + TURNS + TURNS / 5)
    expect(stored).toBeLessThan(events.length / 2)

    // load() (what resume, `agentchart view --store` and exports read) gives back the log exactly as logged
    const store = sqliteStore({ path })
    const loaded = await store.load('chat')
    expect(plain(loaded)).toEqual(plain(events))
    expect(checkSessionInvariants(loaded!)).toEqual([])

    // replay checks the loaded log as a resumed session would
    const file = join(dir, 'fold.jsonl')
    writeFileSync(file, `${loaded!.map((e) => JSON.stringify(e)).join('\n')}\n`)
    const out: string[] = []
    expect(await runCli(['replay', file], { out: (t) => out.push(t), err: (t) => out.push(t), cwd: dir })).toBe(0)
    expect(out.join('\n')).toContain(`${events.length} events, ${TURNS} turns, 0 violations`)

    // resume: a later process continues the conversation and the model sees every earlier answer
    const seen: number[] = []
    const answer: ScriptEntry = (request) => {
      seen.push(request.messages.length)
      return textResponse('twenty-one')
    }
    const resumed = await createAgent({ model: scriptedModel([answer]), store, sessionId: 'chat' })
    expect(await resumed.run('one more')).toMatchObject({ end: { kind: 'completed' } })
    expect(resumed.messages().filter((m) => m.role === 'assistant')).toHaveLength(TURNS + TURNS / 5 + 1)
    expect(seen[0]).toBe(events.filter((e) => e.type === 'user/message' || e.type === 'assistant/message' || e.type === 'tool/result').length + 1)

    // fork: the fork is stored (folded too) and continues on its own
    const upTo = events.findLastIndex((e) => e.type === 'turn/end')
    const fork = await resumed.fork({ upTo, id: 'chat-fork' })
    await resumed.dispose()
    const forked = await store.load('chat-fork')
    expect(plain(forked)).toEqual(plain(fork.events))
    expect(checkSessionInvariants(forked!)).toEqual([])
    const branch = await createAgent({ model: scriptedModel([textResponse('a branch')]), store, sessionId: 'chat-fork' })
    expect(await branch.run('and now?')).toMatchObject({ end: { kind: 'completed' } })
    await branch.dispose()
    expect(checkSessionInvariants((await store.load('chat-fork'))!)).toEqual([])
    await store.close()
  })

  it("keep: every event keeps its own row, and the log reads the same as under 'fold'", async () => {
    const kept = join(dir, 'keep.db')
    const events = await converse(kept, 'keep')
    expect(rows(kept)).toBe(events.length)
    const store = sqliteStore({ path: kept })
    expect(plain(await store.load('chat'))).toEqual(plain(events))
    await store.close()
  })

  it('a step cut off before its message keeps its chunks as rows, and they fold once a later open ends the step (a resume repairs it so)', async () => {
    const path = join(dir, 'cut.db')
    const store = sqliteStore({ path })
    const handle = await store.open('s')
    const source = await createAgent({ model: scriptedModel([textResponse('one two three four five six')]) })
    await source.run('hi')
    const log = [...source.session.events]
    await source.dispose()
    const message = log.findIndex((e) => e.type === 'assistant/message')
    // the process stops right before the message: every chunk so far is stored on its own
    for (const event of log.slice(0, message)) await handle.append([event])
    const chunks = log.slice(0, message).filter((e) => e.type === 'assistant/chunk').length
    expect(rows(path)).toBe(message)
    await handle.release()
    const again = await store.open('s')
    expect(plain(again.events)).toEqual(plain(log.slice(0, message)))
    await again.append(log.slice(message))
    expect(rows(path)).toBe(log.length - chunks + 1)
    expect(plain(await store.load('s'))).toEqual(plain(log))
    await again.release()

    // the same cut, resumed by a new agent: its repair closes the step (step/end), and that commit folds the chunks
    const cut = await store.open('r')
    await cut.append(log.slice(0, message))
    await cut.release()
    const resumed = await createAgent({ model: scriptedModel([]), store, sessionId: 'r' })
    const repaired = [...resumed.session.events]
    await resumed.dispose()
    expect(repaired.slice(message).map((e) => e.type)).toContain('step/end')
    const db = new BetterSqlite3(path, { readonly: true })
    const stored = (
      db.prepare("SELECT count(*) AS n FROM agentchart_events WHERE session_id = (SELECT key FROM agentchart_sessions WHERE id = 'r')").get() as { n: number }
    ).n
    db.close()
    expect(stored).toBe(repaired.length - chunks + 1)
    expect(plain(await store.load('r'))).toEqual(plain(repaired))
    await store.close()
  })

  it('refuses a folded row that does not describe a run, naming the session and seq', async () => {
    const path = join(dir, 'damaged.db')
    await converse(path, 'fold', 'd')
    const db = new BetterSqlite3(path)
    const { seq } = db.prepare('SELECT seq FROM agentchart_events WHERE event LIKE \'{"seq":%,"folded":%\' ORDER BY seq LIMIT 1').get() as { seq: number }
    db.prepare('UPDATE agentchart_events SET event = replace(event, \'"chunks":[[\', \'"chunks":[7,[\') WHERE seq = ?').run(seq)
    db.close()
    const store = sqliteStore({ path })
    const refused = await store.load('d').catch((error: unknown) => error)
    expect(refused).toMatchObject({ code: 'STORED_LOG_INVALID', sessionId: 'd', seq })
    expect((refused as Error).message).toContain('malformed chunk at position 0')
    await store.close()
  })

  it('refuses an unknown retention with a ConfigError naming the option', () => {
    for (const make of [
      () => memoryStore({ chunks: 'drop' as ChunkRetention }),
      () => sqliteStore({ path: ':memory:', chunks: 'drop' as ChunkRetention }),
      () => postgresStore({ connectionString: 'postgres://nowhere/x', chunks: 'drop' as ChunkRetention }),
    ]) {
      expect(make).toThrow(ConfigError)
      expect(make).toThrow(/chunks must be 'keep' or 'fold', got "drop"/)
    }
  })

  it('the memory store folds the same way: the loaded log is unchanged', async () => {
    const store = memoryStore()
    const agent = await createAgent({ model: scriptedModel([textResponse('a b c d e f')]), store, sessionId: 'm', commits: { maxEvents: 1 } })
    await agent.run('hi')
    const events = [...agent.session.events]
    await agent.dispose()
    expect(plain(await store.load('m'))).toEqual(plain(events))
    expect((await store.list())[0].length).toBe(events.length)
  })
})

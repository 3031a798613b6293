// Bounded memory over PostgreSQL, against a real server started here on
// loopback: a session of many turns keeps only what its history needs in
// memory, and everything that reads its log (session.events, session.at, a
// fork, the viewer feed) sees the stored log, read back through the store;
// driving turns reads nothing back; a crashed driver's session reopens and
// trims again.
import { execFile, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defineTool, type Agent } from '../../src/index.js'
import { firstInMemory, recentEvents } from '../../src/session/session.js'
import { postgresStore, type SessionStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { liveFeed } from '../../src/viewer/feed.js'
import { createDatabase, startPostgres, type PostgresServer } from '../../scripts/embedded-postgres.js'
import { recordCycle, seedLongSession } from './long-log.js'
import { until } from './support.js'

let server: PostgresServer
let url = ''
beforeAll(async () => {
  server = await startPostgres()
  url = await createDatabase(server, 'trim')
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 60_000)

const quiet = { error: () => {} }
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null))
const compaction = { contextWindow: 400, auto: false, keepRecent: 0, summarise: () => 'what was said so far' } as const

/** Drives `turns` turns (a compaction after every fourth) on `agent`; returns the in-memory event count after each turn. */
async function drive(agent: Agent, turns: number, from = 0): Promise<number[]> {
  const held: number[] = []
  for (let i = from; i < from + turns; i++) {
    agent.followup(`question ${i}`)
    await agent.whenIdle()
    if (i % 4 === 3) await agent.compact()
    await agent.flush()
    held.push(recentEvents(agent.session).length)
  }
  return held
}

const answers = (n: number, tag: string) => Array.from({ length: n }, (_, i) => textResponse(`answer ${tag} ${i}`))

const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({ n: z.number() }), execute: ({ n }) => `echo ${n}` })

/** `n` turns' answers, every third one calling a tool first. */
const withTools = (n: number): ScriptEntry[] =>
  Array.from({ length: n }, (_, i): ScriptEntry[] =>
    i % 3 === 0
      ? [toolCallResponse([{ id: `c${i}`, name: 'echo', arguments: JSON.stringify({ n: i }) }]), textResponse(`done ${i}`)]
      : [textResponse(`answer ${i}`)],
  ).flat()

/** Runs SQL on the test's database. */
async function sql(text: string, values: unknown[] = []): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text, values)).rows as unknown[]
  } finally {
    await client.end()
  }
}

/** Backends of the read-through worker: it connects only once something reads trimmed events back. */
async function readerBackends(): Promise<number> {
  const [row] = (await sql("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'agentchart read-through'")) as { n: number }[]
  return row.n
}

describe('a long PostgreSQL session', () => {
  it('RS-8: keeps a bounded number of events in memory over 40 turns, tool calls and compactions among them, and reads none back while it drives them', async () => {
    const store = postgresStore({ connectionString: url })
    try {
      const agent = await createAgent({ model: scriptedModel(withTools(40)), store, sessionId: 'long', tools: [echo], compaction, logger: quiet })
      const held = await drive(agent, 40)
      // what stays is the history since the last compaction and the last turn, not the log
      expect(agent.session.length).toBeGreaterThan(500)
      expect(firstInMemory(agent.session)).toBeGreaterThan(agent.session.length - 60)
      expect(Math.max(...held.slice(8))).toBeLessThanOrEqual(Math.max(...held.slice(0, 8)))
      expect(Math.max(...held)).toBeLessThan(60)
      // turns, commits and compactions never wait on a read of the stored log
      expect(await readerBackends()).toBe(0)
      const stored = (await store.load('long'))!
      expect(plain(agent.session.events)).toEqual(plain(stored))
      expect(await readerBackends()).toBe(1)
      await agent.dispose()
    } finally {
      await store.close()
    }
    // the store's close ends the worker's connection too
    await until(async () => (await readerBackends()) === 0, 10_000, 'the read-through connection to end')
  })

  it('RS-8: session.events, session.at, a fork and the viewer feed of a trimmed session equal the stored log', async () => {
    const store = postgresStore({ connectionString: url })
    try {
      const agent = await createAgent({ model: scriptedModel(answers(24, 'b')), store, sessionId: 'readers', compaction, logger: quiet })
      await drive(agent, 24)
      const trimmed = firstInMemory(agent.session)
      expect(trimmed).toBeGreaterThan(200)
      const stored = plain((await store.load('readers'))!) as unknown[]
      expect(stored).toHaveLength(agent.session.length)
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      expect(plain(agent.session.events)).toEqual(stored)
      // every seq, one by one, as a backward scan for an event reads them
      for (let seq = agent.session.length - 1; seq >= 0; seq--) expect(plain(agent.session.at(seq))).toEqual(stored[seq])
      expect(agent.session.at(agent.session.length)).toBeUndefined()
      // reading through keeps nothing in memory
      expect(firstInMemory(agent.session)).toBe(trimmed)
      const upTo = (stored as { seq: number; type: string }[]).findLast((event) => event.type === 'turn/end' && event.seq < trimmed)!.seq
      const fork = await agent.fork({ upTo, id: 'readers-fork' })
      expect(plain(fork.events.slice(0, upTo + 1))).toEqual(stored.slice(0, upTo + 1))
      const feed = liveFeed(agent)
      expect(plain(feed.events())).toEqual(stored)
      feed.close()
      await agent.dispose()
    } finally {
      await store.close()
    }
  })

  it('RS-8: a session whose driver was killed mid-turn reopens from its checkpoint, repairs the turn, reads its old events through and trims again', async () => {
    const sessionId = 'crashed'
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./postgres-trim-child.ts', import.meta.url)), url, sessionId, '16'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (data: Buffer) => (out += String(data)))
    child.stderr.on('data', (data: Buffer) => (err += String(data)))
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
    await until(() => out.includes('STREAMING'), 60_000, `the child to stream its last turn (${err})`)
    child.kill('SIGKILL')
    expect(await exited).toBe('SIGKILL')

    let store: SessionStore | undefined
    try {
      store = postgresStore({ connectionString: url })
      const before = (await store.load(sessionId))!
      let agent: Agent | undefined
      // the dead driver's lease lapses within its leaseMs
      await until(
        async () => {
          agent = await createAgent({
            model: scriptedModel(answers(4, 'c')),
            store: store!,
            sessionId,
            compaction,
            logger: quiet,
            validate: 'checkpoint',
          }).catch((error: unknown) => {
            if ((error as { code?: string }).code === 'SESSION_IN_USE') return undefined
            throw error
          })
          return agent !== undefined
        },
        20_000,
        'the lease to lapse',
      )
      const reopened = agent!
      const events = reopened.session.events
      // what was stored is kept, and the open turn is closed interrupted
      expect(plain(events.slice(0, before.length))).toEqual(plain(before))
      expect(events.findLast((event) => event.type === 'turn/end')).toMatchObject({ data: { reason: { kind: 'interrupted' } } })
      expect(checkSessionInvariants(events)).toEqual([])
      expect(firstInMemory(reopened.session)).toBeGreaterThan(0)
      await drive(reopened, 4, 16)
      expect(firstInMemory(reopened.session)).toBeGreaterThan(before.length)
      expect(plain(reopened.session.events)).toEqual(plain(await store.load(sessionId)))
      await reopened.dispose()
    } finally {
      await store?.close()
    }
  }, 90_000)

  /** A stored session of about 3,000 events whose checkpoint covers them all (an open and one turn took it). */
  async function longStored(sessionId: string): Promise<void> {
    const store = postgresStore({ connectionString: url })
    try {
      await seedLongSession(store, sessionId, await recordCycle(), 3000)
      const agent = await createAgent({ model: scriptedModel(answers(1, 'd')), store, sessionId, compaction, logger: quiet })
      await drive(agent, 1)
      await agent.dispose()
    } finally {
      await store.close()
    }
    await until(async () => (await readerBackends()) === 0, 10_000, 'the read-through connection to end')
  }

  it('RS-8: an open of a long session from its checkpoint reads nothing back, and what it keeps reads the stored log through', async () => {
    await longStored('from-checkpoint')
    const store = postgresStore({ connectionString: url })
    try {
      const agent = await createAgent({ model: scriptedModel(answers(2, 'e')), store, sessionId: 'from-checkpoint', compaction, logger: quiet })
      expect(agent.session.length).toBeGreaterThan(3000)
      expect(agent.session.length - firstInMemory(agent.session)).toBeLessThan(60)
      // the tail, the last event and the surface events came with the open's own transaction
      expect(await readerBackends()).toBe(0)
      await drive(agent, 2)
      expect(await readerBackends()).toBe(0)
      expect(plain(agent.session.events)).toEqual(plain(await store.load('from-checkpoint')))
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      await agent.dispose()
    } finally {
      await store.close()
    }
  }, 60_000)

  it('RS-8: a row damaged before the checkpoint does not stop the open; reading it through names its seq, its neighbours read as stored', async () => {
    await longStored('damaged')
    const [{ seq }] = (await sql("SELECT min(seq) AS seq FROM agentchart_events WHERE session_id = 'damaged' AND type = 'step/start' AND seq > 1000")) as {
      seq: number
    }[]
    const before = (await sql("SELECT seq, event FROM agentchart_events WHERE session_id = 'damaged' AND seq IN ($1, $2) ORDER BY seq", [
      seq - 1,
      seq + 1,
    ])) as {
      event: string
    }[]
    await sql("UPDATE agentchart_events SET event = replace(event, $2, $3) WHERE session_id = 'damaged' AND seq = $1", [
      seq,
      '"type":"step/start"',
      '"type":step/start"',
    ])
    const store = postgresStore({ connectionString: url })
    try {
      const agent = await createAgent({ model: scriptedModel([]), store, sessionId: 'damaged', compaction, logger: quiet })
      expect(firstInMemory(agent.session)).toBeGreaterThan(seq)
      expect(plain(agent.session.at(seq - 1))).toEqual(JSON.parse(before[0].event))
      expect(() => agent.session.at(seq)).toThrow(expect.objectContaining({ code: 'STORED_LOG_INVALID', seq }) as Error)
      expect(plain(agent.session.at(seq + 1))).toEqual(JSON.parse(before[1].event))
      await agent.dispose().catch(() => {})
    } finally {
      await store.close()
    }
  }, 60_000)

  it('RS-1: a checkpoint that disagrees with a long log is refused and the open validates the whole log, read through the store', async () => {
    await longStored('refused')
    const [{ body }] = (await sql("SELECT body FROM agentchart_checkpoints WHERE session_id = 'refused'")) as { body: string }[]
    const cp = JSON.parse(body) as { last: { seq: number } }
    cp.last.seq += 1
    await sql("UPDATE agentchart_checkpoints SET body = $1 WHERE session_id = 'refused'", [JSON.stringify(cp)])
    const store = postgresStore({ connectionString: url })
    const heard: string[] = []
    try {
      const agent = await createAgent({
        model: scriptedModel(answers(1, 'f')),
        store,
        sessionId: 'refused',
        compaction,
        logger: { error: (message) => heard.push(message) },
      })
      expect(heard.some((message) => message.includes('validating the whole log instead'))).toBe(true)
      // the whole log the check validated came through the reader
      expect(await readerBackends()).toBe(1)
      const stored = plain(await store.load('refused')) as unknown[]
      expect(plain(agent.session.events)).toEqual(stored)
      await drive(agent, 1)
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      expect(agent.session.length - firstInMemory(agent.session)).toBeLessThan(60)
      await agent.dispose()
    } finally {
      await store.close()
    }
  }, 60_000)

  it('RS-8: an idle agent over a long PostgreSQL session keeps the heap of one over a short session, under 64 KiB', async () => {
    const idleUrl = await createDatabase(server, 'idle')
    const fullUrl = await createDatabase(server, 'idle_full')
    const child = fileURLToPath(new URL('./idle-memory-child.ts', import.meta.url))
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', child, idleUrl, '100', '20000', '12'], {
      timeout: 170_000,
    })
    const { lengths, short, long, session } = JSON.parse(stdout.trim().split('\n').pop()!) as {
      lengths: { short: number; long: number }
      short: number
      long: number
      session: number
    }
    console.log(
      `idle PostgreSQL agent: ${(short / 1024).toFixed(1)} KiB at ${lengths.short} events, ${(long / 1024).toFixed(1)} KiB at ${lengths.long}; session ${(session / 1024).toFixed(1)} KiB`,
    )
    expect(lengths.long).toBeGreaterThan(100 * lengths.short)
    // an event kept per session would be about 300 bytes each, 6 MB here
    expect(long - short).toBeLessThan(16 * 1024)
    expect(long).toBeLessThan(64 * 1024)
    expect(session).toBeLessThan(64 * 1024)
    // an open that validates the whole log keeps none of what it read (a kept log would be about 800 KiB here)
    const full = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', child, fullUrl, '100', '3000', '12', 'full'], {
      timeout: 170_000,
    })
    const validated = JSON.parse(full.stdout.trim().split('\n').pop()!) as { lengths: { long: number }; long: number }
    console.log(`idle PostgreSQL agent after a full validation: ${(validated.long / 1024).toFixed(1)} KiB at ${validated.lengths.long} events`)
    expect(validated.lengths.long).toBeGreaterThan(2000)
    expect(validated.long).toBeLessThan(64 * 1024)
  }, 360_000)

  it("RS-8: over a pg.Pool of the application the reader connects with the pool's settings; over a pool whose settings it cannot see, the session keeps its log", async () => {
    const pool = new pg.Pool({ connectionString: url, max: 3 })
    try {
      const opaque = { query: pool.query.bind(pool), connect: () => pool.connect() } as unknown as pg.Pool
      for (const [sessionId, given, trims] of [
        ['pool', pool, true],
        ['opaque', opaque, false],
      ] as const) {
        const store = postgresStore({ pool: given })
        try {
          const agent = await createAgent({ model: scriptedModel(answers(8, sessionId)), store, sessionId, compaction, logger: quiet })
          await drive(agent, 8)
          expect(firstInMemory(agent.session) > 0).toBe(trims)
          expect(plain(agent.session.events)).toEqual(plain(await store.load(sessionId)))
          await agent.dispose()
        } finally {
          await store.close()
        }
      }
    } finally {
      await pool.end()
    }
  })

  it('RS-8: a read after the read-through connection was killed connects again; a read after store.close() fails with STORE_CLOSED', async () => {
    const store = postgresStore({ connectionString: url })
    const agent = await createAgent({ model: scriptedModel(answers(8, 'g')), store, sessionId: 'reconnect', compaction, logger: quiet })
    try {
      await drive(agent, 8)
      const stored = plain(await store.load('reconnect'))
      expect(plain(agent.session.events)).toEqual(stored)
      await sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'agentchart read-through'")
      await until(async () => (await readerBackends()) === 0, 10_000, 'the read-through connection to end')
      // the first read after finds the connection gone (a STORE_FAULT) or connects again at once; the next one reads
      const again = (() => {
        try {
          return agent.session.events
        } catch (error) {
          expect(error).toMatchObject({ code: 'STORE_FAULT' })
          return agent.session.events
        }
      })()
      expect(plain(again)).toEqual(stored)
    } finally {
      await store.close()
    }
    expect(() => agent.session.at(0)).toThrow(expect.objectContaining({ code: 'STORE_CLOSED' }) as Error)
    await agent.dispose().catch(() => {})
  })
})

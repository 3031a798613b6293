// Bounded memory over PostgreSQL, against a real server started here on
// loopback: a session of many turns keeps only what its history needs in
// memory, and everything that reads its log (session.events, session.at, a
// fork, the viewer feed) sees the stored log, read back through the store;
// driving turns reads nothing back; a crashed driver's session reopens and
// trims again.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAgent, type Agent } from '../../src/index.js'
import { firstInMemory, recentEvents } from '../../src/session/session.js'
import { postgresStore, type SessionStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse } from '../../src/testing/index.js'
import { liveFeed } from '../../src/viewer/feed.js'
import { createDatabase, startPostgres, type PostgresServer } from '../../scripts/embedded-postgres.js'
import { until } from './support.js'

let server: PostgresServer
let url = ''
beforeAll(async () => {
  server = await startPostgres()
  url = await createDatabase(server, 'trim')
}, 60_000)
afterAll(async () => {
  await server?.stop()
})

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

/** Backends of the read-through worker: it connects only once something reads trimmed events back. */
async function readerBackends(): Promise<number> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'agentchart read-through'")
    return (rows[0] as { n: number }).n
  } finally {
    await client.end()
  }
}

describe('a long PostgreSQL session', () => {
  it('RS-8: keeps a bounded number of events in memory over 40 turns, and reads none back while it drives them', async () => {
    const store = postgresStore({ connectionString: url })
    try {
      const agent = await createAgent({ model: scriptedModel(answers(40, 'a')), store, sessionId: 'long', compaction, logger: quiet })
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
      for (const seq of [0, 1, Math.floor(trimmed / 2), trimmed - 1, agent.session.length - 1]) {
        expect(plain(agent.session.at(seq))).toEqual(stored[seq])
      }
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
          agent = await createAgent({ model: scriptedModel(answers(4, 'c')), store: store!, sessionId, compaction, logger: quiet, validate: 'checkpoint' }).catch(
            (error: unknown) => {
              if ((error as { code?: string }).code === 'SESSION_IN_USE') return undefined
              throw error
            },
          )
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
})

// The SessionStore contract, run against memoryStore, sqliteStore and
// postgresStore (a real PostgreSQL started here on loopback): open or create,
// load, batch commits, list, and the lease with its fencing token; damaged
// stored data refused by seq and left exactly as it was.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAgent, SessionInUseError, StoredLogError, StoreError, userMessage, type SessionEvent } from '../../src/index.js'
import { memoryStore, postgresStore, sqliteStore, type SessionStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse } from '../../src/testing/index.js'
import { startPostgres, type PostgresServer } from '../../scripts/embedded-postgres.js'
import { plain, sleep } from './support.js'

interface Subject {
  readonly name: string
  make(): SessionStore
  /** Runs SQL against the store's data behind its back (durable stores only). */
  sql?(text: string, values?: unknown[]): Promise<unknown[]>
}

let server: PostgresServer | undefined
let dir = ''
const cleanups: Array<() => Promise<void> | void> = []

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentchart-stores-'))
  server = await startPostgres()
}, 60_000)

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
}, 60_000)

let n = 0
const subjects: Subject[] = [
  { name: 'memory', make: () => memoryStore() },
  {
    name: 'sqlite',
    make() {
      const path = join(dir, `contract-${n++}.db`)
      this.sql = (text, values = []) => {
        const db = new BetterSqlite3(path)
        try {
          const statement = db.prepare(text)
          return Promise.resolve(statement.reader ? statement.all(...values) : (statement.run(...values), []))
        } finally {
          db.close()
        }
      }
      const store = sqliteStore({ path })
      cleanups.push(() => store.close())
      return store
    },
  },
  {
    name: 'postgres',
    make() {
      const schema = `contract_${n++}`
      const store = postgresStore({ connectionString: server!.connectionString, schema, max: 4 })
      this.sql = async (text, values = []) => {
        const client = new pg.Client({ connectionString: server!.connectionString })
        await client.connect()
        try {
          return (await client.query(text.replaceAll('agentchart_', `${schema}.agentchart_`), values)).rows as unknown[]
        } finally {
          await client.end()
        }
      }
      cleanups.push(() => store.close())
      return store
    },
  },
]

/** Events of a real one-turn conversation, to store and read back. */
async function conversation(): Promise<SessionEvent[]> {
  const agent = createAgent({ model: scriptedModel([textResponse('hello there')]) })
  agent.followup(userMessage('hi'))
  await agent.whenIdle()
  await agent.dispose()
  return [...agent.session.events]
}

describe.each(subjects)('$name store', (subject) => {
  it('opens a new session, commits batches, loads them back, and lists it', async () => {
    const store = subject.make()
    const events = await conversation()
    const handle = await store.open('s-1', { holder: 'worker-a' })
    expect(handle).toMatchObject({ sessionId: 's-1', created: true, events: [] })
    expect(handle.lease).toMatchObject({ holder: 'worker-a', token: 1 })
    await handle.append(events.slice(0, 3))
    await handle.append(events.slice(3))
    expect(plain(await store.load('s-1'))).toEqual(plain(events))
    expect(await store.load('nobody')).toBeUndefined()
    const [info] = await store.list()
    expect(info).toMatchObject({ id: 's-1', length: events.length, lease: { holder: 'worker-a' } })
    await handle.release()
    expect((await store.list())[0].lease).toBeNull()
    const again = await store.open('s-1')
    expect(again.created).toBe(false)
    expect(again.lease.token).toBe(2)
    expect(plain(again.events)).toEqual(plain(events))
    await again.release()
  })

  it("folds a step's chunks, committed one by one, into one row once its message is committed; the log loads unchanged", async () => {
    const store = subject.make()
    const events = await conversation()
    const handle = await store.open('fold')
    for (const event of events) await handle.append([event])
    expect(plain(await store.load('fold'))).toEqual(plain(events))
    expect((await store.list())[0]).toMatchObject({ id: 'fold', length: events.length })
    const chunks = events.filter((e) => e.type === 'assistant/chunk').length
    expect(chunks).toBeGreaterThan(1)
    if (subject.sql) {
      // postgres keys events by the session id, sqlite by the session row's integer key
      const where = subject.name === 'postgres' ? "session_id = 'fold'" : "session_id = (SELECT key FROM agentchart_sessions WHERE id = 'fold')"
      const [{ n }] = (await subject.sql(`SELECT count(*) AS n FROM agentchart_events WHERE ${where}`)) as Array<{ n: number | string }>
      expect(Number(n)).toBe(events.length - chunks + 1)
    }
    await handle.release()
    const again = await store.open('fold')
    expect(plain(again.events)).toEqual(plain(events))
    await again.release()
  })

  it('RS-7: refuses a second driver with SESSION_IN_USE naming the holder, until the lease is released or lapses', async () => {
    const store = subject.make()
    const first = await store.open('s', { holder: 'worker-a', leaseMs: 60_000 })
    const refused = await store.open('s', { holder: 'worker-b' }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(SessionInUseError)
    expect(refused).toMatchObject({ code: 'SESSION_IN_USE', sessionId: 's', holder: 'worker-a' })
    expect((refused as Error).message).toContain('worker-a')
    await first.release()
    const second = await store.open('s', { holder: 'worker-b', leaseMs: 40 })
    expect(second.lease.token).toBe(2)
    await sleep(80)
    // nobody renewed: the lease lapsed and the next opener takes over
    const third = await store.open('s', { holder: 'worker-c' })
    expect(third.lease.token).toBe(3)
    await third.release()
  })

  it('fences a writer whose lease was taken over: it can never add a row', async () => {
    const store = subject.make()
    const events = await conversation()
    const stale = await store.open('s', { holder: 'old', leaseMs: 30 })
    await stale.append(events.slice(0, 2))
    await sleep(60)
    const fresh = await store.open('s', { holder: 'new' })
    await fresh.append(events.slice(2, 4))
    const lost = await Promise.resolve()
      .then(() => stale.append(events.slice(4, 6)))
      .catch((error: unknown) => error)
    expect(lost).toBeInstanceOf(StoreError)
    expect((lost as StoreError).code).toBe('LEASE_LOST')
    await expect(stale.renew()).rejects.toMatchObject({ code: 'LEASE_LOST' })
    expect(plain(await store.load('s'))).toEqual(plain(events.slice(0, 4)))
    await stale.release() // a stale release does not free the new holder's lease
    expect((await store.list())[0].lease).toMatchObject({ holder: 'new' })
    await fresh.release()
  })

  it('refuses a batch that does not continue the stored log, writing none of it', async () => {
    const store = subject.make()
    const events = await conversation()
    const handle = await store.open('s')
    await handle.append(events.slice(0, 3))
    for (const bad of [events.slice(2, 4), events.slice(4, 6), [events[3], events[5]]]) {
      const refused = await Promise.resolve()
        .then(() => handle.append(bad))
        .catch((error: unknown) => error)
      expect(refused).toMatchObject({ code: 'STORE_CONFLICT' })
    }
    expect(plain(await store.load('s'))).toEqual(plain(events.slice(0, 3)))
    await handle.release()
  })

  it('writes nothing when the check refuses the stored events: no session, no lease', async () => {
    const store = subject.make()
    await expect(
      store.open('s', {
        check: () => {
          throw new Error('not for me')
        },
      }),
    ).rejects.toThrow('not for me')
    expect(await store.list()).toEqual([])
    expect(await store.load('s')).toBeUndefined()
  })

  it('an agent over the store resumes where the stored log ends', async () => {
    const store = subject.make()
    const first = await createAgent({ model: scriptedModel([textResponse('one')]), store, sessionId: 'chat', logger: { error: () => {} } })
    first.followup('first')
    await first.whenIdle()
    await first.dispose()
    const second = await createAgent({ model: scriptedModel([textResponse('two')]), store, sessionId: 'chat', logger: { error: () => {} } })
    second.followup('second')
    await second.whenIdle()
    expect(second.session.events.filter((e) => e.type === 'turn/start').map((e) => e.data.turn)).toEqual([1, 2])
    expect(plain(await store.load('chat'))).toEqual(plain(second.session.events))
    await second.dispose()
  })

  if (subject.name === 'memory') return

  describe('damaged stored data', () => {
    /** A stored two-turn session, and a way to read everything the store holds about it. */
    async function stored() {
      const store = subject.make()
      const agent = await createAgent({ model: scriptedModel([textResponse('a'), textResponse('b')]), store, sessionId: 'd', logger: { error: () => {} } })
      agent.followup('one')
      await agent.whenIdle()
      agent.followup('two')
      await agent.whenIdle()
      await agent.dispose()
      const snapshot = async () => ({
        sessions: await subject.sql!('SELECT * FROM agentchart_sessions ORDER BY id'),
        events: await subject.sql!('SELECT * FROM agentchart_events ORDER BY session_id, seq'),
      })
      return { store, events: agent.session.events, snapshot }
    }

    // `rows`: the store itself refuses to read them; otherwise load() hands them out raw and the session refuses them
    const damages: Array<{
      what: string
      seq: (events: readonly SessionEvent[]) => number
      sql: (seq: number) => [string, unknown[]]
      says: RegExp
      rows?: true
    }> = [
      {
        what: 'a gap in seq',
        seq: () => 4,
        sql: (seq) => ['DELETE FROM agentchart_events WHERE seq = $1', [seq]],
        says: /seq gap: seq 4 is missing/,
        rows: true,
      },
      {
        what: 'malformed JSON',
        seq: () => 3,
        sql: (seq) => ['UPDATE agentchart_events SET event = \'{"seq": 3, "ty\' WHERE seq = $1', [seq]],
        says: /malformed JSON/,
        rows: true,
      },
      {
        what: 'an unknown event type',
        seq: () => 2,
        sql: (seq) => [
          'UPDATE agentchart_events SET event = replace(event, \'"type":"agent/inbox/spliced"\', \'"type":"agent/inbox/spliced2"\') WHERE seq = $1',
          [seq],
        ],
        says: /unknown event type "agent\/inbox\/spliced2"/,
      },
      {
        what: 'a structure the seed check refuses (a second turn/start inside the open turn)',
        seq: (events) => events.findIndex((e) => e.type === 'step/start'),
        sql: (seq) => [`UPDATE agentchart_events SET event = '{"seq":${seq},"time":1,"type":"turn/start","data":{"turn":2}}' WHERE seq = $1`, [seq]],
        says: /turn-enclosure/,
      },
      {
        what: 'an inbox splice that does not replay (IN-14)',
        seq: () => 0,
        sql: (seq) => [
          `UPDATE agentchart_events SET event = '{"seq":0,"time":1,"type":"agent/inbox/spliced","data":{"target":"next-step","start":0,"removedCount":1,"inserted":[]}}' WHERE seq = $1`,
          [seq],
        ],
        says: /inconsistent with the replayed lists/,
      },
      {
        what: 'a cut-off tail the session row still counts',
        seq: (events) => events.length - 1,
        sql: (seq) => ['DELETE FROM agentchart_events WHERE seq = $1', [seq]],
        says: /counts/,
        rows: true,
      },
    ]

    for (const damage of damages) {
      it(`refuses ${damage.what}, naming the session and seq, and changes nothing`, async () => {
        const { store, events, snapshot } = await stored()
        const seq = damage.seq(events)
        const [text, values] = damage.sql(seq)
        await subject.sql!(subject.name === 'sqlite' ? text.replaceAll('$1', '?') : text, values)
        const before = await snapshot()
        // a short log is validated whole by default (validate: 'auto'), its checkpoint notwithstanding
        const refused = await createAgent({ model: scriptedModel([]), store, sessionId: 'd' }).catch((error: unknown) => error)
        expect(refused).toBeInstanceOf(StoredLogError)
        expect(refused).toMatchObject({ code: 'STORED_LOG_INVALID', sessionId: 'd', seq })
        expect((refused as Error).message).toMatch(new RegExp(`^session d seq ${seq}: `))
        expect((refused as Error).message).toMatch(damage.says)
        const loaded = await store.load('d').catch((error: unknown) => error)
        if (damage.rows) expect(loaded).toBeInstanceOf(StoredLogError)
        else expect((loaded as unknown[])[seq]).toBeDefined()
        expect(await snapshot()).toEqual(before)
      })
    }
  })
})

// PostgreSQL for many workers, against a real server started here on
// loopback: two processes race for one session (one drives, the other is
// refused, then takes over once the first is killed), and 200 agents in one
// process share one database without losing or duplicating an event.
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defineTool, SessionInUseError, StoreError, type Agent, type SessionEvent } from '../../src/index.js'
import { postgresStore, type SessionStore } from '../../src/stores/index.js'
import { createSessionClient } from '../../src/service/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { createDatabase, startPostgres, type PostgresServer } from '../../scripts/embedded-postgres.js'
import { plain, until } from './support.js'

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 60_000)

/** A child process with its stdout collected line by line. */
function run(args: string[]): {
  proc: ChildProcess
  lines: string[]
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  stderr: () => string
} {
  const script = fileURLToPath(new URL('./race-child.ts', import.meta.url))
  const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  const lines: string[] = []
  let stderr = ''
  let partial = ''
  proc.stdout!.on('data', (data: Buffer) => {
    const parts = (partial + String(data)).split('\n')
    partial = parts.pop()!
    lines.push(...parts)
  })
  proc.stderr!.on('data', (data: Buffer) => (stderr += String(data)))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })))
  return { proc, lines, exited, stderr: () => stderr }
}

describe('PostgreSQL store across processes', () => {
  it('RS-7/RS-8: two processes race to open one session: exactly one drives, the other is refused, then takes over after the first is killed; the log stays contiguous', async () => {
    const url = await createDatabase(server, 'race')
    const a = run([url, 'contested', 'worker-a', '4'])
    const b = run([url, 'contested', 'worker-b', '4'])
    const children = { 'worker-a': a, 'worker-b': b }
    try {
      // both connected, then both open at once; neither runs a turn before both have reported
      await until(() => [a, b].every((c) => c.lines.includes('READY')), 30_000, `both children to connect (${a.stderr()}${b.stderr()})`)
      for (const c of [a, b]) c.proc.stdin!.write('open\n')
      await until(() => [a, b].every((c) => c.lines.length > 1), 30_000, `both children to report (${a.stderr()}${b.stderr()})`)
      const first = Object.entries(children).map(([name, c]) => [name, c.lines[1]] as const)
      const drivers = first.filter(([, line]) => line.startsWith('DRIVING'))
      const refused = first.filter(([, line]) => line.startsWith('REFUSED'))
      expect(drivers).toHaveLength(1)
      expect(refused).toHaveLength(1)
      const [driverName] = drivers[0]
      const [otherName, refusal] = refused[0]
      expect(refusal).toBe(`REFUSED ${driverName}`)
      const driver = children[driverName as keyof typeof children]
      const other = children[otherName as keyof typeof children]
      // the driver runs; the other, refused, runs once it takes over
      for (const c of [driver, other]) c.proc.stdin!.write('run\n')
      // kill the driver mid-way through its second turn
      await until(() => driver.lines.includes('TURN 1'), 30_000, 'the driver to finish a turn')
      driver.proc.kill('SIGKILL')
      expect((await driver.exited).signal).toBe('SIGKILL')
      // the other keeps being refused until the lease lapses, then drives and finishes the work
      expect((await other.exited).code).toBe(0)
      expect(other.lines.filter((l) => l.startsWith('DRIVING'))).toHaveLength(1)
      expect(other.lines.at(-1)).toBe('DONE')
      const store = postgresStore({ connectionString: url })
      const log = (await store.load('contested')) as SessionEvent[] // load refuses a gap in seq
      await store.close()
      expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i))
      expect(checkSessionInvariants(log)).toEqual([])
      const ends = log.filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind)
      expect(ends.filter((k) => k === 'completed')).toHaveLength(4)
      expect(ends.filter((k) => k === 'interrupted').length).toBeLessThanOrEqual(1)
    } finally {
      a.proc.kill('SIGKILL')
      b.proc.kill('SIGKILL')
    }
  }, 60_000)
})

describe('PostgreSQL store in one busy process', () => {
  // the full check (AGENTCHART_PG_TURNS=20) costs ~20 s of CPU here; the default keeps all 200 agents concurrent
  const agents = Number(process.env.AGENTCHART_PG_AGENTS ?? 200)
  const turns = Number(process.env.AGENTCHART_PG_TURNS ?? 4)

  it(`${agents} agents, ${turns} turns each with tool steps, on one database: no lost or duplicated event, invariants on every log`, async () => {
    const url = await createDatabase(server, 'busy')
    const store = postgresStore({ connectionString: url, max: 10 })
    const tool = defineTool({
      name: 'lookup',
      description: 'l',
      input: z.object({ q: z.string() }),
      executionMode: 'parallel',
      execute: ({ q }) => `found ${q}`,
    })
    const script = (i: number): ScriptEntry[] =>
      Array.from({ length: turns }, (_, t) => [
        toolCallResponse([
          { id: `a${i}-${t}`, name: 'lookup', arguments: `{"q":"x${t}"}` },
          { id: `b${i}-${t}`, name: 'lookup', arguments: `{"q":"y${t}"}` },
        ]),
        textResponse(`answer ${t}`),
      ]).flat()
    const all: Agent[] = await Promise.all(
      Array.from({ length: agents }, (_, i) =>
        createAgent({ model: scriptedModel(script(i)), store, sessionId: `agent-${i}`, tools: [tool], logger: { error: () => {} } }),
      ),
    )
    await Promise.all(
      all.map(async (agent) => {
        for (let t = 0; t < turns; t++) {
          agent.followup(`question ${t}`)
          await agent.whenIdle()
        }
      }),
    )
    const listed = await store.list()
    expect(listed).toHaveLength(agents)
    for (const agent of all) {
      const stored = await store.load(agent.sessionId)
      expect(plain(stored)).toEqual(plain(agent.session.events))
      expect(checkSessionInvariants(stored!)).toEqual([])
      const ends = (stored as SessionEvent[]).filter((e) => e.type === 'turn/end')
      expect(ends.map((e) => e.data.reason.kind)).toEqual(Array(turns).fill('completed'))
    }
    await Promise.all(all.map((agent) => agent.dispose()))
    await store.close()
  }, 120_000)
})

describe('the scale-out example (examples/workers)', () => {
  it('RS-8: a killed worker hands its sessions to the others once its leases lapse; every log is whole', async () => {
    const url = await createDatabase(server, 'workers')
    const main = fileURLToPath(new URL('../../examples/workers/main.ts', import.meta.url))
    const proc = spawn(process.execPath, ['--import', 'tsx', main, '--sessions', '4', '--workers', '2', '--turns', '2', '--lease-ms', '800'], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    proc.stdout.on('data', (data: Buffer) => (out += String(data)))
    proc.stderr.on('data', (data: Buffer) => (out += String(data)))
    const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve))
    expect(code, out).toBe(0)
    expect(out).toMatch(/killed worker-1 with SIGKILL/)
    expect(out).toMatch(/\[worker-2\] took over session-\d+ at turn \d, repairing the turn its last worker left open/)
    const rows = out.split('\n').filter((line) => /^session-\d+ /.test(line))
    expect(rows).toHaveLength(4)
    for (const row of rows) expect(row).toMatch(/\s2\s+[01]\s+ok$/)
  }, 60_000)
})

describe('every PostgreSQL store operation has a bound', () => {
  const quiet = { error: () => {} }

  /** Another client holding the session's row lock, as a long transaction elsewhere would. */
  async function lockRow(url: string, sessionId: string): Promise<{ unlock(): Promise<void> }> {
    const locker = new pg.Client({ connectionString: url })
    await locker.connect()
    await locker.query('BEGIN')
    await locker.query('SELECT 1 FROM agentchart_sessions WHERE id = $1 FOR UPDATE', [sessionId])
    return {
      async unlock() {
        await locker.query('ROLLBACK')
        await locker.end()
      },
    }
  }

  /** Opens the session again once the stalled holder's lease is released or has lapsed; its log is whole and repaired. */
  async function reopened(store: SessionStore, sessionId: string, acknowledged: readonly SessionEvent[]): Promise<void> {
    for (;;) {
      try {
        const agent = await createAgent({ model: scriptedModel([textResponse('back')]), store, sessionId, logger: quiet })
        expect(plain(agent.session.events.slice(0, acknowledged.length))).toEqual(plain(acknowledged))
        expect(checkSessionInvariants(agent.session.events)).toEqual([])
        expect((await agent.run('are you there?')).end).toEqual({ kind: 'completed' })
        await agent.dispose()
        return
      } catch (error) {
        if (!(error instanceof SessionInUseError)) throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }

  it('a commit blocked by a row lock fails with STORE_TIMEOUT after commitTimeoutMs: run() and whenIdle() after cancel() settle, nothing acknowledged is lost', async () => {
    const url = await createDatabase(server, 'bounds_commit')
    const store = postgresStore({ connectionString: url, commitTimeoutMs: 1500 })
    const agent = await createAgent({ model: scriptedModel([textResponse('one')]), store, sessionId: 'locked', lease: { leaseMs: 1000 }, logger: quiet })
    await agent.run('first')
    const lock = await lockRow(url, 'locked')
    // the turn's first commit waits on the lock: run() settles once the commit gave up
    const result = await agent.run('second')
    expect(result.turn === null || result.end.kind !== 'completed').toBe(true)
    await expect(agent.flush()).rejects.toMatchObject({ name: 'StoreError', code: 'STORE_TIMEOUT' })
    const acknowledged = agent.session.events.slice(0, agent.committedLength)
    await agent.dispose()

    // a turn cancelled mid-request: its closers wait on the lock, whenIdle() settles all the same
    const other = await createAgent({ model: scriptedModel(['hang']), store, sessionId: 'cancelled', lease: { leaseMs: 1000 }, logger: quiet })
    const requested = new Promise<void>((resolve) => other.on('agent/request', (config, next) => (resolve(), next())))
    other.followup('hang on')
    await requested
    const lockOther = await lockRow(url, 'cancelled')
    other.cancel()
    await other.whenIdle()
    await expect(other.flush()).rejects.toMatchObject({ code: 'STORE_TIMEOUT' })
    const acknowledgedOther = other.session.events.slice(0, other.committedLength)
    await other.dispose()

    await lock.unlock()
    await lockOther.unlock()
    await reopened(store, 'locked', acknowledged)
    await reopened(store, 'cancelled', acknowledgedOther)
    await store.close()
  }, 30_000)

  it('dispose({ force: true, graceMs: 100 }) abandons a commit that does not come back: the session halts, the lease is released', async () => {
    const url = await createDatabase(server, 'bounds_dispose')
    // a commit bound far beyond this test's own timeout: only abandoning the commit can end the disposal
    const store = postgresStore({ connectionString: url, commitTimeoutMs: 120_000 })
    const agent = await createAgent({ model: scriptedModel(['hang']), store, sessionId: 'stuck', lease: { leaseMs: 60_000 }, logger: quiet })
    const requested = new Promise<void>((resolve) => agent.on('agent/request', (config, next) => (resolve(), next())))
    agent.followup('hang on')
    await requested
    const lock = await lockRow(url, 'stuck')
    await agent.dispose({ force: true, graceMs: 100 })
    await expect(agent.flush()).rejects.toMatchObject({ name: 'StoreError', code: 'STORE_TIMEOUT', message: /abandoned by a forced disposal/ })
    const acknowledged = agent.session.events.slice(0, agent.committedLength)

    // a turn whose model request waits for its first commit: run() and the disposal settle all the same
    const waiting = await createAgent({ model: scriptedModel([textResponse('never')]), store, sessionId: 'waiting', lease: { leaseMs: 60_000 }, logger: quiet })
    const lockWaiting = await lockRow(url, 'waiting')
    const running = waiting.run('go')
    await until(() => waiting.session.length > waiting.committedLength, 5000, 'the turn to wait for its commit')
    await waiting.dispose({ force: true, graceMs: 100 })
    expect((await running).end.kind).not.toBe('completed')
    await expect(waiting.flush()).rejects.toMatchObject({ code: 'STORE_TIMEOUT' })
    const acknowledgedWaiting = waiting.session.events.slice(0, waiting.committedLength)

    await lock.unlock()
    await lockWaiting.unlock()
    // the 60 s leases did not have to lapse: the halted writers released them once the rows were free
    await reopened(store, 'stuck', acknowledged)
    await reopened(store, 'waiting', acknowledgedWaiting)
    await store.close()
  }, 20_000)

  it('against a server that accepts connections and never answers, createAgent rejects with STORE_TIMEOUT and close() settles', async () => {
    const sockets = new Set<Socket>()
    const silent = createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => {})
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as { port: number }
    const url = `postgres://nobody:secret@127.0.0.1:${port}/nothing`
    try {
      const store = postgresStore({ connectionString: url, connectTimeoutMs: 200 })
      const refused = await createAgent({ model: scriptedModel([]), store, sessionId: 's', logger: quiet }).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(StoreError)
      expect(refused).toMatchObject({ code: 'STORE_TIMEOUT', message: /connect/ })
      await store.close()

      // closed while a connection is still being made: close() settles within its bound, the open fails
      const patient = postgresStore({ connectionString: url, connectTimeoutMs: 120_000, closeTimeoutMs: 200 })
      const opening = createAgent({ model: scriptedModel([]), store: patient, sessionId: 's', logger: quiet }).catch((error: unknown) => error)
      const before = sockets.size
      await until(() => sockets.size > before, 5000, 'the store to reach the silent server')
      await patient.close()
      expect(await opening).toBeInstanceOf(StoreError)

      // with the application's own pool (no connect timeout of its own) the store's bound holds all the same
      const pool = new pg.Pool({ connectionString: url })
      pool.on('error', () => {})
      const shared = postgresStore({ pool, connectTimeoutMs: 200 })
      const refusedShared = await createAgent({ model: scriptedModel([]), store: shared, sessionId: 's', logger: quiet }).catch((error: unknown) => error)
      expect(refusedShared).toMatchObject({ name: 'StoreError', code: 'STORE_TIMEOUT' })
      await shared.close()
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  }, 20_000)
})

describe('closing a PostgreSQL store', () => {
  it('releases the leases of the sessions it opened: another store opens them at once', async () => {
    const url = await createDatabase(server, 'close_releases')
    const first = postgresStore({ connectionString: url })
    const agent = await createAgent({
      model: scriptedModel([textResponse('one')]),
      store: first,
      sessionId: 'chat',
      lease: { leaseMs: 60_000 },
      logger: { error: () => {} },
    })
    await agent.run('hello')
    await first.close()
    const second = postgresStore({ connectionString: url })
    const again = await createAgent({ model: scriptedModel([textResponse('two')]), store: second, sessionId: 'chat', logger: { error: () => {} } })
    expect((await again.run('again')).end).toEqual({ kind: 'completed' })
    await again.dispose()
    await agent.dispose()
    await second.close()
  })

  it("over the application's pool, leaves no connection LISTENing and survives the server dropping every connection later", async () => {
    const url = await createDatabase(server, 'close_listener')
    const pool = new pg.Pool({ connectionString: url, max: 4 })
    pool.on('error', () => {})
    const store = postgresStore({ pool })
    const agent = await createAgent({ model: scriptedModel([textResponse('one')]), store, sessionId: 'chat', logger: { error: () => {} } })
    await agent.run('hello')
    // a watch makes the store LISTEN for commits on one connection of the pool
    const client = createSessionClient({ store })
    const seen: SessionEvent[] = []
    const watching = client.watch('chat').subscribe((event) => seen.push(event))
    await until(() => seen.length === agent.session.length, 5000, 'the watch to catch up')
    watching.unsubscribe()
    await client.close()
    await agent.dispose()
    await store.close()

    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    try {
      const listening = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`)
      expect(listening.rows[0].n).toBe(0)
      // a restart or failover drops every connection the pool still holds: nothing of the closed store may throw then
      const uncaught: unknown[] = []
      const onUncaught = (error: unknown) => uncaught.push(error)
      process.on('uncaughtException', onUncaught)
      try {
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')
        await new Promise((resolve) => setTimeout(resolve, 300))
      } finally {
        process.off('uncaughtException', onUncaught)
      }
      expect(uncaught).toEqual([])
    } finally {
      await admin.end()
      await pool.end()
    }
  })
})

describe('creating a PostgreSQL store from several places at once', () => {
  it('every store succeeds: the tables are made once under an advisory lock, and nothing calls the data damaged', async () => {
    const url = await createDatabase(server, 'created_together')
    const stores = Array.from({ length: 6 }, () => postgresStore({ connectionString: url, schema: 'fresh', max: 1 }))
    const outcomes = await Promise.allSettled(
      stores.map((store, i) => store.open(`session-${i}`, { holder: `creator-${i}` }).then((handle) => handle.release())),
    )
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([])
    expect((await stores[0].list()).map((s) => s.id).sort()).toEqual(['session-0', 'session-1', 'session-2', 'session-3', 'session-4', 'session-5'])
    await Promise.all(stores.map((store) => store.close()))
  })
})

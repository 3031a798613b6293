// SQLite as the embedded default: a killed process loses nothing it had
// committed and the next one repairs and continues; a damaged file is refused
// by seq and its bytes are left exactly as they were.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import BetterSqlite3 from 'better-sqlite3'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createAgent, SessionInUseError, StoredLogError, type Agent, type SessionEvent } from '../../src/index.js'
import { sqliteStore, type SessionHandle, type SessionStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse } from '../../src/testing/index.js'
import { plain, sleep, until } from './support.js'

const dir = mkdtempSync(join(tmpdir(), 'agentchart-sqlite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const child = fileURLToPath(new URL('./crash-child.ts', import.meta.url))
const quiet = { error: () => {} }

/** Runs the crash child until `stop` says so, then kills it with SIGKILL; returns the events it saw acknowledged. */
async function crash(path: string, mode: 'stream' | 'tool', stop: (acknowledged: SessionEvent[], lines: string[]) => boolean): Promise<SessionEvent[]> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, path, 'chat', mode], { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const acknowledged: SessionEvent[] = []
  let stderr = ''
  let partial = ''
  proc.stderr.on('data', (data: Buffer) => (stderr += String(data)))
  proc.stdout.on('data', (data: Buffer) => {
    const text = partial + String(data)
    const parts = text.split('\n')
    partial = parts.pop()!
    for (const line of parts) {
      lines.push(line)
      if (line.startsWith('{')) acknowledged.push(JSON.parse(line) as SessionEvent)
    }
  })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)))
  try {
    await until(() => stop(acknowledged, lines) || proc.exitCode !== null, 20_000, `the child to reach the crash point (${stderr})`)
  } finally {
    proc.kill('SIGKILL')
  }
  expect(await exited).toBe('SIGKILL')
  return acknowledged
}

/** Opens the session again, retrying while the dead child's lease is still live (it lapses after 300 ms). */
async function reopen(store: SessionStore, script = [textResponse('back again')]): Promise<Agent> {
  for (;;) {
    try {
      return await createAgent({ model: scriptedModel(script), store, sessionId: 'chat', logger: quiet })
    } catch (error) {
      if (!(error instanceof SessionInUseError)) throw error
      expect(error.holder).toMatch(/^crash-child-\d+$/)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

describe('a process killed with SIGKILL', () => {
  for (const mode of ['stream', 'tool'] as const) {
    it(`RS-8: mid-${mode}: the next process finds every acknowledged event, closes the turn interrupted, and runs the next followup`, async () => {
      const path = join(dir, `crash-${mode}.db`)
      const acknowledged = await crash(path, mode, (events, lines) =>
        mode === 'stream' ? events.filter((e) => e.type === 'assistant/chunk').length >= 30 : lines.includes('TOOL-RUNNING'),
      )
      const store = sqliteStore({ path })
      const agent = await reopen(store)
      const events = agent.session.events
      expect(plain(events.slice(0, acknowledged.length))).toEqual(plain(acknowledged))
      const ended = events.findLast((e) => e.type === 'turn/end')
      expect(ended?.data).toEqual({ turn: 1, reason: { kind: 'interrupted' } })
      if (mode === 'tool') {
        expect(acknowledged.at(-1)?.type).toBe('tool/call')
        const result = events.find((e) => e.type === 'tool/result')
        expect(result?.data).toMatchObject({ error: { code: 'TOOL_OUTCOME_UNKNOWN' } })
      } else {
        expect(acknowledged.filter((e) => e.type === 'assistant/chunk').length).toBeGreaterThanOrEqual(30)
      }
      expect(checkSessionInvariants(events)).toEqual([])
      agent.followup('are you there?')
      await agent.whenIdle()
      expect(agent.session.events.findLast((e) => e.type === 'turn/end')?.data).toEqual({ turn: 2, reason: { kind: 'completed' } })
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      expect(plain(await store.load('chat'))).toEqual(plain(agent.session.events))
      await agent.dispose()
      await store.close()
    })
  }
})

describe('a damaged SQLite file', () => {
  const fingerprint = (path: string) => ({
    sha: createHash('sha256').update(readFileSync(path)).digest('hex'),
    files: readdirSync(dir)
      .filter((f) => f.startsWith(path.split('/').pop()!))
      .sort(),
  })

  /** A closed file holding a two-turn session, and the session's events. */
  async function written(name: string): Promise<{ path: string; events: readonly SessionEvent[] }> {
    const path = join(dir, name)
    const store = sqliteStore({ path })
    const agent = await createAgent({ model: scriptedModel([textResponse('a'), textResponse('b')]), store, sessionId: 'chat', logger: quiet })
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    await agent.dispose()
    await store.close()
    return { path, events: agent.session.events }
  }

  /** Flips bytes wherever `find` is stored (freed pages may hold stale copies); same length, so pages stay well-formed. */
  function edit(path: string, find: string, replace: string): void {
    expect(replace).toHaveLength(find.length)
    const bytes = readFileSync(path)
    let hits = 0
    for (let at = bytes.indexOf(find); at >= 0; at = bytes.indexOf(find, at + 1), hits++) Buffer.from(replace).copy(bytes, at)
    expect(hits, `${find} is in the file`).toBeGreaterThan(0)
    writeFileSync(path, bytes)
  }

  const cases = [
    {
      what: 'an unknown event type',
      damage: (events: readonly SessionEvent[]) => ({
        seq: events.findLast((e) => e.type === 'turn/start')!.seq,
        find: '"type":"turn/start","data":{"turn":2}',
        replace: '"type":"turn/stXrt","data":{"turn":2}',
        says: /unknown event type "turn\/stXrt"/,
      }),
    },
    {
      what: 'malformed JSON',
      damage: (events: readonly SessionEvent[]) => {
        const seq = events.findLast((e) => e.type === 'step/end')!.seq
        return { seq, find: `{"seq":${seq},"time"`, replace: `["seq":${seq},"time"`, says: /malformed JSON/ }
      },
    },
  ]

  for (const { what, damage } of cases) {
    it(`with ${what} in a row fails the open naming the seq, and its bytes are unchanged afterwards`, async () => {
      const { path, events } = await written(`damaged-${what.replaceAll(' ', '-')}.db`)
      const { seq, find, replace, says } = damage(events)
      edit(path, find, replace)
      const before = fingerprint(path)
      const store = sqliteStore({ path })
      const refused = await createAgent({ model: scriptedModel([]), store, sessionId: 'chat' }).catch((error: unknown) => error)
      await store.close()
      expect(refused).toBeInstanceOf(StoredLogError)
      expect(refused).toMatchObject({ code: 'STORED_LOG_INVALID', sessionId: 'chat', seq })
      expect((refused as Error).message).toMatch(says)
      expect(fingerprint(path)).toEqual(before)
    })
  }

  it('a session id with a lone surrogate is refused by name: its text column would list it as another id', async () => {
    const store = sqliteStore({ path: join(dir, 'ids.db') })
    await expect(store.open('chat-\uD83D')).rejects.toMatchObject({ name: 'ConfigError', path: 'sessionId' })
    const handle = await store.open('chat-\uD83D\uDE00')
    await handle.release()
    expect((await store.list()).map((s) => s.id)).toEqual(['chat-\uD83D\uDE00'])
    expect(await store.load('chat-\uD83D\uDE00')).toEqual([])
    await store.close()
  })

  it('that is not a database at all is refused when the store is made, and left alone', () => {
    const path = join(dir, 'garbage.db')
    writeFileSync(path, Buffer.alloc(8192, 0x5a))
    const before = fingerprint(path)
    expect(() => sqliteStore({ path })).toThrow(StoredLogError)
    expect(() => sqliteStore({ path })).toThrow(/cannot open the SQLite database .*garbage\.db/)
    expect(fingerprint(path)).toEqual(before)
  })
})

/** A child process speaking lines on stdin and stdout. */
function spawnChild(script: string, args: string[], options: { clockSkewMs?: number } = {}) {
  const path = fileURLToPath(new URL(script, import.meta.url))
  const preload = options.clockSkewMs !== undefined ? ['--import', fileURLToPath(new URL('./skewed-clock.ts', import.meta.url))] : []
  const proc = spawn(process.execPath, ['--import', 'tsx', ...preload, path, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, AGENTCHART_TEST_CLOCK_SKEW_MS: String(options.clockSkewMs ?? 0) },
  })
  const lines: string[] = []
  let stderr = ''
  let partial = ''
  proc.stderr.on('data', (data: Buffer) => (stderr += String(data)))
  proc.stdout.on('data', (data: Buffer) => {
    const parts = (partial + String(data)).split('\n')
    partial = parts.pop()!
    lines.push(...parts)
  })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)))
  return { proc, lines, exited, stderr: () => stderr }
}

describe('several processes creating one new SQLite store at once', () => {
  it('all succeed: the schema is created once, in the transaction that checks for it, and no error calls the data damaged', async () => {
    const children = Array.from({ length: 4 }, (_, i) => spawnChild('./create-child.ts', [`creator-${i}`]))
    try {
      await until(() => children.every((c) => c.lines.includes('READY')), 30_000, `the children to start (${children.map((c) => c.stderr()).join('')})`)
      const reports: string[] = []
      for (let round = 0; round < 40; round++) {
        const path = join(dir, `created-${round}.db`)
        for (const c of children) c.proc.stdin.write(`go ${path}\n`)
        await until(() => children.every((c) => c.lines.some((l) => l.endsWith(path) || l.startsWith(`ERR ${path} `))), 20_000, `round ${round}`)
        for (const c of children) reports.push(c.lines.find((l) => l.endsWith(path) || l.startsWith(`ERR ${path} `))!)
      }
      expect(reports.filter((r) => !r.startsWith('OK '))).toEqual([])
      expect(reports).toHaveLength(160)
      // every file holds the four sessions, readable by a fresh store
      const store = sqliteStore({ path: join(dir, 'created-0.db') })
      expect((await store.list()).map((s) => s.id).sort()).toEqual(['session-creator-0', 'session-creator-1', 'session-creator-2', 'session-creator-3'])
      await store.close()
    } finally {
      for (const c of children) c.proc.kill('SIGKILL')
    }
  }, 60_000)
})

describe('SQLite leases when a clock is stepped', () => {
  const hour = 3_600_000

  it('a holder whose clock runs an hour ahead, killed, does not keep its session locked past its lease', async () => {
    const path = join(dir, 'clock-ahead.db')
    const holder = spawnChild('./crash-child.ts', [path, 'chat', 'tool'], { clockSkewMs: hour })
    const store = sqliteStore({ path })
    try {
      await until(() => holder.lines.includes('TOOL-RUNNING'), 20_000, `the holder to run its tool (${holder.stderr()})`)
      // while it lives it holds the session, and the refusal names an expiry within its 300 ms lease, not an hour away
      const refused = await createAgent({ model: scriptedModel([]), store, sessionId: 'chat', logger: quiet }).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(SessionInUseError)
      expect((refused as SessionInUseError).expiresAt - Date.now()).toBeLessThanOrEqual(300)
      holder.proc.kill('SIGKILL')
      expect(await holder.exited).toBe('SIGKILL')
      // an opener whose own clock was stepped an hour back takes the dead holder's session over all the same
      const realNow = Date.now.bind(Date)
      const stepped = vi.spyOn(Date, 'now').mockImplementation(() => realNow() - hour)
      const other = sqliteStore({ path })
      try {
        for (;;) {
          const opened = await other.open('chat', { holder: 'stepped-back' }).catch((error: unknown) => error)
          if (!(opened instanceof SessionInUseError)) {
            expect(opened).toMatchObject({ lease: { holder: 'stepped-back' } })
            await (opened as SessionHandle).release()
            break
          }
          await sleep(50)
        }
      } finally {
        stepped.mockRestore()
        await other.close()
      }
      const agent = await reopen(store)
      expect(agent.session.events.findLast((e) => e.type === 'turn/end')?.data).toEqual({ turn: 1, reason: { kind: 'interrupted' } })
      await agent.dispose()
    } finally {
      holder.proc.kill('SIGKILL')
      await store.close()
    }
  }, 30_000)

  it('a live holder keeps its session though its clock runs an hour behind, or the opener clock an hour ahead', async () => {
    const path = join(dir, 'clock-behind.db')
    const holder = spawnChild('./crash-child.ts', [path, 'chat', 'tool'], { clockSkewMs: -hour })
    const store = sqliteStore({ path })
    try {
      await until(() => holder.lines.includes('TOOL-RUNNING'), 20_000, `the holder to run its tool (${holder.stderr()})`)
      // refused again and again for well over its 300 ms lease: it renews, so it lives
      for (let attempt = 0; attempt < 12; attempt++) {
        const refused = await createAgent({ model: scriptedModel([]), store, sessionId: 'chat', logger: quiet }).catch((error: unknown) => error)
        expect(refused, `attempt ${attempt}`).toBeInstanceOf(SessionInUseError)
        expect((refused as SessionInUseError).holder).toBe(`crash-child-${holder.proc.pid}`)
        await sleep(100)
      }
      // this process's clock stepped an hour forward changes nothing either
      const realNow = Date.now.bind(Date)
      const stepped = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + hour)
      try {
        const other = sqliteStore({ path })
        const refused = await createAgent({ model: scriptedModel([]), store: other, sessionId: 'chat', logger: quiet }).catch((error: unknown) => error)
        await other.close()
        expect(refused).toBeInstanceOf(SessionInUseError)
      } finally {
        stepped.mockRestore()
      }
      expect(holder.proc.exitCode).toBeNull()
    } finally {
      holder.proc.kill('SIGKILL')
      await store.close()
    }
  }, 30_000)
})

describe('closing a SQLite store', () => {
  it('releases the leases of the sessions it opened: another store opens them at once', async () => {
    const path = join(dir, 'closed.db')
    const first = sqliteStore({ path })
    const agent = await createAgent({ model: scriptedModel([textResponse('one')]), store: first, sessionId: 'chat', lease: { leaseMs: 60_000 }, logger: quiet })
    await agent.run('hello')
    await first.close()
    const second = sqliteStore({ path })
    const again = await createAgent({ model: scriptedModel([textResponse('two')]), store: second, sessionId: 'chat', logger: quiet })
    expect((await again.run('again')).end).toEqual({ kind: 'completed' })
    await again.dispose()
    await agent.dispose()
    await second.close()
  })
})

describe('a SQLite file another process keeps locked', () => {
  it('fails an open with STORE_TIMEOUT after busyTimeoutMs, never calling the data damaged, and opens once the lock is gone', async () => {
    const path = join(dir, 'locked.db')
    await sqliteStore({ path }).close()
    const other = new BetterSqlite3(path)
    other.exec('BEGIN IMMEDIATE')
    const store = sqliteStore({ path, busyTimeoutMs: 50 })
    try {
      const refused = await createAgent({ model: scriptedModel([]), store, sessionId: 'chat', logger: quiet }).catch((error: unknown) => error)
      expect(refused).toMatchObject({ name: 'StoreError', code: 'STORE_TIMEOUT', sessionId: 'chat', message: /busyTimeoutMs \(50 ms\)/ })
      other.exec('ROLLBACK')
      const agent = await createAgent({ model: scriptedModel([textResponse('free')]), store, sessionId: 'chat', logger: quiet })
      expect((await agent.run('now?')).end).toEqual({ kind: 'completed' })
      await agent.dispose()
    } finally {
      other.close()
      await store.close()
    }
  })
})

describe('a SQLite file made before lease stamps existed', () => {
  it('gains the stamp columns when a store opens it, judges its old leases by their expiry, and keeps its sessions', async () => {
    const path = join(dir, 'before-stamps.db')
    const old = new BetterSqlite3(path)
    old.exec(`
      CREATE TABLE agentchart_sessions (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
        length INTEGER NOT NULL DEFAULT 0, lease_holder TEXT, lease_token INTEGER NOT NULL DEFAULT 0, lease_expires_at INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE agentchart_events (session_id INTEGER NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
    `)
    const insert = old.prepare(
      'INSERT INTO agentchart_sessions (id, created_at, updated_at, lease_holder, lease_token, lease_expires_at) VALUES (?, 1, 1, ?, 1, ?)',
    )
    insert.run('lapsed', 'gone', Date.now() - 1000)
    insert.run('held', 'alive', Date.now() + 60_000)
    old.close()
    const store = sqliteStore({ path })
    try {
      const opened = await store.open('lapsed', { holder: 'new' })
      expect(opened.lease).toMatchObject({ holder: 'new', token: 2 })
      await opened.release()
      await expect(store.open('held')).rejects.toMatchObject({ code: 'SESSION_IN_USE', holder: 'alive' })
    } finally {
      await store.close()
    }
    const check = new BetterSqlite3(path, { readonly: true })
    const columns = (check.prepare("SELECT name FROM pragma_table_info('agentchart_sessions')").all() as { name: string }[]).map((c) => c.name)
    check.close()
    expect(columns).toEqual(expect.arrayContaining(['lease_beat', 'lease_ms', 'lease_clock', 'lease_boot']))
  })
})

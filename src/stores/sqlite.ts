// sqliteStore({ path }): the embedded default. One file in WAL mode; every
// open and every batch is one IMMEDIATE transaction, so the file's write lock
// and the lease row together keep one driver per session across processes.
import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'
import { AgentchartError, ConfigError, SessionInUseError, StoreError, StoredLogError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'
import { ChunkFolder, checkChunkRetention, type ChunkRetention, type RowPlan } from './fold.js'
import { checkSessionId, leaseRequest } from './lease.js'
import { checkBatch, decodeRows, weaklyHeld, sliceDecoded, type StoredRow } from './rows.js'
import { parseCheckpoint, type StoredCheckpoint } from './checkpoint.js'
import { LeaseWatch, stamp, type LeaseColumns } from './sqlite-lease.js'
import { settled } from './sync.js'
import type { CheckpointText, OpenSessionOptions, SessionHandle, SessionInfo, SessionStore } from './types.js'
import { MAILBOX, type MailboxBackend } from './mailbox.js'
import { sqliteMailbox } from './sqlite-mailbox.js'
import { MAX_TIMER_MS } from '../values/timer.js'

export interface SqliteStoreOptions {
  /** The database file (created if missing); `:memory:` for a private in-memory database. */
  path: string
  /**
   * `normal` (default): a commit survives a crash of the process; WAL mode
   * syncs to disk at checkpoints. `full`: every commit is synced, surviving a
   * power loss too, at the price of an fsync per batch.
   */
  synchronous?: 'normal' | 'full'
  /** How long a transaction waits for another process's write lock, ms (default 5000). */
  busyTimeoutMs?: number
  /** What happens to a finished step's `assistant/chunk` rows (default 'fold'; docs/persistence.md, chunk retention). */
  chunks?: ChunkRetention
}

interface SessionRow extends LeaseColumns {
  key: number
  id: string
  created_at: number
  updated_at: number
  length: number
}

// Events are keyed by the session's integer key, not its id: compact keys and
// one b-tree (WITHOUT ROWID) keep a row's insert cheap on the commit path.
// IF NOT EXISTS: processes creating one new file at once each run this in
// their own IMMEDIATE transaction, and the later ones find the tables made.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS agentchart_sessions (
  key INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  length INTEGER NOT NULL DEFAULT 0,
  lease_holder TEXT,
  lease_token INTEGER NOT NULL DEFAULT 0,
  lease_expires_at INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS agentchart_events (
  session_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  event TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agentchart_checkpoints (
  session_id INTEGER PRIMARY KEY,
  length INTEGER NOT NULL,
  body TEXT NOT NULL
);
`
/** The lease stamps (docs/persistence.md, the lease), added to files made before they existed. */
const STAMP_COLUMNS = {
  lease_beat: 'INTEGER NOT NULL DEFAULT 0',
  lease_ms: 'INTEGER NOT NULL DEFAULT 0',
  lease_clock: 'INTEGER NOT NULL DEFAULT 0',
  lease_boot: 'TEXT',
}

const require = createRequire(import.meta.url)
/** Rows per multi-row INSERT. */
const ROWS = 32

/** better-sqlite3, loaded only when a SQLite store is made, so `import 'agentchart'` never needs it. */
function driver(): typeof BetterSqlite3 {
  try {
    return require('better-sqlite3') as typeof BetterSqlite3
  } catch (error) {
    throw new ConfigError('sqliteStore needs the better-sqlite3 package: npm install better-sqlite3@12 (12.x runs on Node 20)', { cause: error })
  }
}

/** The columns of the sessions table (none when it does not exist). */
function sessionColumns(db: BetterSqlite3.Database): Set<string> {
  return new Set((db.prepare("SELECT name FROM pragma_table_info('agentchart_sessions')").all() as { name: string }[]).map((c) => c.name))
}

/** True when the file holds both tables with the lease stamps: nothing to write before reading. */
function schemaReady(db: BetterSqlite3.Database): boolean {
  const tables = db
    .prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN ('agentchart_sessions', 'agentchart_events', 'agentchart_checkpoints')")
    .get() as {
    n: number
  }
  if (tables.n !== 3) return false
  const columns = sessionColumns(db)
  return Object.keys(STAMP_COLUMNS).every((name) => columns.has(name))
}

/** Creates or completes the schema; the caller holds the write lock, so the check and the change are one step. */
function makeSchema(db: BetterSqlite3.Database): void {
  if (schemaReady(db)) return
  const fresh = sessionColumns(db).size === 0
  db.exec(SCHEMA)
  const columns = sessionColumns(db)
  for (const [name, type] of Object.entries(STAMP_COLUMNS)) if (!columns.has(name)) db.exec(`ALTER TABLE agentchart_sessions ADD COLUMN ${name} ${type}`)
  if (fresh) db.pragma('user_version = 1')
}

/** Sleeps the thread (the store is made synchronously). */
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/** Switches the file to WAL; a process switching the same new file at that moment makes SQLite answer BUSY at once, so wait it out. */
function walMode(db: BetterSqlite3.Database, busyTimeoutMs: number): void {
  const deadline = performance.now() + busyTimeoutMs
  for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
    try {
      db.pragma('journal_mode = WAL')
      return
    } catch (error) {
      if (!isBusy(error) || performance.now() >= deadline) throw error
      pause(wait)
    }
  }
}

const isBusy = (error: unknown) => /^SQLITE_(BUSY|LOCKED)/.test(String((error as { code?: unknown }).code))

/** Why a file could not be opened: only a file SQLite calls damaged is called damaged. */
function openFailure(path: string, busyTimeoutMs: number, error: unknown): AgentchartError {
  const code = String((error as { code?: unknown }).code)
  const message = `cannot open the SQLite database ${path}: ${(error as Error).message}`
  if (/CORRUPT|NOTADB/.test(code)) return new StoredLogError('(store)', -1, message, { cause: error })
  if (isBusy(error)) {
    return new StoreError('STORE_TIMEOUT', '(store)', `${message} (another process held its lock longer than busyTimeoutMs, ${busyTimeoutMs} ms)`, {
      cause: error,
    })
  }
  return new StoreError('STORE_FAULT', '(store)', message, { cause: error })
}

/** A SQLite-backed store; synchronous commits (one transaction per batch) on the agent's own thread. */
export function sqliteStore(options: SqliteStoreOptions): SessionStore {
  if (!options || typeof options.path !== 'string' || options.path === '') throw new ConfigError('sqliteStore needs a path', { path: 'path' })
  const synchronous = options.synchronous ?? 'normal'
  if (synchronous !== 'normal' && synchronous !== 'full') throw new ConfigError("synchronous must be 'normal' or 'full'", { path: 'synchronous' })
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000
  const retention = checkChunkRetention(options.chunks)
  // SQLite's busy handler takes a 32-bit timeout
  if (typeof busyTimeoutMs !== 'number' || !Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > MAX_TIMER_MS) {
    throw new ConfigError(`busyTimeoutMs must be an integer number of milliseconds from 0 to ${MAX_TIMER_MS}, got ${String(busyTimeoutMs)}`, {
      path: 'busyTimeoutMs',
    })
  }
  const Database = driver()
  let db: BetterSqlite3.Database
  try {
    db = new Database(options.path, { timeout: busyTimeoutMs })
  } catch (error) {
    throw openFailure(options.path, busyTimeoutMs, error)
  }
  try {
    walMode(db, busyTimeoutMs)
    db.pragma(`synchronous = ${synchronous.toUpperCase()}`)
    // an existing database is only read here: a store that refuses damaged data must not write before it looks
    if (!schemaReady(db)) db.transaction(() => makeSchema(db)).immediate()
  } catch (error) {
    db.close()
    throw openFailure(options.path, busyTimeoutMs, error)
  }

  const watch = new LeaseWatch()
  /** The leases this store took and still holds: close() gives them up. */
  const held = new Set<{ readonly id: string; readonly token: number }>()
  const q = {
    session: db.prepare<[string], SessionRow>('SELECT * FROM agentchart_sessions WHERE id = ?'),
    events: db.prepare<[number], StoredRow>('SELECT seq, event FROM agentchart_events WHERE session_id = ? ORDER BY seq'),
    create: db.prepare('INSERT INTO agentchart_sessions (id, created_at, updated_at) VALUES (?, ?, ?)'),
    lease: db.prepare(
      'UPDATE agentchart_sessions SET lease_holder = ?, lease_token = ?, lease_expires_at = ?, lease_ms = ?, lease_beat = lease_beat + 1, lease_clock = ?, lease_boot = ? WHERE id = ?',
    ),
    fence: db.prepare(
      'UPDATE agentchart_sessions SET length = length + ?, updated_at = ?, lease_expires_at = ?, lease_beat = lease_beat + 1, lease_clock = ?, lease_boot = ? WHERE key = ? AND lease_token = ? AND length = ?',
    ),
    insert: db.prepare('INSERT INTO agentchart_events (session_id, seq, event) VALUES (?, ?, ?)'),
    replace: db.prepare('UPDATE agentchart_events SET event = ? WHERE session_id = ? AND seq = ?'),
    drop: db.prepare('DELETE FROM agentchart_events WHERE session_id = ? AND seq = ?'),
    // rows go in ROWS at a time: one statement step instead of ROWS (a third off the cost of a streamed step's commit)
    insertMany: db.prepare(`INSERT INTO agentchart_events (session_id, seq, event) VALUES ${Array<string>(ROWS).fill('(?, ?, ?)').join(', ')}`),
    renew: db.prepare(
      'UPDATE agentchart_sessions SET lease_expires_at = ?, lease_beat = lease_beat + 1, lease_clock = ?, lease_boot = ? WHERE id = ? AND lease_token = ?',
    ),
    release: db.prepare('UPDATE agentchart_sessions SET lease_holder = NULL, lease_expires_at = 0 WHERE id = ? AND lease_token = ?'),
    list: db.prepare<[number], SessionRow>('SELECT * FROM agentchart_sessions ORDER BY updated_at DESC LIMIT ?'),
    // the rows holding seqs [from, to): from the row at or before `from` (a folded row starts earlier)
    range: db.prepare<[number, number, number, number], StoredRow>(
      'SELECT seq, event FROM agentchart_events WHERE session_id = ? AND seq >= coalesce((SELECT max(seq) FROM agentchart_events WHERE session_id = ? AND seq <= ?), 0) AND seq < ? ORDER BY seq',
    ),
    checkpoint: db.prepare<[number], { length: number; body: string }>('SELECT length, body FROM agentchart_checkpoints WHERE session_id = ?'),
    saveCheckpoint: db.prepare(
      'INSERT INTO agentchart_checkpoints (session_id, length, body) VALUES (?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET length = excluded.length, body = excluded.body',
    ),
  }

  /** Stored events [from, to) of one session, chunk rows expanded. */
  function readRange(id: string, key: number, from: number, to: number): unknown[] {
    if (to <= from) return []
    let rows: StoredRow[]
    try {
      rows = q.range.all(key, key, from, to)
    } catch (error) {
      throw new StoredLogError(id, from, `the SQLite file is damaged: ${(error as Error).message}`, { cause: error })
    }
    const events = sliceDecoded(id, rows, from, to)
    if (events.length !== to - from) throw new StoredLogError(id, from + events.length, `seq ${from + events.length} is missing`)
    return events
  }

  /** Rows of one session, refusing a damaged file or a log shorter than its session row says. */
  function read(id: string, row: SessionRow | undefined): unknown[] {
    if (row === undefined) return []
    let rows: StoredRow[]
    try {
      rows = q.events.all(row.key)
    } catch (error) {
      throw new StoredLogError(id, -1, `the SQLite file is damaged: ${(error as Error).message}`, { cause: error })
    }
    const events = decodeRows(id, rows)
    if (row.length !== events.length) {
      throw new StoredLogError(id, Math.min(row.length, events.length), `the session row counts ${row.length} events but ${events.length} are stored`)
    }
    return events
  }

  /**
   * The read half of an open, in a read transaction (a WAL snapshot: writers elsewhere go on): the session row,
   * the latest checkpoint if asked for, the log (or its tail after the checkpoint), and the opener's check.
   */
  const readTx = db.transaction((id: string, options: OpenSessionOptions | undefined) => {
    const row = q.session.get(id)
    const left = row ? watch.remaining(id, row) : 0
    if (row && row.lease_holder !== null && left > 0) throw new SessionInUseError(id, row.lease_holder, Date.now() + left)
    const saved = row && options?.checkpoint === true ? q.checkpoint.get(row.key) : undefined
    const parsed = saved === undefined ? undefined : parseCheckpoint(saved.body)
    const from = row && parsed !== undefined && parsed.length <= row.length ? parsed.length : 0
    if (from === 0) {
      const events = read(id, row)
      options?.check?.(events)
      return { row, events, from }
    }
    const key = row!.key
    const events = readRange(id, key, from, row!.length)
    const stored: StoredCheckpoint = { checkpoint: parsed!.value, length: row!.length, read: (start, end) => readRange(id, key, start, end) }
    options?.check?.(events, stored)
    return { row, events, from }
  })

  /** The write half: a short IMMEDIATE transaction that takes the lease if nothing changed since the read (else null: read again). */
  const leaseTx = db.transaction((id: string, seen: SessionRow | undefined, holder: string, leaseMs: number) => {
    const row = q.session.get(id)
    const left = row ? watch.remaining(id, row) : 0
    if (row && row.lease_holder !== null && left > 0) throw new SessionInUseError(id, row.lease_holder, Date.now() + left)
    if ((row === undefined) !== (seen === undefined) || (row !== undefined && (row.length !== seen!.length || row.key !== seen!.key))) return null
    const now = Date.now()
    const key = row ? row.key : Number(q.create.run(id, now, now).lastInsertRowid)
    const token = (row?.lease_token ?? 0) + 1
    const { clock, boot } = stamp()
    q.lease.run(holder, token, now + leaseMs, leaseMs, clock, boot, id)
    return { created: !row, token, expiresAt: now + leaseMs, key }
  })

  /** Reads and checks outside the write lock, then takes the lease; a log that grew meanwhile is read and checked again. */
  function openSession(id: string, holder: string, leaseMs: number, options: OpenSessionOptions | undefined) {
    for (let attempt = 1; ; attempt++) {
      const seen = readTx.deferred(id, options)
      const taken = leaseTx.immediate(id, seen.row, holder, leaseMs)
      if (taken !== null) return { ...taken, events: seen.events, from: seen.from }
      if (attempt >= 5) throw new StoreError('STORE_CONFLICT', id, `session ${id}: the log kept changing while it was opened (${attempt} reads)`)
    }
  }

  const appendTx = db.transaction(
    (
      id: string,
      key: number,
      token: number,
      batch: readonly SessionEvent[],
      leaseMs: number,
      plan: RowPlan,
      mailIds: readonly string[],
      checkpoint: CheckpointText | undefined,
    ) => {
      const now = Date.now()
      const first = batch[0].seq
      const { clock, boot } = stamp()
      if (q.fence.run(batch.length, now, now + leaseMs, clock, boot, key, token, first).changes !== 1) throw refusal(id, token, first)
      mailbox.consumeIn(id, mailIds)
      for (const seq of plan.drop) q.drop.run(key, seq)
      const rows = plan.rows
      let i = 0
      if (rows.length >= ROWS && !rows.some((row) => row.replaces)) {
        const values = new Array<unknown>(ROWS * 3)
        for (; i + ROWS <= rows.length; i += ROWS) {
          for (let j = 0; j < ROWS; j++) {
            const row = rows[i + j]
            values[3 * j] = key
            values[3 * j + 1] = row.seq
            values[3 * j + 2] = row.event
          }
          q.insertMany.run(values)
        }
      }
      for (; i < rows.length; i++) {
        const row = rows[i]
        if (row.replaces) q.replace.run(row.event, key, row.seq)
        else q.insert.run(key, row.seq, row.event)
      }
      if (checkpoint !== undefined && checkpoint.length <= first + batch.length) q.saveCheckpoint.run(key, checkpoint.length, checkpoint.text)
    },
  )

  function refusal(id: string, token: number, first: number): StoreError {
    const row = q.session.get(id)
    if (!row || row.lease_token !== token) {
      return new StoreError(
        'LEASE_LOST',
        id,
        `session ${id}: the lease (token ${token}) was taken over${row ? ` by ${row.lease_holder ?? 'a later opener'} (token ${row.lease_token})` : ''}`,
      )
    }
    return new StoreError('STORE_CONFLICT', id, `session ${id}: the batch starts at seq ${first} but ${row.length} events are stored`)
  }

  const guard = <T>(id: string, work: () => T): T => {
    if (!db.open) throw new StoreError('STORE_CLOSED', id, 'this SQLite store is closed')
    return work()
  }

  const handles = new WeakMap<SessionHandle, { id: string; token: number; key: number }>()
  const infoOf = (row: SessionRow): SessionInfo => {
    const left = watch.remaining(row.id, row)
    return {
      id: row.id,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      length: row.length,
      lease: row.lease_holder !== null && left > 0 ? { holder: row.lease_holder, expiresAt: Date.now() + left } : null,
    }
  }
  const mailbox = sqliteMailbox({
    db,
    watch,
    run: (id, work) => guard(id, () => wrapped(id, busyTimeoutMs, work)),
    info: (id) => {
      const row = q.session.get(id)
      return row === undefined ? undefined : infoOf(row)
    },
    leaseOf: (handle) => {
      const mine = handles.get(handle)
      return mine !== undefined && held.has(mine) ? mine : undefined
    },
    pollMs: 10,
  })

  const store: SessionStore & { [MAILBOX]: MailboxBackend } = {
    [MAILBOX]: mailbox,
    kind: 'sqlite',
    open(sessionId: string, openOptions?: OpenSessionOptions): Promise<SessionHandle> {
      return settled((): SessionHandle => {
        const id = checkSessionId(sessionId)
        const { holder, leaseMs } = leaseRequest(openOptions)
        const opened = guard(id, () => wrapped(id, busyTimeoutMs, () => openSession(id, holder, leaseMs, openOptions)))
        const lease = Object.freeze({ holder, token: opened.token, expiresAt: opened.expiresAt })
        const mine = { id, token: opened.token, key: opened.key }
        held.add(mine)
        const folder = new ChunkFolder(retention, opened.events)
        const { from, key } = opened
        const count = opened.events.length
        const read = (start: number, end: number) => guard(id, () => wrapped(id, busyTimeoutMs, () => readRange(id, key, start, end)))
        const events = weaklyHeld(opened.events, () => read(from, from + count))
        const handle: SessionHandle = {
          sessionId: id,
          created: opened.created,
          get events() {
            return events()
          },
          from,
          read,
          lease,
          append(batch: readonly SessionEvent[], checkpoint?: CheckpointText) {
            if (batch.length === 0) return
            checkBatch(id, batch[0].seq, batch)
            const plan = folder.plan(batch)
            // mailbox rows whose splice is in this batch are deleted by the same transaction
            const riders = mailbox.riding(handle).take(batch[batch.length - 1].seq + 1)
            try {
              guard(id, () => wrapped(id, busyTimeoutMs, () => appendTx.immediate(id, key, lease.token, batch, leaseMs, plan, riders.ids, checkpoint)))
            } catch (error) {
              riders.settle(error)
              throw error
            }
            riders.settle()
            plan.commit()
            mailbox.committed(id)
          },
          renew() {
            return settled(() => {
              const { clock, boot } = stamp()
              const changed = guard(id, () => q.renew.run(Date.now() + leaseMs, clock, boot, id, lease.token).changes)
              if (changed !== 1) throw new StoreError('LEASE_LOST', id, `session ${id}: the lease (token ${lease.token}) was taken over`)
            })
          },
          release() {
            return settled(() => {
              held.delete(mine)
              if (db.open) q.release.run(id, lease.token)
            })
          },
        }
        handles.set(handle, mine)
        return handle
      })
    },
    load(sessionId: string) {
      return settled(() => {
        const id = checkSessionId(sessionId)
        return guard(id, () =>
          wrapped(id, busyTimeoutMs, () =>
            db
              .transaction(() => {
                const row = q.session.get(id)
                return row ? read(id, row) : undefined
              })
              .deferred(),
          ),
        )
      })
    },
    list(listOptions?: { limit?: number }) {
      return settled(() => {
        const rows = guard('(store)', () => q.list.all(listOptions?.limit ?? -1))
        return rows.map(infoOf)
      })
    },
    close() {
      return settled(() => {
        if (!db.open) return
        mailbox.close()
        // the leases this store still holds go with it: the next opener need not wait for them to lapse
        for (const { id, token } of held) {
          try {
            q.release.run(id, token)
          } catch {
            // best effort: an unreleased lease lapses on its own
          }
        }
        held.clear()
        db.close()
      })
    },
  }
  return store
}

/** Our own refusals pass through; a SQLite failure (a damaged file, a busy lock) is named with the session. */
function wrapped<T>(id: string, busyTimeoutMs: number, work: () => T): T {
  try {
    return work()
  } catch (error) {
    if (error instanceof AgentchartError) throw error
    const code = (error as { code?: unknown }).code
    if (typeof code === 'string' && /CORRUPT|NOTADB/.test(code)) {
      throw new StoredLogError(id, -1, `the SQLite file is damaged: ${(error as Error).message}`, { cause: error })
    }
    if (isBusy(error)) {
      throw new StoreError('STORE_TIMEOUT', id, `session ${id}: another process held the SQLite write lock longer than busyTimeoutMs (${busyTimeoutMs} ms)`, {
        cause: error,
      })
    }
    throw new StoreError('STORE_FAULT', id, `session ${id}: SQLite failed: ${(error as Error).message}`, { cause: error })
  }
}

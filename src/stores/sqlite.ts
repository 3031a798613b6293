// sqliteStore({ path }): the embedded default. One file in WAL mode; every
// open and every batch is one IMMEDIATE transaction, so the file's write lock
// and the lease row together keep one driver per session across processes.
import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'
import { AgentchartError, ConfigError, SessionInUseError, StoreError, StoredLogError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'
import { checkSessionId, leaseRequest } from './lease.js'
import { checkBatch, decodeRows, type StoredRow } from './rows.js'
import { settled } from './sync.js'
import type { OpenSessionOptions, SessionHandle, SessionInfo, SessionStore } from './types.js'

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
}

interface SessionRow {
  key: number
  id: string
  created_at: number
  updated_at: number
  length: number
  lease_holder: string | null
  lease_token: number
  lease_expires_at: number
}

// Events are keyed by the session's integer key, not its id: compact keys and
// one b-tree (WITHOUT ROWID) keep a row's insert cheap on the commit path.
const SCHEMA = `
CREATE TABLE agentchart_sessions (
  key INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  length INTEGER NOT NULL DEFAULT 0,
  lease_holder TEXT,
  lease_token INTEGER NOT NULL DEFAULT 0,
  lease_expires_at INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE agentchart_events (
  session_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  event TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
PRAGMA user_version = 1;
`

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

/** A SQLite-backed store; synchronous commits (one transaction per batch) on the agent's own thread. */
export function sqliteStore(options: SqliteStoreOptions): SessionStore {
  if (!options || typeof options.path !== 'string' || options.path === '') throw new ConfigError('sqliteStore needs a path', { path: 'path' })
  const synchronous = options.synchronous ?? 'normal'
  if (synchronous !== 'normal' && synchronous !== 'full') throw new ConfigError("synchronous must be 'normal' or 'full'", { path: 'synchronous' })
  const Database = driver()
  let db: BetterSqlite3.Database
  try {
    db = new Database(options.path, { timeout: options.busyTimeoutMs ?? 5000 })
    db.pragma('journal_mode = WAL')
    db.pragma(`synchronous = ${synchronous.toUpperCase()}`)
    const present = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name LIKE 'agentchart_%'").get() as { n: number }
    // an existing database is only read here: a store that refuses damaged data must not write before it looks
    if (present.n === 0) db.transaction(() => db.exec(SCHEMA)).immediate()
  } catch (error) {
    throw new StoredLogError('(store)', -1, `cannot open the SQLite database ${options.path}: ${(error as Error).message}`, { cause: error })
  }

  const q = {
    session: db.prepare<[string], SessionRow>('SELECT * FROM agentchart_sessions WHERE id = ?'),
    events: db.prepare<[number], StoredRow>('SELECT seq, event FROM agentchart_events WHERE session_id = ? ORDER BY seq'),
    create: db.prepare('INSERT INTO agentchart_sessions (id, created_at, updated_at) VALUES (?, ?, ?)'),
    lease: db.prepare('UPDATE agentchart_sessions SET lease_holder = ?, lease_token = ?, lease_expires_at = ? WHERE id = ?'),
    fence: db.prepare(
      'UPDATE agentchart_sessions SET length = length + ?, updated_at = ?, lease_expires_at = ? WHERE key = ? AND lease_token = ? AND length = ?',
    ),
    insert: db.prepare('INSERT INTO agentchart_events (session_id, seq, event) VALUES (?, ?, ?)'),
    // rows go in ROWS at a time: one statement step instead of ROWS (a third off the cost of a streamed step's commit)
    insertMany: db.prepare(`INSERT INTO agentchart_events (session_id, seq, event) VALUES ${Array<string>(ROWS).fill('(?, ?, ?)').join(', ')}`),
    renew: db.prepare('UPDATE agentchart_sessions SET lease_expires_at = ? WHERE id = ? AND lease_token = ?'),
    release: db.prepare('UPDATE agentchart_sessions SET lease_holder = NULL, lease_expires_at = 0 WHERE id = ? AND lease_token = ?'),
    list: db.prepare<[number], SessionRow>('SELECT * FROM agentchart_sessions ORDER BY updated_at DESC LIMIT ?'),
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

  const openTx = db.transaction((id: string, holder: string, leaseMs: number, check: OpenSessionOptions['check']) => {
    const now = Date.now()
    const row = q.session.get(id)
    if (row && row.lease_holder !== null && row.lease_expires_at > now) throw new SessionInUseError(id, row.lease_holder, row.lease_expires_at)
    const events = read(id, row)
    check?.(events)
    const key = row ? row.key : Number(q.create.run(id, now, now).lastInsertRowid)
    const token = (row?.lease_token ?? 0) + 1
    q.lease.run(holder, token, now + leaseMs, id)
    return { created: !row, events, token, expiresAt: now + leaseMs, key }
  })

  const appendTx = db.transaction((id: string, key: number, token: number, batch: readonly SessionEvent[], leaseMs: number) => {
    const now = Date.now()
    const first = batch[0].seq
    if (q.fence.run(batch.length, now, now + leaseMs, key, token, first).changes !== 1) throw refusal(id, token, first)
    let i = 0
    if (batch.length >= ROWS) {
      const values = new Array<unknown>(ROWS * 3)
      for (; i + ROWS <= batch.length; i += ROWS) {
        for (let j = 0; j < ROWS; j++) {
          const event = batch[i + j]
          values[3 * j] = key
          values[3 * j + 1] = event.seq
          values[3 * j + 2] = JSON.stringify(event)
        }
        q.insertMany.run(values)
      }
    }
    for (; i < batch.length; i++) q.insert.run(key, batch[i].seq, JSON.stringify(batch[i]))
  })

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

  return {
    kind: 'sqlite',
    open(sessionId: string, openOptions?: OpenSessionOptions): Promise<SessionHandle> {
      return settled((): SessionHandle => {
        const id = checkSessionId(sessionId)
        const { holder, leaseMs } = leaseRequest(openOptions)
        const opened = guard(id, () => wrapped(id, () => openTx.immediate(id, holder, leaseMs, openOptions?.check)))
        const lease = Object.freeze({ holder, token: opened.token, expiresAt: opened.expiresAt })
        return {
          sessionId: id,
          created: opened.created,
          events: opened.events,
          lease,
          append(batch: readonly SessionEvent[]) {
            if (batch.length === 0) return
            checkBatch(id, batch[0].seq, batch)
            guard(id, () => appendTx.immediate(id, opened.key, lease.token, batch, leaseMs))
          },
          renew() {
            return settled(() => {
              const changed = guard(id, () => q.renew.run(Date.now() + leaseMs, id, lease.token).changes)
              if (changed !== 1) throw new StoreError('LEASE_LOST', id, `session ${id}: the lease (token ${lease.token}) was taken over`)
            })
          },
          release() {
            return settled(() => {
              if (db.open) q.release.run(id, lease.token)
            })
          },
        }
      })
    },
    load(sessionId: string) {
      return settled(() => {
        const id = checkSessionId(sessionId)
        return guard(id, () =>
          wrapped(id, () =>
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
        const now = Date.now()
        const rows = guard('(store)', () => q.list.all(listOptions?.limit ?? -1))
        return rows.map((row): SessionInfo => ({
          id: row.id,
          createdAt: row.created_at,
          updatedAt: row.updated_at,
          length: row.length,
          lease: row.lease_holder !== null && row.lease_expires_at > now ? { holder: row.lease_holder, expiresAt: row.lease_expires_at } : null,
        }))
      })
    },
    close() {
      if (db.open) db.close()
      return Promise.resolve()
    },
  }
}

/** Our own refusals pass through; a SQLite failure (a damaged file, a busy lock) is named with the session. */
function wrapped<T>(id: string, work: () => T): T {
  try {
    return work()
  } catch (error) {
    if (error instanceof AgentchartError) throw error
    const code = (error as { code?: unknown }).code
    if (typeof code === 'string' && /CORRUPT|NOTADB/.test(code)) {
      throw new StoredLogError(id, -1, `the SQLite file is damaged: ${(error as Error).message}`, { cause: error })
    }
    throw new StoreError('STORE_FAULT', id, `session ${id}: SQLite failed: ${(error as Error).message}`, { cause: error })
  }
}

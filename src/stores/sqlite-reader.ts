// A read-only look into a SQLite store file, for viewers: it never creates,
// migrates or switches the journal mode of what it is pointed at (sqliteStore
// does all three, as a driver must), and it can read a file nobody may write.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import { ConfigError, StoredLogError } from '../errors.js'
import { decodeRows, type StoredRow } from './rows.js'

/** What a viewer reads of a store: its sessions, most recently updated first, and one session's log. */
export interface SqliteReader {
  /** Session ids, most recently updated first. */
  list(limit: number): string[]
  /** The stored log of `sessionId`, undefined when the store has no such session. */
  load(sessionId: string): unknown[] | undefined
  close(): void
}

/** The file cannot be read as an agentchart store: missing, not SQLite, or SQLite without agentchart's tables. */
export class NotAStoreError extends Error {
  constructor(
    readonly path: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`${path} ${detail}`, options)
    this.name = 'NotAStoreError'
  }
}

const require = createRequire(import.meta.url)

interface SessionRow {
  key: number
  length: number
}

/**
 * Opens the SQLite store at `path` for reading only. Why: `agentchart view --store` is shown
 * files it does not own (another application's database, a read-only copy); looking must not write.
 * A store with no `-wal` file beside it (closed, fully checkpointed) is read from a private copy of its file,
 * which then holds the whole log, so nothing is created beside it; a live store is read in place.
 */
export function openSqliteReader(path: string): SqliteReader {
  if (!existsSync(path)) throw new NotAStoreError(path, 'does not exist (no store there)')
  let Database: typeof BetterSqlite3
  try {
    Database = require('better-sqlite3') as typeof BetterSqlite3
  } catch (error) {
    throw new ConfigError('reading a SQLite store needs the better-sqlite3 package: npm install better-sqlite3@12', { cause: error })
  }
  let copyDir: string | undefined
  const open = (file: string): BetterSqlite3.Database => {
    const db = new Database(file, { readonly: true, fileMustExist: true })
    try {
      checkTables(db, path)
      return db
    } catch (error) {
      db.close()
      throw error
    }
  }
  const readCopy = (): BetterSqlite3.Database => {
    copyDir = mkdtempSync(join(tmpdir(), 'agentchart-view-'))
    const copy = join(copyDir, 'store.db')
    try {
      copyFileSync(path, copy)
      return open(copy)
    } catch (retry) {
      rmSync(copyDir, { recursive: true, force: true })
      throw describe(retry, path)
    }
  }
  let db: BetterSqlite3.Database
  // with no -wal beside it the file holds the whole log, and opening it in place would create -wal and -shm files
  // there whenever the process may (root may anywhere): a private copy is read instead
  if (!existsSync(`${path}-wal`)) db = readCopy()
  else {
    // a live store is read in place (its -shm is already there); its -wal holds events a copy of the file would miss
    try {
      db = open(path)
    } catch (error) {
      throw describe(error, path)
    }
  }
  const sessions = db.prepare<[number], { id: string }>('SELECT id FROM agentchart_sessions ORDER BY updated_at DESC LIMIT ?')
  const session = db.prepare<[string], SessionRow>('SELECT key, length FROM agentchart_sessions WHERE id = ?')
  const events = db.prepare<[number], StoredRow>('SELECT seq, event FROM agentchart_events WHERE session_id = ? ORDER BY seq')
  return {
    list: (limit) => sessions.all(limit).map((row) => row.id),
    load(sessionId) {
      const row = session.get(sessionId)
      if (row === undefined) return undefined
      const log = decodeRows(sessionId, events.all(row.key))
      if (row.length !== log.length) {
        throw new StoredLogError(sessionId, Math.min(row.length, log.length), `the session row counts ${row.length} events but ${log.length} are stored`)
      }
      return log
    },
    close() {
      if (db.open) db.close()
      if (copyDir !== undefined) rmSync(copyDir, { recursive: true, force: true })
    },
  }
}

/** Refuses a database that lacks agentchart's tables (reading sqlite_master also proves the file is SQLite). */
function checkTables(db: BetterSqlite3.Database, path: string): void {
  const names = db
    .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('agentchart_sessions', 'agentchart_events')")
    .all()
    .map((row) => row.name)
  if (names.length < 2) {
    const missing = ['agentchart_sessions', 'agentchart_events'].filter((name) => !names.includes(name))
    throw new NotAStoreError(path, `is not an agentchart store: a SQLite database without the table${missing.length > 1 ? 's' : ''} ${missing.join(' and ')}`)
  }
}

/** What went wrong opening `path`, in words a person pointing the viewer at a file understands. */
function describe(error: unknown, path: string): Error {
  if (error instanceof NotAStoreError) return error
  const code = (error as { code?: unknown }).code
  const message = error instanceof Error ? error.message : String(error)
  if (code === 'SQLITE_NOTADB') return new NotAStoreError(path, 'is not an agentchart store: not a SQLite database', { cause: error })
  return new NotAStoreError(path, `cannot be read as a SQLite store: ${message}`, { cause: error })
}

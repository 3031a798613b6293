// The SQLite mailbox: a table in the same file, rows deleted by the commit
// that records them. Processes on one machine hear each other by watching
// the file's data_version; this process's own writes are signalled directly.
import type BetterSqlite3 from 'better-sqlite3'
import { StoreError } from '../errors.js'
import { scanningQueue, SignalHub } from './local-queue.js'
import { MailboxError, RidingMail, wakes, type MailboxBackend, type MailBody, type MailRecord, type SessionQueue } from './mailbox.js'
import type { LeaseColumns, LeaseWatch } from './sqlite-lease.js'
import type { SessionHandle, SessionInfo } from './types.js'
import { decodeRows, type StoredRow } from './rows.js'

const MAIL_SCHEMA = `
CREATE TABLE IF NOT EXISTS agentchart_mail (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  body TEXT NOT NULL,
  wakes INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS agentchart_mail_session ON agentchart_mail (session_id, id);
`

interface SqliteMailboxDeps {
  readonly db: BetterSqlite3.Database
  readonly watch: LeaseWatch
  /** Runs `work` on the open store, naming failures with the session. */
  run<T>(id: string, work: () => T): T
  readonly info: (id: string) => SessionInfo | undefined
  /** The lease token and session key of a handle this store opened and still holds. */
  readonly leaseOf: (handle: SessionHandle) => { token: number; key: number } | undefined
  /** How often other processes' writes are looked for, ms. */
  readonly pollMs: number
}

interface SqliteMailbox extends MailboxBackend {
  riding(handle: SessionHandle): RidingMail
  /** Deletes consumed rows inside the caller's transaction. */
  consumeIn(sessionId: string, ids: readonly string[]): void
  /** This process committed to `sessionId`. */
  committed(sessionId: string): void
  close(): void
}

export function sqliteMailbox(deps: SqliteMailboxDeps): SqliteMailbox {
  const { db } = deps
  const signals = new SignalHub()
  const rides = new WeakMap<SessionHandle, RidingMail>()
  let statements: ReturnType<typeof prepare> | undefined
  let poller: ReturnType<typeof setInterval> | null = null
  /** Subscribers that keep the process alive while they listen. */
  let keepers = 0
  let version = -1
  let lastMail = 0
  const lengths = new Map<string, number>()
  let queue: SessionQueue | undefined

  function prepare() {
    const table = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'agentchart_mail'").get() as { n: number }
    if (table.n === 0) db.transaction(() => db.exec(MAIL_SCHEMA)).immediate()
    return {
      session: db.prepare<[string], LeaseColumns & { key: number }>('SELECT * FROM agentchart_sessions WHERE id = ?'),
      insert: db.prepare('INSERT INTO agentchart_mail (session_id, body, wakes, created_at) VALUES (?, ?, ?, ?)'),
      pending: db.prepare<[string], { id: number; body: string }>('SELECT id, body FROM agentchart_mail WHERE session_id = ? ORDER BY id'),
      count: db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM agentchart_mail WHERE session_id = ?'),
      remove: db.prepare('DELETE FROM agentchart_mail WHERE id = ? AND session_id = ?'),
      token: db.prepare<[string], { lease_token: number }>('SELECT lease_token FROM agentchart_sessions WHERE id = ?'),
      newMail: db.prepare<[number], { id: number; session_id: string }>('SELECT id, session_id FROM agentchart_mail WHERE id > ? ORDER BY id'),
      tail: db.prepare<[number, number, number], StoredRow>(
        `SELECT seq, event FROM agentchart_events WHERE session_id = ?
           AND seq >= coalesce((SELECT max(seq) FROM agentchart_events WHERE session_id = ? AND seq <= ?), 0) ORDER BY seq`,
      ),
      lengths: db.prepare<[], { id: string; length: number }>('SELECT id, length FROM agentchart_sessions'),
      candidates: db.prepare<[number, string], LeaseColumns & { id: string; lease_holder: string | null; waking: number }>(
        `SELECT s.*, EXISTS (SELECT 1 FROM agentchart_mail m WHERE m.session_id = s.id AND m.wakes = 1) AS waking FROM agentchart_sessions s
         WHERE EXISTS (SELECT 1 FROM agentchart_mail m WHERE m.session_id = s.id AND m.wakes = 1)
            OR (s.lease_holder IS NOT NULL AND substr(s.lease_holder, 1, ?) = ?)
         ORDER BY s.updated_at`,
      ),
    }
  }
  const sql = () => (statements ??= prepare())

  /** Other processes' commits and mail, found by the file's data_version (it moves only for other connections). */
  function poll(): void {
    if (!db.open) return
    try {
      const now = db.pragma('data_version', { simple: true }) as number
      if (now === version) return
      version = now
      const s = sql()
      for (const row of s.newMail.all(lastMail)) {
        lastMail = Math.max(lastMail, row.id)
        signals.emit({ kind: 'mail', sessionId: row.session_id })
      }
      for (const row of s.lengths.all()) {
        if (lengths.get(row.id) === row.length) continue
        lengths.set(row.id, row.length)
        signals.emit({ kind: 'commit', sessionId: row.id })
      }
    } catch {
      // a busy file is looked at again on the next tick
    }
  }

  const parse = (sessionId: string, row: { id: number; body: string }): MailRecord => ({
    id: String(row.id),
    sessionId,
    body: JSON.parse(row.body) as MailBody,
  })

  const mailbox: SqliteMailbox = {
    post(sessionId, body) {
      return Promise.resolve().then(() =>
        deps.run(sessionId, () => {
          const s = sql()
          const posted = db
            .transaction(() => {
              const row = s.session.get(sessionId)
              if (row === undefined) return undefined
              const id = Number(s.insert.run(sessionId, JSON.stringify(body), wakes(body) ? 1 : 0, Date.now()).lastInsertRowid)
              const held = row.lease_holder !== null && deps.watch.remaining(sessionId, row) > 0
              return { id: String(id), held }
            })
            .immediate()
          if (posted === undefined) throw new MailboxError('SESSION_UNKNOWN', `no session ${sessionId} in this SQLite store`, { path: 'sessionId' })
          signals.emit({ kind: 'mail', sessionId })
          return { id: posted.id, sessionId, body, held: posted.held }
        }),
      )
    },
    tail: (sessionId, fromSeq) =>
      Promise.resolve().then(() =>
        deps.run(sessionId, () =>
          db
            .transaction(() => {
              const row = sql().session.get(sessionId) as (LeaseColumns & { key: number; length: number }) | undefined
              if (row === undefined) return undefined
              const rows = sql().tail.all(row.key, row.key, fromSeq)
              const first = rows.length > 0 ? Number(rows[0].seq) : row.length
              return decodeRows(sessionId, rows, first).slice(Math.max(0, fromSeq - first))
            })
            .deferred(),
        ),
      ),
    pending: (sessionId) =>
      Promise.resolve().then(() =>
        deps.run(sessionId, () =>
          sql()
            .pending.all(sessionId)
            .map((row) => parse(sessionId, row)),
        ),
      ),
    pendingCount: (sessionId) => Promise.resolve().then(() => deps.run(sessionId, () => sql().count.get(sessionId)!.n)),
    info: (sessionId) => Promise.resolve().then(() => deps.run(sessionId, () => deps.info(sessionId))),
    held(handle) {
      const riding = mailbox.riding(handle)
      const id = handle.sessionId
      return {
        expect: (ids, length) =>
          riding.expect(ids, length, (alone) =>
            Promise.resolve().then(() =>
              deps.run(id, () => {
                const lease = deps.leaseOf(handle)
                if (lease === undefined) throw new StoreError('LEASE_LOST', id, `session ${id}: the handle was released`)
                db.transaction(() => {
                  if (sql().token.get(id)?.lease_token !== lease.token) throw new StoreError('LEASE_LOST', id, `session ${id}: the lease was taken over`)
                  mailbox.consumeIn(id, alone)
                }).immediate()
              }),
            ),
          ),
      }
    },
    riding(handle) {
      let riding = rides.get(handle)
      if (riding === undefined) rides.set(handle, (riding = new RidingMail()))
      return riding
    },
    consumeIn(sessionId, ids) {
      if (ids.length === 0) return
      const s = sql()
      for (const id of ids) s.remove.run(Number(id), sessionId)
    },
    committed(sessionId) {
      signals.emit({ kind: 'commit', sessionId })
    },
    subscribe(listener, options) {
      const off = signals.subscribe(listener)
      const keepAlive = options?.keepAlive !== false
      if (keepAlive) keepers++
      if (poller === null) {
        poll()
        poller = setInterval(poll, deps.pollMs)
      }
      // like a LISTEN connection, a subscription that asks to keeps the process serving
      if (keepers === 0) poller.unref()
      else poller.ref()
      let subscribed = true
      return () => {
        if (!subscribed) return
        subscribed = false
        off()
        if (keepAlive) keepers--
        if (signals.size === 0 && poller !== null) {
          clearInterval(poller)
          poller = null
        } else if (keepers === 0) poller?.unref()
      }
    },
    ready: () => Promise.resolve(),
    orphans(workerPrefix, limit, sessionId) {
      return Promise.resolve().then(() =>
        deps.run('(store)', () =>
          sql()
            .candidates.all(workerPrefix.length, workerPrefix)
            .filter((row) => (sessionId === undefined || row.id === sessionId) && (row.lease_holder === null || deps.watch.remaining(row.id, row) <= 0))
            .slice(0, limit)
            .map((row) => row.id),
        ),
      )
    },
    queue: () => (queue ??= scanningQueue(() => mailbox, 25)),
    close() {
      if (poller !== null) clearInterval(poller)
      poller = null
    },
  }
  return mailbox
}

// The PostgreSQL mailbox: a table of rows written with pg_notify in one
// statement, a trigger that signals every commit of a log, and one LISTEN
// connection per store that turns both into live signals.
import { StoreError } from '../errors.js'
import type { SessionHandle, SessionInfo } from './types.js'
import { MailboxError, RidingMail, wakes, type HeldMail, type MailBody, type MailboxBackend, type MailRecord, type StoreSignal } from './mailbox.js'
import type { PgPoolLike, PgQueryable } from './postgres-pool.js'
import { decodeRows, type StoredRow } from './rows.js'

const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint'

/** The statements that add the mailbox to a schema (run inside the store's migration transaction). */
export function mailboxDdl(schema: string): string[] {
  const mail = `"${schema}".agentchart_mail`
  const sessions = `"${schema}".agentchart_sessions`
  return [
    `CREATE TABLE IF NOT EXISTS ${mail} (
      id bigserial PRIMARY KEY,
      session_id text NOT NULL,
      body text NOT NULL,
      wakes boolean NOT NULL,
      created_at bigint NOT NULL,
      consumed_at bigint,
      consumed_token bigint)`,
    `CREATE INDEX IF NOT EXISTS agentchart_mail_pending ON ${mail} (session_id, id) WHERE consumed_at IS NULL`,
    `CREATE OR REPLACE FUNCTION "${schema}".agentchart_signal_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.length <> OLD.length THEN PERFORM pg_notify('${channel(schema)}', 'c' || NEW.id); END IF;
        RETURN NEW;
      END $$`,
    `CREATE OR REPLACE TRIGGER agentchart_signal_commit AFTER UPDATE OF length ON ${sessions}
      FOR EACH ROW EXECUTE FUNCTION "${schema}".agentchart_signal_commit()`,
  ]
}

/** The notification channel of a schema's sessions. */
function channel(schema: string): string {
  return `agentchart_${schema}`.slice(0, 63).toLowerCase()
}

/** What the mailbox borrows from its store. */
interface PostgresMailboxDeps {
  readonly pool: PgPoolLike
  readonly schema: string
  /** A transaction of the store's own (bounded, wrapped in StoreErrors). */
  run<T>(id: string, what: string, work: (client: PgQueryable) => Promise<T>): Promise<T>
  readonly toInfo: (row: any) => SessionInfo
  /** Refuses with STORE_CLOSED once the store is closed. */
  readonly assertOpen: (id: string) => void
  /** The lease token of a handle this store opened. */
  readonly tokenOf: (handle: SessionHandle) => number | undefined
}

export interface PostgresMailbox extends Omit<MailboxBackend, 'queue'> {
  /** The consumption riding on a handle's next commits. */
  riding(handle: SessionHandle): RidingMail
  /** Ends the LISTEN connection. */
  close(): Promise<void>
}

type ListenClient = PgQueryable & { release(error?: Error | boolean): void; on(event: string, listener: (...args: any[]) => void): void }

export function postgresMailbox(deps: PostgresMailboxDeps): PostgresMailbox {
  const { schema } = deps
  const mail = `"${schema}".agentchart_mail`
  const sessions = `"${schema}".agentchart_sessions`
  const chan = channel(schema)
  const rides = new WeakMap<SessionHandle, RidingMail>()
  const listeners = new Set<(signal: StoreSignal) => void>()
  let listening: Promise<void> | null = null
  /** Gives the LISTEN connection back, once: pg-pool throws on a second release, and an error may follow a close. */
  let releaseListener: (() => void) | null = null
  let closed = false

  const sql = {
    post: `WITH s AS (SELECT id, lease_holder, lease_expires_at, ${NOW_MS} AS now FROM ${sessions} WHERE id = $1 FOR SHARE),
           r AS (INSERT INTO ${mail} (session_id, body, wakes, created_at) SELECT s.id, $2, $3, ${NOW_MS} FROM s RETURNING id, session_id)
           SELECT r.id::text AS id, (s.lease_holder IS NOT NULL AND s.lease_expires_at > s.now) AS held, pg_notify($4, 'm' || r.session_id) FROM r, s`,
    pending: `SELECT id::text AS id, body FROM ${mail} WHERE session_id = $1 AND consumed_at IS NULL ORDER BY id`,
    consume: `UPDATE ${mail} SET consumed_at = ${NOW_MS}, consumed_token = $3
              WHERE session_id = $1 AND id = ANY($2::bigint[]) AND consumed_at IS NULL
                AND EXISTS (SELECT 1 FROM ${sessions} WHERE id = $1 AND lease_token = $3)`,
    length: `SELECT length FROM ${sessions} WHERE id = $1`,
    tail: `SELECT seq, event FROM "${schema}".agentchart_events WHERE session_id = $1
             AND seq >= coalesce((SELECT max(seq) FROM "${schema}".agentchart_events WHERE session_id = $1 AND seq <= $2), 0) ORDER BY seq`,
    count: `SELECT count(*)::int AS n FROM ${mail} WHERE session_id = $1 AND consumed_at IS NULL`,
    info: `SELECT *, ${NOW_MS} AS now FROM ${sessions} WHERE id = $1`,
    orphans: `SELECT s.id FROM ${sessions} s, (SELECT ${NOW_MS} AS now) t
              WHERE (s.lease_holder IS NULL OR s.lease_expires_at <= t.now)
                AND (EXISTS (SELECT 1 FROM ${mail} m WHERE m.session_id = s.id AND m.consumed_at IS NULL AND m.wakes)
                     OR (s.lease_holder IS NOT NULL AND starts_with(s.lease_holder, $1)))
                AND ($3::text IS NULL OR s.id = $3)
              ORDER BY s.updated_at LIMIT $2`,
  }

  function emit(signal: StoreSignal): void {
    for (const listener of [...listeners]) {
      try {
        listener(signal)
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** One connection LISTENs for the store; a lost one is replaced, and everyone re-reads what they follow. */
  function listen(): Promise<void> {
    listening ??= (async () => {
      const connected = (await deps.pool.connect()) as ListenClient
      if (closed) {
        connected.release()
        return
      }
      let released = false
      // destroyed rather than pooled: the connection LISTENs, and no other query should inherit that
      const release = () => {
        if (released) return
        released = true
        connected.release(true)
      }
      releaseListener = release
      connected.on('notification', (message: { channel: string; payload?: string }) => {
        if (message.channel !== chan || !message.payload) return
        emit({ kind: message.payload[0] === 'm' ? 'mail' : 'commit', sessionId: message.payload.slice(1) })
      })
      connected.on('error', () => {
        const current = releaseListener === release
        release()
        // a connection already given back (the mailbox closed, or it was replaced) has nothing left to replace
        if (!current) return
        releaseListener = null
        listening = null
        if (closed) return
        setTimeout(() => {
          if (closed || listeners.size === 0) return
          listen().then(
            () => emit({ kind: 'mail', sessionId: '*' }),
            () => {},
          )
        }, 100).unref()
      })
      await connected.query(`LISTEN "${chan}"`)
    })().catch((error: unknown) => {
      listening = null
      throw error
    })
    return listening
  }

  const parse = (sessionId: string, row: { id: string; body: string }): MailRecord => ({ id: row.id, sessionId, body: JSON.parse(row.body) as MailBody })

  return {
    async post(sessionId, body) {
      deps.assertOpen(sessionId)
      const found = await deps.run(sessionId, 'posting mail', (db) => db.query(sql.post, [sessionId, JSON.stringify(body), wakes(body), chan]))
      const row = found.rows[0] as { id: string; held: boolean } | undefined
      if (row === undefined) throw new MailboxError('SESSION_UNKNOWN', `no session ${sessionId} in this PostgreSQL store`, { path: 'sessionId' })
      return { id: row.id, sessionId, body, held: row.held }
    },
    async tail(sessionId, fromSeq) {
      deps.assertOpen(sessionId)
      return deps.run(sessionId, 'reading the log', async (db) => {
        try {
          // one snapshot for the length and the rows
          await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
          const found = (await db.query(sql.length, [sessionId])).rows[0] as { length: number } | undefined
          const rows = found === undefined ? [] : ((await db.query(sql.tail, [sessionId, fromSeq])).rows as StoredRow[])
          await db.query('COMMIT')
          if (found === undefined) return undefined
          // the first row may be a folded run that starts before fromSeq
          const first = rows.length > 0 ? Number(rows[0].seq) : found.length
          return decodeRows(sessionId, rows, first).slice(Math.max(0, fromSeq - first))
        } catch (error) {
          await db.query('ROLLBACK').catch(() => {})
          throw error
        }
      })
    },
    async pending(sessionId) {
      deps.assertOpen(sessionId)
      const found = await deps.run(sessionId, 'reading mail', (db) => db.query(sql.pending, [sessionId]))
      return (found.rows as { id: string; body: string }[]).map((row) => parse(sessionId, row))
    },
    async pendingCount(sessionId) {
      deps.assertOpen(sessionId)
      const found = await deps.run(sessionId, 'counting mail', (db) => db.query(sql.count, [sessionId]))
      return (found.rows[0] as { n: number }).n
    },
    async info(sessionId) {
      deps.assertOpen(sessionId)
      const found = await deps.run(sessionId, 'reading the session', (db) => db.query(sql.info, [sessionId]))
      return found.rows[0] === undefined ? undefined : deps.toInfo(found.rows[0])
    },
    held(handle): HeldMail {
      const id = handle.sessionId
      const riding = this.riding(handle)
      return {
        expect: (ids, length) =>
          riding.expect(ids, length, async (alone) => {
            const token = deps.tokenOf(handle)
            if (token === undefined) throw new StoreError('LEASE_LOST', id, `session ${id}: the handle was released`)
            await deps.run(id, 'consuming mail', (db) => db.query(sql.consume, [id, alone, token]))
          }),
      }
    },
    riding(handle) {
      let riding = rides.get(handle)
      if (riding === undefined) rides.set(handle, (riding = new RidingMail()))
      return riding
    },
    subscribe(listener) {
      listeners.add(listener)
      listen().catch(() => {})
      return () => listeners.delete(listener)
    },
    ready: () => listen(),
    async orphans(workerPrefix, limit, sessionId) {
      deps.assertOpen('(store)')
      const found = await deps.run('(store)', 'finding sessions without a driver', (db) => db.query(sql.orphans, [workerPrefix, limit, sessionId ?? null]))
      return (found.rows as { id: string }[]).map((row) => row.id)
    },
    close() {
      closed = true
      listeners.clear()
      releaseListener?.()
      releaseListener = null
      return Promise.resolve()
    },
  }
}

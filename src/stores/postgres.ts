// postgresStore({ connectionString | pool }): many processes or machines
// sharing sessions. Leases use the server's clock; a commit is one statement
// (a fencing UPDATE feeding the INSERT), so a writer whose lease was taken
// over can never add a row, and a retried commit can never add one twice.
import { createRequire } from 'node:module'
import { AgentchartError, ConfigError, SessionInUseError, StoreError, StoredLogError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'
import { ChunkFolder, checkChunkRetention, type ChunkRetention, type RowPlan } from './fold.js'
import { checkSessionId, leaseRequest } from './lease.js'
import { checkBatch, decodeRows, weaklyHeld, type StoredRow } from './rows.js'
import type { CheckpointText, OpenSessionOptions, SessionHandle, SessionInfo, SessionStore } from './types.js'
import { checkpointLength, parseCheckpoint, type StoredCheckpoint } from './checkpoint.js'
import { MAILBOX, type MailboxBackend } from './mailbox.js'
import { mailboxDdl, postgresMailbox } from './postgres-mailbox.js'
import type { PgPoolLike, PgQueryable } from './postgres-pool.js'
import { postgresQueue } from './postgres-queue.js'
import { openRead, postgresReader, readerConnection } from './postgres-reader.js'

export type PostgresStoreOptions = ({ connectionString: string; pool?: undefined } | { pool: PgPoolLike; connectionString?: undefined }) & {
  /** Schema of the two tables (default `public`; created if missing). */
  schema?: string
  /** Pool size when the store makes the pool (default 10). */
  max?: number
  /** Extra attempts of a commit that failed on a broken connection (default 2; a retry can never write twice). */
  retries?: number
  /** How long getting a connection may take, ms (default 5000); past it the operation fails with STORE_TIMEOUT. */
  connectTimeoutMs?: number
  /**
   * How long a commit may take, retries included, ms (default 10 000); the same bound holds every other
   * transaction of the store (open, load, list, renew, release). Past it the operation fails with
   * STORE_TIMEOUT and its connection is dropped; a commit that fails so halts its session.
   */
  commitTimeoutMs?: number
  /** How long close() waits to release its leases and end its connections, ms (default 5000); then it drops them. */
  closeTimeoutMs?: number
  /** What happens to a finished step's `assistant/chunk` rows (default 'fold'; docs/persistence.md, chunk retention). */
  chunks?: ChunkRetention
}

/** The bounds of every store operation when the options do not say. */
const POSTGRES_TIMEOUTS = { connectTimeoutMs: 5000, commitTimeoutMs: 10_000, closeTimeoutMs: 5000 } as const

interface SessionRow {
  id: string
  created_at: string
  updated_at: string
  length: number
  lease_holder: string | null
  lease_token: string
  lease_expires_at: string
  now: string
}

const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint'
const require = createRequire(import.meta.url)

/** `pg`, loaded only when a store makes its own pool, so `import 'agentchart'` never needs it. */
function makePool(connectionString: string, max: number, connectTimeoutMs: number): PgPoolLike {
  let pg: { Pool: new (config: object) => PgPoolLike & { on(event: 'error', listener: (error: Error) => void): void } }
  try {
    pg = require('pg') as typeof pg
  } catch (error) {
    throw new ConfigError('postgresStore needs the pg package: npm install pg', { cause: error })
  }
  // pg's own connect timer destroys the socket of a server that never answers (ours only stops waiting)
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: connectTimeoutMs })
  // an idle client dropped by the server must not crash the process; the next query reconnects
  pool.on('error', () => {})
  return pool
}

/** Errors after which the statement may or may not have run: safe to retry because commits are fenced by length. */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || /^E(CONN|PIPE|TIMEDOUT)/.test(code))) {
    return true
  }
  return /Connection terminated|Client has encountered a connection error|connection timeout/i.test(String((error as Error)?.message))
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const noop = () => {}

/** A bound in ms: a positive safe integer, else a ConfigError naming the option. */
function bound(options: PostgresStoreOptions, name: keyof typeof POSTGRES_TIMEOUTS): number {
  const value = options[name] ?? POSTGRES_TIMEOUTS[name]
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigError(`${name} must be a positive integer number of milliseconds, got ${String(value)}`, { path: name })
  }
  return value
}

type PgClient = PgQueryable & { release(error?: Error | boolean): void }

/** Settles like `work`, or rejects with `timeout()` once `ms` pass first. */
function within<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const lapsed = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(timeout()), ms)))
  return Promise.race([work, lapsed]).finally(() => clearTimeout(timer))
}

/** A PostgreSQL-backed store over `pg`: commits are asynchronous, one round trip per batch. */
export function postgresStore(options: PostgresStoreOptions): SessionStore {
  if (!options || typeof options !== 'object') throw new ConfigError('postgresStore needs { connectionString } or { pool }')
  const schema = options.schema ?? 'public'
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema))
    throw new ConfigError(`schema must be a plain SQL identifier, got ${JSON.stringify(schema)}`, { path: 'schema' })
  const retries = options.retries ?? 2
  const retention = checkChunkRetention(options.chunks)
  const connectTimeoutMs = bound(options, 'connectTimeoutMs')
  const commitTimeoutMs = bound(options, 'commitTimeoutMs')
  const closeTimeoutMs = bound(options, 'closeTimeoutMs')
  const owned = options.pool === undefined
  if (owned && (typeof options.connectionString !== 'string' || options.connectionString === '')) {
    throw new ConfigError('postgresStore needs a connectionString or a pool', { path: 'connectionString' })
  }
  const pool: PgPoolLike = options.pool ?? makePool(options.connectionString, options.max ?? 10, connectTimeoutMs)
  const sessions = `"${schema}".agentchart_sessions`
  const events = `"${schema}".agentchart_events`
  const mailTable = `"${schema}".agentchart_mail`
  const checkpoints = `"${schema}".agentchart_checkpoints`
  // sessions read their trimmed events back through it; without one (a pool whose settings cannot cross threads) they keep their log
  const connection = readerConnection(options.connectionString, options.pool)
  const reader = connection && postgresReader({ connection, events, connectTimeoutMs, readTimeoutMs: commitTimeoutMs })
  let closed = false
  let closing: Promise<void> | null = null
  let ready: Promise<void> | null = null
  /** Clients checked out now: close() drops those still busy when its bound runs out. */
  const busy = new Set<PgClient>()
  /** The leases this store took and still holds: close() gives them up. */
  const held = new Set<{ readonly id: string; readonly token: number }>()
  /** Rejects once close() is done: a connection still awaited then is not waited for any longer. */
  let shut: (error: Error) => void = noop
  const shutDown = new Promise<never>((_, reject) => (shut = reject))
  shutDown.catch(noop)

  /**
   * Runs `work` on a client of its own before `deadline` (performance.now() ms). A client whose work outlives
   * the deadline is dropped (released with an error, which ends its connection), so a statement stuck on a
   * lock or a server that stopped answering cannot hold the caller.
   */
  async function withClient<T>(id: string, what: string, deadline: number, work: (client: PgQueryable) => Promise<T>): Promise<T> {
    const connectMs = Math.max(1, Math.min(connectTimeoutMs, deadline - performance.now()))
    const connecting = pool.connect()
    let client: PgClient
    try {
      client = await within(
        Promise.race([connecting, shutDown]),
        connectMs,
        () => new StoreError('STORE_TIMEOUT', id, `session ${id}: connecting to PostgreSQL took longer than ${connectMs} ms (connectTimeoutMs)`),
      )
    } catch (error) {
      // a connection that arrives after we gave up goes straight back
      connecting.then((late) => late.release(), noop)
      throw error
    }
    busy.add(client)
    let dropped = false
    const running = work(client)
    running.catch(noop) // past the deadline nobody awaits it; its connection is being dropped
    try {
      return await within(running, Math.max(1, deadline - performance.now()), () => {
        dropped = true
        return new StoreError('STORE_TIMEOUT', id, `session ${id}: ${what} took longer than commitTimeoutMs (${commitTimeoutMs} ms)`)
      })
    } finally {
      // close() may have dropped it already
      if (busy.delete(client)) client.release(dropped ? new Error(`agentchart: ${what} timed out`) : undefined)
    }
  }

  /** One transaction's bound from now. */
  const due = () => performance.now() + commitTimeoutMs

  const sql = {
    create: `INSERT INTO ${sessions} (id, created_at, updated_at) VALUES ($1, ${NOW_MS}, ${NOW_MS}) ON CONFLICT (id) DO NOTHING RETURNING id`,
    lock: `SELECT *, ${NOW_MS} AS now FROM ${sessions} WHERE id = $1 FOR UPDATE`,
    session: `SELECT *, ${NOW_MS} AS now FROM ${sessions} WHERE id = $1`,
    events: `SELECT seq, event FROM ${events} WHERE session_id = $1 ORDER BY seq`,
    lease: `UPDATE ${sessions} SET lease_holder = $2, lease_token = lease_token + 1, lease_expires_at = ${NOW_MS} + $3 WHERE id = $1
            RETURNING lease_token, lease_expires_at`,
    append: `WITH fence AS (
               UPDATE ${sessions} SET length = length + $4, updated_at = ${NOW_MS}, lease_expires_at = ${NOW_MS} + $5
               WHERE id = $1 AND lease_token = $2 AND length = $3 RETURNING id)
             , dropped AS (DELETE FROM ${events} WHERE session_id = (SELECT id FROM fence) AND seq = ANY($9::int[]))
             , consumed AS (UPDATE ${mailTable} SET consumed_at = ${NOW_MS}, consumed_token = $2
                            WHERE session_id = (SELECT id FROM fence) AND id = ANY($10::bigint[]) AND consumed_at IS NULL)
             , saved AS (INSERT INTO ${checkpoints} (session_id, length, body) SELECT fence.id, $11::int, $12::text FROM fence WHERE $12::text IS NOT NULL
                         ON CONFLICT (session_id) DO UPDATE SET length = EXCLUDED.length, body = EXCLUDED.body)
             INSERT INTO ${events} (session_id, seq, type, event)
             SELECT fence.id, u.seq, u.type, u.event FROM fence, unnest($6::int[], $7::text[], $8::text[]) AS u(seq, type, event)
             ON CONFLICT (session_id, seq) DO UPDATE SET type = EXCLUDED.type, event = EXCLUDED.event`,
    renew: `UPDATE ${sessions} SET lease_expires_at = ${NOW_MS} + $3 WHERE id = $1 AND lease_token = $2`,
    release: `UPDATE ${sessions} SET lease_holder = NULL, lease_expires_at = 0 WHERE id = $1 AND lease_token = $2`,
    list: `SELECT *, ${NOW_MS} AS now FROM ${sessions} ORDER BY updated_at DESC LIMIT $1`,
    checkpoint: `SELECT body FROM ${checkpoints} WHERE session_id = $1`,
    // the rows from the one holding seq $2 (a folded row starts earlier) to the end
  }

  /** A statement `pg` prepares once per connection (named by schema, so two stores on one pool do not clash). */
  const prepared = (key: keyof typeof sql) => ({ name: `agentchart_${schema}_${key}`, text: sql[key] })

  /** Creates the tables once per store; concurrent processes serialize on an advisory lock. */
  function migrate(id: string): Promise<void> {
    ready ??= withClient(id, 'creating the tables', due(), async (client) => {
      try {
        await client.query('BEGIN')
        await client.query("SELECT pg_advisory_xact_lock(hashtext('agentchart schema'))")
        if (schema !== 'public') await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`)
        await client.query(`CREATE TABLE IF NOT EXISTS ${sessions} (
          id text PRIMARY KEY,
          created_at bigint NOT NULL,
          updated_at bigint NOT NULL,
          length integer NOT NULL DEFAULT 0,
          lease_holder text,
          lease_token bigint NOT NULL DEFAULT 0,
          lease_expires_at bigint NOT NULL DEFAULT 0)`)
        await client.query(`CREATE INDEX IF NOT EXISTS agentchart_sessions_updated ON ${sessions} (updated_at)`)
        await client.query(`CREATE TABLE IF NOT EXISTS ${events} (
          session_id text NOT NULL,
          seq integer NOT NULL,
          type text NOT NULL,
          event text NOT NULL,
          PRIMARY KEY (session_id, seq))`)
        await client.query(`CREATE TABLE IF NOT EXISTS ${checkpoints} (
          session_id text PRIMARY KEY,
          length integer NOT NULL,
          body text NOT NULL)`)
        for (const statement of mailboxDdl(schema)) await client.query(statement)
        await client.query('COMMIT')
      } catch (error) {
        await client.query('ROLLBACK').catch(noop)
        throw error
      }
    }).catch((error: unknown) => {
      ready = null
      throw error
    })
    return ready
  }

  const assertOpen = (id: string) => {
    if (closed) throw new StoreError('STORE_CLOSED', id, 'this PostgreSQL store is closed')
  }

  async function readEvents(db: PgQueryable, id: string, row: SessionRow): Promise<unknown[]> {
    const { rows } = await db.query(sql.events, [id])
    const stored = decodeRows(id, rows as StoredRow[])
    if (row.length !== stored.length) {
      throw new StoredLogError(id, Math.min(row.length, stored.length), `the session row counts ${row.length} events but ${stored.length} are stored`)
    }
    return stored
  }

  /**
   * The latest checkpoint, handed to the opener with the whole log as its read: the open of a store without a
   * reader (a pool whose settings cannot reach a worker thread), whose sessions keep their log in memory.
   */
  async function storedCheckpoint(client: PgQueryable, id: string, row: SessionRow, all: readonly unknown[]): Promise<StoredCheckpoint | undefined> {
    const saved = (await client.query(sql.checkpoint, [id])).rows[0] as { body: string } | undefined
    const parsed = saved === undefined ? undefined : parseCheckpoint(saved.body)
    if (parsed === undefined || parsed.length > row.length) return undefined
    return { checkpoint: parsed.value, length: row.length, read: (start, end) => all.slice(start, end) }
  }

  function open(id: string, holder: string, leaseMs: number, options: OpenSessionOptions | undefined) {
    const check = options?.check
    return withClient(id, 'opening the session', due(), async (client) => {
      try {
        await client.query('BEGIN')
        const created = ((await client.query(sql.create, [id])).rowCount ?? 0) > 0
        const row = (await client.query(sql.lock, [id])).rows[0] as SessionRow
        if (row.lease_holder !== null && Number(row.lease_expires_at) > Number(row.now)) {
          throw new SessionInUseError(id, row.lease_holder, Number(row.lease_expires_at))
        }
        const fromCheckpoint = options?.checkpoint === true && !created
        const read = reader && fromCheckpoint ? await openRead(client, events, checkpoints, id, row, reader) : undefined
        const all = read === undefined ? await readEvents(client, id, row) : []
        const saved = read !== undefined ? read.stored : fromCheckpoint ? await storedCheckpoint(client, id, row, all) : undefined
        const from = saved === undefined ? 0 : checkpointLength(saved.checkpoint)!
        const stored = read !== undefined ? read.tail : from === 0 ? all : all.slice(from)
        try {
          if (saved === undefined) check?.(stored)
          else check?.(stored, saved)
        } finally {
          read?.done()
        }
        const leased = (await client.query(sql.lease, [id, holder, leaseMs])).rows[0] as { lease_token: string; lease_expires_at: string }
        await client.query('COMMIT')
        return { created, events: stored, from, token: Number(leased.lease_token), expiresAt: Number(leased.lease_expires_at) }
      } catch (error) {
        // the refused open leaves the store as it found it
        await client.query('ROLLBACK').catch(noop)
        throw error
      }
    })
  }

  /** Why a fenced commit wrote nothing: another driver took over, or (after a retry) the batch is already in. */
  async function diagnose(id: string, token: number, first: number, count: number, deadline: number): Promise<'stored'> {
    const found = await withClient(id, 'checking a commit', deadline, (client) => client.query(sql.session, [id]))
    const row = found.rows[0] as SessionRow | undefined
    if (!row || Number(row.lease_token) !== token) {
      throw new StoreError(
        'LEASE_LOST',
        id,
        `session ${id}: the lease (token ${token}) was taken over${row ? ` by ${row.lease_holder ?? 'a later opener'} (token ${row.lease_token})` : ''}`,
      )
    }
    if (row.length === first + count) return 'stored'
    throw new StoreError('STORE_CONFLICT', id, `session ${id}: the batch starts at seq ${first} but ${row.length} events are stored`)
  }

  async function append(
    id: string,
    token: number,
    leaseMs: number,
    batch: readonly SessionEvent[],
    plan: RowPlan,
    mailIds: readonly string[],
    checkpoint: CheckpointText | undefined,
  ): Promise<void> {
    assertOpen(id)
    // one bound for the commit, its retries and the check of what a retry found
    const deadline = due()
    const seqs = plan.rows.map((row) => row.seq)
    const types = plan.rows.map((row) => row.type)
    const texts = plan.rows.map((row) => row.event)
    const first = batch[0].seq
    const what = `committing seq ${first}..${batch[batch.length - 1].seq}`
    let written: number
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await withClient(id, what, deadline, (client) =>
          client.query(prepared('append'), [
            id,
            token,
            first,
            batch.length,
            leaseMs,
            seqs,
            types,
            texts,
            plan.drop,
            mailIds,
            checkpoint?.length ?? 0,
            checkpoint?.text ?? null,
          ]),
        )
        written = result.rowCount ?? 0
        break
      } catch (error) {
        const pause = 50 * 4 ** attempt
        if (attempt < retries && isConnectionError(error) && performance.now() + pause < deadline) {
          await delay(pause)
          continue
        }
        throw error
      }
    }
    // a fold row replacing its first chunk's row counts as written too (ON CONFLICT ... DO UPDATE)
    if (written === plan.rows.length) return
    // nothing written: a lapsed-and-taken lease, or a retry whose first attempt did commit
    await diagnose(id, token, first, batch.length, deadline)
  }

  const toInfo = (row: SessionRow): SessionInfo => ({
    id: row.id,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    length: row.length,
    lease:
      row.lease_holder !== null && Number(row.lease_expires_at) > Number(row.now)
        ? { holder: row.lease_holder, expiresAt: Number(row.lease_expires_at) }
        : null,
  })

  /** The lease of each handle still held (the mailbox fences its own consumption with it). */
  const tokens = new WeakMap<SessionHandle, { readonly id: string; readonly token: number }>()
  const mailbox = postgresMailbox({
    pool,
    schema,
    run: async (id, what, work) => {
      await wrapped(id, () => migrate(id))
      return wrapped(id, () => withClient(id, what, due(), work))
    },
    toInfo,
    assertOpen,
    tokenOf: (handle) => {
      const mine = tokens.get(handle)
      return mine !== undefined && held.has(mine) ? mine.token : undefined
    },
  })
  let queue: ReturnType<typeof postgresQueue> | undefined

  const store: SessionStore & { [MAILBOX]: MailboxBackend } = {
    [MAILBOX]: {
      ...mailbox,
      held: (handle: SessionHandle) => mailbox.held(handle),
      queue: () => (queue ??= postgresQueue({ pool, schema, mailbox })),
    },
    kind: 'postgres',
    async open(sessionId: string, openOptions?: OpenSessionOptions): Promise<SessionHandle> {
      const id = checkSessionId(sessionId)
      const { holder, leaseMs } = leaseRequest(openOptions)
      assertOpen(id)
      await wrapped(id, () => migrate(id))
      const opened = await wrapped(id, () => open(id, holder, leaseMs, openOptions))
      if (closed) {
        // close() ran while this open was on its way: the lease it just took goes at once, like the others
        const { token } = opened
        await withClient(id, 'releasing the lease', due(), (client) => client.query(sql.release, [id, token])).catch(noop)
        throw new StoreError('STORE_CLOSED', id, 'this PostgreSQL store was closed while the session was being opened')
      }
      const lease = Object.freeze({ holder, token: opened.token, expiresAt: opened.expiresAt })
      const mine = { id, token: opened.token }
      held.add(mine)
      const folder = new ChunkFolder(retention, opened.events)
      const from = opened.from
      const count = opened.events.length
      const events = weaklyHeld(opened.events, reader ? () => reader.read(id, from, from + count) : undefined)
      const handle: SessionHandle = {
        sessionId: id,
        created: opened.created,
        get events() {
          return events()
        },
        from,
        ...(reader && { read: (start: number, end: number) => reader.read(id, start, end), readBlocks: true }),
        lease,
        async append(batch: readonly SessionEvent[], checkpoint?: CheckpointText) {
          if (batch.length === 0) return
          checkBatch(id, batch[0].seq, batch)
          const plan = folder.plan(batch)
          // mailbox rows whose splice is in this batch are consumed by the same statement
          const riders = mailbox.riding(handle).take(batch[batch.length - 1].seq + 1)
          try {
            await wrapped(id, () => append(id, lease.token, leaseMs, batch, plan, riders.ids, checkpoint))
          } catch (error) {
            riders.settle(error)
            throw error
          }
          riders.settle()
          plan.commit()
        },
        async renew() {
          assertOpen(id)
          const renewed = await wrapped(id, () => withClient(id, 'renewing the lease', due(), (client) => client.query(sql.renew, [id, lease.token, leaseMs])))
          if ((renewed.rowCount ?? 0) !== 1) throw new StoreError('LEASE_LOST', id, `session ${id}: the lease (token ${lease.token}) was taken over`)
        },
        async release() {
          if (closed || !held.delete(mine)) return
          await wrapped(id, () => withClient(id, 'releasing the lease', due(), (client) => client.query(sql.release, [id, lease.token])))
        },
      }
      tokens.set(handle, mine)
      return handle
    },
    async load(sessionId: string) {
      const id = checkSessionId(sessionId)
      assertOpen(id)
      await wrapped(id, () => migrate(id))
      return wrapped(id, () =>
        withClient(id, 'loading the session', due(), async (client) => {
          try {
            // one snapshot for the row and its events
            await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
            const row = (await client.query(sql.session, [id])).rows[0] as SessionRow | undefined
            const stored = row ? await readEvents(client, id, row) : undefined
            await client.query('COMMIT')
            return stored
          } catch (error) {
            await client.query('ROLLBACK').catch(noop)
            throw error
          }
        }),
      )
    },
    async list(listOptions?: { limit?: number }) {
      assertOpen('(store)')
      await wrapped('(store)', () => migrate('(store)'))
      const { rows } = await wrapped('(store)', () =>
        withClient('(store)', 'listing sessions', due(), (client) => client.query(sql.list, [listOptions?.limit ?? null])),
      )
      return (rows as SessionRow[]).map(toInfo)
    },
    close() {
      closing ??= (async () => {
        closed = true
        await queue?.close().catch(noop)
        await mailbox.close()
        await reader?.close(closeTimeoutMs)
        const deadline = performance.now() + closeTimeoutMs
        // the leases this store still holds go with it: the next opener need not wait for them to lapse
        const releases = [...held].map(({ id, token }) =>
          withClient(id, 'releasing the lease', Math.min(deadline, due()), (client) => client.query(sql.release, [id, token])).catch(noop),
        )
        held.clear()
        const ended = Promise.all(releases).then(() => (owned ? pool.end?.() : undefined))
        await within(ended, Math.max(1, deadline - performance.now()), () => new Error('close timed out')).catch(noop)
        // what still runs past the bound is dropped: its statements fail, its connections end
        for (const client of [...busy]) {
          busy.delete(client)
          client.release(new Error('agentchart: the PostgreSQL store was closed'))
        }
        shut(new StoreError('STORE_CLOSED', '(store)', 'this PostgreSQL store was closed while connecting'))
      })()
      return closing
    },
  }
  return store
}

/** Our own refusals pass through; a PostgreSQL or network failure is named with the session. */
async function wrapped<T>(id: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof AgentchartError) throw error
    const message = String((error as Error)?.message)
    // pg's own connect timer (an owned pool) says the same as ours
    if (/timeout exceeded when trying to connect|due to connection timeout/.test(message)) {
      throw new StoreError('STORE_TIMEOUT', id, `session ${id}: connecting to PostgreSQL timed out (connectTimeoutMs): ${message}`, { cause: error })
    }
    throw new StoreError('STORE_FAULT', id, `session ${id}: PostgreSQL failed: ${message}`, { cause: error })
  }
}

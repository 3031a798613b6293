// Synchronous reads of a PostgreSQL store's committed rows, so that a session
// over it can let its older events leave memory: a worker thread holds its own
// connection and runs the query while the asking thread waits on a shared flag.
// Only reads of trimmed events come here (the viewer, forks, `session.events`);
// appends and turns never do, so the wait is off the hot path.
import { createRequire } from 'node:module'
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads'
import { StoreError, StoredLogError } from '../errors.js'
import { FULL_OPEN_UP_TO, parseCheckpoint, type StoredCheckpoint } from './checkpoint.js'
import { sliceDecoded, type StoredRow } from './rows.js'

/** What a store hands the reader: where to connect, its events table, and its bounds (ms). */
interface PostgresReaderOptions {
  /** A `pg.Client` configuration of plain values (it crosses to the worker thread). */
  readonly connection: Readonly<Record<string, string | number | boolean>>
  /** The quoted, schema-qualified events table. */
  readonly events: string
  readonly connectTimeoutMs: number
  readonly readTimeoutMs: number
}

/** Reads stored events of any session of one store, blocking the calling thread until PostgreSQL answers. */
interface PostgresReader {
  /** Events [from, to) of `sessionId`, folded chunk rows expanded; a StoredLogError names a missing or damaged seq. */
  read(sessionId: string, from: number, to: number): unknown[]
  /** Ends the worker and its connection; later reads fail with STORE_CLOSED. */
  close(timeoutMs: number): Promise<void>
}

// the worker: one pg.Client, connected on first use and dropped after any failure (the next read connects again)
const WORKER = `
const { workerData } = require('node:worker_threads')
const { Client } = require(workerData.pg)
const { port, flag, connection, text, connectTimeoutMs } = workerData
let client = null
const drop = () => { const old = client; client = null; if (old) old.then((c) => c.end(), () => {}).catch(() => {}) }
const connect = () => {
  if (client === null) {
    const c = new Client({ application_name: 'agentchart read-through', ...connection, connectionTimeoutMillis: connectTimeoutMs })
    const made = c.connect().then(() => c)
    c.on('error', () => { if (client === made) drop() })
    client = made
  }
  return client
}
port.on('message', async (request) => {
  if (request.close) {
    const open = client
    client = null
    if (open) await open.then((c) => c.end(), () => {}).catch(() => {})
    port.close()
    return
  }
  let answer
  try {
    const c = await connect()
    const { rows } = await c.query({ name: 'agentchart_read_range', text, values: request.values })
    answer = { id: request.id, rows: rows.map((row) => ({ seq: Number(row.seq), event: row.event })) }
  } catch (error) {
    drop()
    answer = { id: request.id, error: String((error && error.message) || error) }
  }
  port.postMessage(answer)
  Atomics.store(flag, 0, request.id)
  Atomics.notify(flag, 0)
})
`

interface Answer {
  readonly id: number
  readonly rows?: StoredRow[]
  readonly error?: string
}

const require = createRequire(import.meta.url)

/** Events per block a short read takes (about 100 KiB of kept heap per store at most). */
const BLOCK = 256

/**
 * A reader whose worker starts at its first read (a store whose sessions never trim never starts one); undefined
 * when the `pg` package cannot be found from here (a store over an application's own pool): sessions then keep their log.
 */
export function postgresReader(options: PostgresReaderOptions): PostgresReader | undefined {
  let pgPath: string
  try {
    pgPath = require.resolve('pg')
  } catch {
    return undefined
  }
  // the rows holding seqs [from, to): from the row at or before `from` (a folded row starts earlier)
  const text = rangeSql(options.events)
  let worker: Worker | null = null
  let port: MessagePort | null = null
  let flag: Int32Array | null = null
  let next = 0
  let closed = false

  const start = (): { port: MessagePort; flag: Int32Array } => {
    if (port !== null && flag !== null) return { port, flag }
    const channel = new MessageChannel()
    const shared = new Int32Array(new SharedArrayBuffer(4))
    const made = new Worker(WORKER, {
      eval: true,
      // no loaders or flags of the parent: the worker runs plain JavaScript
      execArgv: [],
      workerData: { pg: pgPath, port: channel.port2, flag: shared, connection: options.connection, text, connectTimeoutMs: options.connectTimeoutMs },
      transferList: [channel.port2],
    })
    // a worker that fails leaves the next read to time out and start another
    made.on('error', () => {
      if (worker === made) worker = port = flag = null
    })
    // the reader keeps no process alive by itself
    made.unref()
    worker = made
    port = channel.port1
    flag = shared
    return { port, flag }
  }

  /** The rows holding seqs [from, to) of `sessionId`, read by the worker while this thread waits. */
  const query = (sessionId: string, from: number, to: number): StoredRow[] => {
    const first = worker === null
    const { port: asking, flag: answered } = start()
    const id = ++next
    asking.postMessage({ id, values: [sessionId, from, to] })
    // the first read also waits for the worker to start and connect
    const bound = options.readTimeoutMs + (first ? options.connectTimeoutMs : 0)
    const deadline = performance.now() + bound
    let answer: Answer | undefined
    while (answer === undefined) {
      const seen = Atomics.load(answered, 0)
      // answers to reads that timed out earlier are dropped here
      for (let got = receiveMessageOnPort(asking); got !== undefined; got = receiveMessageOnPort(asking)) {
        if ((got.message as Answer).id === id) answer = got.message as Answer
      }
      if (answer !== undefined) break
      const left = deadline - performance.now()
      if (left <= 0) {
        throw new StoreError('STORE_TIMEOUT', sessionId, `session ${sessionId}: reading seq ${from}..${to - 1} back took longer than ${Math.round(bound)} ms`)
      }
      Atomics.wait(answered, 0, seen, left)
    }
    if (answer.error !== undefined) {
      throw new StoreError('STORE_FAULT', sessionId, `session ${sessionId}: reading seq ${from}..${to - 1} back from PostgreSQL failed: ${answer.error}`)
    }
    return answer.rows!
  }

  /** Events [from, to), every one of them there or a StoredLogError naming the first missing seq. */
  const exact = (sessionId: string, from: number, to: number): unknown[] => {
    const events = sliceDecoded(sessionId, query(sessionId, from, to), from, to)
    if (events.length !== to - from) throw new StoredLogError(sessionId, from + events.length, `seq ${from + events.length} is missing`)
    return events
  }

  /** The last block read: stored events never change (a fold rewrites rows, not events), so it needs no invalidation. */
  let block: { readonly sessionId: string; readonly from: number; readonly events: unknown[] } | null = null

  return {
    read(sessionId, from, to) {
      if (to <= from) return []
      if (closed) throw new StoreError('STORE_CLOSED', sessionId, 'this PostgreSQL store is closed')
      if (to - from > BLOCK / 4) return exact(sessionId, from, to)
      // a short read takes the block around it: a scan event by event (session.at) costs one round trip per block
      if (block === null || block.sessionId !== sessionId || from < block.from || to > block.from + block.events.length) {
        const start = from - (from % BLOCK)
        const end = Math.max(to, start + BLOCK)
        let events: unknown[]
        try {
          events = sliceDecoded(sessionId, query(sessionId, start, end), start, end)
        } catch (error) {
          // damage elsewhere in the block is not this read's: the exact range names what is wrong with it, if anything
          if (error instanceof StoredLogError) return exact(sessionId, from, to)
          throw error
        }
        if (start + events.length < to) return exact(sessionId, from, to)
        block = { sessionId, from: start, events }
      }
      return block.events.slice(from - block.from, to - block.from)
    },
    async close(timeoutMs) {
      closed = true
      block = null
      const ending = worker
      const asking = port
      worker = port = flag = null
      if (ending === null) return
      const exited = new Promise<void>((resolve) => ending.once('exit', () => resolve()))
      asking?.postMessage({ close: true })
      let timer: ReturnType<typeof setTimeout> | undefined
      const lapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))
      await Promise.race([exited, lapsed])
      clearTimeout(timer)
      asking?.close()
      await ending.terminate()
    },
  }
}

/** Connection settings a worker thread can be given: a connection string, or the plain values of a `pg.Pool`'s own options. */
export function readerConnection(connectionString: string | undefined, pool: unknown): Readonly<Record<string, string | number | boolean>> | undefined {
  if (connectionString !== undefined) return { connectionString }
  const given = (pool as { options?: unknown } | null)?.options
  if (typeof given !== 'object' || given === null) return undefined
  const out: Record<string, string | number | boolean> = {}
  for (const key of ['connectionString', 'host', 'port', 'user', 'password', 'database', 'ssl', 'application_name'] as const) {
    // the password of a pg.Pool is kept non-enumerable: read it by name
    const value = (given as Record<string, unknown>)[key]
    if (value === undefined) continue
    // a function, an object (TLS keys) or a custom stream cannot cross to a thread: no read-through then
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return undefined
    out[key] = value
  }
  return Object.keys(out).length > 0 ? out : undefined
}

/** The rows holding seqs [$2, $3) of session $1: from the row at or before $2 (a folded row starts earlier). */
const rangeSql = (events: string) =>
  `SELECT seq, event FROM ${events} WHERE session_id = $1
   AND seq >= coalesce((SELECT max(seq) FROM ${events} WHERE session_id = $1 AND seq <= $2), 0) AND seq < $3 ORDER BY seq`

interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>
}

/** What an open over a store with a reader reads, in its transaction, and what its check may read through. */
interface OpenRead {
  /** The checkpoint and a read of the log under it; undefined when there is no usable checkpoint (then `tail` is the whole log). */
  readonly stored: StoredCheckpoint | undefined
  /** The stored events from the checkpoint's length on. */
  readonly tail: unknown[]
  /** Call once the check ran: what was read for it leaves memory, and later reads go through the reader. */
  done(): void
}

/**
 * The read half of an open from a checkpoint, asynchronous: the checkpoint, the tail after it, the event it ends with
 * and its surface events, or the whole log when it is short enough to be validated whole. Why: the session keeps
 * only what its history needs; anything else its check asks for is read through `reader`.
 */
export async function openRead(
  db: Queryable,
  events: string,
  checkpoints: string,
  sessionId: string,
  row: { readonly length: number },
  reader: PostgresReader,
): Promise<OpenRead> {
  const saved = (await db.query(`SELECT body FROM ${checkpoints} WHERE session_id = $1`, [sessionId])).rows[0] as { body: string } | undefined
  const parsed = saved === undefined ? undefined : parseCheckpoint(saved.body)
  const length = row.length
  const short = parsed === undefined || parsed.length > length || length <= FULL_OPEN_UP_TO
  const start = short ? 0 : parsed.length
  const tailRows = (await db.query(rangeSql(events), [sessionId, start, length])).rows as StoredRow[]
  const read = sliceDecoded(sessionId, tailRows, start, length)
  // a gap was refused by seq while decoding; what is left is a log shorter than its session row says
  if (read.length !== length - start) {
    throw new StoredLogError(sessionId, start + read.length, `the session row counts ${length} events but ${start + read.length} are stored`)
  }
  if (parsed === undefined || parsed.length > length) return { stored: undefined, tail: read, done: () => {} }
  /** Events read for the check, by seq. */
  let held: Map<number, unknown> | null = new Map(read.map((event, i) => [start + i, event]))
  if (!short) {
    const surface = (parsed.value as { surface?: unknown }).surface
    const wanted = new Set<number>([parsed.length - 1])
    if (Array.isArray(surface)) for (const seq of surface) if (Number.isSafeInteger(seq) && seq >= 0 && seq < parsed.length) wanted.add(seq as number)
    const { rows } = await db.query(`SELECT seq, event FROM ${events} WHERE session_id = $1 AND seq = ANY($2::int[]) ORDER BY seq`, [sessionId, [...wanted]])
    for (const stored of rows as StoredRow[]) {
      const seq = Number(stored.seq)
      held.set(seq, sliceDecoded(sessionId, [stored], seq, seq + 1)[0])
    }
  }
  const stored: StoredCheckpoint = {
    checkpoint: parsed.value,
    length,
    read(from, to) {
      const out: unknown[] = []
      for (let seq = from; held !== null && seq < to && held.has(seq); seq++) out.push(held.get(seq))
      return out.length === to - from ? out : reader.read(sessionId, from, to)
    },
  }
  return {
    stored,
    tail: short ? read.slice(parsed.length) : read,
    done: () => (held = null),
  }
}

// The writer between one session and its store: events committed in memory
// are buffered (a push per event, nothing more on the hot path) and committed
// in batches, in seq order, so the store always holds a prefix of the log.
// The runtime asks it to commit before any work leaves the process; a failed
// commit halts the session, so the stored prefix stays one a resume can repair.
import { StoreError } from '../errors.js'
import type { SessionEvent, SessionEventType } from '../session/schemas.js'
import { firstInMemory, releaseHistory, restoreEvents, trimEvents, type Session, type SessionSink } from '../session/session.js'
import { factsOf, takeCheckpoint } from './checkpoint.js'
import type { CheckpointText, SessionHandle } from './types.js'

export interface WriterOptions {
  /** Commit in the background once this many events wait (default 512). */
  maxEvents?: number
  /** ...or once the oldest waiting event is this many ms old (default 20). */
  maxDelayMs?: number
  /** The lease length; the writer renews it every third of that (default: no renewal timer). */
  leaseMs?: number
  /** Called after each commit with the number of events now stored. */
  onCommit?: (length: number) => void
  /** Called once when the store fails (the session is halted by then). */
  onFault?: (error: StoreError) => void
  /** Where renewal hiccups that are not fatal are reported. */
  logger?: { error(message: string, error: unknown): void }
}

/** What the runtime needs of a writer: hold outside work until what came before it is stored. */
export interface Durability {
  /** Events are buffered or a commit is in flight. */
  readonly pending: boolean
  /** The fault that halted the session, or null. */
  readonly fault: StoreError | null
  /** Type of the earliest event the store failed to commit. */
  readonly failedType: SessionEventType | undefined
  /**
   * Commits until the first `length` events are stored: undefined when that is
   * done synchronously, else a promise; throws (or rejects with) the store's fault.
   */
  commitThrough(length: number): Promise<void> | undefined
}

const noop = () => {}

/** The longest log a disposed agent's session takes back into memory (docs/persistence.md, bounded memory). */
export const RESTORE_LIMIT = 10_000

/** Events between checkpoints at least (docs/persistence.md, checkpoints). */
const CHECKPOINT_EVERY = 256

/**
 * A compaction summary is appended right before its `compaction/completed`: a full batch is not cut between
 * the two, so one commit holds both or neither (docs/compaction.md). If the record never comes, the age timer commits.
 */
function awaitsRecord(event: SessionEvent): boolean {
  return event.type === 'user/message' && typeof event.surfaceOp === 'object'
}

export class SessionWriter implements SessionSink, Durability {
  readonly #handle: SessionHandle
  readonly #session: Session
  readonly #maxEvents: number
  readonly #maxDelayMs: number
  readonly #options: WriterOptions
  #buffer: SessionEvent[] = []
  /** Events [0, committed) are in the store. */
  #committed: number
  /** Events [0, pushed) were handed to this writer or were stored already. */
  #pushed: number
  #inflight: Promise<void> | null = null
  /** Gives up on the commit in flight (abandon()). */
  #abandonInflight: ((error: StoreError) => void) | null = null
  #inflightBatch: readonly SessionEvent[] = []
  #fault: StoreError | null = null
  #failedType: SessionEventType | undefined
  #timer: ReturnType<typeof setTimeout> | null = null
  #renewal: ReturnType<typeof setInterval> | null = null
  #closed = false
  /** The checkpoint taken at the latest safe point, not yet handed to the store. */
  #checkpoint: CheckpointText | null = null
  /** The length the last checkpoint taken covers. */
  #checkpointed = 0
  /** The history nodes the last checkpoint covered (what the next one will cost, about). */
  #checkpointNodes = 0
  /** The end of the latest turn pushed: the log before it may leave memory once it is committed. */
  #safe = 0
  /** Called before committed events leave memory, so whoever indexes the log reads them first (settable after construction). */
  beforeTrim: (() => void) | undefined
  /** Called after each commit with the number of events now stored (settable after construction). */
  onCommit: ((length: number) => void) | undefined

  /** Takes over `session`: the events after the `stored` first ones are buffered, later ones pushed as they come. */
  constructor(handle: SessionHandle, session: Session, stored: number, options: WriterOptions = {}) {
    this.#handle = handle
    this.#session = session
    this.#options = options
    this.onCommit = options.onCommit
    this.#maxEvents = options.maxEvents ?? 512
    this.#maxDelayMs = options.maxDelayMs ?? 20
    this.#committed = stored
    this.#pushed = stored
    for (let seq = stored; seq < session.length; seq++) this.push(session.at(seq)!)
    // a resumed session outside a turn is at a safe point: its first commit carries a checkpoint and lets the log leave
    // memory; one opened from a checkpoint that covers all of it is there already
    if (stored > 0 && session.length === stored && handle.from === stored && firstInMemory(session) === stored) this.#checkpointed = this.#safe = stored
    else if (stored > 0) this.#takeCheckpoint()
    session.connect(this)
    if (options.leaseMs !== undefined) {
      this.#renewal = setInterval(() => this.#renew(), Math.max(5, Math.floor(options.leaseMs / 3)))
      this.#renewal.unref()
    }
  }

  get pending(): boolean {
    return this.#buffer.length > 0 || this.#inflight !== null
  }

  /** How many events the store holds (events [0, committed) are acknowledged). */
  get committed(): number {
    return this.#committed
  }

  get fault(): StoreError | null {
    return this.#fault
  }

  get failedType(): SessionEventType | undefined {
    return this.#failedType
  }

  /** The hot path: one array push; a timer is armed only when a batch begins. */
  push(event: SessionEvent): void {
    if (this.#fault !== null) return
    this.#pushed++
    const n = this.#buffer.push(event)
    if (event.type === 'turn/end' || event.type === 'compaction/completed') this.#safePoint(event)
    if (this.#inflight !== null) return
    if (n === 1) this.#arm()
    else if (n >= this.#maxEvents && !awaitsRecord(event)) this.#background()
  }

  commitThrough(length: number): Promise<void> | undefined {
    if (this.#fault !== null) throw this.#fault
    if (this.#committed >= length) return undefined
    if (this.#inflight !== null) return this.#inflight.then(() => this.commitThrough(length))
    if (this.#buffer.length === 0) throw new Error(`agentchart: writer asked to commit through ${length} but holds only ${this.#committed}`)
    const sent = this.#send()
    return sent === undefined ? this.commitThrough(length) : sent.then(() => this.commitThrough(length))
  }

  /** Resolves once everything pushed so far is stored; rejects with the store's fault. */
  flush(): Promise<void> {
    try {
      return this.commitThrough(this.#pushed) ?? Promise.resolve()
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)))
    }
  }

  /** Like flush, but never rejects: for callers that only wait (whenIdle, dispose). */
  settle(): Promise<void> {
    return this.flush().then(noop, noop)
  }

  /** Commits what is left, stops the timers and gives the lease up (a halted writer gave it up when it halted). */
  async close(): Promise<void> {
    if (this.#closed) return
    await this.settle()
    this.#closed = true
    this.#stopTimers()
    this.#restore()
    if (this.#fault === null) await this.#handle.release()
  }

  /**
   * Stops waiting for the commit in flight, if any: the session halts as for a failed commit (STORE_TIMEOUT),
   * its batch counts as never acknowledged, and the lease is released (or lapses). Why: a forced disposal must
   * not wait on a store that does not answer. The store may still commit the batch later; the log stays a prefix.
   */
  abandon(): void {
    if (this.#abandonInflight === null || this.#fault !== null) return
    const batch = this.#inflightBatch
    const id = this.#session.id
    this.#abandonInflight(
      new StoreError(
        'STORE_TIMEOUT',
        id,
        `session ${id}: the commit of seq ${batch[0].seq}..${batch[batch.length - 1].seq} was abandoned by a forced disposal`,
      ),
    )
  }

  /**
   * A turn's end, or a compaction: what came before may leave memory once committed, and a checkpoint is taken
   * when CHECKPOINT_EVERY events came since the last one, and at least as many as the history had nodes then, or
   * the history was compacted. Why spaced so: a checkpoint costs a pass over the history, so its cost per event
   * stays constant however long an uncompacted history grows; an open validates that much tail instead, about
   * what deriving that history costs it anyway.
   */
  #safePoint(event: SessionEvent): void {
    if (event.type === 'turn/end') this.#safe = event.seq + 1
    const due = Math.max(CHECKPOINT_EVERY, this.#checkpointNodes)
    if (event.type === 'compaction/completed' || event.seq + 1 - this.#checkpointed >= due) this.#takeCheckpoint()
  }

  /** The session's derived state, to be committed with the batch that reaches it (none while a turn is open). */
  #takeCheckpoint(): void {
    try {
      const taken = takeCheckpoint(this.#session)
      if (taken === undefined) return
      this.#checkpoint = taken
      this.#checkpointed = taken.length
      this.#checkpointNodes = taken.nodes
      this.#safe = Math.max(this.#safe, taken.length)
    } catch (error) {
      this.#options.logger?.error(`agentchart: no checkpoint for session ${this.#session.id} at seq ${this.#session.length - 1}`, error)
    }
  }

  #send(): Promise<void> | undefined {
    const batch = this.#buffer
    this.#buffer = []
    const checkpoint = this.#checkpoint
    this.#checkpoint = null
    if (this.#timer !== null) {
      clearTimeout(this.#timer)
      this.#timer = null
    }
    let result: void | Promise<void>
    try {
      result = checkpoint === null ? this.#handle.append(batch) : this.#handle.append(batch, checkpoint)
    } catch (error) {
      throw this.#fail(error, batch)
    }
    if (result === undefined || typeof result.then !== 'function') {
      this.#done(batch.length)
      this.#trim()
      return undefined
    }
    const pending = result
    const answered = new Promise<void>((resolve, reject) => {
      this.#abandonInflight = reject
      pending.then(resolve, reject)
    })
    this.#inflightBatch = batch
    const inflight = answered.then(
      () => {
        this.#inflight = null
        this.#abandonInflight = null
        this.#done(batch.length)
        this.#trim()
      },
      (error: unknown) => {
        this.#inflight = null
        this.#abandonInflight = null
        throw this.#fail(error, batch)
      },
    )
    inflight.catch(noop) // background commits have no awaiting caller; their fault is reported through onFault
    this.#inflight = inflight
    return inflight
  }

  /**
   * Drops what is stored before the last safe point from memory now, and the history until a turn reads it again.
   * Why: an open that appends nothing makes no commit to trim after, and an opened session may stay idle.
   */
  trim(): void {
    if (this.#fault !== null || this.#closed) return
    this.#trim()
    // an idle session lets its history go only where reading it back does not block the next turn on another process
    if (this.#session.length === this.#committed && typeof this.#handle.read === 'function' && this.#handle.readBlocks !== true) releaseHistory(this.#session)
  }

  /** Once a turn's end is stored, the events before it leave memory: the store reads them back when asked (synchronous stores only). */
  #trim(): void {
    const read = this.#handle.read
    const upTo = Math.min(this.#safe, this.#committed)
    if (typeof read !== 'function' || upTo === 0) return
    // the facts a checkpoint carries, and the agent's log index, are read from memory first
    factsOf(this.#session)
    try {
      this.beforeTrim?.()
    } catch (error) {
      this.#options.logger?.error('agentchart: a listener before trimming the session threw', error)
    }
    trimEvents(this.#session, upTo, (from, to) => read.call(this.#handle, from, to))
  }

  /**
   * A session of at most RESTORE_LIMIT events takes its trimmed prefix back before the lease goes, so it stays
   * readable after its store closes; a longer one reads it through the store while the store is open, and takes
   * back only a history it let go, so the history stays readable.
   */
  #restore(): void {
    try {
      if (this.#session.length > RESTORE_LIMIT) this.#session.deriveMessages()
      else restoreEvents(this.#session)
    } catch (error) {
      this.#options.logger?.error(`agentchart: reading session ${this.#session.id} back from the store failed`, error)
    }
  }

  #done(count: number): void {
    this.#committed += count
    try {
      this.onCommit?.(this.#committed)
    } catch (error) {
      this.#options.logger?.error('a session/committed listener threw', error)
    }
    const n = this.#buffer.length
    if (n >= this.#maxEvents && !awaitsRecord(this.#buffer[n - 1])) this.#background()
    else if (n > 0) this.#arm()
  }

  #arm(): void {
    if (this.#timer !== null || this.#closed) return
    this.#timer = setTimeout(() => {
      this.#timer = null
      this.#background()
    }, this.#maxDelayMs)
  }

  #background(): void {
    try {
      this.commitThrough(this.#pushed)?.catch(noop)
    } catch {
      // reported through onFault
    }
  }

  #fail(error: unknown, batch: readonly SessionEvent[]): StoreError {
    if (this.#fault !== null) return this.#fault
    const id = this.#session.id
    const range = batch.length > 0 ? `seq ${batch[0].seq}..${batch[batch.length - 1].seq}` : 'a batch'
    const fault =
      error instanceof StoreError
        ? error
        : new StoreError('STORE_FAULT', id, `session ${id}: the store failed to commit ${range}: ${error instanceof Error ? error.message : String(error)}`, {
            cause: error,
          })
    this.#fault = fault
    this.#failedType = batch[0]?.type
    this.#buffer = []
    this.#stopTimers()
    this.#session.halt(fault)
    // a halted instance is as good as crashed: let the next driver take over at once (best effort)
    this.#handle.release().catch(noop)
    try {
      this.#options.onFault?.(fault)
    } catch (failure) {
      this.#options.logger?.error('agentchart: reporting a store fault failed', failure)
    }
    return fault
  }

  #renew(): void {
    if (this.#fault !== null || this.#closed) return
    this.#handle.renew().catch((error: unknown) => {
      if (error instanceof StoreError && error.code === 'LEASE_LOST') this.#fail(error, this.#buffer)
      else this.#options.logger?.error(`agentchart: renewing the lease of session ${this.#session.id} failed; retrying`, error)
    })
  }

  #stopTimers(): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    if (this.#renewal !== null) clearInterval(this.#renewal)
    this.#timer = null
    this.#renewal = null
  }
}

// The append-only session log (SS-1..SS-11): the single source of truth.
// Every event is validated, copied, and frozen before it is committed; the
// model-visible surface and the derived history are maintained alongside.
import { Observable, Subscriber, type Observer, type Operator, type Subscription } from 'rxjs'
import { ConfigError, SeedRefusedError, SessionAppendError } from '../errors.js'
import { validatedSeedViolations, type CheckStart } from './invariants.js'
import { describeValue, isArrayLike, isRecordLike } from '../values/foreign.js'
import { formatPath, toLoggedJson } from './lossless.js'
import { jsonEqual } from '../values/canonical.js'
import { frozenArrayOf } from '../values/array-view.js'
import { messageOf, nodeMessage, Surface, type SurfaceNode } from './surface.js'
import {
  EventDataSchemas,
  SURFACE_TYPES,
  SurfaceOpSchema,
  type AppendIntent,
  type EventData,
  type Message,
  type SessionEvent,
  type SessionEventOf,
  type SessionEventType,
  type SurfaceOp,
} from './schemas.js'

// ---- types -----------------------------------------------------------------

export interface SessionOptions {
  /** Session (and agent) id; defaults to `crypto.randomUUID()`. */
  id?: string
  /** Events to replay (resume, fork); validated like live appends (SS-10). */
  seed?: readonly unknown[]
  /** Clock for `time`, epoch milliseconds; defaults to `Date.now`. */
  now?: () => number
  /**
   * Refuse a seed whose structure breaks the enclosure, numbering, pairing or
   * citation rules (default true; a log only cut short by a crash is accepted
   * and repaired by the agent). Diagnostic tools that report every violation pass false.
   */
  checkSeed?: boolean
}

/**
 * Where events go after they are committed in memory: a store's writer
 * (agentchart/stores). `push` is on the hot path (every chunk) and must not throw.
 */
export interface SessionSink {
  push(event: SessionEvent): void
}

/** A post-commit `session/event` observer (SS-11); failures are logged and contained. */
export type SessionObserver = (event: SessionEvent, session: Session) => void | Promise<void>

/** A plugin-owned event of a type the loop does not know, logged with `ignorable: true` (SS-14). */
export interface IgnorableEvent {
  readonly seq: number
  readonly time: number
  readonly type: string
  readonly data: unknown
  readonly ignorable: true
}

// ---- constants ---------------------------------------------------------------

const ENVELOPE_KEYS = new Set(['seq', 'time', 'type', 'data', 'surfaceOp', 'sourceEventSeqs', 'ignorable'])
const INTENT_KEYS = new Set(['surfaceOp', 'sourceEventSeqs', 'ignorable', 'time'])
const NO_INTENT: AppendIntent = Object.freeze({})

/**
 * The one trusted path: marks an append intent whose data this library already parsed with the schema that types it
 * (the stock agent machine's events, a stream chunk admitChunk parsed), so the session skips its per-type schema
 * pass. Its data passes the lossless gate like any other, except a frozen `assistant/chunk`: that is the stream's wrap
 * of admitChunk's deep-frozen copy of its parse, which admitChunk found lossless JSON in the walk that made it, so it is
 * kept as it is. Every log rule still runs. Why: parsing and copying the same value twice was most of zod's share of a
 * step and the largest cost of a chunk. In-house (the package does not export it); the test helpers re-check every
 * log against the schemas, so a machine that built a bad event still fails its tests.
 */
export const SCHEMA_CHECKED: unique symbol = Symbol('agentchart.schema-checked')
export type CheckedIntent = AppendIntent & { readonly [SCHEMA_CHECKED]?: true }
/** The intent of an append that says nothing but SCHEMA_CHECKED (a stock machine's event, an admitted chunk). */
export const CHECKED: CheckedIntent = Object.freeze({ [SCHEMA_CHECKED]: true as const })

const SURFACE = new Set<string>(SURFACE_TYPES)

const isKnownType = (type: string): type is SessionEventType => Object.hasOwn(EventDataSchemas, type)

/**
 * The log as it stands, as a frozen array that reads the session instead of copying it: what the loop reads during a
 * turn (the open step, pending approvals), where `session.events` would copy the whole log. In-house.
 */
export function logSnapshot(session: Session): readonly SessionEvent[] {
  return frozenArrayOf({ length: session.length, at: (seq: number) => session.at(seq)! })
}

// ---- events$ -----------------------------------------------------------------

/**
 * An Observable whose subscribers are shielded, whether they subscribe directly or through
 * operators: `lift` (which every rxjs operator uses) keeps the chain a ContainedObservable, so
 * the final observer of `events$.pipe(...)` is wrapped too. A throwing `next`, an error an
 * operator raised with no error callback to take it, and a throwing `error`/`complete` callback
 * are reported with console.error instead of rxjs's asynchronous rethrow, which would reach the
 * process as an uncaught exception (SS-11).
 */
class ContainedObservable<T> extends Observable<T> {
  override lift<R>(operator?: Operator<T, R>): Observable<R> {
    const lifted = new ContainedObservable<R>()
    lifted.source = this
    lifted.operator = operator
    return lifted
  }

  override subscribe(
    observerOrNext?: Partial<Observer<T>> | ((value: T) => void) | null,
    error?: ((error: unknown) => void) | null,
    complete?: (() => void) | null,
  ): Subscription {
    // an operator of the chain subscribing to its source: its own subscriber routes failures downstream
    if (observerOrNext instanceof Subscriber) return super.subscribe(observerOrNext)
    const observer =
      typeof observerOrNext === 'function' || observerOrNext == null
        ? { next: observerOrNext ?? undefined, error: error ?? undefined, complete: complete ?? undefined }
        : observerOrNext
    const guarded = (what: string, call: () => void) => {
      try {
        call()
      } catch (err) {
        console.error(`agentchart: a session events$ subscriber threw in ${what}; contained`, err)
      }
    }
    return super.subscribe({
      next: (value: T) => {
        const next = observer.next
        if (next !== undefined) guarded('next', () => next.call(observer, value))
      },
      error: (err: unknown) => {
        const onError = observer.error
        if (onError === undefined) console.error('agentchart: a session events$ pipeline failed with no error callback; contained', err)
        else guarded('error', () => onError.call(observer, err))
      },
      complete: () => {
        const onComplete = observer.complete
        if (onComplete !== undefined) guarded('complete', () => onComplete.call(observer))
      },
    })
  }
}

// ---- session -----------------------------------------------------------------

/** In-house: the checkpoint path of the Session constructor (stores/checkpoint.ts builds it, after checking it). */
export const RESUME: unique symbol = Symbol('agentchart.resume')
/** In-house: the events in memory, from the latest checkpoint on (a safe point: no turn open before it). */
export let recentEvents: (session: Session) => readonly SessionEvent[]
/** In-house: the seq of the first event kept in memory (0 unless opened from a checkpoint or trimmed). */
export let firstInMemory: (session: Session) => number
/** In-house: takes a trimmed prefix back into memory. */
export let restoreEvents: (session: Session) => void
/** In-house: lets the history's messages go until next read, when the store gives them back (a trimmed session only). */
export let releaseHistory: (session: Session) => void
/** In-house: the current surface nodes, read from the history (no event is read back from a store). */
export let surfaceNodes: (session: Session) => SurfaceNode[]
/** In-house: the interrupted answers on the surface now, as the history holds them (CX-7). */
export let interruptedAnswers: (session: Session) => Message[]
/** In-house: drops committed events before `upTo` from memory (the store writer calls it once a checkpoint is stored). */
export let trimEvents: (session: Session, upTo: number, read: PrefixReader) => void

interface ObserverEntry {
  readonly fn: SessionObserver
  active: boolean
}

/** The append-only, validated, frozen event log of one agent (SS-1..SS-11). */
export class Session {
  readonly id: string
  /** Each event, synchronously after its `session/event` observers ran, in seq order. */
  readonly events$: Observable<SessionEvent>

  readonly #now: () => number
  /** The events from seq `#base` on, in seq order; older ones are in `#kept` or read through `#prefix`. */
  readonly #events: SessionEvent[] = []
  #snapshot: readonly SessionEvent[] = Object.freeze([])
  #seedLength = 0
  /** How many events precede `#events` (0 unless opened from a checkpoint or trimmed: stores/checkpoint.ts). */
  #base = 0
  /** The event at `#base - 1`, and until the first trim the surface events a checkpoint opened with (the opener reads them). */
  #kept = new Map<number, SessionEvent>()
  /** The messages of the interrupted answers logged, by seq: a released history gives these back as the very values (CX-7 finds them by identity). */
  readonly #interrupted = new Map<number, Message>()
  /** Reads stored events [from, to) of the part before `#base`. */
  #prefix: PrefixReader | null = null
  #fullView: WeakRef<readonly SessionEvent[]> | null = null
  #surface = new Surface()
  #observers: ObserverEntry[] = []
  #publishing = false
  readonly #sinks = new Set<Subscriber<SessionEvent>>()
  // events$ deliveries are queued so that an append made by a subscriber
  // reaches every subscriber after the event being delivered, never before.
  readonly #outbox: SessionEvent[] = []
  #delivering = false
  /** Injected store failures still armed, by event type, oldest first (`failNextAppend`). */
  readonly #faults = new Map<string, Error[]>()
  #sink: SessionSink | null = null
  #halted: Error | null = null

  constructor(options: SessionOptions = {}) {
    const { id, seed, now } = options
    if (id !== undefined && (typeof id !== 'string' || id === '')) throw new ConfigError('session id must be a non-empty string', { path: 'id' })
    if (now !== undefined && typeof now !== 'function') throw new ConfigError('now must be a function', { path: 'now' })
    this.id = id ?? crypto.randomUUID()
    this.#now = now ?? Date.now
    this.events$ = new ContainedObservable<SessionEvent>((subscriber) => {
      this.#sinks.add(subscriber)
      this.#observersChanged()
      return () => {
        this.#sinks.delete(subscriber)
        this.#observersChanged()
      }
    })
    const resume = (options as { [RESUME]?: SessionResume })[RESUME]
    if (resume !== undefined) this.#loadResume(resume)
    else if (seed !== undefined) this.#loadSeed(seed, options.checkSeed !== false)
  }

  /** Frozen snapshot of the log; a held snapshot never grows (SS-1). */
  get events(): readonly SessionEvent[] {
    if (this.#base > 0) return this.#readThrough()
    if (this.#snapshot.length !== this.#events.length) this.#snapshot = Object.freeze(this.#events.slice())
    return this.#snapshot
  }

  get length(): number {
    return this.#base + this.#events.length
  }

  /** First live seq: 0 unseeded, else the seq after the seed's `session/end-seed` (SS-9). */
  get seedLength(): number {
    return this.#seedLength
  }

  /** True while `session/event` observers of an event run; appends are refused then (SS-11). */
  get publishing(): boolean {
    return this.#publishing
  }

  /** The error that stopped this session from accepting appends (a store fault), or null. */
  get halted(): Error | null {
    return this.#halted
  }

  /** Hands every later event to `sink` right after it is committed in memory; one sink per session. */
  connect(sink: SessionSink): void {
    if (this.#sink !== null) throw new ConfigError(`session ${this.id} already has a sink`)
    if (typeof sink?.push !== 'function') throw new ConfigError('a session sink needs a push(event) method')
    this.#sink = sink
  }

  /**
   * Refuses every later append with `error`. Why: once a store fails to commit, what it holds is a
   * prefix of this log; writing on in memory could only widen the gap, and stopping keeps both a
   * log the next instance can repair (the failed tail was never acknowledged).
   */
  halt(error: Error): void {
    this.#halted ??= error
  }

  /** How many `replace` operations the surface has applied (SS-5). */
  get replaceGeneration(): number {
    return this.#surface.generation
  }

  /** The seqs of the current surface nodes, in surface order (SS-5). */
  surface(): readonly number[] {
    return Object.freeze(this.#surface.seqs.slice())
  }

  at(seq: number): SessionEvent | undefined {
    return Number.isInteger(seq) && seq >= 0 ? this.#eventAt(seq) : undefined
  }

  last(): SessionEvent | undefined {
    return this.#events.length > 0 ? this.#events[this.#events.length - 1] : this.#eventAt(this.#base - 1)
  }

  /** A reading of the clock this log stamps its events with. Why: what happens beside the log (a maintenance job's span) shares its timeline. */
  now(): number {
    return this.#now()
  }

  /** Validates, copies, freezes and commits one event, then publishes it; throws and logs nothing on refusal (SS-1..SS-6). */
  append<T extends SessionEventType>(type: T, data: EventData<T>, intent?: AppendIntent): SessionEventOf<T>
  append(type: string, data: unknown, intent: AppendIntent & { ignorable: true }): IgnorableEvent
  append(type: string, data: unknown, intent?: AppendIntent): SessionEvent | IgnorableEvent {
    if (this.#halted !== null) throw this.#halted
    if (this.#publishing) throw new SessionAppendError('cannot append while session/event observers are running')
    if (type === 'session/end-seed') throw new SessionAppendError('session/end-seed is written only by the session constructor')
    if (intent !== undefined && !isRecordLike(intent)) throw new SessionAppendError(`${String(type)}: intent must be an object`)
    if (intent !== undefined) {
      for (const key of Object.keys(intent)) {
        if (!INTENT_KEYS.has(key)) throw new SessionAppendError(`${String(type)}: unknown intent key ${JSON.stringify(key)}`, { path: key })
      }
    }
    // a checked frozen chunk is the stream's wrap of admitChunk's deep-frozen lossless copy: kept as it is
    const checked = intent !== undefined && (intent as CheckedIntent)[SCHEMA_CHECKED] === true
    const logged = checked && type === 'assistant/chunk' && Object.isFrozen(data) ? data : toLoggedJson(data, 'data')
    const event = this.#build(this.length, type, logged, intent ?? NO_INTENT, 'data', intent?.time)
    // an injected store failure refuses a valid event, as a failing store would: nothing is logged
    if (this.#faults.size > 0) this.#injectedFault(type)
    this.#commit(event)
    this.#sink?.push(event)
    this.#publish(event)
    return event
  }

  /**
   * Fault injection: the next live append of `type` throws `error` and logs nothing; one shot per call,
   * and calls for the same type queue up. Seed events are not appends and never fail.
   * Why: tests and conformance drivers exercise a failing store (IN-7, TU-4, TU-15) without wrapping `append`.
   */
  failNextAppend(type: string, error: Error = new SessionAppendError(`injected failure of the next ${type} append`)): void {
    if (typeof type !== 'string' || type === '') throw new ConfigError('failNextAppend needs an event type', { path: 'type' })
    if (!(error instanceof Error)) throw new ConfigError('failNextAppend needs an Error to throw', { path: 'error' })
    const queue = this.#faults.get(type)
    if (queue) queue.push(error)
    else this.#faults.set(type, [error])
  }

  /** Throws the oldest armed fault of `type`, if any (off the hot path: only called while one is armed). */
  #injectedFault(type: string): void {
    const queue = this.#faults.get(type)
    if (queue === undefined) return
    const fault = queue.shift()!
    if (queue.length === 0) this.#faults.delete(type)
    throw fault
  }

  /**
   * The derived history (SS-7, SS-8): a fresh frozen array of the identical frozen messages. It reads the history's
   * current version of a persistent list instead of copying it, so it costs the same at any length.
   */
  deriveMessages(): Message[] {
    return this.#surface.messages() as Message[]
  }

  /** Registers a post-commit `session/event` observer (SS-11); returns its unsubscribe function. */
  observe(observer: SessionObserver): () => void {
    if (typeof observer !== 'function') throw new ConfigError('observer must be a function')
    const entry: ObserverEntry = { fn: observer, active: true }
    this.#observers = [...this.#observers, entry]
    this.#observersChanged()
    return () => {
      if (!entry.active) return
      entry.active = false
      this.#observers = this.#observers.filter((e) => e !== entry)
      this.#observersChanged()
    }
  }

  /** How many observers and events$ subscribers run synchronously at each append (anyone who could act mid-step). */
  get observers(): number {
    return this.#observers.length + this.#sinks.size
  }

  /** Calls `listener` whenever `observers` changes; returns its disposer. Why: the agent tells its machine when it is watched. */
  watchObservers(listener: () => void): () => void {
    this.#observerWatchers.add(listener)
    return () => this.#observerWatchers.delete(listener)
  }

  readonly #observerWatchers = new Set<() => void>()

  #observersChanged(): void {
    for (const listener of this.#observerWatchers) listener()
  }

  // ---- internals -------------------------------------------------------------

  /** The clock's last reading, held as it was read: the events of one millisecond share it (see `envelope`). */
  #lastTime: number | null = null

  #clock(): number {
    const read = this.#now()
    // -0 is the instant 0, and JSON writes it as 0: the log holds 0, so it reopens as it was written
    const time = read === 0 ? 0 : read
    if (time === this.#lastTime) return this.#lastTime
    this.#lastTime = time
    return time
  }

  /**
   * Checks one event against the log as it stands and returns it frozen.
   * `data` is already a frozen lossless copy. Pure: nothing changes here, so
   * a refusal leaves no trace. `at` is the path prefix of `data` in messages;
   * `seedTime` is a seed event's own time (live events read the clock last).
   */
  #build(seq: number, type: unknown, data: unknown, intent: AppendIntent, at: string, seedTime?: unknown): SessionEvent {
    if (typeof type !== 'string' || type === '')
      throw new SessionAppendError(`event type must be a non-empty string, got ${JSON.stringify(type) ?? String(type)}`)
    const { surfaceOp, sourceEventSeqs, ignorable } = intent
    if (ignorable !== undefined && ignorable !== true) throw new SessionAppendError(`${type}: ignorable may only be true`)
    const known = isKnownType(type)
    if (!known && ignorable !== true) throw new SessionAppendError(`unknown event type ${JSON.stringify(type)} (mark it ignorable: true to log it)`)

    if (known && (intent as CheckedIntent)[SCHEMA_CHECKED] !== true) {
      const result = EventDataSchemas[type].safeParse(data)
      if (!result.success) {
        const issues = result.error.issues
        const first = formatPath(at, issues[0].path)
        const text = issues.map((i) => `${formatPath(at, i.path)}: ${i.message}`).join('; ')
        throw new SessionAppendError(`${type}: ${text}`, { path: first, cause: result.error })
      }
    }

    const surface = SURFACE.has(type)
    if (!surface && (surfaceOp !== undefined || sourceEventSeqs !== undefined)) {
      throw new SessionAppendError(`${type}: only ${SURFACE_TYPES.join(', ')} may carry surfaceOp or sourceEventSeqs`)
    }
    let op: SurfaceOp | undefined
    let sources: readonly number[] | undefined
    if (surface) {
      if (surfaceOp === undefined) throw new SessionAppendError(`${type}: a surface event must carry a surfaceOp`)
      // 'append' is the one string the schema takes: no copy and no schema pass for it (every surface event)
      op = surfaceOp === 'append' ? surfaceOp : toLoggedJson(surfaceOp, 'surfaceOp')
      if (op !== 'append' && !SurfaceOpSchema.safeParse(op).success) {
        throw new SessionAppendError(`${type}: surfaceOp must be 'append' or {op:'replace', start, end}`, { path: 'surfaceOp' })
      }
      if (sourceEventSeqs !== undefined) sources = this.#checkSources(type, seq, toLoggedJson(sourceEventSeqs, 'sourceEventSeqs'))
      if (op !== 'append') this.#checkReplace(type, data, op, sources)
    }

    const time = seedTime === undefined ? this.#clock() : seedTime
    if (typeof time !== 'number' || !Number.isFinite(time))
      throw new SessionAppendError(`${type}: time must be a finite number, got ${typeof time === 'number' ? String(time) : describeValue(time)}`)
    return Object.freeze(envelope(seq, time, type, data, op, sources, ignorable === true)) as SessionEvent
  }

  /** SS-4: earlier seqs only, no duplicates, non-empty except on assistant/message. */
  #checkSources(type: string, seq: number, sources: unknown): readonly number[] {
    if (!Array.isArray(sources)) throw new SessionAppendError(`${type}: sourceEventSeqs must be an array`, { path: 'sourceEventSeqs' })
    if (sources.length === 0 && type !== 'assistant/message') {
      throw new SessionAppendError(`${type}: sourceEventSeqs must not be empty (omit it when provenance is unknown)`, { path: 'sourceEventSeqs' })
    }
    // rising seqs (what the runtime cites) cannot repeat; a set of the seen ones is built only once they do not rise
    let seen: Set<number> | undefined
    let last = -1
    for (let i = 0; i < sources.length; i++) {
      const s: unknown = sources[i]
      if (typeof s !== 'number' || !Number.isInteger(s) || s < 0)
        throw new SessionAppendError(`${type}: ${sourcePath(i)} must be a seq`, { path: sourcePath(i) })
      if (s >= seq) throw new SessionAppendError(`${type}: ${sourcePath(i)} = ${s} is not an earlier seq (this event is ${seq})`, { path: sourcePath(i) })
      if (seen === undefined && s <= last) seen = new Set(sources.slice(0, i) as number[])
      if (seen !== undefined) {
        if (seen.has(s)) throw new SessionAppendError(`${type}: ${sourcePath(i)} = ${s} is a duplicate`, { path: sourcePath(i) })
        seen.add(s)
      }
      last = s
    }
    return sources as readonly number[]
  }

  /** SS-5 and SS-6 for `{op:'replace'}` against the current surface. */
  #checkReplace(type: string, data: unknown, op: Exclude<SurfaceOp, 'append'>, sources: readonly number[] | undefined): void {
    const surface = this.#surface
    const nodes = surface.seqs
    const from = surface.indexOf(op.start)
    const to = surface.indexOf(op.end)
    if (from === undefined) throw new SessionAppendError(`${type}: replace start ${op.start} is not a current surface node`, { path: 'surfaceOp.start' })
    if (to === undefined) throw new SessionAppendError(`${type}: replace end ${op.end} is not a current surface node`, { path: 'surfaceOp.end' })
    if (from > to) throw new SessionAppendError(`${type}: replace start ${op.start} comes after end ${op.end} on the surface`, { path: 'surfaceOp' })
    for (let i = from; i <= to; i++) {
      if (!sources?.includes(nodes[i])) {
        throw new SessionAppendError(`${type}: sourceEventSeqs must include every shadowed node; ${nodes[i]} is missing`, { path: 'sourceEventSeqs' })
      }
    }
    if (type !== 'tool/result') return
    const old = from === to ? this.#eventAt(nodes[from]) : undefined
    if (old?.type !== 'tool/result') throw new SessionAppendError('tool/result: a replacement must shadow exactly one tool/result node', { path: 'surfaceOp' })
    // SS-6, our reading: the replacement is the same result with new content.
    // Everything (turn, step, message id and source, toolCallId, isError,
    // error, meta) must be equal; only message.content[0].content may change.
    if (!jsonEqual(withoutResultContent(old.data), withoutResultContent(data))) {
      throw new SessionAppendError(`tool/result: a replacement may differ from seq ${old.seq} only in message.content[0].content`, { path: 'data' })
    }
  }

  /** Adds a built event to the log and the surface; cannot fail. */
  #commit(event: SessionEvent): void {
    this.#events.push(event)
    this.#surface.apply(event)
    if (event.type === 'assistant/message' && event.data.interrupted === true) this.#interrupted.set(event.seq, event.data.message)
  }

  /** Runs observers (contained, SS-11), then delivers to events$ subscribers. */
  #publish(event: SessionEvent): void {
    this.#publishing = true
    try {
      for (const entry of this.#observers) {
        if (!entry.active) continue
        try {
          const result = entry.fn(event, this)
          if (result !== undefined && typeof (result as PromiseLike<void>)?.then === 'function') {
            ;(result as PromiseLike<void>).then(undefined, (err: unknown) => reportObserverFailure(event, err))
          }
        } catch (err) {
          reportObserverFailure(event, err)
        }
      }
    } finally {
      this.#publishing = false
    }
    // nobody subscribed to events$ and no delivery running: nothing to queue (the common case, on every chunk)
    if (this.#sinks.size === 0 && !this.#delivering) return
    this.#outbox.push(event)
    if (this.#delivering) return
    this.#delivering = true
    try {
      for (let i = 0; i < this.#outbox.length; i++) {
        if (this.#sinks.size === 0) continue
        for (const sink of [...this.#sinks]) {
          try {
            sink.next(this.#outbox[i])
          } catch (err) {
            console.error('agentchart: a session events$ subscriber threw; contained', err)
          }
        }
      }
    } finally {
      this.#outbox.length = 0
      this.#delivering = false
    }
  }

  /** SS-9, SS-10: validates and commits the seed, checks its structure, then closes it with `session/end-seed`. */
  #loadSeed(seed: readonly unknown[], checkStructure: boolean): void {
    if (!Array.isArray(seed)) throw new SessionAppendError('seed must be an array of session events', { path: 'seed' })
    seed.forEach((raw: unknown, i) => this.#commitStored(raw, i))
    if (seed.length === 0) return
    if (checkStructure) this.#checkStructure()
    this.#closeSeed()
  }

  /** Refuses the seed (or the tail after a checkpoint, from `start`) by its first broken structure rule. */
  #checkStructure(start?: CheckStart): void {
    const [first] = validatedSeedViolations(this.#events, start)
    if (first !== undefined) throw new SeedRefusedError(first.seq, first.rule, first.message)
  }

  /** Validates and commits one seed (or stored tail) event at `seq`; a refusal names `seed[seq]` in message and path. */
  #commitStored(raw: unknown, seq: number): void {
    const at = `seed[${seq}]`
    const copy = toLoggedJson(raw, at)
    if (!isRecordLike(copy)) throw new SessionAppendError(`${at}: a seed event must be an object`, { path: at })
    for (const key of Object.keys(copy)) {
      if (!ENVELOPE_KEYS.has(key)) throw new SessionAppendError(`${at}: unknown envelope key ${JSON.stringify(key)}`, { path: formatPath(at, [key]) })
    }
    if (copy.seq !== seq)
      throw new SessionAppendError(`${at}.seq: expected ${seq} (seqs are contiguous from 0), got ${String(copy.seq)}`, {
        path: `${at}.seq`,
      })
    if (!Object.hasOwn(copy, 'data')) throw new SessionAppendError(`${at}.data: missing`, { path: `${at}.data` })
    const { surfaceOp, sourceEventSeqs, ignorable } = copy as AppendIntent
    try {
      this.#commit(this.#build(seq, copy.type, copy.data, { surfaceOp, sourceEventSeqs, ignorable }, `${at}.data`, copy.time ?? null))
    } catch (err) {
      if (err instanceof SessionAppendError && !err.message.startsWith(at)) {
        const path = err.path === undefined ? at : err.path.startsWith(at) ? err.path : `${at}.${err.path}`
        throw new SessionAppendError(`${at}: ${err.message}`, { path, cause: err })
      }
      throw err
    }
  }

  /** Ends the replayed part with `session/end-seed` (unless it already ends so); live appends start after it (SS-9). */
  #closeSeed(): void {
    if (this.last()?.type !== 'session/end-seed') this.#commit(this.#build(this.length, 'session/end-seed', Object.freeze({}), NO_INTENT, 'data'))
    this.#seedLength = this.length
  }

  // ---- opened from a checkpoint (stores/checkpoint.ts) ------------------------------------

  /** An event by seq wherever it is kept: in memory, among the kept surface events, or read through the store. */
  #eventAt(seq: number): SessionEvent | undefined {
    if (seq >= this.#base) return this.#events[seq - this.#base]
    const kept = this.#kept.get(seq)
    if (kept !== undefined || seq < 0) return kept
    return this.#readPrefix(seq, seq + 1)[0]
  }

  /** Stored events [from, to) before `#base`, copied and frozen as the log holds them (they were validated when logged). */
  #readPrefix(from: number, to: number, asHistoryHolds = true): SessionEvent[] {
    const reader = this.#prefix
    if (reader === null) return []
    const raw = reader(from, to)
    if (raw.length !== to - from) throw new SessionAppendError(`session ${this.id}: the store gave ${raw.length} events for seq ${from}..${to - 1}`)
    return raw.map((value, i) => {
      const event = toLoggedJson(value, `events[${from + i}]`) as SessionEvent
      if (!isRecordLike(event) || event.seq !== from + i) throw new SessionAppendError(`session ${this.id}: the store gave a wrong event for seq ${from + i}`)
      return event.surfaceOp === undefined || !asHistoryHolds ? event : this.#withHistoryMessage(event)
    })
  }

  #releaseHistory(): void {
    if (this.#prefix === null) return
    // the surface events an open from a checkpoint read go too: only the one at `#base - 1` stays
    for (const seq of this.#kept.keys()) if (seq !== this.#base - 1) this.#kept.delete(seq)
    for (const seq of this.#interrupted.keys()) if (this.#surface.indexOf(seq) === undefined) this.#interrupted.delete(seq)
    this.#surface.release(() => {
      const messages: Message[] = []
      for (const seq of this.#surface.seqs) {
        // a stored event as stored: the history it would be matched to is what is being read
        const event = seq >= this.#base ? this.#events[seq - this.#base] : (this.#kept.get(seq) ?? this.#readPrefix(seq, seq + 1, false)[0])
        const message = this.#interrupted.get(seq) ?? nodeMessage(event)
        if (message !== undefined) messages.push(message)
      }
      return messages
    })
  }

  /** A stored surface event carrying the history's own message value, as a current node's event in memory does (SS-7). */
  #withHistoryMessage(event: SessionEvent): SessionEvent {
    const message = this.#surface.messageAt(event.seq)
    if (message === undefined || messageOf(event) === message) return event
    const data = event.type === 'user/message' ? message : Object.freeze({ ...event.data, message })
    return Object.freeze({ ...event, data }) as SessionEvent
  }

  /** The whole log read through the store: held only while someone holds it (a WeakRef), so it is not kept heap. */
  #readThrough(): readonly SessionEvent[] {
    const held = this.#fullView?.deref()
    if (held !== undefined && held.length === this.length) return held
    const full = Object.freeze(this.#readPrefix(0, this.#base).concat(this.#events))
    this.#fullView = new WeakRef(full)
    return full
  }

  /**
   * Builds the session from a checkpoint's parts: the surface events (each checked against its schema and copied),
   * then the tail after it, validated, committed and structure-checked like a seed's events from where the
   * checkpoint stands (a refusal names `seed[seq]`, as a whole seed's would). Pure until it returns: a throw leaves nothing.
   */
  #loadResume(resume: SessionResume): void {
    const { base, surface, last, tail, read } = resume
    this.#base = base
    this.#prefix = read
    const adopt = (raw: unknown, at: string): SessionEvent => {
      const copy = toLoggedJson(raw, at)
      if (!isRecordLike(copy) || typeof copy.seq !== 'number' || !Number.isInteger(copy.seq) || copy.seq < 0 || copy.seq >= base)
        throw new SessionAppendError(`${at}: not an event before seq ${base}`, { path: at })
      for (const key of Object.keys(copy)) {
        if (!ENVELOPE_KEYS.has(key)) throw new SessionAppendError(`${at}: unknown envelope key ${JSON.stringify(key)}`, { path: formatPath(at, [key]) })
      }
      const type = copy.type
      if (typeof type !== 'string' || !isKnownType(type)) throw new SessionAppendError(`${at}: unknown event type`, { path: at })
      const parsed = EventDataSchemas[type].safeParse(copy.data)
      if (!parsed.success) throw new SessionAppendError(`${at}: ${type} data does not match its schema`, { path: `${at}.data`, cause: parsed.error })
      if (typeof copy.time !== 'number' || !Number.isFinite(copy.time)) throw new SessionAppendError(`${at}.time: not a finite number`, { path: `${at}.time` })
      return copy as unknown as SessionEvent
    }
    const nodes = surface.map((raw, i) => {
      const event = adopt(raw, `surface[${i}]`)
      if (!SURFACE.has(event.type) || event.surfaceOp === undefined) throw new SessionAppendError(`surface[${i}]: seq ${event.seq} is not a surface event`)
      if (this.#kept.has(event.seq)) throw new SessionAppendError(`surface[${i}]: seq ${event.seq} appears twice`)
      this.#kept.set(event.seq, event)
      if (event.type === 'assistant/message' && event.data.interrupted === true) this.#interrupted.set(event.seq, event.data.message)
      return event
    })
    // the nodes as they stand on the surface now: a replacement's own range is gone with the nodes it shadowed
    this.#surface = Surface.of(
      nodes.map((event) => event.seq),
      nodes.map((event) => nodeMessage(event)),
      resume.generation,
    )
    if (base > 0) {
      const lastEvent = adopt(last, 'last')
      if (lastEvent.seq !== base - 1) throw new SessionAppendError(`last: expected seq ${base - 1}, got ${lastEvent.seq}`)
      this.#kept.set(lastEvent.seq, lastEvent)
    }
    tail.forEach((raw: unknown, i) => this.#commitStored(raw, base + i))
    const { lastTurn, endSeed } = resume
    this.#checkStructure({ base, surface: nodes.map((event) => event.seq), lastTurn, endSeed, at: (seq) => this.#eventAt(seq) })
    this.#closeSeed()
  }

  /** The events kept in memory from `#base` on: all of them unless opened from a checkpoint or trimmed. */
  #recent(): readonly SessionEvent[] {
    return this.#base === 0 ? this.events : Object.freeze(this.#events.slice())
  }

  /** Reads the trimmed prefix back into memory: its store is about to close (the writer calls it for a short log). */
  #restore(): void {
    if (this.#base === 0) return
    this.#events.unshift(...this.#readPrefix(0, this.#base))
    this.#base = 0
    this.#kept.clear()
    this.#prefix = null
    this.#fullView = null
  }

  /**
   * Drops the events before `upTo` from memory (the history keeps its messages); later reads of them go through `read`.
   * Why: with a store, a long session keeps what its history needs, not its whole log (docs/persistence.md).
   */
  #trim(upTo: number, read: PrefixReader): void {
    if (upTo <= this.#base || upTo > this.length) return
    if (this.#prefix === null) this.#prefix = read
    const dropped = this.#events.splice(0, upTo - this.#base)
    // the history holds the surface nodes' messages; their events are read back through the store like any other
    this.#kept.clear()
    const lastDropped = dropped[dropped.length - 1]
    this.#kept.set(lastDropped.seq, lastDropped)
    this.#base = upTo
    this.#snapshot = Object.freeze([])
  }

  static {
    recentEvents = (session) => session.#recent()
    firstInMemory = (session) => session.#base
    restoreEvents = (session) => session.#restore()
    trimEvents = (session, upTo, read) => session.#trim(upTo, read)
    surfaceNodes = (session) => session.#surface.nodes()
    interruptedAnswers = (session) => [...session.#interrupted].filter(([seq]) => session.#surface.indexOf(seq) !== undefined).map(([, message]) => message)
    releaseHistory = (session) => session.#releaseHistory()
  }
}

/** Reads stored events [from, to) synchronously, as the store holds them. */
export type PrefixReader = (from: number, to: number) => readonly unknown[]

/** The parts of a session opened from a checkpoint. */
export interface SessionResume {
  /** The number of events the checkpoint covers: the tail starts at this seq. */
  readonly base: number
  /** The stored events of the surface nodes, in surface order. */
  readonly surface: readonly unknown[]
  /** The stored event at `base - 1`. */
  readonly last: unknown
  readonly generation: number
  /** The highest turn/start turn before `base` (0 for none) and whether a session/end-seed lies before it. */
  readonly lastTurn: number
  readonly endSeed: boolean
  /** The stored events from `base` on. */
  readonly tail: readonly unknown[]
  /** Read-through of the events before `base`. */
  readonly read: PrefixReader
}

/**
 * Whether a value reads as a Session (id, events, halted), by shape rather than class so a second copy of the
 * package still counts. Why: an Agent or a stored events array passed where a Session goes should be named as such.
 */
export function isSessionLike(value: unknown): value is Session {
  // a Session of this copy is one without reading its events (a stored one reads them through its store)
  if (value instanceof Session) return true
  return isRecordLike(value) && typeof value.id === 'string' && isArrayLike(value.events) && 'halted' in value
}

/** Creates a session, replaying `options.seed` if given (SS-9). */
export function createSession(options?: SessionOptions): Session {
  return new Session(options)
}

// ---- helpers -----------------------------------------------------------------

const sourcePath = (i: number) => `sourceEventSeqs[${i}]`

/**
 * The frozen-to-be envelope in its fixed key order. Why one literal per common shape: an object literal holds its
 * fields inline, where keys added one by one after it spill into a separate property store (kept heap).
 */
function envelope(
  seq: number,
  time: number,
  type: string,
  data: unknown,
  op: SurfaceOp | undefined,
  sources: readonly number[] | undefined,
  ignorable: boolean,
) {
  if (!ignorable) {
    if (op === undefined) return { seq, time, type, data }
    if (sources === undefined) return { seq, time, type, data, surfaceOp: op }
    return { seq, time, type, data, surfaceOp: op, sourceEventSeqs: sources }
  }
  const event: Record<string, unknown> = { seq, time, type, data }
  if (op !== undefined) event.surfaceOp = op
  if (sources !== undefined) event.sourceEventSeqs = sources
  event.ignorable = true
  return event
}

function reportObserverFailure(event: SessionEvent, err: unknown): void {
  console.error(`agentchart: a session/event observer failed on seq ${event.seq} (${event.type}); contained`, err)
}

/** tool/result data with the one field a replacement may change blanked out. */
function withoutResultContent(data: unknown): unknown {
  const d = data as { message: { content: readonly Record<string, unknown>[] } }
  return { ...d, message: { ...d.message, content: [{ ...d.message.content[0], content: null }] } }
}

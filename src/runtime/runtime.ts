// The runtime interprets the machines' effects with the real world: it
// appends to the session, runs hooks, the model stream, tool bodies and
// maintenance jobs, and feeds every outcome back as an event. It decides
// nothing about what happens next (DESIGN.md rule 1).
import { setMaxListeners } from 'node:events'
import { createActor, type Actor, type InspectionEvent, type Observer } from 'xstate'
import { StreamAssembler, admitChunk, normalizeStream } from '../adapters/assemble.js'
import { LlmError, toLlmFailure } from '../adapters/failure.js'
import type { ModelAdapter, ModelRequest } from '../adapters/types.js'
import { canonical } from '../canonical.js'
import { InboxError } from '../errors.js'
import { agentMachine, AWAITING_APPROVAL } from '../machines/agent.js'
import { initialContext } from '../machines/context.js'
import { alreadyPending, applySplice, duplicatedBy } from '../machines/inbox.js'
import type { AgentEvent, AgentInput, AppendEffect, CompactionReason, Effect, HookName, InboxLists, ToolOutcome } from '../machines/types.js'
import { deepFreeze, toFrozenJson } from '../session/lossless.js'
import {
  type LlmCallConfig,
  type LlmFailure,
  type Message,
  type UserMessage,
  type RequestHeader,
  type SessionEvent,
  type StreamChunk,
  type SessionEventType,
  type ToolSchema,
} from '../session/schemas.js'
import { FROZEN_JSON, MACHINE_BUILT, messageOf, surfaceNodeOf, type BuiltIntent, type Session } from '../session/session.js'
import type { Durability } from '../stores/writer.js'
import { checkArguments, classify, describeInvalidArgs, thrownOutcome, toOutcome, type ToolDefinition } from '../tools/define.js'
import { errorOutcome } from '../machines/tool-batch.js'
import { toLoggedConfig, type OutputSchemas } from '../request.js'
import type { RequestErrorAction, RetryPayload } from '../retry.js'
import type { CheckResult } from '../schema.js'
import { hookDecision } from './decisions.js'
import { Hooks } from './hooks.js'
import { runSummariser, type ResolvedCompaction } from '../compaction.js'
import { estimateTextTokens, planCompaction, SUMMARY_SOURCE, summaryText, type CompactionPlan } from '../session/compaction.js'

/** The longest delay setTimeout honours (a longer one fires at once); a longer grace waits this long. */
export const MAX_TIMER_MS = 2 ** 31 - 1
export interface RuntimeOptions {
  session: Session
  model: ModelAdapter
  tools: readonly ToolDefinition[]
  toolSchemas: readonly ToolSchema[]
  systemPrompt?: string
  seedConfig: LlmCallConfig
  /** Checks of the JSON output schemas seen, shared with the agent's turn results. */
  outputSchemas: OutputSchemas
  inbox: InboxLists
  lastTurn: number
  priorHeader: boolean
  /** The latest logged request/context, canonicalized (RQ-5). */
  contextKey?: string
  repair: AgentInput['repair']
  maxParallelToolCalls: number
  /** The most steps a turn may run (TU-16); null: no limit. */
  maxSteps: number | null
  hooks: Hooks
  /** The public handle, handed to hooks and tools as `agent`. */
  agent: unknown
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void)
  /** The agent machine, or a variant of it made with `agentMachine.provide()`; defaults to agentMachine. */
  machine?: typeof agentMachine
  /** The store writer of a durable session: outside work waits for the commits before it (issue #9). */
  durability?: Durability
  /** The default decision of agent/request-error (the retry policy, RQ-14); absent: give up. */
  retry?: (payload: RetryPayload) => RequestErrorAction
  /** Waits out a retry's backoff: resolves after `ms`, or early once `signal` aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>
  /** `ask` waits for a person even with no `tools/approval-requested` listener (TL-18); otherwise such a listener is the approver. */
  approvals?: boolean
  /** The log stops while a call waits for approval: the instance resumes in that wait (TL-18). */
  resume?: { input: NonNullable<AgentInput['resume']>; callSeqs: ReadonlyMap<string, number> }
  /** Compaction's policy and summariser; absent when it is off (docs/compaction.md). */
  compaction?: ResolvedCompaction
}

/** Effects that start work outside the machine. */
type WorkEffect = Extract<Effect, { type: 'fx.hook' | 'fx.prepare' | 'fx.model' | 'fx.tool' | 'fx.job' | 'fx.wait' | 'fx.summarise' }>

const ABORT = Symbol('abort')

/** The result of a tool call abandoned while its body ran: the same words and code a repaired log uses. */
const ABANDONED_TOOL: ToolOutcome = Object.freeze({
  isError: true,
  content: 'Error: the outcome of this tool call is unknown: it was abandoned while it ran. Retry it blindly only if the call is safe to repeat.',
  error: Object.freeze({ name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' }),
})

/** What an abandoned hook or request answers with. */
function abandonedFailure(): LlmFailure {
  return Object.freeze({ message: 'abandoned: it did not settle after the cancel', code: 'ABANDONED' })
}
/** How many chunks a stream may deliver before the runtime lets the event loop run once. */
const CHUNKS_PER_YIELD = 256
/** How many steps may follow each other without the event loop turning before a step boundary yields to it. */
const STEPS_PER_YIELD = 16

/** What one macrostep's effects came to: the first refused append, and what was left out after it. */
interface Batch {
  failed: { effect: AppendEffect; error: unknown } | null
  /** Appends performed nothing for after the failure (the machine may owe some again). */
  skipped: SessionEventType[]
  /** The `fx.confirm` that the failure answers instead of `appends.confirmed`. */
  confirm: number | undefined
  /** Async effects never started; each is answered as failed after the failure event. */
  unstarted: Effect[]
}

/** What `request.prepared` carries beside its id. */
type PreparedRequest = Omit<Extract<AgentEvent, { type: 'request.prepared' }>, 'type' | 'id'>

const freshBatch = (): Batch => ({ failed: null, skipped: [], confirm: undefined, unstarted: [] })

/** The intent of an append the stock machine built with nothing else to say: its data needs no schema pass (MACHINE_BUILT). */
const BUILT: BuiltIntent = Object.freeze({ [MACHINE_BUILT]: true as const })
/** The intent of a chunk event whose data the stream loop built frozen from checked values (FROZEN_JSON). */
const CHECKED: BuiltIntent = Object.freeze({ [FROZEN_JSON]: true as const })

export class Runtime {
  readonly actor: Actor<typeof agentMachine>
  readonly hooks: Hooks
  /** The public inbox projection, updated right after each splice is appended (IN-2). */
  lists: InboxLists
  #controller = new AbortController()
  #jobController: AbortController | null = null
  pendingJob: ((signal: AbortSignal) => Promise<unknown>) | null = null
  jobPromise: Promise<unknown> | null = null
  readonly #keys = new Map<string, number>()
  #batch: Batch = freshBatch()
  /** The thrown value behind each failure the machine holds as facts, so listeners get the error itself (PH-8). */
  readonly #thrown = new WeakMap<LlmFailure, unknown>()
  #depth = 0
  #rejection: Error | null = null
  /** True while the macrostep of the caller's own `dispatch` event runs: only its refusals are the caller's to throw. */
  #own = false
  #idleWaiters: Array<() => void> = []
  /** Steps begun since the event loop last turned, and whether a check of that is scheduled (`#mustYield`). */
  #stepsWithoutYield = 0
  #loopWatch = false
  /**
   * Work started outside the machine and not yet answered, by effect id, each with the answer it gets if it is
   * abandoned (`abandonRunning`); an answer that arrives after that is dropped by id (issue #8).
   */
  readonly #running = new Map<number, AgentEvent>()
  /** Grace periods of cancels (`cancel({ graceMs })`) still counting; cleared when the machine rests, so none outlives its activity. */
  readonly #graces = new Set<ReturnType<typeof setTimeout>>()
  /** Outside work waiting for the store, each with the log length it must see committed; started in order. */
  #held: Array<{ effect: WorkEffect; through: number }> = []
  #gate: 'open' | 'draining' | 'waiting' = 'open'
  /** runMaintenance's promise while its job waits for the store. */
  #heldJob: { resolve: (promise: Promise<unknown>) => void; reject: (error: unknown) => void } | null = null
  /** The records of the last request prepared, reused while its frozen config comes back unchanged. */
  #prepared: PreparedRequest | null = null
  /** The stock machine builds only valid events, so their schema pass is skipped; a `.provide()` variant's are checked. */
  readonly #built: boolean

  constructor(readonly options: RuntimeOptions) {
    this.hooks = options.hooks
    this.lists = options.inbox
    deepFreeze(options.toolSchemas) // they travel in every request (RQ-6)
    const machine = options.machine ?? agentMachine
    this.#built = machine === agentMachine
    const input: AgentInput = {
      seedConfig: options.seedConfig,
      priorHeader: options.priorHeader,
      contextKey: options.contextKey,
      lastTurn: options.lastTurn,
      repair: options.repair,
      maxParallelToolCalls: options.maxParallelToolCalls,
      maxSteps: options.maxSteps,
      nextTurn: options.inbox.nextTurn,
      nextStep: options.inbox.nextStep,
      instance: Math.random().toString(36).slice(2, 10),
      ...(options.resume ? { resume: options.resume.input } : {}),
      compaction: options.compaction?.mode ?? 'off',
    }
    // TL-18: a call that waited for approval when the last process stopped still waits; its calls' seqs are cited
    const resumed = options.resume ? machine.resolveState({ value: AWAITING_APPROVAL, context: initialContext(input) }) : undefined
    for (const [callId, seq] of options.resume?.callSeqs ?? []) this.#keys.set(`call:${callId}`, seq)
    this.actor = createActor(machine, { input, ...(resumed ? { snapshot: resumed } : {}), inspect: options.inspect })
    this.actor.on('*', (effect) => {
      try {
        this.#perform(effect)
      } catch (error) {
        this.hooks.logger.error('agentchart runtime failed to perform an effect', error)
      }
    })
    this.actor.subscribe({
      next: (snapshot) => {
        // the end of a macrostep: a refused append is reported now, with everything it left out
        if (this.#batch.failed) this.#reportFailure()
        // events queued by listeners come after this: their refusals are not the dispatching caller's
        this.#own = false
        if (snapshot.value === 'idle' || snapshot.status !== 'active') {
          this.#endGraces()
          this.#releaseIdle()
        }
      },
      error: (error) => this.hooks.logger.error('agentchart machine stopped on an error', error),
    })
    this.actor.start()
    // the restored batch commits what it owes (results of calls the stop interrupted) before anything else
    if (resumed) this.#send({ type: 'agent.resumed' })
  }

  /** Send an event from the public API; at top level, throw what the machine refused while processing it (IN-6, IN-7). */
  dispatch(event: AgentEvent): void {
    if (this.#depth > 0) {
      // queued behind the running macrostep, where the machine's refusal cannot reach this caller:
      // refuse a duplicate of what is pending now, as the machine would (IN-6)
      const twice = duplicatedBy(this.lists, event)
      if (twice !== null) throw new InboxError('ALREADY_PENDING', alreadyPending(twice))
      return this.actor.send(event)
    }
    this.#rejection = null
    this.#own = true
    try {
      this.#process(event)
    } finally {
      this.#own = false
    }
    const error = this.#rejection as Error | null
    this.#rejection = null
    if (error) throw error
  }

  #process(event: AgentEvent): void {
    this.#depth++
    try {
      this.actor.send(event)
    } finally {
      this.#depth--
    }
  }

  /**
   * Resolves once the machine rests in idle (PH-7) and stays there: after it reaches idle, the work listeners
   * queued on the way (a followup from a `turn/end` or `agent/status` listener, in a microtask or at once) runs
   * first, and a turn it opened is waited for too.
   */
  whenIdle(): Promise<void> {
    // resting now: at once (PH-7)
    return this.#resting() ? Promise.resolve() : this.#nextRest()
  }

  async #nextRest(): Promise<void> {
    for (;;) {
      if (!this.#resting()) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve))
      // one turn of the event loop: what listeners queued while the turn closed gets to run
      await new Promise((resolve) => setImmediate(resolve))
      if (this.#resting()) return
    }
  }

  /**
   * At a step boundary the machine asked to yield at (CX-16): true once STEPS_PER_YIELD steps ran with no turn of
   * the event loop between them. Why: a model and tools that never wait for I/O would starve timers (a cancel from
   * a setTimeout); a turn whose steps wait for I/O anyway keeps its exact ordering.
   */
  #mustYield(): boolean {
    if (!this.#loopWatch) {
      this.#loopWatch = true
      setImmediate(() => {
        this.#loopWatch = false
        this.#stepsWithoutYield = 0
      })
    }
    if (++this.#stepsWithoutYield < STEPS_PER_YIELD) return false
    this.#stepsWithoutYield = 0
    return true
  }

  #resting(): boolean {
    const snapshot = this.actor.getSnapshot()
    return snapshot.value === 'idle' || snapshot.status !== 'active'
  }

  /**
   * Answers every piece of outside work still running as abandoned: a tool body as a TOOL_OUTCOME_UNKNOWN error
   * result, a hook or request preparation as failed; their late answers are dropped. Why: a body or listener that
   * never settles must not keep a cancelled turn open forever (`dispose({ force: true })`, issue #8).
   */
  abandonRunning(): number {
    const answers = [...this.#running.values()]
    this.#running.clear()
    for (const answer of answers) this.#send(answer)
    return answers.length
  }

  /**
   * Abandon what the running activity still runs `graceMs` from now (as `abandonRunning` does), unless it ends first.
   * Why: `cancel({ graceMs })` bounds how long a cancelled turn waits for tool bodies and tool hooks that ignore
   * their signal, and the grace of one activity must never reach the work of the next.
   */
  abandonAfter(graceMs: number): void {
    if (this.#resting() || graceMs === Infinity) return
    // a rest before it fires clears it (#endGraces), so it only ever abandons the activity it was set for
    const timer = setTimeout(
      () => {
        this.#graces.delete(timer)
        this.abandonRunning()
      },
      Math.min(graceMs, MAX_TIMER_MS),
    )
    this.#graces.add(timer)
  }

  #endGraces(): void {
    if (this.#graces.size === 0) return
    for (const timer of this.#graces) clearTimeout(timer)
    this.#graces.clear()
  }

  /** Records outside work as running; the returned function answers the machine once, unless it was abandoned. */
  #track(id: number, abandoned: AgentEvent): (event: AgentEvent) => void {
    this.#running.set(id, abandoned)
    return (event) => {
      if (this.#running.get(id) !== abandoned) return // abandoned: its answer was given already
      this.#running.delete(id)
      this.#send(event)
    }
  }

  #releaseIdle(): void {
    const waiters = this.#idleWaiters
    this.#idleWaiters = []
    for (const resolve of waiters) resolve()
  }

  /** Feed an outcome back. */
  #send(event: AgentEvent): void {
    if (this.#depth > 0) return this.actor.send(event)
    this.#process(event)
  }

  /** A refused inbox request: thrown by the dispatching caller when it is theirs, else logged. */
  #refuse(error: Error): void {
    if (this.#own) this.#rejection = error
    else this.hooks.logger.error('agentchart refused a queued inbox request', error)
  }

  /** The facts of a thrown value, remembered with it so the edge can hand listeners the value itself. */
  #failureOf(error: unknown): LlmFailure {
    const failure = toLlmFailure(error)
    this.#thrown.set(failure, error)
    return failure
  }

  /** The error a listener gets for a failure: what was thrown, or an LlmError carrying the facts (RQ-9). */
  #errorOf(failure: LlmFailure): unknown {
    return this.#thrown.has(failure) ? this.#thrown.get(failure) : new LlmError(failure)
  }

  /** One `append.failed` for the macrostep, then a failed answer for each async effect it left unstarted. */
  #reportFailure(): void {
    const { failed, skipped, confirm, unstarted } = this.#batch
    this.#batch = freshBatch()
    const { effect, error } = failed!
    const failure = this.#failureOf(error)
    if (effect.caller) this.#refuse(error instanceof Error ? error : new Error(String(error)))
    this.#send({
      type: 'append.failed',
      ...(confirm !== undefined ? { id: confirm } : {}),
      eventType: effect.eventType,
      failure,
      skipped,
      lists: this.lists,
      ...(effect.caller ? { caller: effect.caller } : {}),
    })
    for (const unstartedEffect of unstarted) this.#send(this.#unstartedAnswer(unstartedEffect, failure))
  }

  #perform(effect: Effect): void {
    const batch = this.#batch
    switch (effect.type) {
      case 'fx.append':
        if (batch.failed) batch.skipped.push(effect.eventType)
        else this.#append(effect)
        return
      case 'fx.notify':
        if (!batch.failed) this.#notify(effect.name, effect.payload)
        return
      case 'fx.confirm':
        if (batch.failed) batch.confirm = effect.id
        else if (effect.yieldFirst && this.#mustYield()) setImmediate(() => this.#send({ type: 'appends.confirmed', id: effect.id }))
        else this.#send({ type: 'appends.confirmed', id: effect.id })
        return
      case 'fx.reject':
        this.#refuse(new InboxError(effect.code, effect.message))
        return
      case 'fx.abort':
        if (!this.#controller.signal.aborted) this.#controller.abort(effect.cause)
        if (this.#jobController && !this.#jobController.signal.aborted) this.#jobController.abort(effect.cause)
        return
      case 'fx.signal':
        this.#controller = new AbortController()
        // one turn signal fans out to every hook, request and tool body of the turn
        setMaxListeners(0, this.#controller.signal)
        this.#keys.clear()
        return
      case 'fx.job':
        // MT-1: the job starts synchronously (over a store: once the log before it is committed)
        if (this.#holds(effect)) return
        return this.#startJob(effect.id)
    }
    // everything below reaches outside: never after a refused append of the same macrostep
    if (batch.failed) {
      batch.unstarted.push(effect)
      return
    }
    if (effect.type === 'fx.classify') {
      // a pure decision of the tool's classifier, answered at once (TL-2)
      const call = effect.call
      return this.#send({ type: 'tool.classified', id: effect.id, mode: classify(this.#tool(call.name), deepFreeze(call.args)) })
    }
    // a pure reading of the log, answered at once like a classification (CP-1)
    if (effect.type === 'fx.measure') return this.#send({ type: 'compaction.measured', id: effect.id, plan: this.#measure(effect.reason, effect.entering) })
    if (this.#holds(effect)) return
    this.#start(effect)
  }

  // ---- durability gate (issue #9) -------------------------------------------
  // With a store, work that leaves the process (a listened hook, the model
  // request, a tool body, a maintenance job) starts only once every event
  // appended before it is committed, so nothing outside ever acts on a log the
  // store could lose. Hooks nobody listens to decide in-process and pass.
  // A failed commit is the machine's append failure of the earliest
  // uncommitted event; the session is halted by then, so whatever the machine
  // appends next is refused too and the stored log stays a repairable prefix.

  /** Holds `effect` until the store has caught up; false when it may start now. */
  #holds(effect: WorkEffect): boolean {
    const durability = this.options.durability
    if (durability === undefined) return false
    if (durability.fault !== null) {
      // the store failed earlier: nothing more leaves the process
      if (effect.type === 'fx.job') this.jobPromise = Promise.reject(durability.fault)
      this.#send(this.#unstartedAnswer(effect, this.#failureOf(durability.fault)))
      return true
    }
    if (this.#held.length === 0 && (!durability.pending || !this.#reachesOut(effect))) return false
    if (effect.type === 'fx.job') {
      // runMaintenance returns the job's own promise, which exists only once the job starts
      const started = new Promise<Promise<unknown>>((resolve, reject) => (this.#heldJob = { resolve, reject }))
      this.jobPromise = started.then((promise) => promise)
    }
    this.#held.push({ effect, through: this.options.session.length })
    if (this.#gate === 'open') this.#drain()
    return true
  }

  #reachesOut(effect: WorkEffect): boolean {
    if (effect.type === 'fx.hook') return this.hooks.count(effect.name) > 0
    if (effect.type === 'fx.prepare') return this.hooks.count('agent/request') > 0
    // a backoff timer stays in-process: it waits only behind held work, to keep the order
    if (effect.type === 'fx.wait') return false
    return true
  }

  /** Starts held work in order as the commits it waits for complete. */
  #drain(): void {
    const durability = this.options.durability!
    this.#gate = 'draining'
    while (this.#held.length > 0) {
      const { effect, through } = this.#held[0]
      let waiting: Promise<void> | undefined
      try {
        waiting = durability.commitThrough(through)
      } catch (error) {
        return this.#storeFailed(error)
      }
      if (waiting !== undefined) {
        this.#gate = 'waiting'
        waiting.then(
          () => this.#drain(),
          (error: unknown) => this.#storeFailed(error),
        )
        return
      }
      this.#held.shift()
      if (effect.type === 'fx.job') {
        const held = this.#heldJob!
        this.#heldJob = null
        this.#startJob(effect.id)
        held.resolve(this.jobPromise!)
      } else this.#start(effect)
    }
    this.#gate = 'open'
  }

  /** The machine hears a failed append of the earliest uncommitted event, then each held effect's failure. */
  #storeFailed(error: unknown): void {
    const held = this.#held
    this.#held = []
    this.#gate = 'open'
    if (this.#heldJob !== null) {
      this.#heldJob.reject(error)
      this.#heldJob = null
    }
    const failure = this.#failureOf(error)
    const eventType = this.options.durability?.failedType ?? 'turn/start'
    this.#send({ type: 'append.failed', eventType, failure, skipped: [], lists: this.lists })
    for (const { effect } of held) this.#send(this.#unstartedAnswer(effect, failure))
  }

  /**
   * The one place external work starts: hooks, the request, the model, tool bodies. Always a microtask
   * after the macrostep that asked, so listener cancels queued behind it are seen first (PH-2, CX-6);
   * work the machine abandons on cancel does not start once the turn's signal has aborted.
   */
  #start(effect: Exclude<WorkEffect, { type: 'fx.job' }>): void {
    const signal = this.#controller.signal
    queueMicrotask(() => {
      const abandoned =
        effect.type === 'fx.prepare' ||
        effect.type === 'fx.wait' ||
        effect.type === 'fx.summarise' ||
        (effect.type === 'fx.hook' && effect.abandonOnCancel === true)
      if (abandoned && signal.aborted) return
      switch (effect.type) {
        case 'fx.hook':
          return this.#runHook(signal, effect.id, effect.name, effect.payload, effect.fallback)
        case 'fx.prepare':
          return this.#prepare(signal, effect.id, effect.turn, effect.step, effect.seed)
        case 'fx.model':
          return void this.#stream(signal, effect.id, effect.turn, effect.step, effect.config)
        case 'fx.tool':
          return void this.#runTool(signal, effect.id, effect.call.callId, effect.call.name, effect.call.args)
        case 'fx.wait':
          return this.#backoff(signal, effect.id, effect.ms)
        case 'fx.summarise':
          return this.#summarise(signal, effect)
      }
    })
  }

  /**
   * A retry's backoff (RQ-14): the machine hears backoff.elapsed, unless the turn was cancelled meanwhile
   * (the machine left the backoff at once then). A `sleep` that throws is logged and the retry starts
   * without its wait: a broken clock must not leave the turn waiting forever.
   */
  #backoff(signal: AbortSignal, id: number, ms: number): void {
    const elapsed = () => {
      if (!signal.aborted) this.#send({ type: 'backoff.elapsed', id })
    }
    new Promise<void>((resolve) => resolve(this.options.sleep(ms, signal))).then(elapsed, (error: unknown) => {
      this.hooks.logger.error('agentchart: the sleep of a retry backoff failed; the retry starts now', error)
      elapsed()
    })
  }

  /** How an async effect that never started is answered, so the machine's book-keeping closes. */
  #unstartedAnswer(effect: Effect, failure: LlmFailure): AgentEvent {
    switch (effect.type) {
      case 'fx.job':
        return { type: 'job.settled', id: effect.id }
      case 'fx.tool':
        return { type: 'tool.settled', id: effect.id, outcome: errorOutcome(failure.message) }
      case 'fx.model':
        return { type: 'model.failed', id: effect.id, failure }
      case 'fx.classify':
        return { type: 'tool.classified', id: effect.id, mode: 'exclusive' }
      case 'fx.wait':
        return { type: 'backoff.elapsed', id: effect.id }
      case 'fx.measure':
        return { type: 'compaction.measured', id: effect.id, plan: null }
      case 'fx.summarise':
        return { type: 'compaction.failed', id: effect.id, failure }
      default:
        return { type: 'hook.failed', id: (effect as { id: number }).id, failure }
    }
  }

  /** A live notification; for agent/error the machine's facts become the error itself at this edge. */
  #notify(name: string, payload: Record<string, unknown>): void {
    if (this.hooks.count(name) === 0) return
    const { agent } = this.options
    if (name === 'agent/error') {
      const { failure, ...rest } = payload as { failure: LlmFailure }
      return this.hooks.emit(name, { ...deepFreeze(rest), error: this.#errorOf(failure), agent })
    }
    // listeners get the machine's data frozen: what they do to it cannot reach the machine's context
    this.hooks.emit(name, { ...deepFreeze(payload), agent })
  }

  #tool(name: string): ToolDefinition | undefined {
    return this.options.tools.find((t) => t.name === name)
  }

  #append(effect: AppendEffect): void {
    const { session } = this.options
    try {
      const { surfaceOp, citeKeys, time } = effect
      const sources = citeKeys ? this.#cited(citeKeys) : effect.sourceEventSeqs
      let intent: BuiltIntent | undefined = this.#built ? BUILT : undefined
      if (surfaceOp || sources || time !== undefined) {
        // built field by field: the spreads it replaces were a measurable part of every surface append
        const full: { -readonly [K in keyof BuiltIntent]: BuiltIntent[K] } = {}
        if (surfaceOp) full.surfaceOp = surfaceOp
        if (sources) full.sourceEventSeqs = sources
        if (time !== undefined) full.time = time
        if (this.#built) full[MACHINE_BUILT] = true
        intent = full
      }
      // through the session object, so a wrapped or failing store is honoured
      const event = session.append(effect.eventType, effect.data as never, intent) as SessionEvent
      if (effect.key) this.#keys.set(effect.key, event.seq)
      if (event.type === 'agent/inbox/spliced') this.lists = applySplice(this.lists, event.data)
    } catch (error) {
      this.#batch.failed = { effect, error }
    }
  }

  /** The seqs the keys of an append's citations name, in order; keys never logged are left out. */
  #cited(keys: readonly string[]): number[] {
    const seqs: number[] = []
    for (const key of keys) {
      const seq = this.#keys.get(key)
      if (seq !== undefined) seqs.push(seq)
    }
    return seqs
  }

  /** Run work that answers with one event; a throw is answered as hook.failed. */
  #settle(id: number, work: () => Promise<AgentEvent>): void {
    const answer = this.#track(id, { type: 'hook.failed', id, failure: abandonedFailure() })
    work().then(answer, (error) => answer({ type: 'hook.failed', id, failure: this.#failureOf(error) }))
  }

  #runHook(signal: AbortSignal, id: number, name: HookName, payload: Record<string, unknown>, fallback: unknown): void {
    // listeners get the machine's data frozen: what they do to it cannot reach the machine's context
    const full = { ...deepFreeze(payload), signal, agent: this.options.agent }
    // the retry policy is agent/request-error's default decision: listeners run first and can ask it with next()
    const { retry } = this.options
    const decideByDefault = name === 'agent/request-error' && retry ? () => retry(full as unknown as RetryPayload) : () => fallback
    this.#settle(id, async () => {
      const value = name === 'agent/turn-stopping' ? await this.hooks.serial(name, full) : await this.hooks.waterfall(name, full, decideByDefault)
      // the machine's own default needs no check; what a listener or the policy returned is read here into plain data (issue #8)
      const decided = value === fallback ? value : hookDecision(name, value, payload)
      return { type: 'hook.done', id, value: name === 'tools/pre-execute' ? this.#withoutApprover(decided) : decided }
    })
  }

  /** TL-18: with nobody to answer, `ask` behaves as deny (the question becomes the model's error result). */
  #withoutApprover(decision: unknown): unknown {
    const ask = decision as { kind?: string; reason?: string } | undefined
    if (ask?.kind !== 'ask' || this.options.approvals === true || this.hooks.count('tools/approval-requested') > 0) return decision
    return { kind: 'deny', reason: `approval required, and no approver is configured: ${ask.reason}` }
  }

  /** agent/request, then the frozen config, header and route record of the request (RQ-1, RQ-2). */
  #prepare(signal: AbortSignal, id: number, turn: number, step: number, seed: LlmCallConfig): void {
    // the seed is usually the config this runtime prepared last time: already a checked frozen copy
    const frozenSeed = seed === this.#prepared?.config ? seed : deepFreeze(toFrozenJson(seed, 'config'))
    this.#settle(id, async () => {
      const value = await this.hooks.waterfall('agent/request', { turn, step, signal, agent: this.options.agent }, () => frozenSeed)
      // a listener's config may carry a schema as its response format: the log keeps its JSON Schema
      const config = value === frozenSeed ? frozenSeed : toLoggedConfig(value, this.options.outputSchemas, 'agent/request result', true)
      return { type: 'request.prepared', id, ...this.#requestRecords(config) }
    })
  }

  /**
   * The header and route records of a request with this config, and their keys. Why cached: the same frozen
   * config comes back step after step, and canonical JSON of a header with tool schemas is the dear part.
   */
  #requestRecords(config: LlmCallConfig): PreparedRequest {
    const { systemPrompt, toolSchemas, model } = this.options
    // the adapter's context window is read each time: it is the one part that is not fixed for the runtime's life
    if (this.#prepared?.config === config && this.#prepared.context.contextWindow === model.contextWindow) return this.#prepared
    const header: RequestHeader = {
      config: config,
      ...(systemPrompt ? { system: systemPrompt } : {}),
      ...(toolSchemas.length ? { tools: [...toolSchemas] } : {}),
    }
    const context = { provider: config.provider, model: config.model, ...(model.contextWindow ? { contextWindow: model.contextWindow } : {}) }
    this.#prepared = { config, header, headerKey: canonical(header), context, contextKey: canonical(context) }
    return this.#prepared
  }

  /**
   * The hot path: each chunk is checked at the adapter boundary and appended directly; the machine hears only the
   * outcome (DESIGN rule 1). A malformed chunk is logged as the failure finish it stands for (MALFORMED_RESPONSE),
   * and reading stops at the first finish: an adapter whose cleanup never settles cannot hold the attempt open.
   */
  async #stream(signal: AbortSignal, id: number, turn: number, step: number, config: LlmCallConfig): Promise<void> {
    const answer = this.#track(id, { type: 'model.failed', id, failure: abandonedFailure() })
    const { session, model, systemPrompt, toolSchemas } = this.options
    const chunkSeqs: number[] = []
    const assembler = new StreamAssembler()
    let cancelled = signal.aborted
    try {
      const request: ModelRequest = Object.freeze({
        sessionId: session.id,
        config,
        messages: session.deriveMessages(),
        ...(systemPrompt ? { system: systemPrompt } : {}),
        ...(toolSchemas.length ? { tools: toolSchemas } : {}),
        ...(config.maxTokens ? { maxTokens: config.maxTokens } : {}),
        signal,
      })
      if (!cancelled) {
        // each read races the abort: a cancel ends the wait even when the adapter never answers. One promise per
        // read that the abort can settle, rather than Promise.race, whose reactions on a shared abort promise
        // piled up for the whole stream (GC pressure on every chunk, issue #13). The abort answers a microtask
        // later, as that reaction did, so a cancel lands on the same tick as before.
        let wake: ((next: typeof ABORT) => void) | undefined
        const onAbort = () => {
          const read = wake
          queueMicrotask(() => read?.(ABORT))
        }
        signal.addEventListener('abort', onAbort, { once: true })
        const iterator = normalizeStream(model, request)[Symbol.asyncIterator]()
        let done = false
        try {
          for (let count = 1; ; count++) {
            const reading = iterator.next()
            const next = await new Promise<IteratorResult<StreamChunk> | typeof ABORT>((resolve, reject) => {
              wake = resolve
              reading.then(resolve, reject)
              if (signal.aborted) queueMicrotask(() => resolve(ABORT))
            })
            if (next === ABORT || signal.aborted) {
              cancelled = true
              break
            }
            if (next.done) {
              done = true
              break
            }
            const admitted = admitChunk(next.value)
            const chunk: StreamChunk = admitted.ok ? admitted.chunk : { type: 'finish', reason: { kind: 'error', failure: admitted.failure } }
            // a hand-checked chunk is admitChunk's own deep-frozen build of checked values: the session takes it as is
            const event =
              admitted.ok && admitted.frozen
                ? session.append('assistant/chunk', Object.freeze({ turn, step, chunk }), CHECKED)
                : session.append('assistant/chunk', { turn, step, chunk })
            chunkSeqs.push(event.seq)
            assembler.push(chunk)
            if (chunk.type === 'finish') break
            // a stream that never waits for I/O would keep timers (a cancel from a setTimeout) from running
            if (count % CHUNKS_PER_YIELD === 0) await new Promise((resolve) => setImmediate(resolve))
          }
        } finally {
          signal.removeEventListener('abort', onAbort)
          // stopped early (cancelled, a finish, a malformed chunk, a refused append): let the adapter close its stream
          if (!done) void iterator.return?.(undefined).catch(() => {})
        }
      }
    } catch (error) {
      if (!signal.aborted) {
        // a refused chunk append (RQ-7) ends the attempt without recovery
        answer({ type: 'model.failed', id, failure: this.#failureOf(error) })
        return
      }
      cancelled = true
    }
    answer({ type: 'model.settled', id, chunkSeqs, response: assembler.result(), cancelled })
  }

  async #runTool(signal: AbortSignal, id: number, callId: string, name: string, args: unknown): Promise<void> {
    const answer = this.#track(id, { type: 'tool.settled', id, outcome: ABANDONED_TOOL })
    const tool = this.#tool(name)
    let outcome
    if (!tool) {
      outcome = errorOutcome(`unknown tool ${JSON.stringify(name)}`, { name: 'UnknownToolError', code: 'UNKNOWN_TOOL' })
    } else {
      let parsed: CheckResult<unknown>
      try {
        const checked = checkArguments(tool, args)
        parsed = checked instanceof Promise ? await checked : checked // a promise only from async refinements
      } catch (error) {
        parsed = { ok: false, issues: [{ path: '(root)', message: this.#failureOf(error).message }] }
      }
      if (!parsed.ok) {
        outcome = errorOutcome(describeInvalidArgs(name, parsed), { name: 'InvalidArgumentsError', code: 'INVALID_ARGS' })
      } else {
        outcome = await this.#execute(tool, parsed.value, callId, signal)
      }
    }
    answer({ type: 'tool.settled', id, outcome })
  }

  /** One body run, under the tool's `timeoutMs` when it has one: a body still running then gets its signal aborted and its late result dropped. */
  async #execute(tool: ToolDefinition, args: unknown, callId: string, turnSignal: AbortSignal): Promise<ToolOutcome> {
    const { name, timeoutMs } = tool
    const limited = timeoutMs !== undefined && timeoutMs !== Infinity
    // the body's own signal: aborted by the turn's, or by the timeout
    const controller = limited ? new AbortController() : null
    const follow = () => controller?.abort(turnSignal.reason)
    if (controller) {
      if (turnSignal.aborted) follow()
      else turnSignal.addEventListener('abort', follow, { once: true })
    }
    const signal = controller ? controller.signal : turnSignal
    let timer: ReturnType<typeof setTimeout> | undefined
    const body = (async () => {
      try {
        return toOutcome(name, await tool.execute(deepFreeze(args), { callId, name, signal, agent: this.options.agent }))
      } catch (error) {
        // TL-9: whatever was thrown, however hostile, becomes the call's error result
        return thrownOutcome(error)
      }
    })()
    if (!controller) return body
    const timedOut = new Promise<ToolOutcome>((resolve) => {
      timer = setTimeout(() => {
        const message = `tool ${name} did not settle within ${timeoutMs} ms`
        controller.abort(new Error(message))
        resolve(errorOutcome(message, { name: 'ToolTimeoutError', code: 'TOOL_TIMEOUT' }))
      }, timeoutMs)
    })
    try {
      return await Promise.race([body, timedOut])
    } finally {
      clearTimeout(timer)
      turnSignal.removeEventListener('abort', follow)
    }
  }

  // ---- compaction (docs/compaction.md) ---------------------------------------

  /** Estimated tokens per message, remembered by identity (logged messages are frozen and never change). */
  readonly #tokens = new WeakMap<object, number>()
  #baseTokens: number | undefined

  #estimate = (message: Message): number => {
    let tokens = this.#tokens.get(message)
    if (tokens === undefined) {
      tokens = this.options.compaction!.estimate(message)
      this.#tokens.set(message, tokens)
    }
    return tokens
  }

  /** The plan for the request the next step would send, from the current surface (CP-1). */
  #measure(reason: CompactionReason, entering: readonly UserMessage[]): CompactionPlan | null {
    const compaction = this.options.compaction
    if (compaction === undefined) return null
    const { session, systemPrompt, toolSchemas } = this.options
    this.#baseTokens ??=
      compaction.baseTokens ?? estimateTextTokens(systemPrompt ?? '') + (toolSchemas.length ? estimateTextTokens(JSON.stringify(toolSchemas)) : 0)
    const nodes = session.surface().map((seq) => surfaceNodeOf(session.at(seq)!))
    return planCompaction({ nodes, entering, baseTokens: this.#baseTokens, policy: compaction.policy, reason, estimate: this.#estimate })
  }

  /** Runs the summariser over the planned range; answers compaction.summarised or compaction.failed (CP-2, CP-3). */
  #summarise(signal: AbortSignal, effect: Extract<Effect, { type: 'fx.summarise' }>): void {
    const { session, model, toolSchemas } = this.options
    const compaction = this.options.compaction!
    const { plan } = effect
    const messages = plan.sources.map((seq) => messageOf(session.at(seq)!)).filter((message) => message.content.length > 0)
    const work = runSummariser({ compaction, model, sessionId: session.id, config: effect.config, tools: toolSchemas, messages, reason: effect.reason, signal })
    work.then(
      ({ summary, usage }) => {
        const message = { id: 'summary', role: 'user' as const, content: [{ type: 'text' as const, text: summaryText(summary) }], source: SUMMARY_SOURCE }
        const tokensAfter = Math.max(0, plan.tokensBefore - plan.rangeTokens + compaction.estimate(message))
        this.#send({ type: 'compaction.summarised', id: effect.id, summary, tokensAfter, ...(usage ? { usage } : {}) })
      },
      (error: unknown) => this.#send({ type: 'compaction.failed', id: effect.id, failure: this.#failureOf(error) }),
    )
  }

  #startJob(id: number): void {
    const job = this.pendingJob
    this.pendingJob = null
    const controller = new AbortController()
    this.#jobController = controller
    let promise: Promise<unknown>
    try {
      promise = Promise.resolve(job ? job(controller.signal) : undefined)
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- MT-2: the job's own rejection, whatever it threw
      promise = Promise.reject(error)
    }
    this.jobPromise = promise
    const settled = () => {
      if (this.#jobController === controller) this.#jobController = null
      this.#send({ type: 'job.settled', id })
    }
    promise.then(settled, settled)
  }
}

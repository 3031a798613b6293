// The runtime interprets the machines' effects with the real world: it
// appends to the session, runs hooks, the model stream, tool bodies and
// maintenance jobs, and feeds every outcome back as an event. It decides
// nothing about what happens next (DESIGN.md rule 1): it reports facts
// (listeners, observers, tool modes) and outcomes, and the machine decides.
import { setMaxListeners } from 'node:events'
import { createActor, transition, type Actor, type InspectionEvent, type Observer } from 'xstate'
import { LlmError, toLlmFailure } from '../adapters/failure.js'
import { contextWindowOf, normalizeStream } from '../adapters/assemble.js'
import type { ModelAdapter, ModelRequest } from '../adapters/types.js'
import { canonical } from '../values/canonical.js'
import { AgentStateError, ApprovalError, InboxError } from '../errors.js'
import { agentMachine } from '../machines/agent.js'
import { HOOK_NAMES } from '../machines/context.js'
import { applySplice } from '../machines/inbox.js'
import type {
  AgentEvent,
  AgentInput,
  AppendEffect,
  CompactionPlan,
  Effect,
  ActionEffects,
  Facts,
  HookName,
  InboxLists,
  ResumeInput,
} from '../machines/types.js'
import { deepFreeze, toLoggedJson } from '../session/lossless.js'
import type { LlmCallConfig, LlmFailure, Message, RequestHeader, SessionEvent, SessionEventType } from '../session/schemas.js'
import { pendingApprovals } from '../session/approvals.js'
import { ABANDONED_RESULT } from '../session/vocabulary.js'
import { InterruptedAnswers, type InterruptedHistory } from '../session/interrupted.js'
import { CHECKED, SCHEMA_CHECKED, interruptedAnswers, logSnapshot, type CheckedIntent, type Session } from '../session/session.js'
import type { Durability } from '../stores/writer.js'
import { classify, modesOf, type ToolDefinition } from '../tools/define.js'
import { toLoggedConfig, type OutputSchemas } from '../request/options.js'
import type { RequestErrorAction, RetryPayload } from '../request/retry.js'
import { hookAnswer } from './answers.js'
import { DurabilityGate, type WorkEffect } from './gate.js'
import { Hooks, NOTIFICATION_NAMES } from './hooks.js'
import { Pending } from './pending.js'
import { streamModel } from './stream.js'
import { Timers } from './timers.js'
import { executeWithListeners } from './tools.js'
import { checkAssembly, toAssembled, type Assembled, type PromptAssembly, type PromptContext } from './assembly.js'
import type { ResolvedCompaction } from '../compaction/options.js'
import { Compacting } from './compacting.js'

interface RuntimeOptions {
  session: Session
  model: ModelAdapter
  /** The system text and tools of requests until a step assembles its own (HK-12). */
  assembly: Assembled
  /** The default of system-prompt/assemble: createAgent's systemPrompt and tools for this step; absent when both are fixed. */
  assemble?: (context: PromptContext) => Promise<PromptAssembly>
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
  /** The store writer of a durable session: outside work waits for the commits before it. */
  durability?: Durability
  /** The default decision of agent/request-error (the retry policy, RQ-14); absent: give up. */
  retry?: (payload: RetryPayload) => RequestErrorAction
  /** Waits out a retry's backoff: resolves after `ms`, or early once `signal` aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>
  /** `ask` waits for a person even with no `tools/approval-requested` listener (TL-18). */
  approvals?: boolean
  /** The log stops while a call waits for approval: the instance resumes in that wait (TL-18). */
  resume?: { wait: ResumeInput; callSeqs: ReadonlyMap<string, number> }
  /** Compaction's policy and summariser; absent when it is off (docs/compaction.md). */
  compaction?: ResolvedCompaction
  /** Sees each event the runtime appended, before the inbox view moves past it (in-house readers, e.g. run tracking). */
  onAppend?: (event: SessionEvent) => void
  /** How requests show an answer a cancel cut short: followed by a note (default `mark`), or as logged (`keep`). */
  interrupted?: InterruptedHistory
}

/** What an abandoned hook or request answers with. */
function abandonedFailure(): LlmFailure {
  return Object.freeze({ message: 'abandoned: it did not settle after the cancel', code: 'ABANDONED' })
}

/** The first refused append of a macrostep, and what it left out: the appends skipped and the effects never started. */
interface Refusal {
  effect: AppendEffect
  error: unknown
  skipped: SessionEventType[]
  unstarted: number[]
}

/** What `request.prepared` carries beside its id. */
type PreparedRequest = Omit<Extract<AgentEvent, { type: 'request.prepared' }>, 'type' | 'id'>

const sameFacts = (a: Facts, b: Facts) =>
  a.observed === b.observed && a.approver === b.approver && a.modes === b.modes && a.listened.join() === b.listened.join()

export class Runtime {
  readonly actor: Actor<typeof agentMachine>
  readonly hooks: Hooks
  /** The public inbox projection, updated right after each splice is appended (IN-2). */
  lists: InboxLists
  readonly #machine: typeof agentMachine
  #controller = new AbortController()
  #jobController: AbortController | null = null
  /** The job runMaintenance registered, taken when the machine starts it. */
  pendingJob: ((signal: AbortSignal) => Promise<unknown>) | null = null
  /** The job's own promise, once the machine has asked for it (runMaintenance returns it). */
  jobPromise: Promise<unknown> | null = null
  #heldJob: { resolve: (promise: Promise<unknown>) => void; reject: (error: unknown) => void } | null = null
  readonly #keys = new Map<string, number>()
  #refusal: Refusal | null = null
  /** The thrown value behind each failure the machine holds as facts, so listeners get the error itself (PH-8). */
  readonly #thrown = new WeakMap<LlmFailure, unknown>()
  #depth = 0
  /** What the machine refused of the request the public API is dispatching now. */
  #rejection: Error | null = null
  /** True while the macrostep of the caller's own `dispatch` event runs: only its refusals are the caller's to throw. */
  #own = false
  #idleWaiters: Array<() => void> = []
  readonly #pending: Pending
  readonly #timers: Timers
  /** The compaction effects; null when compaction is off. */
  readonly #compacting: Compacting | null
  readonly #gate: DurabilityGate | null
  /** The records of the last request prepared, reused while its frozen config comes back unchanged. */
  #prepared: PreparedRequest | null = null
  /** The assembly the prepared records were made from. */
  #preparedFor: Assembled | null = null
  /** The stock machine builds its events from parsed values (SCHEMA_CHECKED); a `.provide()` variant's are parsed again. */
  readonly #stock: boolean
  #facts: Facts
  /** The system text and tools this step's requests send: the options', or the step's own assembly (HK-12). */
  #assembly: Assembled
  /** The tool modes of the current tools, kept with the list they were read from. */
  #modes: { tools: readonly ToolDefinition[]; modes: Facts['modes'] } | null = null
  /** The log's interrupted answers, which requests mark for the model; null with `interrupted: 'keep'`. */
  readonly #interrupted: InterruptedAnswers | null

  constructor(readonly options: RuntimeOptions) {
    this.hooks = options.hooks
    this.#timers = new Timers(options.hooks.logger)
    this.#compacting = options.compaction ? new Compacting(options.compaction, options.session, options.model) : null
    this.lists = options.inbox
    this.#assembly = options.assembly
    deepFreeze(options.assembly.toolSchemas) // they travel in every request (RQ-6)
    const machine = options.machine ?? agentMachine
    this.#machine = machine
    this.#stock = machine === agentMachine
    this.#pending = new Pending((event) => this.#send(event))
    const { durability } = options
    this.#gate = durability
      ? new DurabilityGate({
          durability,
          logLength: () => options.session.length,
          // a hook nobody listens to decides in-process; a backoff timer stays in-process (it waits only behind held work)
          reachesOut: (effect) =>
            effect.type === 'fx.hook'
              ? this.hooks.count(effect.name) > 0
              : effect.type === 'fx.prepare'
                ? this.hooks.count('agent/request') > 0
                : effect.type !== 'fx.wait',
          start: (effect) => this.#start(effect),
          failed: (error, eventType, held) => this.#storeFailed(error, eventType, held),
        })
      : null
    this.#facts = this.#currentFacts()
    this.#interrupted = options.interrupted === 'keep' ? null : new InterruptedAnswers()
    // only answers still on the surface can reach a request: a shadowed node never comes back
    if (this.#interrupted) for (const message of interruptedAnswers(options.session)) this.#interrupted.seeAnswer(message)
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
      ...(options.resume ? { resume: options.resume.wait } : {}),
      compaction: options.compaction?.mode ?? 'off',
      facts: this.#facts,
    }
    // TL-18: the calls a resumed approval wait cites were logged by the last process
    for (const [callId, seq] of options.resume?.callSeqs ?? []) this.#keys.set(`call:${callId}`, seq)
    this.actor = createActor(machine, { input, inspect: options.inspect })
    this.actor.on('effects', (emitted) => this.#performAll(emitted))
    this.actor.subscribe({
      next: (snapshot) => {
        // the end of a macrostep: a refused append is reported now, with everything it left out
        if (this.#refusal) this.#reportRefusal()
        // events queued by listeners come after this: their refusals are not the dispatching caller's
        this.#own = false
        if (snapshot.value === 'idle' || snapshot.status !== 'active') {
          this.#timers.endGraces()
          this.#releaseIdle()
        }
      },
      error: (error) => this.hooks.logger.error('agentchart machine stopped on an error', error),
    })
    this.hooks.onChange = () => this.refreshFacts()
    this.actor.start()
  }

  // ---- facts --------------------------------------------------------------------

  /** What the machine should know now of listeners, observers and tools. */
  #currentFacts(): Facts {
    const { hooks, options } = this
    const listened = HOOK_NAMES.filter(
      (name) =>
        hooks.count(name) > 0 ||
        (name === 'agent/request-error' && options.retry !== undefined) ||
        (name === 'system-prompt/assemble' && options.assemble !== undefined),
    )
    const observed = options.session.observers > 0 || NOTIFICATION_NAMES.some((name) => hooks.count(name) > 0)
    const approver = options.approvals === true || hooks.count('tools/approval-requested') > 0
    const { tools } = this.#assembly
    if (this.#modes?.tools !== tools) this.#modes = { tools, modes: modesOf(tools) }
    return { listened, observed, approver, modes: this.#modes.modes }
  }

  /** Tells the machine what changed of listeners and observers (a listener was added or removed, someone subscribed). */
  refreshFacts(): void {
    const facts = this.#currentFacts()
    if (sameFacts(facts, this.#facts)) return
    this.#facts = facts
    if (this.actor.getSnapshot().status === 'active') this.#send({ type: 'facts.changed', facts })
  }

  // ---- the public API's requests -------------------------------------------------------

  /** True while the machine processes an event: a request made now (from a listener or observer) is queued behind it. */
  get processing(): boolean {
    return this.#depth > 0
  }

  /** Send an event from the public API; throw what the machine refused while processing it (IN-6, IN-7). */
  dispatch(event: AgentEvent): void {
    if (this.#depth > 0) {
      // queued behind the running macrostep, where the refusal cannot reach this caller: ask the machine now
      const refusal = this.#refusalOf(event)
      if (refusal) throw refusal
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

  /**
   * What the machine would refuse of an inbox request queued behind the running macrostep, by XState's pure
   * `transition` over the snapshot with the inbox the log projects now (the committed snapshot's may lag it).
   * Other requests wait their turn, and a refusal then is logged.
   */
  #refusalOf(event: AgentEvent): Error | null {
    if (!event.type.startsWith('inbox.')) return null
    const { value, context } = this.actor.getSnapshot()
    const view = this.#machine.resolveState({ value, context: { ...context, nextTurn: this.lists.nextTurn, nextStep: this.lists.nextStep } })
    const [, actions] = transition(this.#machine, view, event)
    for (const action of actions) {
      const emitted = (action.params as { event?: ActionEffects } | undefined)?.event
      const refused = emitted?.type === 'effects' ? emitted.effects.find((e) => e.type === 'fx.reject') : undefined
      if (refused?.type === 'fx.reject') return refusalError(refused)
    }
    return null
  }

  #process(event: AgentEvent): void {
    this.#depth++
    try {
      this.actor.send(event)
    } finally {
      this.#depth--
    }
    if (this.#depth === 0) this.#deliverDeferred()
  }

  /**
   * Notifications held until the machine has finished processing, in order. Why: the agent/status{idle} listener
   * is where apps queue their next prompt, and a waking send from there must open its turn before it returns
   * (PH-2), which it can only do once XState is no longer inside a macrostep.
   */
  #deferred: Array<{ name: string; payload: Record<string, unknown> }> = []

  #deliverDeferred(): void {
    while (this.#deferred.length > 0) {
      const { name, payload } = this.#deferred.shift()!
      this.#notify(name, payload)
    }
  }

  /** Feed an outcome back. */
  #send(event: AgentEvent): void {
    if (this.#depth > 0) return this.actor.send(event)
    this.#process(event)
  }

  /** A refused request: thrown by the dispatching caller when it is theirs, else logged. */
  #refuse(refusal: Error): void {
    if (this.#own) this.#rejection = refusal
    else this.hooks.logger.error('agentchart refused a queued request', refusal)
  }

  /** The history a request carries: the derived messages, an interrupted answer followed by its note (unless `keep`). */
  requestMessages(): readonly Message[] {
    const { session } = this.options
    const messages = session.deriveMessages()
    return this.#interrupted ? this.#interrupted.mark(messages, session.replaceGeneration) : messages
  }

  // ---- rest ------------------------------------------------------------------------

  /**
   * Resolves once the machine rests in idle (PH-7) and stays there: after it reaches idle, the work listeners
   * queued on the way (a followup from a `turn/end` or `agent/status` listener, in a microtask or at once) runs
   * first, and a turn it opened is waited for too.
   */
  whenIdle(): Promise<void> {
    // asked from a listener inside processing: events queued behind it may start a turn yet
    return this.#resting() && this.#depth === 0 ? Promise.resolve() : this.#nextRest()
  }

  async #nextRest(): Promise<void> {
    for (;;) {
      if (!this.#resting()) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve))
      // one turn of the event loop: what listeners queued while the turn closed gets to run
      await new Promise((resolve) => setImmediate(resolve))
      if (this.#resting()) return
    }
  }

  #resting(): boolean {
    const snapshot = this.actor.getSnapshot()
    return snapshot.value === 'idle' || snapshot.status !== 'active'
  }

  #releaseIdle(): void {
    const waiters = this.#idleWaiters
    this.#idleWaiters = []
    for (const resolve of waiters) resolve()
  }

  /**
   * Answers every piece of outside work still running as abandoned: a tool body as a TOOL_OUTCOME_UNKNOWN error
   * result, a hook or request preparation as failed; their late answers are dropped. Why: a body or listener that
   * never settles must not keep a cancelled turn open forever (`dispose({ force: true })`).
   */
  abandonRunning(): number {
    return this.#pending.abandonAll()
  }

  /**
   * Abandon what the running activity still runs `graceMs` from now (as `abandonRunning` does), unless it ends first.
   * Why: `cancel({ graceMs })` bounds how long a cancelled turn waits for tool bodies and tool hooks that ignore
   * their signal, and the grace of one activity must never reach the work of the next.
   */
  abandonAfter(graceMs: number): void {
    if (this.#resting() || graceMs === Infinity) return
    this.#timers.grace(graceMs, () => this.abandonRunning())
  }

  // ---- effects ------------------------------------------------------------------------

  #performAll(emitted: ActionEffects): void {
    for (const effect of emitted.effects) {
      try {
        this.#perform(effect)
      } catch (error) {
        this.hooks.logger.error('agentchart runtime failed to perform an effect', error)
      }
    }
  }

  #perform(effect: Effect): void {
    const refusal = this.#refusal
    switch (effect.type) {
      case 'fx.append':
        if (refusal) refusal.skipped.push(effect.eventType)
        else this.#append(effect)
        return
      case 'fx.notify':
        if (refusal) return
        // TL-18: a question is announced only once it is stored, so the person paged can always answer it
        if (effect.name === 'tools/approval-requested' && this.#gate) {
          const { name, payload } = effect
          return this.#gate.afterCommit(() => this.#announceQuestion(name, payload))
        }
        // the idle notification waits for the end of processing, and so does everything after it (keeping their order)
        if (this.#depth > 0 && (this.#deferred.length > 0 || (effect.name === 'agent/status' && effect.payload.status === 'idle')))
          this.#deferred.push({ name: effect.name, payload: effect.payload })
        else this.#notify(effect.name, effect.payload)
        return
      case 'fx.reject':
        this.#refuse(refusalError(effect))
        return
      case 'fx.abort': {
        const reason = this.signalReasons.get(effect.cause) ?? effect.cause
        if (!this.#controller.signal.aborted) this.#controller.abort(reason)
        if (this.#jobController && !this.#jobController.signal.aborted) this.#jobController.abort(reason)
        return
      }
      case 'fx.signal':
        this.#controller = new AbortController()
        // one turn signal fans out to every hook, request and tool body of the turn
        setMaxListeners(0, this.#controller.signal)
        this.#keys.clear()
        return
    }
    // everything below answers the machine: never after a refused append of the same macrostep
    if (refusal) {
      refusal.unstarted.push(effect.id)
      return
    }
    switch (effect.type) {
      case 'fx.confirm':
        return this.#send({ type: 'appends.confirmed', id: effect.id })
      case 'fx.classify':
        // a pure decision of the tool's classifier, answered at once (TL-2)
        return this.#send({ type: 'tool.classified', id: effect.id, mode: classify(this.#tool(effect.call.name), deepFreeze(effect.call.args)) })
      case 'fx.measure': {
        // a pure reading of the log, answered at once like a classification (CP-1); a failed estimate answers CP-7
        let plan: CompactionPlan | null
        try {
          plan = this.#compacting?.measure(effect.reason, effect.entering, this.#assembly) ?? null
        } catch (error) {
          return this.#send({ type: 'compaction.failed', id: effect.id, failure: this.#failureOf(error) })
        }
        return this.#send({ type: 'compaction.measured', id: effect.id, plan })
      }
      case 'fx.prepare':
        // RQ-1: with nobody listening to agent/request the seed is the config: answered at once, like a classification
        if (this.hooks.count('agent/request') > 0) break
        if (this.#gate?.holds(effect) || this.#controller.signal.aborted) return
        return this.#prepareNow(effect.id, effect.seed)
      case 'fx.job':
        // MT-1: the job starts synchronously (over a store: once the log before it is committed); runMaintenance
        // returns a promise of it at once, which is the job's own when it starts now
        this.#jobs.set(effect.id, this.pendingJob)
        this.pendingJob = null
        this.jobPromise = new Promise<Promise<unknown>>((resolve, reject) => (this.#heldJob = { resolve, reject })).then((promise) => promise)
        if (this.#gate?.holds(effect)) return
        this.#heldJob = null
        return this.#startJob(effect.id)
    }
    if (this.#gate?.holds(effect)) return
    this.#start(effect)
  }

  /** A refused append, reported at the end of its macrostep with what it left out. */
  #reportRefusal(): void {
    const { effect, error, skipped, unstarted } = this.#refusal!
    this.#refusal = null
    const failure = this.#failureOf(error)
    if (effect.caller) this.#refuse(error instanceof Error ? error : new Error(String(error)))
    this.#send({
      type: 'append.failed',
      eventType: effect.eventType,
      failure,
      skipped,
      unstarted,
      lists: this.lists,
      ...(effect.caller ? { caller: effect.caller } : {}),
    })
  }

  /** The store failed: the machine hears it as a refused append, with the work the gate held as never started. */
  #storeFailed(error: unknown, eventType: SessionEventType | null, held: readonly WorkEffect[]): void {
    for (const effect of held) if (effect.type === 'fx.job') this.#jobs.delete(effect.id)
    if (held.some((e) => e.type === 'fx.job') && this.#heldJob) {
      this.#heldJob.reject(error)
      this.#heldJob = null
    }
    const failure = this.#failureOf(error)
    this.#send({ type: 'append.failed', eventType, failure, skipped: [], unstarted: held.map((e) => e.id), lists: this.lists })
  }

  /**
   * The one place outside work starts: hooks, the request, the model, tool bodies, backoffs, summaries, jobs. A
   * microtask after the macrostep that asked, so listener cancels queued behind it are seen first (PH-2, CX-6);
   * work the machine abandons on cancel does not start once the turn's signal has aborted.
   */
  #start(effect: WorkEffect): void {
    if (effect.type === 'fx.job') return this.#startJob(effect.id)
    const signal = this.#controller.signal
    // a model request after many steps that never waited for I/O first lets the event loop run (CX-16)
    const later = effect.type === 'fx.model' && this.#timers.mustYield() ? setImmediate : queueMicrotask
    later(() => {
      if ('abandonOnCancel' in effect && effect.abandonOnCancel && signal.aborted) return
      switch (effect.type) {
        case 'fx.hook':
          return this.#runHook(signal, effect.id, effect.name, effect.payload, effect.fallback)
        case 'fx.prepare':
          return this.#prepare(signal, effect.id, effect.turn, effect.step, effect.seed)
        case 'fx.model':
          return void this.#stream(signal, effect.id, effect.turn, effect.step, effect.config)
        case 'fx.tool': {
          const answer = this.#pending.track(effect.id, { type: 'tool.settled', id: effect.id, outcome: ABANDONED_RESULT })
          void executeWithListeners(this.hooks, this.#tool(effect.call.name), effect, signal, this.options.agent).then((outcome) =>
            answer({ type: 'tool.settled', id: effect.id, outcome }),
          )
          return
        }
        case 'fx.wait':
          return this.#timers.backoff(this.options.sleep, signal, effect.ms, () => this.#send({ type: 'backoff.elapsed', id: effect.id }))
        case 'fx.summarise':
          return void this.#compacting!.summarise(signal, effect, this.#assembly).then(
            (event) => this.#send(event),
            (error: unknown) => this.#send({ type: 'compaction.failed', id: effect.id, failure: this.#failureOf(error) }),
          )
      }
    })
  }

  /** Run work that answers with one event; a throw is answered as hook.failed. */
  #settle(id: number, work: () => Promise<AgentEvent>): void {
    const answer = this.#pending.track(id, { type: 'hook.failed', id, failure: abandonedFailure() })
    work().then(answer, (error) => answer({ type: 'hook.failed', id, failure: this.#failureOf(error) }))
  }

  #runHook(signal: AbortSignal, id: number, name: HookName, payload: Record<string, unknown>, fallback: unknown): void {
    // listeners get the machine's data frozen: what they do to it cannot reach the machine's context
    const full = { ...deepFreeze(payload), signal, agent: this.options.agent }
    if (name === 'system-prompt/assemble') return this.#assemble(id, full as unknown as PromptContext)
    // the retry policy is agent/request-error's default decision: listeners run first and can ask it with next()
    const { retry } = this.options
    const decideByDefault = name === 'agent/request-error' && retry ? () => retry(full as unknown as RetryPayload) : () => fallback
    this.#settle(id, async () => {
      const value = name === 'agent/turn-stopping' ? await this.hooks.serial(name, full) : await this.hooks.waterfall(name, full, decideByDefault)
      // the machine's own default needs no check; what a listener or the policy returned is read here into plain data
      return { type: 'hook.done', id, value: value === fallback ? value : hookAnswer(name, value, payload) }
    })
  }

  /**
   * HK-12: the step's system text and tools, from the options and the system-prompt/assemble chain. The machine
   * hears what was assembled (the text and the tool names) once the tools' modes are facts it knows.
   */
  #assemble(id: number, context: PromptContext): void {
    const { assemble } = this.options
    const current = this.#assembly
    const byDefault = (): PromptAssembly | Promise<PromptAssembly> =>
      assemble ? assemble(context) : { sections: current.system ? [current.system] : [], tools: current.tools }
    this.#settle(id, async () => {
      const value =
        this.hooks.count('system-prompt/assemble') > 0 ? await this.hooks.waterfall('system-prompt/assemble', context, byDefault) : await byDefault()
      this.#assembly = toAssembled(checkAssembly(value), this.#assembly)
      this.refreshFacts()
      const { system, tools } = this.#assembly
      return { type: 'hook.done', id, value: Object.freeze({ ...(system ? { system } : {}), tools: Object.freeze(tools.map((tool) => tool.name)) }) }
    })
  }

  /** The request's records from the seed alone, in the macrostep that asked (nobody listens to agent/request). */
  #prepareNow(id: number, seed: LlmCallConfig): void {
    let records: PreparedRequest
    try {
      records = this.#requestRecords(this.#frozenSeed(seed))
    } catch (error) {
      // answered as a failed preparation, as it is with a listener: the attempt ends error (an adapter's bad window)
      return this.#send({ type: 'hook.failed', id, failure: this.#failureOf(error) })
    }
    this.#send({ type: 'request.prepared', id, ...records })
  }

  /** The seed as checked frozen JSON, its frozen parts kept (a response format's schema stays the object its check is registered under). */
  #frozenSeed(seed: LlmCallConfig): LlmCallConfig {
    return seed === this.#prepared?.config ? seed : toLoggedJson(seed, 'config')
  }

  /** agent/request, then the frozen config, header and route record of the request (RQ-1, RQ-2). */
  #prepare(signal: AbortSignal, id: number, turn: number, step: number, seed: LlmCallConfig): void {
    const frozenSeed = this.#frozenSeed(seed)
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
    const assembly = this.#assembly
    // the adapter's context window is read each time: it is the one part that is not fixed for the runtime's life
    const contextWindow = contextWindowOf(this.options.model)
    this.options.outputSchemas.requested(config)
    if (this.#prepared?.config === config && this.#preparedFor === assembly && this.#prepared.context.contextWindow === contextWindow) return this.#prepared
    const { system, toolSchemas } = assembly
    const header: RequestHeader = {
      config: config,
      ...(system ? { system } : {}),
      ...(toolSchemas.length ? { tools: [...toolSchemas] } : {}),
    }
    const context = { provider: config.provider, model: config.model, ...(contextWindow !== undefined ? { contextWindow } : {}) }
    this.#prepared = { config, header, headerKey: canonical(header), context, contextKey: canonical(context) }
    this.#preparedFor = assembly
    return this.#prepared
  }

  async #stream(signal: AbortSignal, id: number, turn: number, step: number, config: LlmCallConfig): Promise<void> {
    const answer = this.#pending.track(id, { type: 'model.failed', id, failure: abandonedFailure() })
    const { session, model } = this.options
    const { system, toolSchemas } = this.#assembly
    const request: ModelRequest = Object.freeze({
      sessionId: session.id,
      config,
      messages: this.requestMessages(),
      ...(system ? { system } : {}),
      ...(toolSchemas.length ? { tools: toolSchemas } : {}),
      ...(config.maxTokens ? { maxTokens: config.maxTokens } : {}),
      signal,
    })
    // llm/stream: listeners wrap the adapter's stream (RQ-1); next() is the adapter's, as normalized
    const { agent } = this.options
    const middleware =
      this.hooks.count('llm/stream') > 0
        ? () => this.hooks.waterfall('llm/stream', { request, turn, step, signal, agent }, () => normalizeStream(model, request))
        : undefined
    const outcome = await streamModel(session, model, request, turn, step, middleware)
    if (outcome.ok) answer({ type: 'model.settled', id, chunkSeqs: outcome.chunkSeqs, response: outcome.response, cancelled: outcome.cancelled })
    else answer({ type: 'model.failed', id, failure: this.#failureOf(outcome.error) })
  }

  /** Jobs the machine asked for, by effect id, until they start. */
  readonly #jobs = new Map<number, ((signal: AbortSignal) => Promise<unknown>) | null>()

  #startJob(id: number): void {
    const job = this.#jobs.get(id)
    this.#jobs.delete(id)
    const controller = new AbortController()
    this.#jobController = controller
    let promise: Promise<unknown>
    try {
      promise = Promise.resolve(job ? job(controller.signal) : undefined)
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- MT-2: the job's own rejection, whatever it threw
      promise = Promise.reject(error)
    }
    if (this.#heldJob) this.#heldJob.resolve(promise)
    else this.jobPromise = promise
    this.#heldJob = null
    // tracked like every other work: a forced disposal does not wait for a job that ignores its signal
    const answer = this.#pending.track(id, { type: 'job.settled', id })
    const settled = () => {
      if (this.#jobController === controller) this.#jobController = null
      answer({ type: 'job.settled', id })
    }
    promise.then(settled, settled)
  }

  // ---- the log and listeners -------------------------------------------------------------

  /** The facts of a thrown value, remembered with it so the edge can hand listeners the value itself. */
  #failureOf(error: unknown): LlmFailure {
    const failure = toLlmFailure(error)
    this.#thrown.set(failure, error)
    return failure
  }

  /** A cancel cause as its caller gave it, by the checked copy the machine holds: what the turn's signal is aborted with. */
  readonly signalReasons = new WeakMap<object, unknown>()

  /** Why the last agent.compact() could not measure the history (CP-7): the estimate's error as thrown, if it failed. */
  manualCompactionError(): unknown {
    const { reason, failure } = this.actor.getSnapshot().context.compaction
    return reason === 'manual' && failure ? this.#errorOf(failure) : undefined
  }

  /** The error a listener gets for a failure: what was thrown, or an LlmError carrying the facts (RQ-9). */
  #errorOf(failure: LlmFailure): unknown {
    return this.#thrown.has(failure) ? this.#thrown.get(failure) : new LlmError(failure)
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

  /** A held approval notice, delivered only while its question is still open (a cancel may have closed it meanwhile). */
  #announceQuestion(name: string, payload: Record<string, unknown>): void {
    const { callId } = payload as { callId: string }
    if (pendingApprovals(logSnapshot(this.options.session)).some((p) => p.callId === callId)) this.#notify(name, payload)
  }

  #tool(name: string): ToolDefinition | undefined {
    return this.#assembly.tools.find((t) => t.name === name)
  }

  #append(effect: AppendEffect): void {
    const { session } = this.options
    let event: SessionEvent
    try {
      const { surfaceOp, citeKeys, time } = effect
      const sources = citeKeys ? this.#cited(citeKeys) : effect.sourceEventSeqs
      let intent: CheckedIntent | undefined = this.#stock ? CHECKED : undefined
      if (surfaceOp || sources || time !== undefined) {
        const full: { -readonly [K in keyof CheckedIntent]: CheckedIntent[K] } = {}
        if (surfaceOp) full.surfaceOp = surfaceOp
        if (sources) full.sourceEventSeqs = sources
        if (time !== undefined) full.time = time
        if (this.#stock) full[SCHEMA_CHECKED] = true
        intent = full
      }
      // through the session object, so a wrapped or failing store is honoured
      event = session.append(effect.eventType, effect.data as never, intent)
    } catch (error) {
      this.#refusal = { effect, error, skipped: [], unstarted: [] }
      return
    }
    if (effect.key) this.#keys.set(effect.key, event.seq)
    this.#interrupted?.see(event)
    // the event is logged: a follower's fault is reported, never taken for a refused append
    try {
      this.options.onAppend?.(event)
    } catch (error) {
      this.hooks.logger.error(`agentchart: following the logged ${event.type} failed`, error)
    }
    if (event.type === 'agent/inbox/spliced') this.lists = applySplice(this.lists, event.data)
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
}

/** The error a refused request's caller gets, by the refusal's code. */
function refusalError(refusal: Extract<Effect, { type: 'fx.reject' }>): Error {
  const { code, message, callId } = refusal
  switch (code) {
    case 'APPROVAL_UNKNOWN':
    case 'APPROVAL_ALREADY_ANSWERED':
      return new ApprovalError(code, callId ?? '', message)
    case 'AGENT_BUSY':
    case 'AGENT_DISPOSED':
    case 'COMPACTION_OFF':
      return new AgentStateError(code, message)
    default:
      return new InboxError(code, message)
  }
}

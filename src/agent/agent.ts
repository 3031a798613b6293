// The Agent class, the public handle: it wires a session, a model and tools to the
// agent machine through the runtime. Methods only validate and send events.
import { AgentStateError, ConfigError, ForkError, SessionAppendError, SessionInUseError } from '../errors.js'
import type { TurnOptions } from '../machines/types.js'
import { checkRunOptions, TurnSignals, type RunOptions } from './run-options.js'
import { toInboxMessage } from '../request/messages.js'
import { Hooks } from '../runtime/hooks.js'
import { canonical } from '../values/canonical.js'
import { Runtime } from '../runtime/runtime.js'
import { MAX_TIMER_MS } from '../values/timer.js'
import { AgentCancelCauseSchema, type AgentCancelCause, type InboxTarget, type Message, type SessionEvent, type UserMessage } from '../session/schemas.js'
import { OutputSchemas, seedConfig } from '../request/options.js'
import { LogIndex, type RunResult, type UsageTotals } from './results.js'
import { RunTracker } from './runs.js'
import { describeValue } from '../values/foreign.js'
import { approvalWaitOf, pendingApprovalsWithin, type PendingApproval } from '../session/approvals.js'
import { forkSession, type ForkOptions } from '../session/fork.js'
import { repairClosers, openTurnOf } from '../session/repair.js'
import { createSession, logSnapshot, type Session } from '../session/session.js'
import type { SessionStore } from '../stores/types.js'
import { factsOf, recentEvents } from '../stores/checkpoint.js'
import { checkSessionId } from '../stores/lease.js'
import { toolSchemas, type ToolDefinition } from '../tools/define.js'
import { isToolSource } from '../tools/source.js'
import { StepTools } from '../tools/step-tools.js'
import { assembleFromOptions, type PromptContext, type ToolsOption } from '../runtime/assembly.js'
import { LiveTelemetry } from '../telemetry/live.js'
import { withRecovered, type Durable } from './durable.js'
import { LISTENER_NAMES, type AgentHooks, type ListenerName } from './hooks.js'
import { Inbox } from './inbox.js'
import type { AgentStatus } from './agent-type.js'
import { checkGrace, checkOptions, DEFAULT_GRACE_MS, type AgentOptions, type CancelOptions, type CompactionResult, type DisposeOptions } from './options.js'
import { collected, inspectors, liveAgents, mailReaders, telemetries } from './registry.js'

/**
 * HK-11 over a store: session-start after the caller's `await createAgent(...)` has run, so a listener added right
 * after creation hears it (a send or run before then announces it first).
 */
export function announceLater(agent: Agent): void {
  setImmediate(() => startOf(agent))
}

/** The cause dispose() cancels with (CX-1). */
const DISPOSED: AgentCancelCause = Object.freeze({ kind: 'disposed' })

/** Starts an agent from outside the class: the only way to reach its private #start. */
let startOf: (agent: Agent) => void

/** The class, under a name the merge below can refer to. */
type AgentClass = Agent
declare module './agent-type.js' {
  /** The Agent class's members: what the options and listeners are handed is the whole agent. */
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the members come from the class it extends
  interface Agent extends AgentClass {}
}

export class Agent {
  readonly id: string
  readonly session: Session
  readonly inbox: Inbox
  readonly #runtime: Runtime
  readonly #hooks: Hooks
  #started = false
  #disposed: Promise<void> | null = null
  #forced = false
  readonly #resumed: boolean
  readonly #index: LogIndex
  readonly #runs: RunTracker
  /** The one session observer feeding `session/event` listeners, installed on first use and removed at disposal. */
  #unobserve: (() => void) | null = null
  /** Stops telling the machine when the session is watched (at disposal). */
  #unwatch: (() => void) | null = null
  readonly #durable: Durable | null
  /** The checks of the response formats this agent has seen (createAgent's, listeners', run options'). */
  readonly #outputSchemas: OutputSchemas
  /** Prompts whose run options carry a signal, until their turn ends (created on first use). */
  #signals: TurnSignals | null = null
  /** What each pending compact() listens for: its record as it is appended (a stored session may trim it by the time compact() settles). */
  readonly #compactions = new Set<(event: SessionEvent) => void>()

  /** Use createAgent; `durable` is how the stored form hands over its store writer. */
  constructor(options: AgentOptions, durable?: Durable) {
    const { model, maxTokens, maxParallelToolCalls, maxSteps, tools, retry, sleep, compaction, telemetry, interrupted } = checkOptions(options)
    if ((options as { store?: unknown }).store !== undefined && durable === undefined) {
      throw new ConfigError('an agent over a store is made by createAgent({ store, ... }), which returns a promise', { path: 'store' })
    }
    this.#durable = durable ?? null
    if (durable) durable.writer.onCommit = (length) => this.#hooks.emit('session/committed', { length, agent: this })
    const session = options.session ?? createSession(options.id !== undefined ? { id: options.id } : {})
    if (options.id !== undefined && options.id !== session.id) {
      throw new ConfigError(`options.id ${options.id} differs from the session id ${session.id}`, { path: 'id' })
    }
    // RS-7: a session (or the open turn of its log) belongs to one live agent
    const owner = liveAgents.get(session.id)?.deref()
    // a session opened from a checkpoint or trimmed keeps its open turn in memory: what is older is closed
    const recent = recentEvents(session)
    const open = openTurnOf(recent)
    if (owner && !owner.#disposed) {
      if (owner.session === session) throw new AgentStateError('SESSION_IN_USE', `session ${session.id} already belongs to a live agent`)
      if (open && openTurnOf(recentEvents(owner.session))?.turn === open.turn) {
        throw new AgentStateError(
          'SESSION_IN_USE',
          `turn ${open.turn} of session ${session.id} is open in a live agent, which will close it; it cannot be repaired here`,
        )
      }
    }
    this.session = session
    this.id = session.id
    // what the loop reads of the log's past (turn numbers, header, route, inbox), folded once per session (IN-14)
    const facts = factsOf(session)
    // TL-18: a log that stops while a call waits for approval resumes in that wait instead of being repaired
    const resume = approvalWaitOf(recent)
    this.#resumed = session.length > 0
    const outputSchemas = new OutputSchemas()
    this.#outputSchemas = outputSchemas
    const seed = seedConfig({ provider: model.provider, model: model.model }, model.defaultConfig, options.request, maxTokens, outputSchemas)
    this.#hooks = new Hooks(options.logger ?? { error: (message, error) => console.error(`[agentchart] ${message}:`, error) })
    // tool sources are read at every step's assembly, through one snapshot of their lists (docs/mcp.md)
    const sources = tools.some(isToolSource) ? new StepTools(tools, this.#hooks.logger) : null
    const plain = sources ? sources.current : (tools as ToolDefinition[])
    const assembledTools: ToolsOption<Agent> | undefined = sources
      ? async ({ turn, step }) => sources.refresh({ turn, step })
      : typeof options.tools === 'function'
        ? options.tools
        : undefined
    // spans follow the log itself, not the listeners: they neither watch the agent nor slow a step down
    const spans = telemetry ? new LiveTelemetry(session, telemetry, this.#hooks.logger) : null
    this.#runtime = new Runtime({
      session,
      model,
      assembly: {
        ...(typeof options.systemPrompt === 'string' && options.systemPrompt ? { system: options.systemPrompt } : {}),
        tools: plain,
        toolSchemas: toolSchemas(plain),
      },
      ...(assembledTools !== undefined || typeof options.systemPrompt === 'function'
        ? { assemble: (context: PromptContext) => assembleFromOptions(options.systemPrompt, assembledTools ?? plain, context as PromptContext<Agent>) }
        : {}),
      seedConfig: seed,
      outputSchemas,
      inbox: { nextTurn: [...facts.inbox.nextTurn], nextStep: [...facts.inbox.nextStep] },
      lastTurn: facts.lastTurn,
      priorHeader: facts.priorHeader,
      ...(facts.lastRoute !== null ? { contextKey: canonical(facts.lastRoute) } : {}),
      repair: resume ? [] : withRecovered(repairClosers(recent), durable?.recovered),
      ...(resume ? { resume } : {}),
      approvals: options.approvals === true,
      maxParallelToolCalls,
      maxSteps,
      hooks: this.#hooks,
      agent: this,
      inspect: options.inspect,
      machine: options.machine,
      ...(durable ? { durability: durable.writer } : {}),
      retry,
      sleep,
      ...(compaction ? { compaction } : {}),
      interrupted,
      onAppend: (event) => {
        this.#runs?.onAppend(event)
        this.#signals?.onAppend(event)
        for (const see of this.#compactions) see(event)
        spans?.catchUp()
      },
    })
    // weakly: a session that outlives a dropped agent must not keep it alive (RS-7)
    const runtime = new WeakRef(this.#runtime)
    this.#unwatch = session.watchObservers(() => runtime.deref()?.refreshFacts())
    this.inbox = new Inbox(
      () => this.#runtime,
      () => {
        this.#assertLive()
        if (this.session.publishing) throw new SessionAppendError('cannot edit the inbox while session/event observers are running (SS-11)')
      },
    )
    this.#index = new LogIndex(session)
    if (durable) durable.writer.beforeTrim = () => this.#index.catchUp()
    this.#runs = new RunTracker({
      index: this.#index,
      schemas: outputSchemas,
      lists: () => this.#runtime.lists,
      whenIdle: () => this.#runtime.whenIdle(),
      running: () => this.status === 'running',
      awaiting: (turn) => this.pendingApprovals.find((p) => p.turn === turn)?.callId,
      ...(durable ? { committed: () => durable.writer.settle() } : {}),
    })
    if (options.inspect) inspectors.set(this, options.inspect)
    if (spans) telemetries.set(this, spans)
    liveAgents.set(session.id, new WeakRef(this))
    collected.register(this, session.id, this)
    // over a store, createAgent's promise resolves later: openStoredAgent announces once the caller has the agent
    if (!durable) queueMicrotask(() => this.#start())
  }

  /** The session id (equal to `id`): the key under which a store keeps this agent's log. */
  get sessionId(): string {
    return this.id
  }

  /** The store this agent's log is committed to, if it was made over one. */
  get store(): SessionStore | undefined {
    return this.#durable?.store
  }

  /** How many events are durable: all of them without a store, the committed prefix with one. */
  get committedLength(): number {
    return this.#durable ? this.#durable.writer.committed : this.session.length
  }

  /** Resolves once every event appended so far is committed; rejects with the store's fault (a StoreError). */
  flush(): Promise<void> {
    return this.#durable ? this.#durable.writer.flush() : Promise.resolve()
  }

  /** The root XState actor, for inspection and composition. */
  get actor() {
    return this.#runtime.actor
  }

  /** Public status: maintenance reads as idle (PH-1). */
  get status(): AgentStatus {
    const value = this.#runtime.actor.getSnapshot().value
    return typeof value === 'object' && value !== null && 'running' in value ? 'running' : 'idle'
  }

  /** Queue a prompt as its own turn and wake the agent (IN-1); `options` apply to that turn only. */
  followup(message: UserMessage | string, options?: RunOptions): void {
    this.#assertLive()
    const checked = checkRunOptions(options, this.#outputSchemas)
    const inboxMessage = toInboxMessage(message)
    this.#sendWatched(inboxMessage, checked)
  }
  /** Steer the running turn at its next step boundary, waking an idle agent; a steer joins that turn, so it takes no options. */
  steer(message: UserMessage | string, options?: never): void {
    if (options !== undefined) {
      throw new ConfigError('steer takes no options: a steer joins the running turn, whose options were set by its run() or followup()', {
        path: 'options',
      })
    }
    this.send(message, 'next-step', true)
  }
  /** Add context for the next step without waking (IN-11, IN-12). */
  inject(message: UserMessage | string): void {
    this.send(message, 'next-step', false)
  }
  /** The general form: insert at the end of `target`, waking when asked. */
  send(message: UserMessage | string, target: InboxTarget, wakeup: boolean): void {
    this.#send(message, target, wakeup)
  }

  #send(message: UserMessage | string, target: InboxTarget, wakeup: boolean, options?: TurnOptions): void {
    this.#assertLive()
    if (target !== 'next-turn' && target !== 'next-step')
      throw new ConfigError(`target must be 'next-turn' or 'next-step', got ${describeValue(target)}`, { path: 'target' })
    if (this.session.publishing) throw new SessionAppendError('cannot send while session/event observers are running (SS-11)')
    const inboxMessage = toInboxMessage(message)
    this.#start()
    this.#runtime.dispatch({ type: 'inbox.send', message: inboxMessage, target, wakeup: wakeup === true, ...(options ? { options } : {}) })
  }

  /** A prompt of its own turn, with its options; a signal is watched before the send, which may claim it at once (PH-2). */
  #sendWatched(message: UserMessage, { turn, signal }: ReturnType<typeof checkRunOptions>): void {
    if (signal?.aborted) throw new ConfigError('options.signal is already aborted: nothing was queued', { path: 'options.signal' })
    const unwatch = signal ? this.#watchSignal(message.id, signal) : undefined
    try {
      this.#send(message, 'next-turn', true, turn)
    } catch (error) {
      unwatch?.()
      throw error
    }
  }

  /** Follows a prompt given a signal: its abort cancels that prompt's turn, or discards the prompt while queued. */
  #watchSignal(id: string, signal: AbortSignal): () => void {
    if (!this.#signals) {
      this.#signals = new TurnSignals({
        lists: () => this.#runtime.lists,
        remove: (messageId) => this.inbox.remove(messageId),
        runningTurn: () => (this.status === 'running' ? (openTurnOf(logSnapshot(this.session))?.turn ?? null) : null),
        cancel: (cause) => this.cancel(cause, { keepInbox: true }),
      })
    }
    return this.#signals.watch(id, signal)
  }

  /**
   * Queue `input` as its own turn (like `followup`) and resolve when that turn ends, with its
   * logged end reason, answer, usage and step count. An input that never reaches a turn resolves
   * too: `discarded` (a cancel or inbox edit removed it) or `parked` (the agent went idle with it queued).
   */
  run<T = unknown>(input: UserMessage | string, options?: RunOptions): Promise<RunResult<T>> {
    this.#assertLive()
    const checked = checkRunOptions(options, this.#outputSchemas)
    const message = toInboxMessage(input)
    return this.#runs.follow<T>(message.id, () => this.#sendWatched(message, checked))
  }

  /** Tokens over the whole session (seeded history included), failed attempts included. */
  get usage(): UsageTotals {
    return this.#index.usage()
  }

  /**
   * Abort the live activity with `cause` (first wins) and, unless keepInbox, discard pending input (CX-1..CX-4).
   * The `disposed` cause is disposal itself: it starts `dispose()` (forced after `graceMs` when one is given).
   */
  cancel(cause: AgentCancelCause = { kind: 'user' }, options: CancelOptions = {}): void {
    if (this.#runtime.actor.getSnapshot().status !== 'active') return
    const parsed = AgentCancelCauseSchema.safeParse(cause)
    if (!parsed.success) throw new ConfigError(`invalid cancel cause: ${parsed.error.issues[0].message}`, { path: 'cause' })
    const graceMs = options?.graceMs
    if (graceMs !== undefined) checkGrace('cancel', graceMs)
    const keepInbox = options?.keepInbox === true
    if (parsed.data.kind === 'disposed') {
      this.dispose(graceMs === undefined ? { keepInbox } : { keepInbox, force: true, graceMs }).catch((error: unknown) =>
        this.#hooks.logger.error('agentchart: disposal by cancel({ kind: "disposed" }) failed', error),
      )
      return
    }
    this.#cancel(parsed.data, cause, keepInbox)
    // after the cancel: a turn it ended at once has nothing left to abandon
    if (graceMs !== undefined) this.#runtime.abandonAfter(graceMs)
  }

  /** The checked cause to the machine and the log; the caller's own object (`reason`) is what the signal aborts with. */
  #cancel(cause: AgentCancelCause, reason: unknown, keepInbox: boolean): void {
    if (this.#runtime.actor.getSnapshot().status !== 'active') return
    this.#runtime.signalReasons.set(cause, reason)
    this.#runtime.dispatch({ type: 'agent.cancel', cause, keepInbox })
  }

  /**
   * The calls waiting for a person's answer (TL-18), read from the log: they survive a restart over a store. Over a
   * store only committed questions are listed, so each one listed is still there after a crash.
   */
  get pendingApprovals(): readonly PendingApproval[] {
    return pendingApprovalsWithin(logSnapshot(this.session), this.committedLength)
  }

  /** Run the waiting call `callId` (its body runs once; no second pre-execute). Refuses unknown or answered ids. */
  approve(callId: string): void {
    this.#answer(callId, true)
  }

  /** Refuse the waiting call `callId`: its result is the error `reason`, which the model reads (post-execute still runs). */
  deny(callId: string, reason: string): void {
    if (typeof reason !== 'string') throw new ConfigError('deny needs a string reason (the model reads it)', { path: 'reason' })
    this.#answer(callId, false, reason)
  }

  #answer(callId: string, approved: boolean, reason?: string): void {
    this.#assertLive()
    // a disposal parks the wait: the question is answered by the agent that reopens the session
    if (this.#disposed) throw new AgentStateError('AGENT_DISPOSED', 'this agent is being disposed; answer from an agent that reopens the session')
    if (typeof callId !== 'string') throw new ConfigError('callId must be a string', { path: 'callId' })
    // a fact of the log the machine cannot know: whether this call's question was ever asked (a pending one is near the end)
    const { session } = this
    let logged = false
    for (let seq = session.length - 1; seq >= 0 && !logged; seq--) {
      const e = session.at(seq)!
      logged = e.type === 'tool/approval-request' && e.data.callId === callId
    }
    this.#runtime.dispatch({ type: 'approval.answered', callId, approved, logged, ...(reason !== undefined ? { reason } : {}) })
  }

  /** Resolves when the agent rests idle with no maintenance (PH-7) and, over a store, its log is committed (or the store failed). */
  whenIdle(): Promise<void> {
    const writer = this.#durable?.writer
    return writer ? this.#runtime.whenIdle().then(() => writer.settle()) : this.#runtime.whenIdle()
  }

  /** Run a job from true idle with its own abort signal; returns the job's own promise (MT-1, MT-2). */
  runMaintenance<T>(job: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.#assertLive()
    if (this.#disposed) throw new AgentStateError('AGENT_DISPOSED', 'this agent is being disposed')
    if (typeof job !== 'function') throw new ConfigError('runMaintenance needs a job function', { path: 'job' })
    this.#start()
    const runtime = this.#runtime
    // the job must start now (MT-1), and a request from a listener or observer waits behind the running event
    if (runtime.processing) {
      throw new AgentStateError(
        'AGENT_BUSY',
        'runMaintenance cannot start from inside the agent (a listener or observer it is running): call it once that returns',
      )
    }
    const spans = telemetries.get(this)
    runtime.pendingJob = spans ? spans.maintenance(job) : job
    runtime.jobPromise = null
    try {
      runtime.dispatch({ type: 'maintenance.start' })
    } finally {
      runtime.pendingJob = null
    }
    return runtime.jobPromise as unknown as Promise<T>
  }

  /**
   * Compact the history now (CP-4): from idle, the summariser replaces all but the recent tail with a summary,
   * logged like an automatic compaction with reason `manual`. Resolves when the agent is idle again, with the
   * record, or `compacted: false` when there was nothing to compact, the summariser failed (its record), or a cancel ended it.
   */
  async compact(): Promise<CompactionResult> {
    this.#assertLive()
    if (this.#disposed) throw new AgentStateError('AGENT_DISPOSED', 'this agent is being disposed')
    let result: CompactionResult | undefined
    const see = (event: SessionEvent) => {
      if (result !== undefined || (event.type !== 'compaction/completed' && event.type !== 'compaction/failed') || event.data.reason !== 'manual') return
      result = event.type === 'compaction/completed' ? { compacted: true, record: event.data } : { compacted: false, record: event.data }
    }
    this.#compactions.add(see)
    try {
      this.#start()
      this.#runtime.dispatch({ type: 'compaction.start' })
      // the measure is answered at once, so a failed estimate is known as the dispatch returns (CP-7)
      const failed = this.#runtime.manualCompactionError()
      if (failed !== undefined) throw failed as Error // as the estimator threw it, like a listener's error
      // the agent's whenIdle: over a store, the summary and its record are committed before compact() reports them
      await this.whenIdle()
    } finally {
      this.#compactions.delete(see)
    }
    return result ?? { compacted: false }
  }

  /** Listen to an extension point or notification; returns a disposer. */
  on<N extends ListenerName>(name: N, listener: AgentHooks[N]): () => void {
    if (typeof name !== 'string' || !LISTENER_NAMES.has(name)) {
      throw new ConfigError(`agent.on: unknown listener name ${describeValue(name)}; the names are ${[...LISTENER_NAMES].join(', ')}`, { path: 'name' })
    }
    if (typeof listener !== 'function') throw new ConfigError(`listener for ${name} must be a function`, { path: 'listener' })
    // session/event listeners are contained and logged like every notification (HK-3, SS-11)
    if (name === 'session/event' && !this.#unobserve) {
      this.#unobserve = this.session.observe((event, session) => this.#hooks.emit('session/event', { session, event, agent: this }))
    }
    return this.#hooks.on(name, listener)
  }

  /**
   * Cancel with `disposed`, wait for quiescence, then deregister (CX-17). With `force`, work that has not settled
   * `graceMs` after the cancel is abandoned, so a body that ignores its signal cannot keep disposal waiting.
   */
  dispose(options: DisposeOptions = {}): Promise<void> {
    const force = options?.force === true
    const graceMs = options?.graceMs ?? DEFAULT_GRACE_MS
    checkGrace('dispose', graceMs)
    const disposing = this.#disposed ?? this.#disposeNow(options?.keepInbox === true)
    if (force && !this.#forced) {
      this.#forced = true
      void this.#abandonAfter(graceMs)
    }
    return disposing
  }

  /** While the agent is not idle or a commit is pending: wait `graceMs`, then abandon what still runs (dispose({ force })). */
  async #abandonAfter(graceMs: number): Promise<void> {
    for (;;) {
      let timer: ReturnType<typeof setTimeout> | undefined
      const lapsed = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.min(graceMs, MAX_TIMER_MS))))
      const idle = await Promise.race([this.whenIdle().then(() => true), lapsed])
      clearTimeout(timer)
      if (idle) return
      this.#runtime.abandonRunning()
      // a commit the store does not answer halts the session as a failed one would: nothing acknowledged is lost
      this.#durable?.writer.abandon()
    }
  }

  #disposeNow(keepInbox: boolean): Promise<void> {
    // no more mail is applied from here (what is not yet applied stays for the next driver); the pass under way ends below
    const mailStopped = mailReaders.get(this)?.()
    this.#disposed = (async () => {
      try {
        this.#cancel(DISPOSED, DISPOSED, keepInbox)
      } catch (error) {
        // a halted session refuses the discard splices: the pending items stay in its log, disposal goes on
        this.#hooks.logger.error('agentchart: disposal could not discard the pending inbox', error)
      }
      await this.#runtime.whenIdle()
      // a parked approval wait has already stopped the machine (docs/approvals.md)
      if (this.#runtime.actor.getSnapshot().status === 'active') this.#runtime.dispatch({ type: 'agent.dispose' })
      await mailStopped
      // the last commits, then the lease goes so another driver may open the session at once
      await this.#durable?.writer.close().catch((error: unknown) => this.#hooks.logger.error('agentchart: releasing the store lease failed', error))
      this.#hooks.clear()
      if (liveAgents.get(this.id)?.deref() === this) liveAgents.delete(this.id)
      collected.unregister(this)
      this.#unobserve?.()
      this.#unobserve = null
      this.#unwatch?.()
      this.#unwatch = null
    })()
    return this.#disposed
  }

  /**
   * A new session seeded with this agent's log up to `upTo` (inclusive, outside any open turn), recording this
   * session as its parent (SS-14). Over a store the fork is stored too, under its own id (refused if taken),
   * so `createAgent({ store, sessionId: fork.id, model })` continues it there; both sessions go on independently.
   */
  async fork(options: Omit<ForkOptions, 'now'>): Promise<Session> {
    this.#assertLive()
    const id = options?.id ?? crypto.randomUUID()
    const owner = liveAgents.get(id)?.deref()
    if (owner && !owner.#disposed) throw new ForkError('FORK_ID_TAKEN', `session ${id} belongs to a live agent`, { path: 'id' })
    const fork = forkSession(this.session, { ...options, id })
    const store = this.#durable?.store
    if (store === undefined) return fork
    // the store's own id rules, named by the option that gave the id
    try {
      checkSessionId(id)
    } catch (error) {
      throw new ConfigError(`fork id: ${(error as Error).message}`, { path: 'id' })
    }
    const taken = (why: string) => new ForkError('FORK_ID_TAKEN', `session ${id} ${why} in the ${store.kind} store`, { path: 'id' })
    const handle = await store
      .open(id, {
        check: (events) => {
          if (events.length > 0) throw taken('already exists')
        },
      })
      .catch((error: unknown) => {
        throw error instanceof SessionInUseError ? taken('is in use') : error
      })
    try {
      await handle.append(fork.events)
    } finally {
      await handle.release()
    }
    return fork
  }

  /** The history the next request would carry: the derived messages, an interrupted answer marked unless `history.interrupted` is 'keep'. */
  messages(): readonly Message[] {
    return this.#runtime.requestMessages()
  }

  /** Sends and inbox edits stay accepted until disposal deregisters; wakes then stay parked (CX-15). */
  #assertLive(): void {
    if (this.#runtime.actor.getSnapshot().status !== 'active') throw new AgentStateError('AGENT_DISPOSED', 'this agent has been disposed')
  }

  static {
    startOf = (agent) => agent.#start()
  }

  /** HK-11: session-start fires once, before any turn of this instance. */
  #start(): void {
    if (this.#started) return
    this.#started = true
    this.#hooks.emit('agent/session-start', { source: this.#resumed ? 'resume' : 'startup', agent: this })
  }
}

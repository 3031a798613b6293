// The runtime interprets the machines' effects with the real world: it
// appends to the session, runs hooks, the model stream, tool bodies and
// maintenance jobs, and feeds every outcome back as an event. It decides
// nothing about what happens next (DESIGN.md rule 1).
import { setMaxListeners } from 'node:events'
import { createActor, type Actor, type InspectionEvent, type Observer } from 'xstate'
import { StreamAssembler, normalizeStream } from '../adapters/assemble.js'
import { toLlmFailure } from '../adapters/failure.js'
import type { ModelAdapter, ModelRequest } from '../adapters/types.js'
import { InboxError } from '../errors.js'
import { agentMachine } from '../machines/agent.js'
import { alreadyPending, applySplice, duplicatedBy, type InboxLists } from '../machines/inbox.js'
import type { AgentEvent, AgentInput, AppendEffect, Effect, HookName } from '../machines/types.js'
import { deepFreeze, toFrozenJson } from '../session/lossless.js'
import { UserMessageSchema, type LlmCallConfig, type RequestHeader, type SessionEvent, type SessionEventType, type ToolSchema } from '../session/schemas.js'
import type { Session } from '../session/session.js'
import { checkArguments, classify, describeInvalidArgs, toOutcome, type ToolDefinition } from '../tools/define.js'
import { errorOutcome } from '../machines/tool-batch.js'
import { toLoggedConfig, type OutputSchemas } from '../request.js'
import type { CheckResult } from '../schema.js'
import { Hooks } from './hooks.js'
import { z } from 'zod/v4'

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
  hooks: Hooks
  /** The public handle, handed to hooks and tools as `agent`. */
  agent: unknown
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void)
  /** A variant of the agent machine (built with buildAgentMachine); defaults to agentMachine. */
  machine?: typeof agentMachine
}

const ABORT = Symbol('abort')

/** Sort object keys so equal headers and route records serialize equally. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  )
}

const PreStepDecisionSchema = z.union([
  z.object({ kind: z.literal('reject') }).loose(),
  z.object({ kind: z.literal('enter'), messages: z.array(UserMessageSchema) }).loose(),
])

/** Results of listeners are public input: check them where they enter (zod at the boundary). */
function checkHookResult(name: HookName, value: unknown): unknown {
  switch (name) {
    case 'agent/pre-step': {
      const parsed = PreStepDecisionSchema.safeParse(value)
      if (!parsed.success) {
        const issue = parsed.error.issues[0]
        throw new TypeError(`agent/pre-step must return {kind:'reject'} or {kind:'enter', messages}: ${issue.path.join('.') || '(root)'}: ${issue.message}`)
      }
      if (parsed.data.kind === 'reject') return { kind: 'reject' }
      return { kind: 'enter', messages: (value as { messages: unknown[] }).messages.map((m, i) => deepFreeze(toFrozenJson(m, `messages[${i}]`))) }
    }
    case 'tools/pre-execute':
    case 'tools/post-execute':
      if (value !== undefined && (value === null || typeof value !== 'object' || typeof (value as { kind?: unknown }).kind !== 'string')) {
        throw new TypeError(`${name} must return a decision object with a kind`)
      }
      return value
    default:
      return value
  }
}

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
  #fault: { eventType: SessionEventType; error: unknown } | null = null
  #depth = 0
  #rejection: Error | null = null
  /** True while the macrostep of the caller's own `dispatch` event runs: only its refusals are the caller's to throw. */
  #own = false
  #idleWaiters: Array<() => void> = []

  constructor(readonly options: RuntimeOptions) {
    this.hooks = options.hooks
    this.lists = options.inbox
    deepFreeze(options.toolSchemas) // they travel in every request (RQ-6)
    this.actor = createActor(options.machine ?? agentMachine, {
      input: {
        seedConfig: options.seedConfig,
        priorHeader: options.priorHeader,
        contextKey: options.contextKey,
        lastTurn: options.lastTurn,
        repair: options.repair,
        maxParallelToolCalls: options.maxParallelToolCalls,
        nextTurn: options.inbox.nextTurn,
        nextStep: options.inbox.nextStep,
        instance: Math.random().toString(36).slice(2, 10),
      },
      inspect: options.inspect,
    })
    this.actor.on('*', (effect) => {
      try {
        this.#perform(effect)
      } catch (error) {
        this.hooks.logger.error('agentchart runtime failed to perform an effect', error)
      }
    })
    this.actor.subscribe({
      next: (snapshot) => {
        // end of a macrostep: an append failure with no sync after it is reported now
        if (this.#fault) this.#reportFault({ type: 'fault' } as AgentEvent)
        // events queued by listeners come after this: their refusals are not the dispatching caller's
        this.#own = false
        if (snapshot.value === 'idle' || snapshot.status !== 'active') this.#releaseIdle()
      },
      error: (error) => this.hooks.logger.error('agentchart machine stopped on an error', error),
    })
    this.actor.start()
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
    const error = this.#rejection
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

  /** Resolves once the machine rests in idle (PH-7). */
  whenIdle(): Promise<void> {
    const snapshot = this.actor.getSnapshot()
    if (snapshot.value === 'idle' || snapshot.status !== 'active') return Promise.resolve()
    return new Promise((resolve) => this.#idleWaiters.push(resolve))
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

  #reportFault(onFault: AgentEvent): void {
    const fault = this.#fault!
    this.#fault = null
    const failure = toLlmFailure(fault.error)
    if (onFault.type === 'inbox.restore') this.#refuse(fault.error instanceof Error ? fault.error : new Error(String(fault.error)))
    this.#send({ ...onFault, eventType: fault.eventType, failure, error: fault.error } as AgentEvent)
  }

  #perform(effect: Effect): void {
    switch (effect.type) {
      case 'fx.append':
        if (!this.#fault) this.#append(effect)
        return
      case 'fx.notify':
        if (!this.#fault) this.hooks.emit(effect.name, { ...effect.payload, agent: this.options.agent })
        return
      case 'fx.sync':
        if (this.#fault) this.#reportFault(effect.onFault ?? ({ type: 'fault' } as AgentEvent))
        else this.#send(effect.reply ?? { type: 'sync', id: effect.id })
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
        return this.#startJob(effect.id)
    }
    // everything below starts async work: never after a failed append of the same macrostep;
    // the skipped effect is answered as failed so the machine's book-keeping closes
    if (this.#fault) {
      const error = this.#fault.error
      this.#reportFault({ type: 'fault' } as AgentEvent)
      return this.#send(this.#skipped(effect, error))
    }
    switch (effect.type) {
      case 'fx.classify':
        return this.#send({ type: 'tool.classified', id: effect.id, mode: classify(this.#tool(effect.call.name), effect.call.args) })
      case 'fx.hook':
        return this.#runHook(effect.id, effect.name, effect.payload, effect.fallback)
      case 'fx.prepare':
        return this.#prepare(effect.id, effect.turn, effect.step, effect.seed)
      case 'fx.model':
        void this.#stream(effect.id, effect.turn, effect.step, effect.config)
        return
      case 'fx.tool':
        void this.#runTool(effect.id, effect.call.callId, effect.call.name, effect.call.args)
        return
    }
  }

  #skipped(effect: Effect, error: unknown): AgentEvent {
    const failure = toLlmFailure(error)
    switch (effect.type) {
      case 'fx.tool':
        return { type: 'tool.settled', id: effect.id, outcome: errorOutcome(failure.message) }
      case 'fx.model':
        return { type: 'model.faulted', id: effect.id, failure, error }
      case 'fx.classify':
        return { type: 'tool.classified', id: effect.id, mode: 'exclusive' }
      default:
        return { type: 'hook.failed', id: (effect as { id: number }).id, failure, error }
    }
  }

  #tool(name: string): ToolDefinition | undefined {
    return this.options.tools.find((t) => t.name === name)
  }

  #append(effect: AppendEffect): void {
    const { session } = this.options
    try {
      let sources = effect.sourceEventSeqs
      if (effect.citeKeys) sources = effect.citeKeys.map((key) => this.#keys.get(key)).filter((s): s is number => s !== undefined)
      const intent =
        effect.surfaceOp || sources || effect.time !== undefined
          ? {
              ...(effect.surfaceOp ? { surfaceOp: effect.surfaceOp } : {}),
              ...(sources ? { sourceEventSeqs: sources } : {}),
              ...(effect.time !== undefined ? { time: effect.time } : {}),
            }
          : undefined
      // through the session object, so a wrapped or failing store is honoured
      const event = session.append(effect.eventType, effect.data as never, intent) as SessionEvent
      if (effect.key) this.#keys.set(effect.key, event.seq)
      if (event.type === 'agent/inbox/spliced') this.lists = applySplice(this.lists, event.data)
    } catch (error) {
      this.#fault = { eventType: effect.eventType, error }
    }
  }

  /** Run a hook-like effect and answer with its result or its failure. A cancel meanwhile is the machine's
   *  to handle: it stops waiting at once, and this late answer is dropped by its id. */
  #settle(id: number, work: () => Promise<AgentEvent>): void {
    // always at least one microtask later: a waking send's first async wait comes after the claim (PH-2)
    Promise.resolve()
      .then(work)
      .then(
        (event) => this.#send(event),
        (error) => this.#send({ type: 'hook.failed', id, failure: toLlmFailure(error), error }),
      )
  }

  #runHook(id: number, name: HookName, payload: Record<string, unknown>, fallback: unknown): void {
    const signal = this.#controller.signal
    const full = { ...payload, signal, agent: this.options.agent }
    this.#settle(id, async () => {
      const value = name === 'agent/turn-stopping' ? await this.hooks.serial(name, full) : await this.hooks.waterfall(name, full, () => fallback)
      // the machine's own default needs no check; what a listener returned does
      return { type: 'hook.done', id, value: value === fallback ? value : checkHookResult(name, value) }
    })
  }

  /** agent/request, then the frozen config, header and route record of the request (RQ-1, RQ-2). */
  #prepare(id: number, turn: number, step: number, seed: LlmCallConfig): void {
    const signal = this.#controller.signal
    const frozenSeed = deepFreeze(toFrozenJson(seed, 'config'))
    this.#settle(id, async () => {
      const value = await this.hooks.waterfall('agent/request', { turn, step, signal, agent: this.options.agent }, () => frozenSeed)
      // a listener's config may carry a schema as its response format: the log keeps its JSON Schema
      const config = value === frozenSeed ? frozenSeed : toLoggedConfig(value, this.options.outputSchemas, 'agent/request result', true)
      const { systemPrompt, toolSchemas, model } = this.options
      const header: RequestHeader = {
        config: config,
        ...(systemPrompt ? { system: systemPrompt } : {}),
        ...(toolSchemas.length ? { tools: [...toolSchemas] } : {}),
      }
      const context = { provider: config.provider, model: config.model, ...(model.contextWindow ? { contextWindow: model.contextWindow } : {}) }
      return { type: 'request.prepared', id, config, header, headerKey: canonical(header), context, contextKey: canonical(context) }
    })
  }

  /** The hot path: each chunk is appended directly, the machine hears only the outcome (DESIGN rule 1). */
  async #stream(id: number, turn: number, step: number, config: LlmCallConfig): Promise<void> {
    const { session, model, systemPrompt, toolSchemas } = this.options
    const signal = this.#controller.signal
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
        let onAbort!: () => void
        const aborted = new Promise<typeof ABORT>((resolve) => {
          onAbort = () => resolve(ABORT)
          signal.addEventListener('abort', onAbort, { once: true })
        })
        const iterator = normalizeStream(model, request)[Symbol.asyncIterator]()
        try {
          for (;;) {
            const next = await Promise.race([iterator.next(), aborted])
            if (next === ABORT || signal.aborted) {
              cancelled = true
              void iterator.return?.(undefined).catch(() => {})
              break
            }
            if (next.done) break
            const event = session.append('assistant/chunk', { turn, step, chunk: next.value })
            chunkSeqs.push(event.seq)
            assembler.push(next.value)
          }
        } catch (error) {
          // a refused chunk append (RQ-7) ends the attempt: let the adapter close its stream
          void iterator.return?.(undefined).catch(() => {})
          throw error
        } finally {
          signal.removeEventListener('abort', onAbort)
        }
      }
    } catch (error) {
      if (!signal.aborted) {
        this.#send({ type: 'model.faulted', id, failure: toLlmFailure(error), error })
        return
      }
      cancelled = true
    }
    this.#send({ type: 'model.settled', id, chunkSeqs, response: assembler.result(), cancelled })
  }

  async #runTool(id: number, callId: string, name: string, args: unknown): Promise<void> {
    const signal = this.#controller.signal
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
        parsed = { ok: false, issues: [{ path: '(root)', message: toLlmFailure(error).message }] }
      }
      if (!parsed.ok) {
        outcome = errorOutcome(describeInvalidArgs(name, parsed), { name: 'InvalidArgumentsError', code: 'INVALID_ARGS' })
      } else {
        try {
          outcome = toOutcome(name, await tool.execute(deepFreeze(parsed.value), { callId, name, signal, agent: this.options.agent }))
        } catch (error) {
          const coded = error as { code?: unknown; name?: unknown; message?: unknown }
          outcome = errorOutcome(
            error instanceof Error ? error.message : String(coded?.message ?? error),
            typeof coded?.code === 'string' ? { name: String(coded.name ?? 'Error'), code: coded.code } : undefined,
          )
        }
      }
    }
    this.#send({ type: 'tool.settled', id, outcome })
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

// The public handle: createAgent() wires a session, a model and tools to the
// agent machine through the runtime. Methods only validate and send events.
import type { InspectionEvent, Observer } from 'xstate'
import type { agentMachine } from './machines/agent.js'

type AgentMachine = typeof agentMachine
import type { ModelAdapter, ModelRequest } from './adapters/types.js'
import { AgentchartError, AgentStateError, ConfigError, ForkError, InboxError, SessionAppendError, SessionInUseError, StoredLogError } from './errors.js'
import { applySplice, duplicatePending, hasPending } from './machines/inbox.js'
import type { InboxLists, ToolOutcome, TurnOptions } from './machines/types.js'
import { checkRunOptions, TurnSignals, type RunOptions } from './run-options.js'
import { toInboxMessage } from './messages.js'
import { Hooks, type HookLogger } from './runtime/hooks.js'
import { canonical } from './canonical.js'
import { MAX_TIMER_MS, Runtime } from './runtime/runtime.js'
import {
  AgentCancelCauseSchema,
  type AgentCancelCause,
  type EventData,
  type InboxTarget,
  type LlmCallConfig,
  type LlmFailure,
  type Message,
  type SessionEvent,
  type StreamChunk,
  type TurnEndReason,
  type UserMessage,
} from './session/schemas.js'
import { OutputSchemas, seedConfig, type RequestConfigInput, type RequestOptions } from './request.js'
import { LogIndex, type RunResult, type UsageTotals } from './results.js'
import { defaultRetry, sleepFor, type RequestErrorAction, type RetryPolicyOptions } from './retry.js'
import { RunTracker } from './runs.js'
import { describeValue, isRecordLike } from './foreign.js'
import { approvalWaitOf, pendingApprovalsWithin, type PendingApproval } from './session/approvals.js'
import type { InterruptedHistory } from './session/interrupted.js'
import { forkLineageOf, forkSession, type ForkOptions } from './session/fork.js'
import { repairClosers, openTurnOf, type RepairCloser } from './session/repair.js'
import { createSession, isSessionLike, type Session } from './session/session.js'
import { checkSessionId, DEFAULT_LEASE_MS } from './stores/lease.js'
import { mailboxIn, SessionMailbox, type HeldMail, type MailboxBackend } from './stores/mailbox.js'
import type { SessionHandle, SessionStore } from './stores/types.js'
import { SessionWriter } from './stores/writer.js'
import { callRecoveryOf, checkToolList, toolSchemas, type CallRecovery, type ToolDefinition, type ToolResultValue } from './tools/define.js'
import { isToolSource } from './tools/source.js'
import { StepTools, type ToolEntry } from './runtime/step-tools.js'
import { assembleFromOptions, type PromptAssembly, type PromptContext, type SystemPromptOption, type ToolsOption } from './runtime/assembly.js'
import { resolveCompaction, type CompactionOptions } from './compaction.js'
import { LiveTelemetry } from './telemetry/live.js'
import { checkTelemetryOptions, type TelemetryOptions } from './telemetry/tracer.js'

export interface AgentOptions {
  model: ModelAdapter
  /**
   * The tools the model may call: tools made by defineTool and tool sources (such as `await mcpTools(client)`,
   * re-read at every step, docs/mcp.md), or a function of the step (`PromptContext`) returning the tools. They are
   * read at every step before agent/pre-step (HK-12); a list that changes takes effect at the next step.
   */
  tools?: ToolsOption<Agent>
  /** The system prompt: text, or a function of the step (`PromptContext`, sync or async) re-read at every step (HK-12). */
  systemPrompt?: SystemPromptOption<Agent>
  maxTokens?: number
  /**
   * Request options of every request (until an `agent/request` listener changes them): `toolChoice`,
   * `responseFormat` (a zod schema, `{ jsonSchema, validate? }`, or the logged form), `providerOptions`,
   * `reasoningEffort`, `temperature`, `stop`. Merged over the model adapter's `defaultConfig`.
   */
  request?: RequestOptions
  maxParallelToolCalls?: number
  /**
   * TU-16: the most steps one turn may run (default 100); a turn that has run them and would open another ends
   * `max-steps` instead. A positive integer, or `Infinity` for no limit.
   */
  maxSteps?: number
  session?: Session
  id?: string
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void)
  /** Where contained listener failures are reported; defaults to console. */
  logger?: HookLogger
  /** The agent machine to run: `agentMachine` from agentchart/machines with implementations swapped by `.provide()` (docs/machines.md). */
  machine?: AgentMachine
  /**
   * The retry policy, `agent/request-error`'s default decision (RQ-14): on by default with RETRY_DEFAULTS
   * (3 retries, 1 s base, 30 s cap, the retryable codes); options tune it, `false` turns it off (a failed
   * request then ends the turn unless a listener retries).
   */
  retry?: false | RetryPolicyOptions
  /** How a retry's backoff waits (default: a timer that a cancel ends at once); tests and drivers pass their own clock. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  /**
   * TL-18: a `tools/pre-execute` answer `ask{reason}` waits for `agent.approve` / `agent.deny` when this is true
   * or a `tools/approval-requested` listener is registered; with neither, nobody could answer, so `ask` is a deny.
   */
  approvals?: boolean
  /**
   * Compaction (docs/compaction.md): by default on when the model adapter declares a `contextWindow`;
   * `false` turns it off; an object configures it (and turns it on, given a window there or on the adapter).
   */
  compaction?: CompactionOptions | false
  /**
   * OpenTelemetry spans (docs/telemetry.md): a turn, its steps, an inference span per attempt, a span per tool call,
   * compactions, derived from the session log as it is committed. `tracer` is an `@opentelemetry/api` Tracer;
   * message content is recorded only with `captureContent: true`.
   */
  telemetry?: TelemetryOptions
  /**
   * How the history a request carries shows the log (docs/api.md, "History"): `interrupted: 'mark'` (the default)
   * follows an answer a cancel cut short with a short user-role note saying so; `'keep'` sends it as logged.
   */
  history?: HistoryOptions
  /** Only with StoredAgentOptions: an agent over a store is made by the promise-returning form of createAgent. */
  store?: undefined
}

/** How requests derive their history from the log; the log itself is never changed. */
export interface HistoryOptions {
  /** An interrupted answer: followed by a note for the model (`mark`, default), or sent as it was streamed (`keep`). */
  interrupted?: InterruptedHistory
}

/** What agent.compact() came to: the logged record of the summary, or why nothing was replaced. */
export type CompactionResult = { compacted: true; record: EventData<'compaction/completed'> } | { compacted: false; record?: EventData<'compaction/failed'> }

/** An agent whose session lives in a store: createAgent creates or resumes it and returns a promise. */
export interface StoredAgentOptions extends Omit<AgentOptions, 'session' | 'store'> {
  store: SessionStore
  /** The session to create or resume; a new random id when omitted (`id`, if given, must agree). */
  sessionId?: string
  /** Who this driver is and how long its lease lasts without renewal (default 15 s, renewed every third of it). */
  lease?: { holder?: string; leaseMs?: number }
  /**
   * Background commits: once `maxEvents` wait (default 512) or the oldest waits
   * `maxDelayMs` (default 20). Work leaving the process always waits for its commit first.
   */
  commits?: { maxEvents?: number; maxDelayMs?: number }
  /**
   * Read the store's mailbox while this agent holds the lease: what a session client (`createSessionClient`) sends
   * from any process is applied as the same local call would be (default true on a store that has a mailbox).
   */
  mailbox?: boolean
}

export type AgentStatus = 'idle' | 'running'

type WithAgent<P> = P & { agent: Agent }
type Next<R> = () => Promise<R>

/** Listener signatures by extension point name (DESIGN.md, BEHAVIOURS 1.6). */
export interface AgentHooks {
  'agent/pre-step': (
    p: WithAgent<{ messages: readonly UserMessage[]; turn: number; step: number; signal: AbortSignal }>,
    next: Next<PreStepDecision>,
  ) => PreStepDecision | Promise<PreStepDecision>
  'agent/request': (
    p: WithAgent<{ turn: number; step: number; signal: AbortSignal }>,
    next: Next<LlmCallConfig>,
  ) => LlmCallConfig | RequestConfigInput | Promise<LlmCallConfig | RequestConfigInput>
  'agent/request-error': (
    /** `attempt` is the attempt that failed, 1 for the step's first request. */
    p: WithAgent<{ turn: number; step: number; provider?: string; failure: LlmFailure; attempt: number; signal: AbortSignal }>,
    next: Next<RequestErrorAction>,
  ) => RequestErrorAction | void | Promise<RequestErrorAction | void>
  'agent/turn-stopping': (p: WithAgent<{ turn: number; signal: AbortSignal }>) => void | Promise<void>
  /**
   * HK-12: the system prompt's sections and the tools of one step, once per proposed step (not per attempt), after
   * the claim and before agent/pre-step; next() gives what createAgent's `systemPrompt` and `tools` make of it.
   * A throw ends the turn `error` with no step.
   */
  'system-prompt/assemble': (p: PromptContext<Agent>, next: Next<PromptAssembly>) => PromptAssembly | Promise<PromptAssembly>
  /**
   * RQ-1: around the model stream of every attempt; next() is the adapter's stream. Return it, a filtered copy, or
   * a stream of your own (a cache, a replay): its chunks are checked and logged as an adapter's. A throw ends the
   * turn `error` without recovery (RQ-7); the request's `signal` aborts on cancel.
   */
  'llm/stream': (
    p: WithAgent<{ request: ModelRequest; turn: number; step: number; signal: AbortSignal }>,
    next: () => Promise<AsyncIterable<StreamChunk>>,
  ) => AsyncIterable<StreamChunk> | Iterable<StreamChunk> | Promise<AsyncIterable<StreamChunk> | Iterable<StreamChunk>>
  /**
   * TL-10: around each tool body, between pre-execute and post-execute; next() runs the body (arguments checked,
   * timeout applied). Return its outcome, a changed one, or what a body may return; a throw is the call's error result.
   */
  'tools/execute': (
    p: WithAgent<ToolExecution>,
    next: Next<ToolOutcomeView>,
  ) => string | ToolOutcomeView | ToolResultValue | Promise<string | ToolOutcomeView | ToolResultValue>
  'tools/pre-execute': (p: WithAgent<ToolExecution>, next: Next<PreExecuteDecision>) => PreExecuteDecision | Promise<PreExecuteDecision>
  'tools/post-execute': (
    p: WithAgent<ToolExecution & { outcome: ToolOutcomeView }>,
    next: Next<PostExecuteDecision>,
  ) => PostExecuteDecision | Promise<PostExecuteDecision>
  'tools/result': (p: WithAgent<ToolExecution & { outcome: ToolOutcomeView }>) => void
  /** TL-18: a call waits for `agent.approve(callId)` or `agent.deny(callId, reason)`; registering this makes the agent an approver. */
  'tools/approval-requested': (p: WithAgent<Omit<ToolExecution, 'signal'> & { reason: string }>) => void
  'agent/status': (p: WithAgent<{ status: AgentStatus }>) => void
  'agent/inbox/inserted': (p: WithAgent<{ message: UserMessage }>) => void
  'agent/inbox/discarded': (p: WithAgent<{ message: UserMessage }>) => void
  'agent/inbox/claimed': (p: WithAgent<{ message: UserMessage; turn: number }>) => void
  'agent/error': (p: WithAgent<{ turn: number; step: number; error: unknown }>) => void
  'agent/session-start': (p: WithAgent<{ source: 'startup' | 'resume' }>) => void
  'session/event': (p: WithAgent<{ session: Session; event: SessionEvent }>) => void | Promise<void>
  /** A store committed: the first `length` events are durable (agents over a store only). */
  'session/committed': (p: WithAgent<{ length: number }>) => void
}
/** Every name `agent.on()` accepts: the extension points and the notifications. */
export type ListenerName = keyof AgentHooks

// the same names at run time, so a misspelt name is refused instead of listening to nothing;
// `satisfies` keeps the list and AgentHooks from drifting apart
const LISTENER_NAMES: ReadonlySet<string> = new Set(
  Object.keys({
    'agent/pre-step': true,
    'agent/request': true,
    'agent/request-error': true,
    'agent/turn-stopping': true,
    'system-prompt/assemble': true,
    'llm/stream': true,
    'tools/execute': true,
    'tools/pre-execute': true,
    'tools/post-execute': true,
    'tools/result': true,
    'tools/approval-requested': true,
    'agent/status': true,
    'agent/inbox/inserted': true,
    'agent/inbox/discarded': true,
    'agent/inbox/claimed': true,
    'agent/error': true,
    'agent/session-start': true,
    'session/event': true,
    'session/committed': true,
  } satisfies Record<ListenerName, true>),
)

export type PreStepDecision = { kind: 'reject' } | { kind: 'enter'; messages: readonly UserMessage[] }
/** `ask` makes the call wait for a person's answer (TL-18); with no approver configured it behaves as `deny`. */
export type PreExecuteDecision = { kind: 'allow' } | { kind: 'deny'; reason: string } | { kind: 'ask'; reason: string }
export type PostExecuteDecision =
  | { kind: 'accept'; content?: string; value?: unknown; additionalContexts?: UserMessage[] }
  | { kind: 'block'; feedback: string; additionalContexts?: UserMessage[] }
export interface ToolExecution {
  turn: number
  step: number
  callId: string
  name: string
  arguments: unknown
  signal: AbortSignal
}
/** A call's outcome as the tool pipeline hooks see it. */
export type ToolOutcomeView = ToolOutcome

/** The pending lists, a read-only projection of the log's splices plus the mutations users may make. */
export class Inbox {
  readonly #runtime: () => Runtime
  readonly #guard: () => void
  constructor(runtime: () => Runtime, guard: () => void) {
    this.#runtime = runtime
    this.#guard = guard
  }
  get nextTurn(): readonly UserMessage[] {
    return this.#runtime().lists.nextTurn
  }
  get nextStep(): readonly UserMessage[] {
    return this.#runtime().lists.nextStep
  }
  get hasPending(): boolean {
    return hasPending(this.#runtime().lists)
  }
  /** Remove a pending message by id; false (and nothing logged) when it is not pending (IN-5). */
  remove(id: string): boolean {
    this.#guard()
    return pendingAnswer(() => this.#runtime().dispatch({ type: 'inbox.remove', id }))
  }
  /** Replace a pending message in place with one canceled splice (IN-4); false when `id` is not pending. */
  replace(id: string, message: UserMessage | string): boolean {
    this.#guard()
    const next = toInboxMessage(message)
    return pendingAnswer(() => this.#runtime().dispatch({ type: 'inbox.replace', id, message: next }))
  }
  /**
   * Array-style splice of one list (IN-3): `start` and `deleteCount` normalize like Array.prototype.splice
   * (an omitted deleteCount with nothing to insert removes to the end); removals are canceled; it never wakes.
   */
  splice(target: InboxTarget, start: number, deleteCount?: number, ...messages: Array<UserMessage | string>): void {
    this.#guard()
    if (target !== 'next-turn' && target !== 'next-step')
      throw new ConfigError(`target must be 'next-turn' or 'next-step', got ${describeValue(target)}`, { path: 'target' })
    const inserted = messages.map((message) => toInboxMessage(message))
    this.#runtime().dispatch({ type: 'inbox.splice', target, start, deleteCount, messages: inserted })
  }
  /** Discard everything pending: next-step first, then next-turn (IN-5). */
  clear(): void {
    this.#guard()
    this.#runtime().dispatch({ type: 'inbox.clear' })
  }
}

/** True when the machine took an inbox request that names a pending id; false when it refused it as not pending (IN-5). */
function pendingAnswer(dispatch: () => void): boolean {
  try {
    dispatch()
    return true
  } catch (error) {
    if (error instanceof InboxError && error.code === 'NOT_PENDING') return false
    throw error
  }
}

/**
 * Rebuild the lists from the log's splices (IN-14, RS-2); a splice that does not fit, or that would leave an id
 * pending twice, names its seq. A resume seed is the agent's own log, so its splices count; a fork's inherited
 * ones (before its `session/end-seed{fork}` marker) do not: a fork starts with empty lists (SS-14).
 */
function replayInbox(session: Session): InboxLists {
  let lists: InboxLists = { nextTurn: [], nextStep: [] }
  const events = session.events
  const from = (forkLineageOf(events)?.seq ?? -1) + 1
  for (let seq = from; seq < events.length; seq++) {
    const event = events[seq]
    if (event.type !== 'agent/inbox/spliced') continue
    try {
      lists = applySplice(lists, event.data)
    } catch (error) {
      throw new ConfigError(`inbox splice at seq ${seq} is inconsistent with the replayed lists: ${(error as Error).message}`, { path: `events[${seq}]` })
    }
    const twice = duplicatePending(lists)
    if (twice !== null) throw new ConfigError(`inbox splice at seq ${seq} leaves message ${JSON.stringify(twice)} pending twice`, { path: `events[${seq}]` })
  }
  return lists
}

function positiveInt(name: string, value: unknown): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError(`${name} must be a positive safe integer, got ${describeValue(value)}`, { path: name })
  }
  return value
}

/** The default step limit of a turn (TU-16): far above what a task needs, low enough to stop a runaway loop early. */
export const DEFAULT_MAX_STEPS = 100

/** maxSteps as the machine reads it: a positive integer, or null for `Infinity` (no limit). */
function stepLimit(value: unknown): number | null {
  if (value === undefined) return DEFAULT_MAX_STEPS
  if (value === Infinity) return null
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError(`maxSteps must be a positive safe integer or Infinity, got ${describeValue(value)}`, { path: 'maxSteps' })
  }
  return value
}

/** An rxjs-style observer: an object whose next, error and complete are functions where present. */
function isObserverLike(value: unknown): boolean {
  return isRecordLike(value) && ['next', 'error', 'complete'].every((key) => value[key] === undefined || typeof value[key] === 'function')
}

/** The options every agent checks before anything is registered (RQ-3), shared by both forms of createAgent. */
function checkOptions(options: AgentOptions | StoredAgentOptions) {
  if (!options || typeof options !== 'object') throw new ConfigError('createAgent needs an options object')
  const { model } = options
  if (!model || typeof model.stream !== 'function') throw new ConfigError('options.model must be a ModelAdapter with a stream() method', { path: 'model' })
  const maxTokens = positiveInt('maxTokens', options.maxTokens)
  const maxParallelToolCalls = positiveInt('maxParallelToolCalls', options.maxParallelToolCalls) ?? 10
  const maxSteps = stepLimit(options.maxSteps)
  // each option is checked here so a wrong one fails now with its name, not later as a bare TypeError
  // HK-12: a tools function is assembled at every step; a source (even one that is also an array, as mcpTools'
  // is) is kept whole and read again at every step; plain tools are checked once, now
  const given = options.tools
  const tools: ToolEntry[] = isToolSource(given)
    ? [given]
    : typeof given === 'function' || given === undefined
      ? []
      : checkToolList(given, 'tools', { allow: isToolSource })
  const { systemPrompt } = options
  if (systemPrompt !== undefined && typeof systemPrompt !== 'string' && typeof systemPrompt !== 'function') {
    throw new ConfigError(`systemPrompt must be a string or a function of the step's context, got ${describeValue(systemPrompt)}`, { path: 'systemPrompt' })
  }
  const { inspect, logger, machine, approvals } = options
  // (with a store, a session is refused as such by openStoredAgent: 'either a session or a store')
  const { session, store } = options as { session?: unknown; store?: unknown }
  if (session !== undefined && store === undefined && !isSessionLike(session)) {
    throw new ConfigError(`session must be a Session (a stored log becomes one with createSession({ seed: events })), got ${describeValue(session)}`, {
      path: 'session',
    })
  }
  if (inspect !== undefined && typeof inspect !== 'function' && !isObserverLike(inspect)) {
    throw new ConfigError(`inspect must be a function or an observer ({ next?, error?, complete? }), got ${describeValue(inspect)}`, { path: 'inspect' })
  }
  if (logger !== undefined && !(isRecordLike(logger) && typeof logger.error === 'function')) {
    throw new ConfigError(`logger must be an object with an error(message, error) method, got ${describeValue(logger)}`, { path: 'logger' })
  }
  if (machine !== undefined && !(isRecordLike(machine) && typeof machine.getInitialSnapshot === 'function' && typeof machine.transition === 'function')) {
    throw new ConfigError(`machine must be agentMachine or a variant of it made with .provide(), got ${describeValue(machine)}`, { path: 'machine' })
  }
  if (approvals !== undefined && typeof approvals !== 'boolean')
    throw new ConfigError(`approvals must be true or false, got ${describeValue(approvals)}`, { path: 'approvals' })
  const retry = defaultRetry(options.retry)
  if (options.sleep !== undefined && typeof options.sleep !== 'function') throw new ConfigError('sleep must be a function', { path: 'sleep' })
  const sleep = options.sleep ?? sleepFor
  const compaction = resolveCompaction(options.compaction, model)
  const telemetry = options.telemetry === undefined ? undefined : checkTelemetryOptions(options.telemetry)
  const interrupted = checkHistory(options.history)
  return { model, maxTokens, maxParallelToolCalls, maxSteps, tools, retry, sleep, compaction, telemetry, interrupted }
}

/** The history options: only `interrupted`, `'mark'` or `'keep'`. */
function checkHistory(history: unknown): InterruptedHistory {
  if (history === undefined) return 'mark'
  if (!isRecordLike(history)) throw new ConfigError(`history must be an object, got ${describeValue(history)}`, { path: 'history' })
  for (const key of Object.keys(history)) {
    if (key !== 'interrupted') throw new ConfigError(`unknown history option ${JSON.stringify(key)}; the option is interrupted`, { path: `history.${key}` })
  }
  const { interrupted } = history
  if (interrupted === undefined) return 'mark'
  if (interrupted !== 'mark' && interrupted !== 'keep') {
    throw new ConfigError(`history.interrupted must be 'mark' or 'keep', got ${describeValue(interrupted)}`, { path: 'history.interrupted' })
  }
  return interrupted
}

/** What an agent over a store holds besides its session. */
interface Durable {
  readonly store: SessionStore
  readonly writer: SessionWriter
  /** Results for calls a crash cut short that their tools could settle (setCallRecovery), by call id. */
  readonly recovered?: ReadonlyMap<string, RecoveredResult>
}

type RecoveredResult = NonNullable<Awaited<ReturnType<CallRecovery>>>

/**
 * The repair closers of a crash-truncated log, with the results of calls their tools recovered in place of
 * TOOL_OUTCOME_UNKNOWN (a finished subagent's answer, say); a recovered error keeps the catalogue's code.
 */
function withRecovered(closers: RepairCloser[], recovered: ReadonlyMap<string, RecoveredResult> | undefined): RepairCloser[] {
  if (!recovered || recovered.size === 0) return closers
  return closers.map((closer) => {
    if (closer.type !== 'tool/result') return closer
    const data = closer.data as EventData<'tool/result'>
    const found = recovered.get(data.message.source.callId)
    if (!found) return closer
    const [block] = data.message.content
    const message = { ...data.message, content: [{ ...block, content: found.content, isError: found.isError }] as typeof data.message.content }
    const { error, ...rest } = data
    return {
      ...closer,
      data: { ...rest, message, ...(found.isError ? { error } : {}), ...(found.meta !== undefined ? { meta: found.meta } : {}) },
    }
  })
}

/** Asks each tool with a crash recovery (setCallRecovery) what became of its calls the crash cut short (they would close TOOL_OUTCOME_UNKNOWN). */
async function recoverCalls(
  events: readonly SessionEvent[],
  tools: AgentOptions['tools'],
  store: SessionStore,
  sessionId: string,
  logger: HookLogger,
): Promise<Map<string, RecoveredResult>> {
  const recovered = new Map<string, RecoveredResult>()
  if (!Array.isArray(tools)) return recovered
  for (const closer of repairClosers(events)) {
    if (closer.type !== 'tool/result') continue
    const data = closer.data as EventData<'tool/result'>
    if (data.error?.code !== 'TOOL_OUTCOME_UNKNOWN') continue
    const callId = data.message.source.callId
    const call = events.findLast((e) => e.type === 'tool/call' && e.data.callId === callId) as
      (SessionEvent & { type: 'tool/call'; data: EventData<'tool/call'> }) | undefined
    const tool = (tools as readonly ToolDefinition<any>[]).find((t) => t.name === call?.data.name)
    const recover = tool && callRecoveryOf(tool)
    if (!call || !recover) continue
    try {
      const result = await recover({ callId, name: call.data.name, arguments: call.data.arguments, sessionId, store, logger })
      if (result) recovered.set(callId, result)
    } catch (error) {
      logger.error(`agentchart: recovering call ${callId} (${call.data.name}) failed; it closes with an unknown outcome`, error)
    }
  }
  return recovered
}

/** Each agent's inspector, so the children it delegates to (agentTool) report to the same one. */
const inspectors = new WeakMap<Agent, NonNullable<AgentOptions['inspect']>>()

/** The inspector `agent` was made with, if any (in-house: agentTool hands it to children). */
export function inspectorOf(agent: Agent): AgentOptions['inspect'] {
  return inspectors.get(agent)
}

/** The mailbox readers of stored agents, stopped first at disposal: rows not yet applied stay for the next driver. */
const mailReaders = new WeakMap<Agent, () => Promise<void>>()

const telemetries = new WeakMap<Agent, LiveTelemetry>()
/** The live telemetry an agent writes spans with, if any. Why: a subagent's turns nest under the parent's tool-call span. */
export function telemetryOf(agent: Agent): LiveTelemetry | undefined {
  return telemetries.get(agent)
}

/** Live agents by session id, so a second instance cannot take over an open turn (RS-7). */
const liveAgents = new Map<string, WeakRef<Agent>>()
/** An agent dropped without dispose() leaves the registry when it is collected. */
const collected = new FinalizationRegistry<string>((id) => {
  if (liveAgents.get(id)?.deref() === undefined) liveAgents.delete(id)
})

/** How many session ids the live-agent registry holds. Why: a test can check that dropped agents do not leak. */
export function liveAgentCount(): number {
  return liveAgents.size
}

/** How `dispose()` treats work that does not settle. */
export interface DisposeOptions {
  /**
   * Abandon tool bodies and listeners still running `graceMs` after the cancel: a call closes with a
   * TOOL_OUTCOME_UNKNOWN error result (late results are dropped), a listener as failed, so the log closes.
   */
  force?: boolean
  /** How long a forced disposal waits for running work first; default 1000 ms. */
  graceMs?: number
  /** Leave queued inbox items in the log for the session's next driver instead of discarding them. */
  keepInbox?: boolean
}

const DEFAULT_GRACE_MS = 1000

/** How `cancel()` treats the activity it cancels (CX-1, CX-17). */
export interface CancelOptions {
  /** Keep the queued inbox items instead of discarding them (CX-4). */
  keepInbox?: boolean
  /**
   * Abandon the tool bodies and tool hooks the cancelled turn still waits for `graceMs` after the cancel, as
   * `dispose({ force: true })` does: a call closes with a TOOL_OUTCOME_UNKNOWN error result, late results are dropped
   * by id, and the agent goes on serving. Default: no grace (the turn waits for them, TL-15); `Infinity` is the same.
   */
  graceMs?: number
}

/** A grace period is a number of milliseconds >= 0 (Infinity: never give up). */
function checkGrace(caller: 'cancel' | 'dispose', graceMs: unknown): void {
  if (typeof graceMs !== 'number' || Number.isNaN(graceMs) || graceMs < 0) {
    throw new ConfigError(`${caller}: graceMs must be a number of milliseconds >= 0, got ${describeValue(graceMs)}`, { path: 'graceMs' })
  }
}

/**
 * HK-11 over a store: session-start after the caller's `await createAgent(...)` has run, so a listener added right
 * after creation hears it (a send or run before then announces it first).
 */
let announceLater: (agent: Agent) => void

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
    const open = openTurnOf(session.events)
    if (owner && !owner.#disposed) {
      if (owner.session === session) throw new AgentStateError('SESSION_IN_USE', `session ${session.id} already belongs to a live agent`)
      if (open && openTurnOf(owner.session.events)?.turn === open.turn) {
        throw new AgentStateError(
          'SESSION_IN_USE',
          `turn ${open.turn} of session ${session.id} is open in a live agent, which will close it; it cannot be repaired here`,
        )
      }
    }
    this.session = session
    this.id = session.id
    const events = session.events
    const lastTurn = events.reduce((max, e) => (e.type === 'turn/start' ? Math.max(max, e.data.turn) : max), 0)
    const priorHeader = events.some((e) => e.type === 'request/header')
    // TL-18: a log that stops while a call waits for approval resumes in that wait instead of being repaired
    const resume = approvalWaitOf(events)
    const lastRoute = events.findLast((e) => e.type === 'request/context')
    this.#resumed = events.length > 0
    const outputSchemas = new OutputSchemas()
    this.#outputSchemas = outputSchemas
    const seed = seedConfig({ provider: model.provider, model: model.model }, model.defaultConfig, options.request, maxTokens, outputSchemas)
    this.#hooks = new Hooks(options.logger ?? { error: (message, error) => console.error(`[agentchart] ${message}:`, error) })
    // tool sources are read at every step's assembly, through one snapshot of their lists (docs/mcp.md)
    const sources = tools.some(isToolSource) ? new StepTools(tools, this.#hooks.logger) : null
    const plain = sources ? sources.current.tools : (tools as ToolDefinition[])
    const assembledTools: ToolsOption<Agent> | undefined = sources
      ? async ({ turn, step }) => (await sources.refresh({ turn, step })).tools
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
      inbox: replayInbox(session),
      lastTurn,
      priorHeader,
      ...(lastRoute ? { contextKey: canonical(lastRoute.data) } : {}),
      repair: resume ? [] : withRecovered(repairClosers(events), durable?.recovered),
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
        spans?.catchUp()
      },
    })
    // weakly: a session that outlives a dropped agent must not keep it alive (RS-7)
    const runtime = new WeakRef(this.#runtime)
    this.#unwatch = session.watchObservers(() => runtime.deref()?.refreshFacts())
    this.inbox = new Inbox(
      () => this.#runtime,
      () => this.#assertLive(),
    )
    this.#index = new LogIndex(session)
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
        runningTurn: () => (this.status === 'running' ? (openTurnOf(this.session.events)?.turn ?? null) : null),
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

  /** Abort the live activity with `cause` (first wins) and, unless keepInbox, discard pending input (CX-1..CX-4). */
  cancel(cause: AgentCancelCause = { kind: 'user' }, options: CancelOptions = {}): void {
    if (this.#runtime.actor.getSnapshot().status !== 'active') return
    const parsed = AgentCancelCauseSchema.safeParse(cause)
    if (!parsed.success) throw new ConfigError(`invalid cancel cause: ${parsed.error.issues[0].message}`, { path: 'cause' })
    const graceMs = options?.graceMs
    if (graceMs !== undefined) checkGrace('cancel', graceMs)
    this.#runtime.dispatch({ type: 'agent.cancel', cause, keepInbox: options?.keepInbox === true })
    // after the cancel: a turn it ended at once has nothing left to abandon
    if (graceMs !== undefined) this.#runtime.abandonAfter(graceMs)
  }

  /**
   * The calls waiting for a person's answer (TL-18), read from the log: they survive a restart over a store. Over a
   * store only committed questions are listed, so each one listed is still there after a crash.
   */
  get pendingApprovals(): readonly PendingApproval[] {
    return pendingApprovalsWithin(this.session.events, this.committedLength)
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
    // a fact of the log the machine cannot know: whether this call's question was ever asked
    const logged = this.session.events.some((e) => e.type === 'tool/approval-request' && e.data.callId === callId)
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
    const from = this.session.length
    this.#start()
    this.#runtime.dispatch({ type: 'compaction.start' })
    // the agent's whenIdle: over a store, the summary and its record are committed before compact() reports them
    await this.whenIdle()
    const events = this.session.events
    for (let seq = from; seq < events.length; seq++) {
      const event = events[seq]
      if (event.type === 'compaction/completed' && event.data.reason === 'manual') return { compacted: true, record: event.data }
      if (event.type === 'compaction/failed' && event.data.reason === 'manual') return { compacted: false, record: event.data }
    }
    return { compacted: false }
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
        this.cancel({ kind: 'disposed' }, { keepInbox })
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
    announceLater = (agent) => setImmediate(() => agent.#start())
  }

  /** HK-11: session-start fires once, before any turn of this instance. */
  #start(): void {
    if (this.#started) return
    this.#started = true
    this.#hooks.emit('agent/session-start', { source: this.#resumed ? 'resume' : 'startup', agent: this })
  }
}

/**
 * Create an agent over a new or given session (RQ-3: bad options fail before anything is registered).
 * With a `store` it creates or resumes the stored session and returns a promise; without
 * one it stays synchronous.
 */
export function createAgent(options: StoredAgentOptions): Promise<Agent>
export function createAgent(options: AgentOptions): Agent
export function createAgent(options: AgentOptions | StoredAgentOptions): Agent | Promise<Agent> {
  if (options && typeof options === 'object' && options.store !== undefined) return openStoredAgent(options)
  return new Agent(options)
}

/**
 * Opens (or creates) the session in the store under a lease, rebuilds it as a seed (validated, structure
 * checked, then repaired by the new instance: RS-1..RS-7), and commits the end-seed and repair closers
 * before the agent is handed out. Damaged stored data is refused by seq and left as it was.
 */
async function openStoredAgent(options: StoredAgentOptions): Promise<Agent> {
  const { model, maxTokens } = checkOptions(options)
  // the request options too are refused before the store is touched (RQ-3)
  seedConfig({ provider: model.provider, model: model.model }, model.defaultConfig, options.request, maxTokens, new OutputSchemas())
  const { store } = options
  if (typeof store.open !== 'function') throw new ConfigError('options.store must be a SessionStore', { path: 'store' })
  if ((options as { session?: unknown }).session !== undefined) throw new ConfigError('give either a session or a store, not both', { path: 'session' })
  if (options.sessionId !== undefined && options.id !== undefined && options.sessionId !== options.id) {
    throw new ConfigError(`options.id ${options.id} differs from options.sessionId ${options.sessionId}`, { path: 'id' })
  }
  const sessionId = checkSessionId(options.sessionId ?? options.id ?? crypto.randomUUID())
  let session: Session | undefined
  const handle: SessionHandle = await store.open(sessionId, {
    ...(options.lease?.holder !== undefined ? { holder: options.lease.holder } : {}),
    ...(options.lease?.leaseMs !== undefined ? { leaseMs: options.lease.leaseMs } : {}),
    // runs before the store writes anything: a refusal leaves the stored data as it was
    check: (events) => {
      session = seedSession(sessionId, events)
    },
  })
  const logger = options.logger ?? { error: (message: string, error: unknown) => console.error(`[agentchart] ${message}:`, error) }
  let recovered: Map<string, RecoveredResult>
  try {
    recovered = await recoverCalls(session!.events, options.tools, store, sessionId, logger)
  } catch (error) {
    await handle.release().catch(() => {})
    throw error
  }
  let agent: Agent | undefined
  let writer: SessionWriter
  try {
    writer = new SessionWriter(handle, session!, handle.events.length, {
      ...options.commits,
      leaseMs: options.lease?.leaseMs ?? DEFAULT_LEASE_MS,
      logger,
      onFault: (error) => logger.error(`agentchart: the store failed; session ${sessionId} accepts no more appends (reopen it to repair and continue)`, error),
    })
    const { store: _store, sessionId: _id, lease: _lease, commits: _commits, mailbox: _mailbox, ...agentOptions } = options
    agent = new Agent({ ...agentOptions, session: session! }, { store, writer, recovered })
  } catch (error) {
    await handle.release().catch(() => {})
    throw error
  }
  try {
    // the end-seed marker and any repair closers are durable before anyone drives the agent
    await writer.flush()
  } catch (error) {
    await agent.dispose().catch(() => {})
    throw error
  }
  if (options.mailbox !== false) {
    const backend = mailboxIn(store)
    const stop = backend === undefined ? undefined : readMail(agent, backend, handle, logger)
    if (stop !== undefined) mailReaders.set(agent, stop)
  }
  announceLater(agent)
  return agent
}

/** Applies the session's mail now and whenever the store signals more; returns what stops it. */
function readMail(agent: Agent, backend: MailboxBackend, handle: SessionHandle, logger: HookLogger): (() => Promise<void>) | undefined {
  let held: HeldMail
  try {
    held = backend.held(handle)
  } catch {
    // a handle the mailbox's store did not open (a wrapping store): this agent cannot consume rows with its commits
    return undefined
  }
  const mailbox = new SessionMailbox(agent, backend, held)
  mailbox.onError = (error) => logger.error(`agentchart: delivering mail to session ${agent.sessionId} failed`, error)
  // a reading agent keeps no process alive by itself: dispose() or the end of the program stops it
  const unsubscribe = backend.subscribe(
    (signal) => {
      if (signal.kind === 'mail' && (signal.sessionId === agent.sessionId || signal.sessionId === '*')) void mailbox.drain()
    },
    { keepAlive: false },
  )
  void backend.ready().then(
    () => mailbox.drain(),
    (error: unknown) => mailbox.onError(error),
  )
  return async () => {
    unsubscribe()
    await mailbox.stop()
  }
}

/** The stored events as a validated seed; any refusal becomes a StoredLogError naming the session and seq. */
function seedSession(sessionId: string, events: readonly unknown[]): Session {
  try {
    const session = createSession({ id: sessionId, seed: events })
    replayInbox(session) // IN-14: splices that do not replay are damage too
    return session
  } catch (error) {
    if (!(error instanceof AgentchartError)) throw error
    const at = /^(?:seed|events)\[(\d+)\]/.exec(error.path ?? error.message)
    const seq = at ? Number(at[1]) : -1
    const detail = error.message.replace(/^seed\[\d+\]:?\s*/, '')
    throw new StoredLogError(sessionId, seq, detail, { cause: error, ...(error.path !== undefined ? { path: error.path } : {}) })
  }
}

export type { TurnEndReason, RequestErrorAction }

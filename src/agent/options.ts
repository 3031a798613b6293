// The options of createAgent, cancel() and dispose(), and the checks that refuse a wrong one by name before anything is registered.
import type { InspectionEvent, Observer } from 'xstate'
import type { agentMachine } from '../machines/agent.js'
import type { ModelAdapter } from '../adapters/types.js'
import { contextWindowOf } from '../adapters/assemble.js'
import { ConfigError } from '../errors.js'
import { describeValue, isRecordLike } from '../values/foreign.js'
import type { HookLogger } from '../runtime/hooks.js'
import type { RequestOptions } from '../request/options.js'
import { defaultRetry, sleepFor, type RetryPolicyOptions } from '../request/retry.js'
import type { EventData } from '../session/schemas.js'
import type { InterruptedHistory } from '../session/interrupted.js'
import { isSessionLike, type Session } from '../session/session.js'
import type { SessionStore } from '../stores/types.js'
import { checkToolList } from '../tools/define.js'
import { isToolSource } from '../tools/source.js'
import type { ToolEntry } from '../tools/step-tools.js'
import type { SystemPromptOption, ToolsOption } from '../runtime/assembly.js'
import { resolveCompaction, type CompactionOptions } from '../compaction/options.js'
import { checkTelemetryOptions, type TelemetryOptions } from '../telemetry/tracer.js'
import type { Agent } from './agent-type.js'

type AgentMachine = typeof agentMachine

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
  /**
   * How the open checks the stored log: from its latest checkpoint and the tail after it (`'checkpoint'`), by
   * validating and replaying all of it (`'full'`), or (`'auto'`, the default) whole up to 2,000 stored events and
   * from the checkpoint beyond; a checkpoint that disagrees with the log is refused (the logger hears why) and the
   * whole log is validated instead (docs/persistence.md, long sessions).
   */
  validate?: 'auto' | 'checkpoint' | 'full'
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
export function checkOptions(options: AgentOptions | StoredAgentOptions) {
  if (!options || typeof options !== 'object') throw new ConfigError('createAgent needs an options object')
  const { model } = options
  if (!model || typeof model.stream !== 'function') throw new ConfigError('options.model must be a ModelAdapter with a stream() method', { path: 'model' })
  contextWindowOf(model) // request/context logs it; a bad one is refused now, by its name
  for (const key of ['provider', 'model'] as const) {
    // the seed config's route, which request/context logs (absent: RQ-3 answers at the first request)
    if (model[key] !== undefined && typeof model[key] !== 'string')
      throw new ConfigError(`model.${key} must be a string, got ${describeValue(model[key])}`, { path: `model.${key}` })
  }
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

export const DEFAULT_GRACE_MS = 1000

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
export function checkGrace(caller: 'cancel' | 'dispose', graceMs: unknown): void {
  if (typeof graceMs !== 'number' || Number.isNaN(graceMs) || graceMs < 0) {
    throw new ConfigError(`${caller}: graceMs must be a number of milliseconds >= 0, got ${describeValue(graceMs)}`, { path: 'graceMs' })
  }
}

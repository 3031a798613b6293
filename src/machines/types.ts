// The vocabulary shared by every machine: context, the events the outside
// world sends in, and the effects the machines emit for the runtime to perform.
// Context and effects hold only JSON values: a snapshot can be stored, sent
// or compared as text, and thrown values stay with the runtime.
import type {
  AgentCancelCause,
  AppendIntent,
  RepairCloser,
  ContentBlock,
  FinishReason,
  InboxTarget,
  LlmCallConfig,
  LlmFailure,
  RequestHeader,
  SessionEventType,
  StreamChunk,
  TokenUsage,
  ToolCallBlock,
  TurnEndReason,
  UserMessage,
  CompactionPlan,
  CompactionReason,
} from '../session/schemas.js'
import type { ApprovalWait } from '../session/vocabulary.js'

export type { CompactionPlan, CompactionReason }

/** The outcome of one step as the turn reads it. */
export type StepOutcome = 'completed' | 'max-tokens' | 'continue' | 'aborted' | 'error'

/** A failure on its way to `turn/end{error}`: its facts, and the step agent/error reports (Decision 7). */
export interface TurnFailure {
  failure: LlmFailure
  step: number
}

/** A tool call the anchor asked for, with its parsed arguments (TL-1). */
export interface RequestedCall {
  callId: string
  name: string
  /** The raw text the model sent, as logged in `tool/call`. */
  arguments: string
  /** The parsed value (JSON), or the raw text when it is not JSON. */
  args: unknown
}

/** What a tool call settled with, before it is committed as `tool/result`. */
export interface ToolOutcome {
  isError: boolean
  content: string
  error?: { name: string; code: string }
  meta?: unknown
  additionalContexts?: UserMessage[]
  concludesTurn?: boolean
}

/**
 * A `tools/post-execute` answer as the runtime hands it to the machine (`hook.done.value`): plain checked data,
 * a `value` already turned into its JSON text as `content` (TL-10).
 */
export type PostExecuteAnswer =
  | { kind: 'accept'; content?: string; additionalContexts?: readonly UserMessage[] }
  | { kind: 'block'; feedback: string; additionalContexts?: readonly UserMessage[] }

/** The two pending lists: a projection of the log's `agent/inbox/spliced` events. */
export interface InboxLists {
  readonly nextTurn: readonly UserMessage[]
  readonly nextStep: readonly UserMessage[]
}

/** What one attempt's stream assembled into (the runtime's assembler builds it). Absent facts are absent keys. */
export interface AssembledResponse {
  content: ContentBlock[]
  finish: FinishReason
  usage?: TokenUsage
  replayState?: NonNullable<Extract<StreamChunk, { type: 'finish' }>['replayState']>
  toolCalls: ToolCallBlock[]
}

/** What this instance was created with: fixed for its life but the repair closers, appended once. */
export interface InstanceContext {
  /** Distinguishes this agent instance in generated message ids. */
  id: string
  /** Cap of a parallel pool, read when a group opens (TL-4). */
  maxParallelToolCalls: number
  /** Repair closers still to append when the instance starts (RS-4). */
  repair: NonNullable<AgentInput['repair']>
  /** Compaction: `auto` checks the policy before every step and recovers CONTEXT_WINDOW_EXCEEDED; `manual` only the latter and `agent.compact()`. */
  compaction: CompactionMode
  /** The most steps one turn may run (TU-16, Decision 9); null: no limit. */
  maxSteps: number | null
  /** The approval wait this instance resumes in, until it has (TL-18). */
  resume: ResumeInput | null
}

export type CompactionMode = 'off' | 'manual' | 'auto'

/** The compaction under way, if any (CP-*). */
export interface CompactionContext {
  reason: CompactionReason | null
  /** What the runtime measured: the range to replace. */
  plan: CompactionPlan | null
  /** The last compaction replaced its range (a summary was logged). */
  compacted: boolean
  /** The step whose CONTEXT_WINDOW_EXCEEDED failure was already met with a compaction (once per step, CP-6). */
  overflowAt: { turn: number; step: number } | null
  /** Why the last compaction could not measure the request (its token estimate failed, CP-7). */
  failure: LlmFailure | null
}

/**
 * What the machines know of the world around them, as the runtime reports it (`facts.changed`): whether anyone
 * decides at an extension point, and whether anyone could act synchronously on what the machine does. A hook
 * nobody decides at, with nobody watching, is decided in the chart with no round trip.
 */
export interface Facts {
  /** The extension points with a listener (agent/request-error also when the retry policy is on), in no order. */
  readonly listened: readonly HookName[]
  /**
   * Something runs synchronously as effects are performed and may send to the agent meanwhile (session/event and
   * notification listeners, session observers, events$ subscribers): each decision point then waits one round trip,
   * so what it sends is heard first.
   */
  readonly observed: boolean
  /** Someone can answer a tools/pre-execute `ask` (TL-18): the agent was made with `approvals: true` or listens to tools/approval-requested. */
  readonly approver: boolean
  /**
   * Each tool's execution mode: fixed, or `per-call` when it is a function of the arguments (the runtime classifies
   * such a call right before it starts, TL-2, TL-5); a tool absent here is unknown, so exclusive. Null: nothing is
   * known, every call is classified when it starts.
   */
  readonly modes: Readonly<Record<string, 'parallel' | 'exclusive' | 'per-call'>> | null
}

/** The request side: seed config, logged header and route, the current attempt. */
export interface RequestContext {
  /** Seed config of the next request: the options at first, then the latest logged config (RQ-2). */
  seedConfig: LlmCallConfig
  /** The log already held a request/header before this instance (RQ-4 `resume`). */
  priorHeader: boolean
  /** Requests built by this instance; the first always logs a header. */
  requests: number
  headerKey: string | null
  contextKey: string | null
  /** Attempts in the current step (a retry is a new attempt, RQ-10). */
  attempt: number
  config: LlmCallConfig | null
  /** The failure request recovery is deciding about. */
  failure: TurnFailure | null
  /** The retry waiting in its backoff (RQ-14): logged as llm/retry, started as llm/retry-started. */
  retry: { retryId: string; retry: number } | null
  /** Recovery waits for agent/request-error's answer (someone decided or watched there when the request failed). */
  recoveryAsked: boolean
}

/** The live activity's flags. */
export interface ActivityContext {
  /** A waking send arrived that the current activity cannot deliver; replayed at convergence (CX-12, CX-13, MT-3). */
  readonly wakeLatched: boolean
  /** Why the live activity was cancelled; the first cause wins (CX-2). */
  readonly cancelCause: AgentCancelCause | null
  readonly disposing: boolean
}

/**
 * Everything the machines remember: counters, ids and the little guards read.
 * Kept to a few top-level keys: XState copies the context on every assign, and
 * V8 turns an object built that way with about 20 keys into a slow dictionary.
 */
export interface AgentContext {
  instance: InstanceContext
  facts: Facts
  request: RequestContext

  // the inbox projection (IN-*) and the activity's flags
  nextTurn: readonly UserMessage[]
  nextStep: readonly UserMessage[]
  activity: ActivityContext

  // the turn
  turn: number
  step: number
  /** Some step of this turn ended `max-tokens`: the turn ends `max-tokens` when it would otherwise complete (TU-12). */
  maxTokensSeen: boolean
  lastStep: 'none' | 'terminal' | 'continue'
  /** The messages the current proposal claimed, and those its decision entered. */
  proposal: { claimed: readonly UserMessage[]; entering: readonly UserMessage[]; asked: boolean; assembling?: true }
  /** How the turn ends, once known. */
  endReason: TurnEndReason | null
  failure: TurnFailure | null
  stepOutcome: StepOutcome | null

  /** Async effects each get a fresh id (`next`); the answer awaited is `waiting`; late answers of older ids are dropped. */
  ids: { next: number; waiting: number }

  /** The tool batch of the current step. */
  toolBatch: ToolBatchContext

  compaction: CompactionContext

  /** Options of single turns (`agent.run(input, options)`): those of queued prompts, and the running turn's. */
  turnOptions: TurnOptionsContext
}

/** What one turn's options change (the public API checked them): a request layer over the seed config, a step limit. */
export interface TurnOptions {
  /** Merged over the seed config for this turn's requests only (provider options one level deep). */
  readonly request?: Readonly<Omit<Partial<LlmCallConfig>, 'provider' | 'model'>>
  /** This turn's step limit instead of the instance's; null: no limit. */
  readonly maxSteps?: number | null
}

export interface TurnOptionsContext {
  /** By message id: the options of prompts queued in next-turn. */
  readonly queued: Readonly<Record<string, TurnOptions>>
  /** The options of the running turn, taken when it claimed its prompt. */
  readonly current: TurnOptions | null
  /** The seed config from before the running turn's request layer, restored when the turn ends. */
  readonly baseSeed: LlmCallConfig | null
}

/** Book-keeping of one step's tool batch: two lanes over the same calls. */
export interface ToolBatchContext {
  calls: readonly RequestedCall[]
  /** Index of the next call to start, and of the next to commit (model order). */
  nextStart: number
  nextCommit: number
  started: readonly boolean[]
  /** Settled outcomes waiting for their turn to commit. */
  outcomes: readonly (ToolOutcome | null)[]
  /** A throwing pre-execute skips post-execute (TL-10). */
  skipPost: readonly boolean[]
  bodyIds: readonly number[]
  /** Calls started whose body (or pre-stage) has not settled. */
  inFlight: number
  /** The group being filled is a parallel pool (false: a barrier or nothing). */
  pool: boolean
  cap: number
  preId: number
  postId: number
  classifyId: number
  concluded: boolean
  /** First scheduler failure (TL-17). */
  failure: TurnFailure | null
  /** The call whose pre-execute asked for approval and now waits for a person's answer (TL-18), or null. */
  approval: string | null
  /** A disposal left the waiting call's question open: the agent stops once earlier calls have committed (TL-18). */
  parked: boolean
  /** The reason of a person's denial, between its logged answer and the result it becomes (TL-18). */
  denial: string | null
  /** The next call's mode once the classifier answered (null until then, and once it starts). */
  nextMode: 'parallel' | 'exclusive' | null
  /** The calls of this batch whose question was asked (an answer to one that no longer waits is refused as already answered). */
  asked: readonly string[]
}

/** A repair closer: a session event appended before anything else when the log ends inside a turn (RS-4). */
export type RepairAppend = RepairCloser

export interface AgentInput {
  seedConfig: LlmCallConfig
  priorHeader?: boolean
  lastTurn?: number
  nextTurn?: readonly UserMessage[]
  nextStep?: readonly UserMessage[]
  maxParallelToolCalls?: number
  /** The most steps one turn may run (TU-16); absent or null: no limit (the agent's default of 100 is createAgent's). */
  maxSteps?: number | null
  /** Planned calls, for walking the tool batch machine on its own. */
  calls?: readonly RequestedCall[]
  /** Key of the latest request/context in the log, so a resumed instance logs the route only when it differs (RQ-5). */
  contextKey?: string
  /** Entered messages, for walking the step machine on its own. */
  entering?: readonly UserMessage[]
  /** Closers for a crash-truncated log, appended before anything else (RS-4). */
  repair?: readonly RepairAppend[]
  /** Distinguishes this instance in generated message ids (default `i0`). */
  instance?: string
  /** Resuming inside a tool batch whose call waits for approval (TL-18): the batch as the log leaves it. */
  resume?: ResumeInput
  /** Compaction mode (default `off`: the agent turns it on when a context window is known). */
  compaction?: CompactionMode
  /** What the runtime knows at start (default: everything is asked and watched, as in a graph walk). */
  facts?: Partial<Facts>
}

/** What the log says of a call that waits for approval when an instance starts (TL-18); the machine resumes inside that wait. */
export type ResumeInput = ApprovalWait

// ---- events in ------------------------------------------------------------

/** What an inbox request of the public API changed beside the lists, so a refused splice can be undone (IN-7). */
export interface CallerUndo {
  wakeLatched: boolean
}

export type AgentEvent =
  /** `options`: the options of the turn this prompt opens (next-turn only). */
  | { type: 'inbox.send'; message: UserMessage; target: InboxTarget; wakeup: boolean; options?: TurnOptions }
  | { type: 'inbox.remove'; id: string }
  | { type: 'inbox.replace'; id: string; message: UserMessage }
  | { type: 'inbox.clear' }
  | { type: 'inbox.splice'; target: InboxTarget; start: unknown; deleteCount: unknown; messages: readonly UserMessage[] }
  | { type: 'agent.cancel'; cause: AgentCancelCause; keepInbox?: boolean }
  | { type: 'agent.dispose' }
  | { type: 'maintenance.start' }
  /** `agent.compact()` from idle (CP-4). */
  | { type: 'compaction.start' }
  /** The answer to `fx.measure`: the range to compact, or null (under the threshold, or nothing to compact). */
  | { type: 'compaction.measured'; id: number; plan: CompactionPlan | null }
  /** The summariser's text and what the request will weigh after the replacement. */
  | { type: 'compaction.summarised'; id: number; summary: string; tokensAfter: number; usage?: TokenUsage }
  | { type: 'compaction.failed'; id: number; failure: LlmFailure }
  | { type: 'job.settled'; id: number }
  /** Every append emitted before `fx.confirm{id}` is in the log. */
  | { type: 'appends.confirmed'; id: number }
  /**
   * An append was refused, or the store failed to commit. The runtime performed nothing after it in that macrostep:
   * `skipped` names the appends it left out and `unstarted` the ids of the effects it never started (a confirmation
   * among them), so the machine knows what it still waits for. `eventType` is the refused event (for a failed commit,
   * the earliest event the store did not take; null when it was not one event). `lists` is the inbox as the log now
   * projects it.
   */
  | {
      type: 'append.failed'
      eventType: SessionEventType | null
      failure: LlmFailure
      skipped: readonly SessionEventType[]
      unstarted: readonly number[]
      lists: InboxLists
      /** Set when the refused append was an API caller's inbox request (the caller gets the error). */
      caller?: CallerUndo
    }
  | { type: 'hook.done'; id: number; value: unknown }
  | { type: 'hook.failed'; id: number; failure: LlmFailure }
  | {
      type: 'request.prepared'
      id: number
      config: LlmCallConfig
      header: RequestHeader
      headerKey: string
      context: { provider: string; model: string; contextWindow?: number }
      contextKey: string
    }
  | { type: 'model.settled'; id: number; chunkSeqs: readonly number[]; response: AssembledResponse; cancelled: boolean }
  /** The stream failed outside the adapter (a refused chunk append, middleware); not offered to recovery (RQ-7). */
  | { type: 'model.failed'; id: number; failure: LlmFailure }
  | { type: 'tool.settled'; id: number; outcome: ToolOutcome }
  | { type: 'tool.classified'; id: number; mode: 'parallel' | 'exclusive' }
  /** The backoff of a retry is over (the answer to `fx.wait`). */
  | { type: 'backoff.elapsed'; id: number }
  /** A person answered call `callId`'s approval (TL-18); `logged`: the log holds its question, so a call no longer waiting was answered or closed. */
  | { type: 'approval.answered'; callId: string; approved: boolean; reason?: string; logged?: boolean }
  /** The runtime's facts changed (a listener was added or removed, an observer subscribed). */
  | { type: 'facts.changed'; facts: Partial<Facts> }

// ---- effects out ----------------------------------------------------------

/** Why the machine refuses a request of the public API. */
export type RefusalCode =
  'ALREADY_PENDING' | 'NOT_PENDING' | 'AGENT_BUSY' | 'AGENT_DISPOSED' | 'COMPACTION_OFF' | 'APPROVAL_UNKNOWN' | 'APPROVAL_ALREADY_ANSWERED'

/** What the machines emit: the effects of one action, in order, under the action's name. */
export interface ActionEffects {
  type: 'effects'
  action: string
  effects: readonly Effect[]
}

/** Append one session event with its intent; `citeKeys` resolve to seqs of earlier appends labelled `key`. */
export interface AppendEffect extends Omit<AppendIntent, 'ignorable'> {
  type: 'fx.append'
  eventType: SessionEventType
  data: unknown
  citeKeys?: readonly string[]
  key?: string
  /** An inbox request of the public API: a refusal is thrown to that caller (IN-7) and handed back in `append.failed`. */
  caller?: CallerUndo
}

/** The extension points the machines wait on (the waterfall and serial ones of BEHAVIOURS 1.6). */
export type HookName =
  'agent/pre-step' | 'agent/request' | 'agent/request-error' | 'agent/turn-stopping' | 'tools/pre-execute' | 'tools/post-execute' | 'system-prompt/assemble'

export type NotificationName =
  'agent/status' | 'agent/inbox/inserted' | 'agent/inbox/discarded' | 'agent/inbox/claimed' | 'agent/error' | 'tools/result' | 'tools/approval-requested'

export type Effect =
  | AppendEffect
  /** Fire a live notification. For `agent/error` the payload carries `failure`; the runtime hands listeners the error itself. */
  | { type: 'fx.notify'; name: NotificationName; payload: Record<string, unknown> }
  /** Answer `appends.confirmed{id}` once the appends before it are in the log (`append.failed{id}` if one was refused). */
  | { type: 'fx.confirm'; id: number }
  /**
   * Run an extension point; answers hook.done / hook.failed. `fallback` is the default decision (absent: undefined).
   * `abandonOnCancel`: the machine stops waiting when the activity is cancelled, so the runtime does not start it
   * once the signal has aborted.
   */
  | { type: 'fx.hook'; id: number; name: HookName; payload: Record<string, unknown>; fallback?: unknown; abandonOnCancel: boolean }
  /** Run `agent/request` and prepare the request; answers request.prepared / hook.failed. Abandoned on cancel. */
  | { type: 'fx.prepare'; id: number; turn: number; step: number; seed: LlmCallConfig; abandonOnCancel: true }
  /** Stream the model; answers model.settled (also when cancelled) / model.failed. */
  | { type: 'fx.model'; id: number; turn: number; step: number; config: LlmCallConfig }
  /** Classify a call right before it would start (TL-2, TL-5); answers tool.classified. */
  | { type: 'fx.classify'; id: number; call: RequestedCall }
  /** Wait `ms` before a retry (its cancellable backoff, RQ-14); answers backoff.elapsed. Abandoned on cancel. */
  | { type: 'fx.wait'; id: number; ms: number; abandonOnCancel: true }
  /** Run one tool body; answers tool.settled. */
  | { type: 'fx.tool'; id: number; turn: number; step: number; call: RequestedCall }
  /** Abort the live activity's signal with this cause. */
  | { type: 'fx.abort'; cause: AgentCancelCause }
  /** Give the activity a fresh signal (new activity or next turn). */
  | { type: 'fx.signal' }
  /**
   * Measure the request the next step would send (the history plus `entering`) against the compaction policy;
   * answers compaction.measured. A pure reading of the log, answered at once.
   */
  | { type: 'fx.measure'; id: number; reason: CompactionReason; entering: readonly UserMessage[] }
  /** Ask the summariser (the model, or the user's) for a summary of the planned range; answers compaction.summarised / compaction.failed. */
  | { type: 'fx.summarise'; id: number; reason: CompactionReason; plan: CompactionPlan; config: LlmCallConfig; abandonOnCancel: true }
  /** Start the maintenance job registered by the API; answers job.settled. */
  | { type: 'fx.job'; id: number }
  /** Refuse the public API's request being processed (a duplicate id, nothing pending, a busy agent): its caller gets the error. */
  | { type: 'fx.reject'; code: RefusalCode; message: string; callId?: string }

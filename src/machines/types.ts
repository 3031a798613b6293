// The vocabulary shared by every machine: context, the events the outside
// world sends in, and the effects the machines emit for the runtime to perform.
import type { AssembledResponse } from '../adapters/assemble.js'
import type {
  AgentCancelCause,
  InboxTarget,
  LlmCallConfig,
  LlmFailure,
  RequestHeader,
  SessionEventType,
  SurfaceOp,
  ToolCallBlock,
  TurnEndReason,
  UserMessage,
} from '../session/schemas.js'

/** The outcome of one step as the turn reads it. */
export type StepOutcome = 'completed' | 'max-tokens' | 'continue' | 'aborted' | 'error'

/** A failure on its way to `turn/end{error}`: the normalized facts and the thrown value verbatim. */
export interface TurnFailure {
  failure: LlmFailure
  error: unknown
  /** The step agent/error reports (the proposed one when it had not opened, Decision 7). */
  step: number
}

/** A tool call the anchor asked for, with its parsed arguments (TL-1). */
export interface PlannedCall {
  callId: string
  name: string
  arguments: string
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

/** What this instance was created with: fixed for its life but the repair closers, appended once. */
export interface InstanceContext {
  /** Distinguishes this agent instance in generated message ids. */
  id: string
  /** Cap of a parallel pool, read when a group opens (TL-4). */
  maxParallelToolCalls: number
  /** Repair closers still to append when the instance starts (RS-4). */
  repair: NonNullable<AgentInput['repair']>
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
  /** The failure recovery is deciding about. */
  failure: TurnFailure | null
}

/**
 * Everything the machines remember: counters, ids and the little guards read.
 * Kept to a few top-level keys: XState copies the context on every assign, and
 * V8 turns an object built that way with about 20 keys into a slow dictionary.
 */
export interface AgentContext {
  instance: InstanceContext
  request: RequestContext

  // inbox projection (IN-*) and the activity's flags
  nextTurn: readonly UserMessage[]
  nextStep: readonly UserMessage[]
  latch: boolean
  cause: AgentCancelCause | null
  disposing: boolean

  // turn
  turn: number
  step: number
  sticky: boolean
  lastStep: 'none' | 'terminal' | 'continue'
  /** The claimed batch of the current proposal, and the messages its decision entered. */
  proposal: { batch: readonly UserMessage[]; entering: readonly UserMessage[] }
  end: TurnEndReason | null
  failure: TurnFailure | null
  stepOutcome: StepOutcome | null

  /** Async effects each get a fresh id (`next`); the result awaited is `waiting`; late results of older ids are dropped. */
  ids: { next: number; waiting: number }

  /** The tool batch of the current step. */
  tools: ToolBatchContext
}

/** Book-keeping of one step's tool batch: two lanes over the same calls. */
export interface ToolBatchContext {
  calls: readonly PlannedCall[]
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
}

export interface AgentInput {
  seedConfig: LlmCallConfig
  priorHeader?: boolean
  lastTurn?: number
  nextTurn?: readonly UserMessage[]
  nextStep?: readonly UserMessage[]
  maxParallelToolCalls?: number
  /** Planned calls, for walking the tool batch machine on its own. */
  calls?: readonly PlannedCall[]
  /** Key of the latest request/context in the log, so a resumed instance logs the route only when it differs (RQ-5). */
  contextKey?: string
  /** Entered messages, for walking the step machine on its own. */
  entering?: readonly UserMessage[]
  /** Closers for a crash-truncated log, appended before anything else (RS-4). */
  repair?: readonly { type: SessionEventType; data: unknown; intent?: { surfaceOp?: SurfaceOp; sourceEventSeqs?: readonly number[]; time?: number } }[]
}

// ---- events in ------------------------------------------------------------

export type AgentEvent =
  | { type: 'inbox.send'; message: UserMessage; target: InboxTarget; wakeup: boolean }
  | { type: 'inbox.committed'; message: UserMessage; target: InboxTarget; wakeup: boolean }
  | { type: 'inbox.remove'; id: string }
  | { type: 'inbox.replace'; id: string; message: UserMessage }
  | { type: 'inbox.clear' }
  | { type: 'inbox.splice'; target: InboxTarget; start: unknown; deleteCount: unknown; messages: readonly UserMessage[] }
  | { type: 'agent.cancel'; cause: AgentCancelCause; keepInbox?: boolean }
  | { type: 'agent.dispose' }
  | { type: 'maintenance.start' }
  | { type: 'job.settled'; id: number }
  | { type: 'sync'; id: number }
  | { type: 'fault'; eventType: SessionEventType; failure: LlmFailure; error: unknown }
  | { type: 'inbox.restore'; nextTurn: readonly UserMessage[]; nextStep: readonly UserMessage[] }
  | { type: 'hook.done'; id: number; value: unknown }
  | { type: 'hook.failed'; id: number; failure: LlmFailure; error: unknown }
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
  | { type: 'model.faulted'; id: number; failure: LlmFailure; error: unknown }
  | { type: 'tool.settled'; id: number; outcome: ToolOutcome }
  | { type: 'tool.classified'; id: number; mode: 'parallel' | 'exclusive' }

// ---- effects out ----------------------------------------------------------

/** Append one session event; `citeKeys` resolve to seqs of earlier appends labelled `key`. */
export interface AppendEffect {
  type: 'fx.append'
  eventType: SessionEventType
  data: unknown
  surfaceOp?: SurfaceOp
  sourceEventSeqs?: readonly number[]
  citeKeys?: readonly string[]
  key?: string
  /** An explicit time instead of the clock (repair closers). */
  time?: number
}

export type HookName = 'agent/pre-step' | 'agent/request' | 'agent/request-error' | 'agent/turn-stopping' | 'tools/pre-execute' | 'tools/post-execute'

export type NotificationName = 'agent/status' | 'agent/inbox/inserted' | 'agent/inbox/discarded' | 'agent/inbox/claimed' | 'agent/error' | 'tools/result'

export type Effect =
  | AppendEffect
  | { type: 'fx.notify'; name: NotificationName; payload: Record<string, unknown> }
  /** Answer `reply` (default `sync{id}`) once the effects before it are done; `onFault` (default `fault`) if an append among them failed. */
  | { type: 'fx.sync'; id: number; reply?: AgentEvent; onFault?: AgentEvent }
  /** Run an extension point; answers hook.done / hook.failed (a cancel is the machine's to handle meanwhile). */
  | { type: 'fx.hook'; id: number; name: HookName; payload: Record<string, unknown>; fallback: unknown }
  /** Run `agent/request` and prepare the request; answers request.prepared / hook.failed. */
  | { type: 'fx.prepare'; id: number; turn: number; step: number; seed: LlmCallConfig }
  /** Stream the model; answers model.settled / model.faulted. */
  | { type: 'fx.model'; id: number; turn: number; step: number; config: LlmCallConfig }
  /** Classify a call right before it would start (TL-2, TL-5); answers tool.classified. */
  | { type: 'fx.classify'; id: number; call: PlannedCall }
  /** Run one tool body; answers tool.settled. */
  | { type: 'fx.tool'; id: number; turn: number; step: number; call: PlannedCall }
  /** Abort the live activity's signal with this cause. */
  | { type: 'fx.abort'; cause: AgentCancelCause }
  /** Give the activity a fresh signal (new activity or next turn). */
  | { type: 'fx.signal' }
  /** Start the maintenance job registered by the API; answers job.settled. */
  | { type: 'fx.job'; id: number }
  /** Refuse an inbox request (e.g. duplicate id); the API throws it. */
  | { type: 'fx.reject'; code: string; message: string }

export type { ToolCallBlock }

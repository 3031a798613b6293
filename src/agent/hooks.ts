// The listener names agent.on() accepts, their signatures, and the answers the extension points return.
import type { ModelRequest } from '../adapters/types.js'
import type { ToolOutcome } from '../machines/types.js'
import type { RequestConfigInput } from '../request/options.js'
import type { RequestErrorAction } from '../request/retry.js'
import type { LlmCallConfig, LlmFailure, SessionEvent, StreamChunk, UserMessage } from '../session/schemas.js'
import type { Session } from '../session/session.js'
import type { PromptAssembly, PromptContext } from '../runtime/assembly.js'
import type { ToolResultValue } from '../tools/define.js'
import type { Agent, AgentStatus } from './agent-type.js'

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
    next: Next<PostExecuteResult>,
  ) => PostExecuteResult | Promise<PostExecuteResult>
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
export const LISTENER_NAMES: ReadonlySet<string> = new Set(
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
/** The call's result as `tools/post-execute` settles it: kept (`accept`, its content or value optionally replaced) or replaced by `feedback` (`block`). */
export type PostExecuteResult =
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

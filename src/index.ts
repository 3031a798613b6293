// agentchart: the agent loop as explicit XState statecharts.
export { createAgent } from './agent/create.js'
export { Agent } from './agent/agent.js'
export type { AgentStatus } from './agent/agent-type.js'
export { Inbox } from './agent/inbox.js'
export { DEFAULT_MAX_STEPS } from './agent/options.js'
export type { AgentOptions, StoredAgentOptions, CancelOptions, DisposeOptions, CompactionResult, HistoryOptions } from './agent/options.js'
export type {
  AgentHooks,
  ListenerName,
  PreStepDecision,
  PreExecuteDecision,
  PostExecuteResult,
  PostExecuteDecision,
  ToolExecution,
  ToolOutcomeView,
} from './agent/hooks.js'
export type { RequestErrorAction } from './request/retry.js'
export { INTERRUPTED_NOTE, INTERRUPTED_SOURCE } from './session/interrupted.js'
export type { InterruptedHistory } from './session/interrupted.js'
export { createSession, Session } from './session/session.js'
export type { SessionOptions, SessionObserver } from './session/session.js'
export * from './session/schemas.js'
export { toFrozenJson, deepFreeze, isLosslessJson } from './session/lossless.js'
export { repairClosers, openTurnOf } from './session/repair.js'
export type { RepairCloser } from './session/repair.js'
export { pendingApprovals } from './session/approvals.js'
export { forkSession, forkLineageOf } from './session/fork.js'
export type { ForkOptions, ForkLineage } from './session/fork.js'
export type { PendingApproval } from './session/approvals.js'
export { userMessage, toInboxMessage } from './request/messages.js'
export { defineTool, toolSchemas } from './tools/define.js'
export type { ToolDefinition, ToolContext, ToolResultValue, ExecutionMode } from './tools/define.js'
export type { PromptContext, PromptAssembly, SystemPromptOption, ToolsOption } from './runtime/assembly.js'
export type { ToolSource, ToolRead } from './tools/source.js'
export { agentTool, subagentsOf, parentOf, SubagentError, SUBAGENT_SOURCE, DEFAULT_MAX_DEPTH } from './subagents/agent-tool.js'
export type { AgentToolDefinition, SubagentRecord, SubagentSource } from './subagents/agent-tool.js'
export { toCheckedSchema, isZodV4Schema } from './request/schema.js'
export type { SchemaInput, ZodV4Schema, JsonSchemaInput, JsonSchema, InferSchema, CheckedSchema, CheckResult, SchemaIssue } from './request/schema.js'
export type { RequestOptions, RequestConfigInput, ResponseFormatInput } from './request/options.js'
export type { AwaitingApprovalResult, RunResult, TurnResult, UnrunResult, UsageTotals } from './agent/results.js'
export type { RunOptions } from './agent/run-options.js'
export { retryPolicy, sleepFor, DEFAULT_RETRYABLE_CODES, RETRY_DEFAULTS } from './request/retry.js'
export type { RetryPolicyOptions, RetryPayload } from './request/retry.js'
export type { ModelAdapter, ModelRequest } from './adapters/types.js'
export { LlmError, toLlmFailure } from './adapters/failure.js'
export type { LlmFailureInit } from './adapters/failure.js'
export { DEFAULT_INSTRUCTIONS as COMPACTION_INSTRUCTIONS } from './compaction/options.js'
export type { CompactionOptions, SummariseInput, SummariseResult } from './compaction/options.js'
export { estimateMessageTokens, estimateTextTokens, planCompaction, SUMMARY_SOURCE, summaryText } from './compaction/plan.js'
export type { CompactionPolicy, SurfaceNodeView } from './compaction/plan.js'
export type { TelemetryOptions, TelemetryTracer, TelemetrySpan, TelemetryContext, TelemetryTime } from './telemetry/tracer.js'
export * from './errors.js'

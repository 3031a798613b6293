// agentchart: the agent loop as explicit XState statecharts.
export { createAgent, Agent, Inbox, DEFAULT_MAX_STEPS } from './agent.js'
export type {
  AgentOptions,
  StoredAgentOptions,
  CancelOptions,
  DisposeOptions,
  AgentStatus,
  AgentHooks,
  ListenerName,
  PreStepDecision,
  RequestErrorAction,
  PreExecuteDecision,
  PostExecuteDecision,
  ToolExecution,
  ToolOutcomeView,
  CompactionResult,
  HistoryOptions,
} from './agent.js'
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
export { userMessage, toInboxMessage } from './messages.js'
export { defineTool, toolSchemas } from './tools/define.js'
export type { ToolDefinition, ToolContext, ToolResultValue, ExecutionMode } from './tools/define.js'
export type { PromptContext, PromptAssembly, SystemPromptOption, ToolsOption } from './runtime/assembly.js'
export type { ToolSource, ToolRead } from './tools/source.js'
export { agentTool, subagentsOf, parentOf, SubagentError, SUBAGENT_SOURCE, DEFAULT_MAX_DEPTH } from './tools/subagent.js'
export type { AgentToolDefinition, SubagentRecord, SubagentSource } from './tools/subagent.js'
export { toCheckedSchema, isZodV4Schema } from './schema.js'
export type { SchemaInput, ZodV4Schema, JsonSchemaInput, JsonSchema, InferSchema, CheckedSchema, CheckResult, SchemaIssue } from './schema.js'
export type { RequestOptions, RequestConfigInput, ResponseFormatInput } from './request.js'
export type { AwaitingApprovalResult, RunResult, TurnResult, UnrunResult, UsageTotals } from './results.js'
export type { RunOptions } from './run-options.js'
export { retryPolicy, sleepFor, DEFAULT_RETRYABLE_CODES, RETRY_DEFAULTS } from './retry.js'
export type { RetryPolicyOptions, RetryPayload } from './retry.js'
export type { ModelAdapter, ModelRequest } from './adapters/types.js'
export { LlmError, toLlmFailure } from './adapters/failure.js'
export type { LlmFailureInit } from './adapters/failure.js'
export { DEFAULT_INSTRUCTIONS as COMPACTION_INSTRUCTIONS } from './compaction.js'
export type { CompactionOptions, SummariseInput, SummariseResult } from './compaction.js'
export { estimateMessageTokens, estimateTextTokens, planCompaction, SUMMARY_SOURCE, summaryText } from './session/compaction.js'
export type { CompactionPolicy, SurfaceNodeView } from './session/compaction.js'
export type { TelemetryOptions, TelemetryTracer, TelemetrySpan, TelemetryContext, TelemetryTime } from './telemetry/tracer.js'
export * from './errors.js'

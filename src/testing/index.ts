// agentchart/testing: scripted models, response helpers and the session invariant checker.
export { scriptedModel } from '../adapters/scripted.js'
export type { ScriptedModel, ScriptEntry, ScriptResult, ScriptedModelOptions } from '../adapters/scripted.js'
export { textResponse, reasoningResponse, toolCallResponse, maxTokensResponse, errorResponse, hang } from './responses.js'
export type { ResponseOptions, ScriptedToolCall } from './responses.js'
export { checkSessionInvariants } from './invariants.js'
export type { SessionInvariantViolation, SessionInvariantRule, CheckSessionInvariantsOptions } from './invariants.js'

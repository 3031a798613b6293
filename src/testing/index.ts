// agentchart/testing: scripted models, response helpers, the session invariant checker, and the conformance kit.
export { scriptedModel } from '../adapters/scripted.js'
export type { ScriptedModel, ScriptEntry, ScriptResult, ScriptedModelOptions } from '../adapters/scripted.js'
export { textResponse, reasoningResponse, toolCallResponse, maxTokensResponse, errorResponse, hang } from './responses.js'
export type { ResponseOptions, ScriptedToolCall } from './responses.js'
export { checkSessionInvariants, seedViolations, SEED_RULES } from '../session/invariants.js'
export type { SessionInvariantViolation, SessionInvariantRule, CheckSessionInvariantsOptions } from '../session/invariants.js'

// the conformance kit: the format, the driver contract, the reference driver, the runner
export { FORMAT_VERSION, SUITE_FORMAT, ScenarioSchema, ScenarioInputSchema, SuiteSchema, scenarioJsonSchema } from './conformance/format.js'
export type {
  Scenario,
  ScenarioInput,
  ScenarioInputType,
  ScenarioSetup,
  ScenarioTool,
  SeedEvent,
  ExpectedEvent,
  FailAppend,
  Fork,
  ForkRefusal,
  ListenerAction,
  ToolReturn,
  CancelTrigger,
  Suite,
} from './conformance/format.js'
export type { ConformanceDriver } from './conformance/driver.js'
export { agentchartDriver, createAgentchartDriver, runOnAgentchart } from './conformance/reference-driver.js'
export { runSuite, judge, formatResult, formatReport } from './conformance/runner.js'
export type { ScenarioResult, SuiteReport, RunOptions } from './conformance/runner.js'
export { compareLog } from './conformance/compare.js'
export type { Divergence, LoggedEvent } from './conformance/compare.js'
export { readSuite } from './conformance/files.js'
export type { Manifest } from './conformance/files.js'
export { buildSuite, exploreAgent, NOT_PORTABLE, selectScenarios } from './conformance/suite.js'
export { toPortable, scenarioOfState, freePaths, FREE } from './conformance/export.js'
export { forkScenarios } from './conformance/forks.js'
export { generateSuite, runSuiteFromDir, loadDriver } from './conformance/cli.js'

// the model-based side: walks, coverage and lifecycle invariants
export { explore, complete, replay } from './model/explore.js'
export type { Exploration, GeneratedScenario, WalkEvent } from './model/explore.js'
export { createHarness, allTransitions } from './model/harness.js'
export type { Harness, HarnessState, Budget } from './model/harness.js'
export { walks, AGENT_PROFILES } from './model/profiles.js'
export { coverageOf, formatCoverage, UNREACHABLE } from './model/coverage.js'
export type { CoverageReport } from './model/coverage.js'
export { checkLifecycleInvariants, LIFECYCLE_INVARIANTS } from './model/lifecycle-invariants.js'
export { WalkInputSchema } from './model/scenario.js'
export type { WalkInput } from './model/scenario.js'

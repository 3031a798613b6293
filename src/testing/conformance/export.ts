// From a walk's path to a portable scenario: the agent's setup, the inputs
// spelled out, and the whole expected log with the values an implementation
// chooses itself (message ids, the text of its own errors) marked free.
import { SUMMARY_SOURCE } from '../../session/vocabulary.js'
import { toolSchemas } from '../../tools/define.js'
import { traceOf, type GeneratedScenario, type WalkEvent } from '../model/explore.js'
import { SCENARIO_CONFIG, scenarioTools, type HarnessState } from '../model/harness.js'
import { FORMAT_VERSION, ScenarioSchema, type ExpectedEvent, type Scenario, type ScenarioSetup } from './format.js'

/** What a free value is written as in an expected event's data. */
export const FREE = '*'

let setup: ScenarioSetup | undefined

/** The agent every exported scenario starts from: the scripted model, tools `p` (parallel-safe) and `x` (exclusive). */
export function scenarioSetup(): ScenarioSetup {
  setup ??= makeSetup()
  return structuredClone(setup)
}

function makeSetup(): ScenarioSetup {
  const tools = scenarioTools(() => Promise.resolve(''))
  const schemas = toolSchemas(tools)
  return {
    model: { provider: SCENARIO_CONFIG.provider, model: SCENARIO_CONFIG.model },
    tools: tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: schemas.find((s) => s.name === tool.name)!.inputSchema,
      executionMode: tool.executionMode === 'parallel' ? 'parallel' : 'exclusive',
    })),
    maxParallelToolCalls: 10,
  }
}

/**
 * The JSON Pointers of an event whose values the implementation chooses (docs/conformance.md, "Free values"):
 * the ids of the messages and compactions it creates, and the text of a failure it describes in its own words (NO_ADAPTER, RQ-3).
 */
export function freePaths(event: { type: string; data: unknown }): string[] {
  const data = event.data as { reason?: { kind?: string; error?: { code?: string } }; source?: { kind?: string; plugin?: string } }
  switch (event.type) {
    case 'user/message':
      // a compaction summary: the loop makes its message (an entered message is given, and never free)
      return data.source?.kind === 'plugin' && data.source.plugin === SUMMARY_SOURCE.plugin ? ['/data/id'] : []
    case 'compaction/completed':
      return ['/data/compactionId', '/data/messageId']
    case 'compaction/failed':
      return ['/data/compactionId']
    case 'assistant/message':
    case 'tool/result':
      return ['/data/message/id']
    case 'llm/retry':
    case 'llm/retry-started':
      return ['/data/retryId']
    case 'turn/end':
      return data.reason?.kind === 'error' && data.reason.error?.code === 'NO_ADAPTER' ? ['/data/reason/error/message'] : []
    default:
      return []
  }
}

/** Replace the value at `pointer` (from the event) by FREE, copying the objects on the way so shared data stays intact. */
function markFree(event: Record<string, unknown>, pointer: string): void {
  const keys = pointer.split('/').slice(1)
  let at: Record<string, unknown> = event
  for (const key of keys.slice(0, -1)) {
    at[key] = { ...(at[key] as Record<string, unknown>) }
    at = at[key] as Record<string, unknown>
  }
  at[keys[keys.length - 1]] = FREE
}

/** One logged event as the scenario expects it: everything but `time`, free values written as FREE. */
export function expectedEvent(event: WalkEvent, live: boolean): ExpectedEvent {
  const out: Record<string, unknown> = { seq: event.seq, type: event.type, data: event.data }
  if (event.surfaceOp !== undefined) out.surfaceOp = event.surfaceOp
  if (event.sourceEventSeqs !== undefined) out.sourceEventSeqs = [...event.sourceEventSeqs]
  const free = live ? freePaths(event) : []
  for (const pointer of free) markFree(out, pointer)
  if (free.length > 0) out.free = free
  return out as unknown as ExpectedEvent
}

/**
 * A walk's path as a portable scenario file, checked against the schema unless `validate` is false.
 * Why: what `conformance generate` writes; the model tests make thousands and skip the check.
 */
export function toPortable(generated: GeneratedScenario, options: { validate?: boolean } = {}): Scenario {
  const seedLength = generated.seed ? generated.seed.length + 1 : 0
  const setup: ScenarioSetup = {
    ...scenarioSetup(),
    ...(generated.seed ? { seed: generated.seed } : {}),
    ...(generated.faults ? { faults: generated.faults } : {}),
    // TU-16: a walk with a step limit runs an agent with that limit
    ...(generated.maxSteps !== undefined ? { maxSteps: generated.maxSteps } : {}),
    // TL-4: a walk with a smaller pool runs an agent with that pool
    ...(generated.maxParallelToolCalls !== undefined ? { maxParallelToolCalls: generated.maxParallelToolCalls } : {}),
    // TL-18: a scenario whose pre-execute asks runs with an approver, so the ask waits for its approval input
    // (a walk with no approver keeps it off: its ask is a denial)
    ...(!generated.noApprover && generated.script.some((i) => i.type === 'tool-pre' && i.action === 'return' && i.value.kind === 'ask')
      ? { approvals: true }
      : {}),
    // CP-*: the walk's compaction policy, with the summariser answered by `summary` inputs
    ...(generated.compaction ? { compaction: generated.compaction } : {}),
  }
  // a round trip through JSON: what a file holds, without undefined fields or shared references
  const scenario: unknown = JSON.parse(
    JSON.stringify({
      formatVersion: FORMAT_VERSION,
      id: generated.id,
      description: generated.description,
      setup,
      inputs: generated.script,
      expected: generated.trace.map((event) => expectedEvent(event, event.seq >= seedLength)),
      invariants: generated.invariants,
    }),
  )
  return options.validate === false ? (scenario as Scenario) : ScenarioSchema.parse(scenario)
}

/** A harness state (an unseeded agent walk brought to rest) as a portable scenario. Why: property tests replay random walks on a driver. */
export function scenarioOfState(id: string, state: HarnessState): Scenario {
  const broken = state.inputs.some((i) => i.type === 'fail-next' && ['step/end', 'turn/end', 'compaction/completed'].includes(i.eventType))
  return toPortable({
    id,
    machine: 'agent',
    description: id,
    inputs: state.inputs,
    script: state.script,
    trace: traceOf(state.trace),
    invariants: broken ? ['session-except-boundaries'] : ['session'],
    covers: [],
    replayable: true,
  })
}

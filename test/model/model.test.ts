// The machines generate the tests: every machine is walked, every path's
// trace is checked, and every agent path, exported as a portable scenario,
// is replayed on the real runtime through the reference driver, which must
// log exactly the expected log; a broken variant of the machine fails.
import { describe, expect, it, beforeAll } from 'vitest'
import { agentMachine } from '../../src/machines/index.js'
import {
  buildSuite,
  compareLog,
  coverageOf,
  createAgentchartDriver,
  explore,
  formatCoverage,
  formatResult,
  runOnAgentchart,
  runSuite,
  selectScenarios,
  toPortable,
  walks,
  type Exploration,
} from '../../src/testing/index.js'
import { createIndependentDriver } from '../conformance/independent/driver.js'

const explorations = new Map<string, Exploration>()

beforeAll(() => {
  // one walk serves every test below; it also checks that every snapshot and effect it reaches is JSON data
  for (const walk of walks()) explorations.set(walk.name, explore(walk.name, { ...walk, checkData: true }))
  console.log(`transition coverage of the generated paths:\n${formatCoverage([...explorations.values()].map(coverageOf))}`)
}, 600_000)

/** The agent with one deliberate bug, made with one line: a rejected proposal opens a step anyway. */
const stepAfterReject = agentMachine.provide({ guards: { isRejected: () => false } })

describe('model-based tests', () => {
  it('every machine has every transition covered, or a listed reason why it cannot be', () => {
    expect([...explorations.keys()]).toEqual(['agent', 'turn', 'step', 'attempt', 'toolBatch'])
    for (const exploration of explorations.values()) {
      const report = coverageOf(exploration)
      expect(
        report.missing.filter((m) => m.reason === null),
        `${report.machine} uncovered transitions`,
      ).toEqual([])
      expect(report.covered).toBeGreaterThan(report.total * 0.9)
    }
  })

  it('every generated trace satisfies the session and lifecycle invariants', () => {
    for (const exploration of explorations.values()) {
      expect(exploration.scenarios.length).toBeGreaterThan(50)
      expect(exploration.violations, exploration.machine).toEqual([])
    }
  })

  it('every snapshot and effect the walk reaches is JSON data: it comes back unchanged from JSON.stringify/parse', () => {
    for (const exploration of explorations.values()) {
      const data = exploration.data!
      expect(data.divergent, exploration.machine).toEqual([])
      expect(data.snapshots).toBeGreaterThan(exploration.states)
      expect(data.effects).toBeGreaterThan(exploration.states)
    }
  })

  it('every agent path, exported as a portable scenario, replayed on the real runtime logs exactly the expected log', async () => {
    const scenarios = explorations.get('agent')!.scenarios.filter((s) => s.replayable)
    const failures: string[] = []
    for (const generated of scenarios) {
      const scenario = toPortable(generated, { validate: false }) // generate and readSuite validate what ships
      // the comparison alone: the invariants were checked on every trace above, and a matching log is that trace
      const divergence = compareLog(scenario.expected, await runOnAgentchart(scenario))
      if (divergence) failures.push(formatResult({ id: scenario.id, description: scenario.description, passed: false, divergence }))
      if (failures.length > 5) break
    }
    expect(failures).toEqual([])
    expect(scenarios.length).toBeGreaterThan(1000)
  }, 240_000)

  it('the walks that dispose while a call waits for approval park it alike on the real runtime and on the independent loop', async () => {
    // kept out of the suite (no scenario of this format disposes in the wait), so replayed here on both
    const disposing = explorations.get('agent')!.scenarios.filter((s) => !s.replayable && !s.seed && s.inputs.some((i) => i.type === 'dispose'))
    const parked = disposing.filter((s) => s.covers.includes('agent.running##0'))
    expect(parked.length).toBeGreaterThan(2)
    // a parked log ends with the question pending: after it, no answer and no turn/end
    for (const s of parked) {
      const asked = s.trace.findLastIndex((e) => e.type === 'tool/approval-request')
      expect(asked, s.id).toBeGreaterThan(0)
      expect(
        s.trace.slice(asked).filter((e) => e.type === 'tool/approval-answer' || e.type === 'turn/end'),
        s.id,
      ).toEqual([])
    }
    // some park after an earlier call finished, some discard queued input as they park
    expect(parked.some((s) => s.trace.at(-1)?.type === 'tool/result')).toBe(true)
    expect(parked.some((s) => s.trace.at(-1)?.type === 'agent/inbox/spliced')).toBe(true)
    const failures: string[] = []
    for (const generated of disposing) {
      const scenario = toPortable(generated, { validate: false })
      for (const run of [runOnAgentchart, createIndependentDriver().run]) {
        const divergence = compareLog(scenario.expected, (await run(scenario)) as Parameters<typeof compareLog>[1])
        if (divergence) failures.push(formatResult({ id: scenario.id, description: scenario.description, passed: false, divergence }))
      }
    }
    expect(failures).toEqual([])
  }, 60_000)

  it('the selected suite keeps every transition the walk covered and has at least 150 scenarios', () => {
    const replayable = explorations.get('agent')!.scenarios.filter((s) => s.replayable)
    const suite = selectScenarios(replayable, 240)
    expect(suite.length).toBeGreaterThanOrEqual(150)
    const covered = new Set(suite.flatMap((s) => s.covers))
    expect(covered.size).toBe(new Set(replayable.flatMap((s) => s.covers)).size)
  })

  it('the generated suite can fail: a turn that opens a step after a reject is caught', async () => {
    const { suite } = buildSuite(240, explorations.get('agent')!)
    const broken = createAgentchartDriver({ machine: stepAfterReject })
    const report = await runSuite(suite, broken)
    const failed = report.results.filter((r) => !r.passed)
    // the failing scenarios are exactly those where a proposal was rejected
    const rejecting = suite.scenarios.filter((s) => s.inputs.some((i) => i.type === 'pre-step' && i.action === 'return' && i.value.kind === 'reject'))
    expect(failed.map((f) => f.id)).toEqual(rejecting.map((s) => s.id))
    expect(failed.some((f) => f.divergence?.actual?.type === 'step/start')).toBe(true)
  }, 120_000)
})

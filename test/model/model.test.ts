// The machines generate the tests: every machine is walked, every path's
// trace is checked, replayed on the real runtime, and turned into a portable
// conformance suite that agentchart passes and a broken variant fails.
import { mkdtemp, readFile, readdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildAgentMachine, turnState } from '../../src/machines/index.js'
import {
  coverageOf,
  createAgentchartDriver,
  explore,
  formatCoverage,
  generateSuite,
  judge,
  readSuite,
  runOnAgentchart,
  runSuite,
  selectScenarios,
  walks,
  type Exploration,
} from '../../src/testing/index.js'

const explorations = new Map<string, Exploration>()

beforeAll(() => {
  for (const walk of walks()) explorations.set(walk.name, explore(walk.name, walk))
  console.log(`transition coverage of the generated paths:\n${formatCoverage([...explorations.values()].map(coverageOf))}`)
}, 240_000)

/** The turn with one deliberate bug: a rejected proposal opens a step anyway. */
function stepAfterReject(): typeof turnState {
  const proposing = turnState.states.proposing
  const onDone = proposing.on['hook.done'] as Array<Record<string, unknown>>
  const rejects = (t: Record<string, unknown>) => /reject/.test(String(t.guard))
  expect(onDone.filter(rejects)).toHaveLength(1)
  const broken = onDone.map((t) => (rejects(t) ? { ...t, target: 'stepping', actions: [] } : t))
  return { ...turnState, states: { ...turnState.states, proposing: { ...proposing, on: { ...proposing.on, 'hook.done': broken } } } } as typeof turnState
}

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

  it('every agent path replayed on the real runtime logs exactly the trace the model predicts', async () => {
    const scenarios = explorations.get('agent')!.scenarios.filter((s) => s.replayable)
    const failures: string[] = []
    for (const scenario of scenarios) {
      const events = await runOnAgentchart(scenario)
      const verdict = judge(scenario, events)
      if (verdict) failures.push(`${scenario.id} (${scenario.description}): ${verdict}`)
      if (failures.length > 5) break
    }
    expect(failures).toEqual([])
    expect(scenarios.length).toBeGreaterThan(1000)
  }, 240_000)

  it('the selected suite keeps every transition the walk covered and has at least 150 scenarios', () => {
    const replayable = explorations.get('agent')!.scenarios.filter((s) => s.replayable)
    const suite = selectScenarios(replayable, 240)
    expect(suite.length).toBeGreaterThanOrEqual(150)
    const byId = new Map(replayable.map((s) => [s.id, s]))
    const covered = new Set(suite.flatMap((s) => byId.get(s.id)!.covers))
    expect(covered.size).toBe(new Set(replayable.flatMap((s) => s.covers)).size)
  })

  it('the generated suite can fail: a turn that opens a step after a reject is caught', async () => {
    const suite = selectScenarios(
      explorations.get('agent')!.scenarios.filter((s) => s.replayable),
      240,
    )
    const broken = createAgentchartDriver({ machine: buildAgentMachine(stepAfterReject()) })
    const results = await runSuite({ format: 'agentchart-conformance/1', generatedBy: 'test', scenarios: suite }, broken)
    const failed = results.filter((r) => !r.passed)
    expect(failed.length).toBeGreaterThan(0)
    // the failing scenarios are exactly those where a proposal was rejected
    const rejecting = new Set(suite.filter((s) => s.inputs.some((i) => i.type === 'pre-step' && i.decision === 'reject')).map((s) => s.id))
    for (const f of failed) expect(rejecting.has(f.id), `${f.id}: ${f.message}`).toBe(true)
    expect(failed.some((f) => /step\/start/.test(f.message ?? ''))).toBe(true)
  }, 120_000)

  it('conformance generate writes a suite that agentchart passes when read back from disk', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agentchart-suite-'))
    const { scenarios } = await generateSuite(dir)
    expect(scenarios).toBeGreaterThanOrEqual(150)
    expect((await readdir(join(dir, 'scenarios'))).length).toBe(scenarios)
    const schema = JSON.parse(await readFile(join(dir, 'scenario.schema.json'), 'utf8'))
    expect(schema.type).toBe('object')
    const suite = await readSuite(dir)
    const results = await runSuite(suite, createAgentchartDriver())
    expect(results.filter((r) => !r.passed)).toEqual([])
    // the committed JSON Schema is the one the zod schema gives
    expect(JSON.parse(await readFile('docs/conformance/scenario.schema.json', 'utf8'))).toEqual(schema)
    // expected traces carry identifying fields only: no times, no seqs
    for (const entry of suite.scenarios.flatMap((s) => s.expected)) expect(Object.keys(entry).sort()).toEqual(['fields', 'type'])
  }, 240_000)
})

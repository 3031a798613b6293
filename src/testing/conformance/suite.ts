// Build the portable suite from the agent machine's walk: a greedy cover of
// every transition the walk took, then evenly spread scenarios up to a size.
import { z } from 'zod/v4'
import { coverageOf, type CoverageReport } from '../model/coverage.js'
import { explore } from '../model/explore.js'
import { walks } from '../model/profiles.js'
import { ScenarioSchema, SuiteSchema, type Scenario, type Suite } from '../model/scenario.js'

export const SUITE_FORMAT = 'agentchart-conformance/1' as const

/** Pick scenarios: first a greedy transition cover, then an even spread of the rest up to `size`. */
export function selectScenarios(scenarios: ReadonlyArray<Scenario & { covers?: string[]; replayable?: boolean }>, size: number): Scenario[] {
  const chosen = new Set<number>()
  const covered = new Set<string>()
  for (;;) {
    let best = -1
    let gain = 0
    scenarios.forEach((s, i) => {
      if (chosen.has(i)) return
      const g = (s.covers ?? []).filter((t) => !covered.has(t)).length
      if (g > gain) {
        gain = g
        best = i
      }
    })
    if (best < 0) break
    chosen.add(best)
    scenarios[best].covers!.forEach((t) => covered.add(t))
  }
  const rest = scenarios.map((_, i) => i).filter((i) => !chosen.has(i))
  const want = Math.max(0, size - chosen.size)
  const stride = rest.length / Math.max(1, want)
  for (let k = 0; k < want && k * stride < rest.length; k++) chosen.add(rest[Math.floor(k * stride)])
  return [...chosen]
    .sort((a, b) => a - b)
    .map((i) => {
      const { covers: _covers, replayable: _replayable, ...scenario } = scenarios[i]
      return ScenarioSchema.parse(scenario)
    })
}

/** Walk the agent machine and build a suite of `size` scenarios (at least the full cover). */
export function buildSuite(size = 240): { suite: Suite; coverage: CoverageReport } {
  const agent = walks().find((w) => w.name === 'agent')!
  const exploration = explore(agent.name, agent)
  const replayable = exploration.scenarios.filter((s) => s.replayable)
  const scenarios = selectScenarios(replayable, size)
  const suite: Suite = { format: SUITE_FORMAT, generatedBy: 'agentchart conformance generate', scenarios }
  // what these scenarios take, not the whole walk: armed-before-start walks are not exported
  const chosen = new Set(scenarios.map((s) => s.id))
  const covered = new Set(replayable.filter((s) => chosen.has(s.id)).flatMap((s) => s.covers))
  const report = coverageOf({ ...exploration, covered })
  const why = 'taken only by walks armed before the agent exists, which a driver cannot replay'
  return { suite, coverage: { ...report, missing: report.missing.map((m) => ({ ...m, reason: m.reason ?? why })) } }
}

/** The JSON Schema of one scenario file, for implementations in other languages. */
export function scenarioJsonSchema(): unknown {
  return z.toJSONSchema(ScenarioSchema)
}

export { SuiteSchema }

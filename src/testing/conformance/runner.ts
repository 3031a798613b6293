// Run a conformance suite against a driver: each scenario's log must match
// its expected trace event by event and satisfy the invariants it names.
import { checkSessionInvariants } from '../invariants.js'
import { checkLifecycleInvariants } from '../model/lifecycle-invariants.js'
import { identify, type Scenario, type Suite } from '../model/scenario.js'
import type { ConformanceDriver } from './driver.js'

export interface ScenarioResult {
  id: string
  passed: boolean
  /** The first divergence or violated invariant, for a failing scenario. */
  message?: string
}

/** Rules a scenario with a refused step/end or turn/end append is excused from. */
const BOUNDARY_RULES = new Set(['balanced', 'turn-enclosure', 'event-enclosure'])

const show = (entry: unknown) => (entry === undefined ? '(nothing)' : JSON.stringify(entry))

/** Compare one log with its scenario; returns why it fails, or null. */
export function judge(scenario: Scenario, events: ReadonlyArray<{ type: string; data: unknown }>): string | null {
  const actual = events.map(identify)
  const n = Math.max(actual.length, scenario.expected.length)
  for (let i = 0; i < n; i++) {
    if (JSON.stringify(actual[i]) !== JSON.stringify(scenario.expected[i])) {
      return `event #${i}: expected ${show(scenario.expected[i])}, got ${show(actual[i])}`
    }
  }
  const withSeq = events.map((e, seq) => ({ seq, time: 0, ...e }))
  const named = new Set(scenario.invariants)
  const broken = [
    ...checkSessionInvariants(withSeq as never).filter((v) => named.has('session') || (named.has('session-except-boundaries') && !BOUNDARY_RULES.has(v.rule))),
    ...checkLifecycleInvariants(withSeq).filter((v) => named.has(v.rule)),
  ]
  if (broken.length > 0) return `invariant ${broken[0].rule} broken at seq ${broken[0].seq}: ${broken[0].message}`
  return null
}

/** Run every scenario in order; `report` hears each result as it comes. */
export async function runSuite(suite: Suite, driver: ConformanceDriver, report?: (result: ScenarioResult) => void): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = []
  for (const scenario of suite.scenarios) {
    let result: ScenarioResult
    try {
      const message = judge(scenario, await driver.run(scenario))
      result = message === null ? { id: scenario.id, passed: true } : { id: scenario.id, passed: false, message }
    } catch (error) {
      result = { id: scenario.id, passed: false, message: `driver threw: ${(error as Error)?.message ?? String(error)}` }
    }
    results.push(result)
    report?.(result)
  }
  return results
}

// The mutation harness: the suite run against each mutant of the independent
// loop (./independent/mutants.ts). A mutant is caught by the first scenario
// that fails on it, so a caught mutant costs a few scenarios and only a
// survivor costs a whole pass. The order cannot change whether a mutant is
// caught, only which scenario is named and how many run before it: the suite is
// tried from its end (the forks and the walks made for particular rules come
// last and catch most mutants), with each catch moved to the front.
import { judge, type Scenario, type ScenarioResult } from '../../src/testing/index.js'
import { runIndependent } from './independent/driver.js'
import { MUTANTS, type Mutant, type Mutation } from './independent/mutants.js'

export interface MutantResult {
  mutant: Mutant
  /** The first scenario that failed on it, and how; absent for a survivor. */
  caughtBy?: { id: string; how: string }
}

export interface MutationReport {
  results: MutantResult[]
  caught: number
  /** The mutants counted: every one but the equivalent. */
  total: number
  survivors: Mutant[]
  equivalent: Mutant[]
}

/** How a failing result failed, in a few words (a driver error is named: a crashing mutant is not a real catch). */
function how(result: ScenarioResult): string {
  if (result.error !== undefined) return `driver failed: ${result.error}`
  if (result.invariant) return `invariant ${result.invariant.rule}`
  return `event #${result.divergence!.index}${result.divergence!.path ? ` at ${result.divergence!.path}` : ''}: ${result.divergence!.reason}`
}

/** The first scenario of `scenarios` that fails on the loop with `mutation` planted, or null. */
export async function firstFailure(scenarios: readonly Scenario[], mutation: Mutation | undefined): Promise<{ id: string; how: string } | null> {
  for (const scenario of scenarios) {
    let result: ScenarioResult
    try {
      result = judge(scenario, await runIndependent(scenario, mutation))
    } catch (error) {
      result = { id: scenario.id, description: scenario.description, passed: false, error: error instanceof Error ? error.message : String(error) }
    }
    if (!result.passed) return { id: scenario.id, how: how(result) }
  }
  return null
}

/** Run every mutant (or those named) against the scenarios. */
export async function runMutants(
  scenarios: readonly Scenario[],
  options: { only?: readonly string[]; onResult?: (result: MutantResult) => void } = {},
): Promise<MutationReport> {
  // a mutant is caught only against a loop that passes: the unmutated loop must pass every scenario first
  const baseline = await firstFailure(scenarios, undefined)
  if (baseline) throw new Error(`the unmutated independent loop fails ${baseline.id} (${baseline.how}): no mutant can be judged`)
  const results: MutantResult[] = []
  const chosen = (MUTANTS as readonly Mutant[]).filter((m) => !options.only || options.only.includes(m.name))
  // every scenario: the latest catches first, then the rest from the suite's end
  let order = [...scenarios].reverse()
  for (const mutant of chosen) {
    if (mutant.equivalent) continue
    const caughtBy = await firstFailure(order, mutant.name as Mutation)
    if (caughtBy) {
      const at = order.findIndex((s) => s.id === caughtBy.id)
      order = [order[at], ...order.slice(0, at), ...order.slice(at + 1)]
    }
    const result: MutantResult = caughtBy ? { mutant, caughtBy } : { mutant }
    results.push(result)
    options.onResult?.(result)
  }
  const survivors = results.filter((r) => !r.caughtBy).map((r) => r.mutant)
  return { results, caught: results.length - survivors.length, total: results.length, survivors, equivalent: chosen.filter((m) => m.equivalent) }
}

/** The report's lines: each survivor, each equivalent mutant with its argument, then `N of M mutants caught`. */
export function formatMutationReport(report: MutationReport, verbose = false): string[] {
  const line = (m: Mutant) => `${m.name} (${m.rule}; ${m.ids.join(', ')}): ${m.deviation}`
  return [
    ...(verbose ? report.results.filter((r) => r.caughtBy).map((r) => `caught   ${r.mutant.name} by ${r.caughtBy!.id}: ${r.caughtBy!.how}`) : []),
    ...report.survivors.map((m) => `SURVIVED ${line(m)}`),
    ...report.equivalent.map((m) => `equivalent ${line(m)}: ${m.equivalent}`),
    `${report.caught} of ${report.total} mutants caught`,
  ]
}

// Run a conformance suite against a driver and say, for each failing
// scenario, where its log first parts ways with the expected one.
import { asJson, brokenInvariant, compareLog, type Divergence, type LoggedEvent } from './compare.js'
import type { ConformanceDriver } from './driver.js'
import type { Scenario, Suite } from './format.js'
import { readSuite } from './files.js'

export interface ScenarioResult {
  id: string
  description: string
  passed: boolean
  /** The first event that differs from the expected log. */
  divergence?: Divergence
  /** The first broken invariant the scenario names (checked only when the log matches). */
  invariant?: { rule: string; seq: number; message: string }
  /** The driver could not run the scenario (it threw). */
  error?: string
}

export interface SuiteReport {
  driver: string
  passed: number
  failed: number
  results: ScenarioResult[]
}

export interface RunOptions {
  /** Hears each result as it comes. */
  onResult?: (result: ScenarioResult) => void
  /** Run only the scenarios this accepts. */
  filter?: (scenario: Scenario) => boolean
}

/** Judge one log against its scenario: the comparison first, then the invariants it names. */
export function judge(scenario: Scenario, events: ReadonlyArray<unknown>): ScenarioResult {
  const base = { id: scenario.id, description: scenario.description }
  const log: LoggedEvent[] = asJson(events)
  const divergence = compareLog(scenario.expected, log)
  if (divergence) return { ...base, passed: false, divergence }
  const invariant = brokenInvariant(scenario, log)
  if (invariant) return { ...base, passed: false, invariant }
  return { ...base, passed: true }
}

/**
 * Run a suite (a folder written by `conformance generate`, or scenarios in memory) through a driver, one scenario
 * at a time. Why: the whole conformance check in one call; `formatResult` prints each failure's first difference.
 */
export async function runSuite(source: string | Suite | readonly Scenario[], driver: ConformanceDriver, options: RunOptions = {}): Promise<SuiteReport> {
  const scenarios: readonly Scenario[] = typeof source === 'string' ? (await readSuite(source)).scenarios : 'scenarios' in source ? source.scenarios : source
  const results: ScenarioResult[] = []
  for (const scenario of scenarios) {
    if (options.filter && !options.filter(scenario)) continue
    let result: ScenarioResult
    try {
      result = judge(scenario, await driver.run(scenario))
    } catch (error) {
      result = { id: scenario.id, description: scenario.description, passed: false, error: error instanceof Error ? error.message : String(error) }
    }
    results.push(result)
    options.onResult?.(result)
  }
  const passed = results.filter((r) => r.passed).length
  return { driver: driver.name, passed, failed: results.length - passed, results }
}

const show = (value: unknown) => (value === undefined ? '(no event)' : JSON.stringify(value))

/** A failing result as a few readable lines: the scenario, then its first difference with expected and actual event. */
export function formatResult(result: ScenarioResult): string {
  if (result.passed) return `PASS ${result.id}`
  const head = `FAIL ${result.id} (${result.description})`
  if (result.error !== undefined) return `${head}\n  the driver failed: ${result.error}`
  if (result.invariant) return `${head}\n  invariant ${result.invariant.rule} broken at seq ${result.invariant.seq}: ${result.invariant.message}`
  const d = result.divergence!
  return [
    head,
    `  first difference: event #${d.index}${d.path ? ` at ${d.path}` : ''}: ${d.reason}`,
    `  expected: ${show(d.expected)}`,
    `  actual:   ${show(d.actual)}`,
  ].join('\n')
}

/** One block per failing scenario, then the closing count. */
export function formatReport(report: SuiteReport): string {
  const failures = report.results.filter((r) => !r.passed).map(formatResult)
  return [...failures, `${report.passed} passed, ${report.failed} failed (driver: ${report.driver})`].join('\n')
}

// Run a conformance suite against a driver and say, for each failing
// scenario, where its log first parts ways with the expected one.
import { asJson, brokenInvariant, compareLog, type Divergence, type LoggedEvent } from './compare.js'
import type { ConformanceDriver } from './driver.js'
import type { ExpectedEvent, Scenario, Suite } from './format.js'
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
  /** The log the driver had when it failed, if its error carried one (an array under `log`). */
  partialLog?: LoggedEvent[]
  /** Around a divergence: the events just before and after it on both sides, from position `from`. */
  context?: { from: number; expected: ExpectedEvent[]; actual: LoggedEvent[] }
}

/** How many events before a divergence (and after it) a result keeps for context. */
const CONTEXT = 3

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
  if (divergence) {
    const from = Math.max(0, divergence.index - CONTEXT)
    const context = { from, expected: scenario.expected.slice(from, divergence.index + CONTEXT), actual: log.slice(from, divergence.index + CONTEXT) }
    return { ...base, passed: false, divergence, context }
  }
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
      // a driver that hands its log over with the error (docs/conformance.md 9) gets it shown
      const log = (error as { log?: unknown } | null)?.log
      if (Array.isArray(log)) result.partialLog = asJson(log)
    }
    results.push(result)
    options.onResult?.(result)
  }
  const passed = results.filter((r) => r.passed).length
  return { driver: driver.name, passed, failed: results.length - passed, results }
}

const show = (value: unknown) => (value === undefined ? '(no event)' : JSON.stringify(value))
const brief = (event: { seq?: unknown; type?: unknown; data?: unknown } | undefined) =>
  event === undefined ? '(none)' : `#${String(event.seq)} ${String(event.type)} ${JSON.stringify(event.data)}`

/** A failing result as a few readable lines: the scenario, then its first difference with expected and actual event. */
export function formatResult(result: ScenarioResult): string {
  if (result.passed) return `PASS ${result.id}`
  const head = `FAIL ${result.id} (${result.description})`
  if (result.error !== undefined) {
    const log = result.partialLog
    if (log === undefined) return `${head}\n  the driver failed: ${result.error}`
    const tail = log.slice(-2 * CONTEXT)
    const said = log.length > tail.length ? `the last ${tail.length} of its ${log.length} events` : `its ${log.length} event${log.length === 1 ? '' : 's'}`
    return [`${head}`, `  the driver failed: ${result.error}`, `  the log it produced (${said}):`, ...tail.map((e) => `    ${brief(e)}`)].join('\n')
  }
  if (result.invariant) return `${head}\n  invariant ${result.invariant.rule} broken at seq ${result.invariant.seq}: ${result.invariant.message}`
  const d = result.divergence!
  const lines = [
    head,
    `  first difference: event #${d.index}${d.path ? ` at ${d.path}` : ''}: ${d.reason}`,
    `  expected: ${show(d.expected)}`,
    `  actual:   ${show(d.actual)}`,
  ]
  const c = result.context
  if (c) {
    // a few events either side, so the difference reads in its place
    const side = (events: ReadonlyArray<{ seq?: unknown; type?: unknown; data?: unknown }>) =>
      events.map((e, k) => `    ${c.from + k === d.index ? '>' : ' '} ${brief(e)}`)
    lines.push('  expected around it:', ...side(c.expected), '  actual around it:', ...side(c.actual))
  }
  return lines.join('\n')
}

/** One block per failing scenario, then the closing count. */
export function formatReport(report: SuiteReport): string {
  const failures = report.results.filter((r) => !r.passed).map(formatResult)
  return [...failures, `${report.passed} passed, ${report.failed} failed (driver: ${report.driver})`].join('\n')
}

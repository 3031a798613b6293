// File side of the conformance suite for the CLI: write a suite to a folder,
// and run a folder against a driver module.
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { ConformanceDriver } from './driver.js'
import { readSuite, type Manifest } from './files.js'
import { FORMAT_VERSION, SUITE_FORMAT, scenarioJsonSchema } from './format.js'
import { agentchartDriver } from './reference-driver.js'
import { formatResult, runSuite, type SuiteReport } from './runner.js'
import { buildSuite } from './suite.js'
import type { Exploration } from '../model/explore.js'

/**
 * Write `manifest.json`, `scenario.schema.json` and one `scenarios/<id>.json` per scenario.
 * Why: the portable suite other implementations run; `exploration` reuses a walk already made.
 */
export async function generateSuite(
  outDir: string,
  options: { size?: number; exploration?: Exploration } = {},
): Promise<{ scenarios: number; coverage: string; manifest: Manifest }> {
  const { suite, coverage } = buildSuite(options.size, options.exploration)
  const uncovered = coverage.missing.filter((m) => m.reason === null)
  if (uncovered.length > 0) {
    throw new Error(
      `the suite leaves ${uncovered.length} transition(s) uncovered with no reason listed in UNREACHABLE: ${uncovered.map((m) => m.key).join(', ')}`,
    )
  }
  await mkdir(join(outDir, 'scenarios'), { recursive: true })
  for (const scenario of suite.scenarios) {
    await writeFile(join(outDir, 'scenarios', `${scenario.id}.json`), `${JSON.stringify(scenario, null, 2)}\n`)
  }
  const manifest: Manifest = {
    format: SUITE_FORMAT,
    formatVersion: FORMAT_VERSION,
    generatedBy: suite.generatedBy,
    scenarios: suite.scenarios.map((s) => s.id),
    coverage: {
      machine: coverage.machine,
      transitions: coverage.total,
      covered: coverage.covered,
      unreachable: coverage.missing.map((m) => ({ key: m.key, reason: m.reason! })),
    },
  }
  await writeFile(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  await writeFile(join(outDir, 'scenario.schema.json'), await committedSchema())
  return { scenarios: suite.scenarios.length, coverage: `${coverage.covered}/${coverage.total} transitions of the agent machine`, manifest }
}

/**
 * The schema file committed in docs/conformance/ (shipped in the package), copied byte for byte: what a suite
 * carries must not depend on the zod version the consumer installed. Recomputed only when the docs are absent.
 */
async function committedSchema(): Promise<string> {
  try {
    return await readFile(new URL('../../../docs/conformance/scenario.schema.json', import.meta.url), 'utf8')
  } catch {
    return `${JSON.stringify(scenarioJsonSchema(), null, 2)}\n`
  }
}

/** Load a driver module: its default export or a named `driver`, a ConformanceDriver; agentchart's own when none is given. */
export async function loadDriver(module?: string): Promise<ConformanceDriver> {
  if (!module) return agentchartDriver
  const url = isAbsolute(module) || module.startsWith('.') ? pathToFileURL(resolve(module)).href : module
  const loaded = (await import(url)) as { default?: ConformanceDriver; driver?: ConformanceDriver }
  const driver = loaded.default ?? loaded.driver
  if (!driver || typeof driver.run !== 'function' || typeof driver.name !== 'string') {
    throw new Error(`${module} exports no conformance driver (a default export or \`driver\` with name and run(scenario))`)
  }
  return driver
}

/**
 * Run a suite folder; one block per failing scenario with its first difference. `filter` (comma-separated) runs only
 * the scenarios whose id contains one of its parts. Why: `conformance run`, and `--filter` for one scenario at a time.
 */
export async function runSuiteFromDir(
  dir: string,
  driverModule?: string,
  options: { filter?: string } = {},
): Promise<{ passed: number; failed: number; lines: string[]; report: SuiteReport }> {
  const driver = await loadDriver(driverModule)
  const parts = options.filter
    ?.split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')
  const suite = await readSuite(dir)
  const chosen = parts ? suite.scenarios.filter((s) => parts.some((p) => s.id.includes(p))) : suite.scenarios
  if (parts && chosen.length === 0) throw new Error(`--filter ${options.filter}: no scenario of ${dir} has an id containing it`)
  const report = await runSuite(chosen, driver)
  const lines = report.results.filter((r) => !r.passed).map(formatResult)
  return { passed: report.passed, failed: report.failed, lines, report }
}

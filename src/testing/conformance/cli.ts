// File side of the conformance suite: write a suite to a folder, read it back
// (validated at the boundary) and run it against a driver module.
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import { isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ScenarioSchema, type Scenario, type Suite } from '../model/scenario.js'
import { agentchartDriver, type ConformanceDriver } from './driver.js'
import { runSuite } from './runner.js'
import { buildSuite, scenarioJsonSchema, SUITE_FORMAT } from './suite.js'

/** Write `manifest.json`, `scenario.schema.json` and one `scenarios/<id>.json` per scenario. */
export async function generateSuite(outDir: string, size?: number): Promise<{ scenarios: number; coverage: string }> {
  const { suite, coverage } = buildSuite(size)
  await mkdir(join(outDir, 'scenarios'), { recursive: true })
  for (const scenario of suite.scenarios) {
    await writeFile(join(outDir, 'scenarios', `${scenario.id}.json`), `${JSON.stringify(scenario, null, 2)}\n`)
  }
  const manifest = {
    format: SUITE_FORMAT,
    generatedBy: suite.generatedBy,
    scenarios: suite.scenarios.map((s) => s.id),
    coverage: { machine: coverage.machine, transitions: coverage.total, covered: coverage.covered, unreachable: coverage.missing },
  }
  await writeFile(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  await writeFile(join(outDir, 'scenario.schema.json'), `${JSON.stringify(scenarioJsonSchema(), null, 2)}\n`)
  return { scenarios: suite.scenarios.length, coverage: `${coverage.covered}/${coverage.total} transitions of the agent machine` }
}

/** Read a suite folder; every scenario file is checked against the schema, errors name the file and path. */
export async function readSuite(dir: string): Promise<Suite> {
  const files = (await readdir(join(dir, 'scenarios'))).filter((f) => f.endsWith('.json')).sort()
  const scenarios: Scenario[] = []
  for (const file of files) {
    const parsed = ScenarioSchema.safeParse(JSON.parse(await readFile(join(dir, 'scenarios', file), 'utf8')))
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      throw new Error(`${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`)
    }
    scenarios.push(parsed.data)
  }
  return { format: SUITE_FORMAT, generatedBy: 'read from disk', scenarios }
}

/** Load a driver module: its default export or a named `driver`, a ConformanceDriver. */
export async function loadDriver(module?: string): Promise<ConformanceDriver> {
  if (!module) return agentchartDriver
  const url = isAbsolute(module) || module.startsWith('.') ? pathToFileURL(resolve(module)).href : module
  const loaded = await import(url)
  const driver = (loaded.default ?? loaded.driver) as ConformanceDriver | undefined
  if (!driver || typeof driver.run !== 'function')
    throw new Error(`${module} exports no conformance driver (a default export or \`driver\` with run(scenario))`)
  return driver
}

/** Run a suite folder; one line per failing scenario with its first divergence. */
export async function runSuiteFromDir(dir: string, driverModule?: string): Promise<{ passed: number; failed: number; lines: string[] }> {
  const suite = await readSuite(dir)
  const driver = await loadDriver(driverModule)
  const results = await runSuite(suite, driver)
  const lines = results.filter((r) => !r.passed).map((r) => `FAIL ${r.id}: ${r.message}`)
  const failed = results.length - results.filter((r) => r.passed).length
  return { passed: results.length - failed, failed, lines }
}

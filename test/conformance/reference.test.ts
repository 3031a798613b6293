// The generated suite as a user meets it: a folder on disk, read back and run
// through agentchart's reference driver and through the CLI; its manifest
// agrees with the code about coverage, and its schema is the committed one.
import { copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/main.js'
import { agentMachine } from '../../src/machines/index.js'
import {
  agentchartDriver,
  allTransitions,
  FORMAT_VERSION,
  readSuite,
  runSuite,
  ScenarioSchema,
  scenarioJsonSchema,
  SUITE_FORMAT,
  UNREACHABLE,
  NOT_PORTABLE,
  type Manifest,
  type Suite,
} from '../../src/testing/index.js'
import { sharedSuite } from './shared-suite.js'

let dir: string
let suite: Suite

beforeAll(async () => {
  dir = await sharedSuite()
  suite = await readSuite(dir)
}, 240_000)

describe('the generated conformance suite', () => {
  it('passes, scenario by scenario, on the reference driver (agentchart itself)', async () => {
    const report = await runSuite(dir, agentchartDriver)
    expect(report.results.filter((r) => !r.passed)).toEqual([])
    expect(report.passed).toBe(suite.scenarios.length)
    expect(report.passed).toBeGreaterThanOrEqual(200)
  }, 120_000)

  it('runs from the command line, with the default driver and with a driver module', async () => {
    // a dozen scenarios copied into a folder of their own: the CLI's plumbing, not the whole suite again
    const small = await mkdtemp(join(tmpdir(), 'agentchart-suite-'))
    const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest
    const ids = manifest.scenarios.filter((_, i) => i % 20 === 0)
    await mkdir(join(small, 'scenarios'))
    for (const id of ids) await copyFile(join(dir, 'scenarios', `${id}.json`), join(small, 'scenarios', `${id}.json`))
    await writeFile(join(small, 'manifest.json'), JSON.stringify({ ...manifest, scenarios: ids }))
    const out: string[] = []
    const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t) }
    expect(await runCli(['conformance', 'run', small], io)).toBe(0)
    expect(out.at(-1)).toBe(`${ids.length} passed, 0 failed`)
    out.length = 0
    expect(await runCli(['conformance', 'run', small, '--driver', join(import.meta.dirname, 'independent', 'driver.ts')], io)).toBe(0)
    expect(out.at(-1)).toBe(`${ids.length} passed, 0 failed`)
    // a failing driver gets one block per scenario with its first difference
    out.length = 0
    await writeFile(join(small, 'empty-driver.mjs'), 'export default { name: "empty", run: async () => [] }\n')
    expect(await runCli(['conformance', 'run', small, '--driver', join(small, 'empty-driver.mjs')], io)).toBe(1)
    const logged = suite.scenarios.filter((sc) => ids.includes(sc.id) && sc.expected.length > 0).length
    expect(out.at(-1)).toBe(`${ids.length - logged} passed, ${logged} failed`)
    expect(out[0]).toMatch(
      /^FAIL agent-\d+ \(.*\)\n {2}first difference: event #0: the log ends here; expected agent\/inbox\/spliced\n {2}expected: \{"seq":0,.*\n {2}actual: {3}\(no event\)\n {2}expected around it:\n/,
    )
  }, 120_000)

  it("has a manifest whose coverage and unreachable list agree with the code's UNREACHABLE list", async () => {
    const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest
    expect(manifest.format).toBe(SUITE_FORMAT)
    expect(manifest.formatVersion).toBe(FORMAT_VERSION)
    expect(manifest.scenarios).toEqual(suite.scenarios.map((s) => s.id))
    const transitions = [...allTransitions(agentMachine).keys()]
    const listed = transitions
      .map((key) => ({ key, entry: UNREACHABLE.find((u) => u.machines.includes('agent') && key.endsWith(u.suffix)) }))
      .filter((t) => t.entry !== undefined)
      .map((t) => ({ key: t.key, reason: t.entry!.reason }))
    expect(manifest.coverage.machine).toBe('agent')
    expect(manifest.coverage.transitions).toBe(transitions.length)
    // beside what the code lists, only transitions the walk takes where no scenario file can set the environment
    const notPortable = manifest.coverage.unreachable.filter((u) => u.reason === NOT_PORTABLE)
    expect(manifest.coverage.unreachable.filter((u) => u.reason !== NOT_PORTABLE)).toEqual(listed)
    expect(notPortable.length).toBeGreaterThan(0)
    expect(manifest.coverage.covered).toBe(transitions.length - listed.length - notPortable.length)
    // compaction is in the format (5): its transitions are covered like any other
    expect(transitions.filter((key) => key.includes('compacting')).length).toBeGreaterThan(10)
  })

  it('ships the JSON Schema that is committed in docs/conformance/, and every scenario is of the current format version', async () => {
    const shipped = JSON.parse(await readFile(join(dir, 'scenario.schema.json'), 'utf8'))
    const committed = JSON.parse(await readFile(join(import.meta.dirname, '../../docs/conformance/scenario.schema.json'), 'utf8'))
    expect(shipped).toEqual(scenarioJsonSchema())
    expect(committed).toEqual(shipped)
    expect(new Set(suite.scenarios.map((s) => s.formatVersion))).toEqual(new Set([FORMAT_VERSION]))
  })

  it('its schema compiles in a standard draft 2020-12 validator in strict mode, accepts every scenario file and names what a broken one gets wrong', async () => {
    const validate = new Ajv2020({ strict: true, allErrors: true }).compile(JSON.parse(await readFile(join(dir, 'scenario.schema.json'), 'utf8')))
    for (const id of suite.scenarios.map((s) => s.id)) {
      const file: unknown = JSON.parse(await readFile(join(dir, 'scenarios', `${id}.json`), 'utf8'))
      expect(validate(file) ? [] : validate.errors, id).toEqual([])
    }
    const broken = JSON.parse(await readFile(join(dir, 'scenarios', `${suite.scenarios[0].id}.json`), 'utf8')) as { inputs: Array<Record<string, unknown>> }
    broken.inputs[0] = { ...broken.inputs[0], type: 'no-such-input' }
    expect(validate(broken)).toBe(false)
    expect(validate.errors?.some((e) => e.instancePath.startsWith('/inputs/0'))).toBe(true)
  })

  it('refuses -0 in a scenario file, naming the field: JSON would write it back as 0', async () => {
    const id = suite.scenarios.find((s) => s.expected.length > 0)!.id
    const text = await readFile(join(dir, 'scenarios', `${id}.json`), 'utf8')
    expect(ScenarioSchema.safeParse(JSON.parse(text)).success).toBe(true)
    // JSON.parse reads a hand-written -0 as -0
    const edited = JSON.parse(text.replace(/"seq": 0\b/, '"seq": -0')) as { expected: Array<{ seq: number }> }
    expect(Object.is(edited.expected[0].seq, -0)).toBe(true)
    const parsed = ScenarioSchema.safeParse(edited)
    expect(parsed.success).toBe(false)
    expect(parsed.error?.issues).toEqual([expect.objectContaining({ path: ['expected', 0, 'seq'], message: expect.stringContaining('-0') as unknown })])
  })
})

// `agentchart conformance`: the dispatch to src/testing/conformance/cli.ts, with
// that module replaced, so this file tests the CLI's side of the contract only.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { runCli, type CliIO } from '../../src/cli/main.js'

const suite = vi.hoisted(() => ({
  generateSuite: vi.fn(async (_outDir: string) => ({ scenarios: 3, coverage: '5/6 transitions of the agent machine' })),
  runSuiteFromDir: vi.fn(async (_dir: string, _driver?: string) => ({ passed: 2, failed: 0, lines: [] as string[] })),
}))
vi.mock('../../src/testing/conformance/cli.js', () => suite)

const dir = mkdtempSync(join(tmpdir(), 'agentchart-conformance-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
beforeEach(() => {
  suite.generateSuite.mockClear()
  suite.runSuiteFromDir.mockClear()
})

function capture(): { io: CliIO; out: string[]; err: string[] } {
  const out: string[] = []
  const err: string[] = []
  return { io: { out: (t) => out.push(t), err: (t) => err.push(t), cwd: dir }, out, err }
}

describe('conformance', () => {
  it('generate writes the suite to --out, resolved against the working directory', async () => {
    const { io, out } = capture()
    expect(await runCli(['conformance', 'generate', '--out', 'suite'], io)).toBe(0)
    expect(suite.generateSuite).toHaveBeenCalledWith(join(dir, 'suite'))
    expect(out).toEqual([`wrote 3 scenarios to ${join(dir, 'suite')} (5/6 transitions of the agent machine)`])
  })

  it('run prints the lines and then the closing count; no driver means agentchart', async () => {
    suite.runSuiteFromDir.mockResolvedValueOnce({ passed: 4, failed: 0, lines: ['note one'] })
    const { io, out } = capture()
    expect(await runCli(['conformance', 'run', 'suite'], io)).toBe(0)
    expect(suite.runSuiteFromDir).toHaveBeenCalledWith(join(dir, 'suite'), undefined)
    expect(out).toEqual(['note one', '4 passed, 0 failed'])
  })

  it('run exits 1 when a scenario fails', async () => {
    suite.runSuiteFromDir.mockResolvedValueOnce({ passed: 1, failed: 2, lines: ['FAIL a: x', 'FAIL b: y'] })
    const { io, out } = capture()
    expect(await runCli(['conformance', 'run', 'suite'], io)).toBe(1)
    expect(out).toEqual(['FAIL a: x', 'FAIL b: y', '1 passed, 2 failed'])
  })

  it('run passes a driver path as a file URL and a package name as is', async () => {
    writeFileSync(join(dir, 'my-driver.mjs'), 'export default { name: "x", run: async () => [] }\n')
    for (const [given, expected] of [
      ['./my-driver.mjs', pathToFileURL(join(dir, 'my-driver.mjs')).href],
      ['my-driver.mjs', pathToFileURL(join(dir, 'my-driver.mjs')).href],
      [join(dir, 'my-driver.mjs'), pathToFileURL(join(dir, 'my-driver.mjs')).href],
      ['some-driver-package', 'some-driver-package'],
    ]) {
      const { io } = capture()
      expect(await runCli(['conformance', 'run', 'suite', '--driver', given], io)).toBe(0)
      expect(suite.runSuiteFromDir).toHaveBeenLastCalledWith(join(dir, 'suite'), expected)
    }
  })

  it('reports an error from the suite and exits 1', async () => {
    suite.runSuiteFromDir.mockRejectedValueOnce(new Error('a.json: expected: Required'))
    const { io, err } = capture()
    expect(await runCli(['conformance', 'run', 'suite'], io)).toBe(1)
    expect(err).toEqual(['agentchart conformance: a.json: expected: Required'])
  })
})

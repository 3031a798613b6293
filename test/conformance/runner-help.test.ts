// The runner helps a driver writer: it runs one scenario on request, shows the
// log a failing driver had produced, and shows a divergence in its place.
import { beforeAll, describe, expect, it } from 'vitest'
import { formatResult, readSuite, runSuite, runSuiteFromDir, type Scenario } from '../../src/testing/index.js'
import { runIndependent } from './independent/driver.js'
import { sharedSuite } from './shared-suite.js'

let dir: string
let scenario: Scenario

beforeAll(async () => {
  dir = await sharedSuite()
  scenario = (await readSuite(dir)).scenarios.find((s) => s.expected.length > 8 && !s.setup.seed)!
}, 240_000)

describe('conformance run, for a driver writer', () => {
  it('--filter runs only the scenarios whose id contains it, and refuses a filter that matches none', async () => {
    const { report } = await runSuiteFromDir(dir, './test/conformance/independent/driver.ts', { filter: scenario.id })
    expect(report.results.map((r) => r.id)).toEqual([scenario.id])
    expect(report.passed).toBe(1)
    await expect(runSuiteFromDir(dir, undefined, { filter: 'no-such-scenario' })).rejects.toThrow(/no scenario .* has an id containing it/)
  }, 60_000)

  it('a driver that fails shows the log it had produced, when its error carries one', async () => {
    const log = (await runIndependent(scenario)).slice(0, 5)
    const driver = { name: 'half', run: async () => Promise.reject(Object.assign(new Error('gave up'), { log })) }
    const [result] = (await runSuite([scenario], driver)).results
    expect(result.partialLog).toHaveLength(5)
    const text = formatResult(result)
    expect(text).toContain('the driver failed: gave up')
    expect(text).toContain('the log it produced (its 5 events):')
    expect(text).toContain(`#4 ${String((log[4] as { type: string }).type)}`)
  })

  it('a divergence is shown with the events around it on both sides', async () => {
    const log = (await runIndependent(scenario)) as Array<{ seq: number; type: string; data: unknown }>
    const broken = log.map((e, i) => (i === 6 ? { ...e, data: { changed: true } } : e))
    const [result] = (await runSuite([scenario], { name: 'off by one', run: async () => broken })).results
    expect(result.divergence?.index).toBe(6)
    expect(result.context?.from).toBe(3)
    const text = formatResult(result)
    expect(text).toContain('expected around it:')
    expect(text).toContain('actual around it:')
    expect(text).toContain(`> #6 ${log[6].type} {"changed":true}`)
    expect(text).toContain(`  #5 ${log[5].type}`)
  })
})

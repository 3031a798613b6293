// Every rule is load-bearing: the suite run against each mutant of the
// independent loop (./independent/mutants.ts), one named deviation per rule,
// must fail on every one of them but the mutants argued equivalent.
import { beforeAll, describe, expect, it } from 'vitest'
import { readSuite, type Suite } from '../../src/testing/index.js'
import { MUTANTS, type Mutant } from './independent/mutants.js'
import { formatMutationReport, runMutants } from './mutation.js'
import { sharedSuite } from './shared-suite.js'

let suite: Suite

beforeAll(async () => {
  suite = await readSuite(await sharedSuite())
}, 240_000)

describe('mutation testing of the conformance suite', () => {
  it('each mutant is a named deviation that cites its rule and catalogue entries, and names are unique', () => {
    const all = MUTANTS as readonly Mutant[]
    expect(new Set(all.map((m) => m.name)).size).toBe(all.length)
    for (const m of all) {
      expect(m.rule, m.name).toMatch(/^\d+(\.\d+)?( \d+\.\d+)*$/)
      expect(m.ids.length, m.name).toBeGreaterThan(0)
      for (const id of m.ids) expect(id, m.name).toMatch(/^[A-Z]{2}-\d+$/)
    }
    expect(all.filter((m) => !m.equivalent).length).toBeGreaterThanOrEqual(80)
  })

  it('the suite catches every mutant of the independent loop', async () => {
    const report = await runMutants(suite.scenarios)
    const lines = formatMutationReport(report)
    expect(
      report.survivors.map((m) => m.name),
      lines.join('\n'),
    ).toEqual([])
    expect(lines.at(-1)).toBe(`${report.total} of ${report.total} mutants caught`)
  }, 240_000)
})

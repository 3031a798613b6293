// The fork scenarios of the suite (format 5, SS-14, IN-14): made beside the
// walk, deterministic, in what `conformance generate` writes, passed by
// agentchart and by the independent loop; a driver whose fork disagrees with
// the scenario fails it, naming the input.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { agentchartDriver, forkScenarios, readSuite, runSuite, type Manifest, type Scenario } from '../../src/testing/index.js'
import { createIndependentDriver } from './independent/driver.js'
import { sharedSuite } from './shared-suite.js'

let dir: string
let forks: Scenario[]

beforeAll(async () => {
  dir = await sharedSuite()
  forks = (await readSuite(dir)).scenarios.filter((s) => s.id.startsWith('fork-'))
}, 240_000)

const codes = (s: Scenario) => s.inputs.flatMap((i) => (i.type === 'fork' ? [i.refused ?? 'accepted'] : []))

describe('SS-14: fork scenarios of the conformance suite (format 5)', () => {
  it('SS-14: are generated deterministically and written by conformance generate after the walk, with the root session id in their setup', async () => {
    expect(forkScenarios()).toEqual(forkScenarios())
    expect(forks).toEqual(forkScenarios())
    const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest
    expect(manifest.scenarios.slice(-forks.length)).toEqual(forks.map((s) => s.id))
    expect(new Set(forks.map((s) => s.setup.sessionId))).toEqual(new Set(['root']))
  })

  it('SS-14: cover accepted forks, every refusal a scenario can meet, restarts, forks of forks and inherited splices', () => {
    const all = new Set(forks.flatMap(codes))
    expect(all).toEqual(new Set(['accepted', 'FORK_UNKNOWN_SEQ', 'FORK_INSIDE_TURN', 'FORK_ID_TAKEN']))
    expect(forks.some((s) => s.inputs.some((i) => i.type === 'resume'))).toBe(true)
    expect(forks.some((s) => codes(s).filter((c) => c === 'accepted').length === 2)).toBe(true)
    // the expected log of an accepted fork: the prefix, the marker with the lineage, then the fork's own events
    const first = forks.find((s) => s.id === 'fork-01')!
    const fork = first.inputs.find((i) => i.type === 'fork')!
    expect(first.expected[fork.upTo + 1]).toEqual({
      seq: fork.upTo + 1,
      type: 'session/end-seed',
      data: { fork: { parent: 'root', upTo: fork.upTo, seedLength: fork.upTo + 2 } },
    })
    expect(first.expected.slice(fork.upTo + 2).filter((e) => e.type === 'turn/start')).toEqual([expect.objectContaining({ data: { turn: 2 } })])
  })

  it('SS-14: pass on agentchart and on the independent loop', async () => {
    for (const driver of [agentchartDriver, createIndependentDriver()]) {
      const report = await runSuite(forks, driver)
      expect(report.results.filter((r) => !r.passed)).toEqual([])
      expect(report.passed).toBe(forks.length)
    }
  })

  it('SS-14: fail a driver when the fork is refused with another code, refused when it should be made, or made when it should be refused', async () => {
    const refusing = forks.find((s) => s.id === 'fork-09')!
    const at = refusing.inputs.findIndex((i) => i.type === 'fork')
    const variant = (change: (input: Extract<Scenario['inputs'][number], { type: 'fork' }>) => void): Scenario => {
      const copy = structuredClone(refusing)
      change(copy.inputs[at] as Extract<Scenario['inputs'][number], { type: 'fork' }>)
      return copy
    }
    const otherCode = variant((i) => (i.refused = 'FORK_ID_TAKEN'))
    const notRefused = variant((i) => delete i.refused)
    const accepting = forks.find((s) => s.id === 'fork-01')!
    const shouldRefuse = structuredClone(accepting)
    const fork = shouldRefuse.inputs.find((i) => i.type === 'fork')!
    fork.refused = 'FORK_INSIDE_TURN'
    for (const driver of [agentchartDriver, createIndependentDriver()]) {
      const report = await runSuite([otherCode, notRefused, shouldRefuse], driver)
      expect(report.results.map((r) => r.error)).toEqual([
        expect.stringMatching(/^fork-09: input #\d+ .*FORK_UNKNOWN_SEQ.*FORK_ID_TAKEN/),
        expect.stringMatching(/^fork-09: input #\d+ .*FORK_UNKNOWN_SEQ/),
        expect.stringMatching(/^fork-01: input #\d+ .*FORK_INSIDE_TURN/),
      ])
    }
  })
})

// Build the portable suite from the agent machine's walk: a greedy cover of
// every transition the walk took, then evenly spread scenarios up to a size,
// each spelled out as a self-describing scenario file.
import { coverageOf, type CoverageReport } from '../model/coverage.js'
import { explore, type Exploration, type GeneratedScenario } from '../model/explore.js'
import { walks } from '../model/profiles.js'
import { dataKeys } from './data-cover.js'
import { toPortable } from './export.js'
import { forkScenarios } from './forks.js'
import { SUITE_FORMAT, type Suite } from './format.js'

/**
 * Why a transition the walk takes is not in the suite: only walks whose environment no scenario file expresses take it
 * (nobody listening or watching, so the machine decides each hook itself; a listener added mid-walk; a request the
 * machine refuses), or walks no scenario of this format takes (a disposal that parks an approval wait). The model tests walk and check them.
 */
export const NOT_PORTABLE =
  'taken only where no scenario file can set the environment (nobody listens or watches, a listener comes or goes, a request the machine refuses) or no scenario of this format takes (a disposal parking an approval wait); walked and checked by the model tests'

/**
 * Pick scenarios: first a greedy transition cover (the scenario that covers most new keys, the earliest on a tie), then an
 * even spread of the rest up to `size`. The greedy pass is lazy: a scenario's gain only shrinks as keys are covered, so a
 * stale gain is an upper bound and only the scenarios that reach the top of the queue are counted again.
 */
export function selectScenarios<S extends { covers: readonly string[] }>(scenarios: readonly S[], size: number): S[] {
  const keys = scenarios.map((s) => [...new Set(s.covers)])
  const covered = new Set<string>()
  const gainOf = (i: number) => keys[i].reduce((n, t) => (covered.has(t) ? n : n + 1), 0)
  // entries are [gain, index, picks made when the gain was counted]; the best is the largest gain, then the smallest index
  const queue = new MaxQueue<[number, number, number]>((a, b) => a[0] - b[0] || b[1] - a[1])
  keys.forEach((k, i) => k.length > 0 && queue.push([k.length, i, 0]))
  const chosen = new Set<number>()
  for (let top = queue.pop(); top && top[0] > 0; top = queue.pop()) {
    const [, i, countedAt] = top
    if (countedAt === chosen.size) {
      chosen.add(i)
      keys[i].forEach((t) => covered.add(t))
    } else {
      queue.push([gainOf(i), i, chosen.size])
    }
  }
  const rest = scenarios.map((_, i) => i).filter((i) => !chosen.has(i))
  const want = Math.max(0, size - chosen.size)
  const stride = rest.length / Math.max(1, want)
  for (let k = 0; k < want && k * stride < rest.length; k++) chosen.add(rest[Math.floor(k * stride)])
  return [...chosen].sort((a, b) => a - b).map((i) => scenarios[i])
}

/** A binary heap that pops the largest item by `compare`. */
class MaxQueue<T> {
  readonly #items: T[] = []
  constructor(readonly compare: (a: T, b: T) => number) {}

  push(item: T): void {
    const items = this.#items
    items.push(item)
    for (let i = items.length - 1; i > 0;) {
      const parent = (i - 1) >> 1
      if (this.compare(items[i], items[parent]) <= 0) break
      ;[items[i], items[parent]] = [items[parent], items[i]]
      i = parent
    }
  }

  pop(): T | undefined {
    const items = this.#items
    const top = items[0]
    const last = items.pop()
    if (items.length > 0 && last !== undefined) {
      items[0] = last
      for (let i = 0; ;) {
        const [l, r] = [2 * i + 1, 2 * i + 2]
        let best = i
        if (l < items.length && this.compare(items[l], items[best]) > 0) best = l
        if (r < items.length && this.compare(items[r], items[best]) > 0) best = r
        if (best === i) break
        ;[items[i], items[best]] = [items[best], items[i]]
        i = best
      }
    }
    return top
  }
}

/** Walk the agent machine (the whole walk, every profile). */
export function exploreAgent(): Exploration {
  const agent = walks().find((w) => w.name === 'agent')!
  return explore(agent.name, agent)
}

/**
 * Build a suite of `size` scenarios (at least the full cover of transitions and data keys) from a walk of the agent machine, then the
 * fork scenarios (format 5, made beside the walk), and the coverage the walk's scenarios reach.
 * Why: what `conformance generate` writes; pass an exploration to reuse a walk.
 */
export function buildSuite(size = 240, exploration: Exploration = exploreAgent()): { suite: Suite; coverage: CoverageReport; selected: GeneratedScenario[] } {
  const replayable = exploration.scenarios.filter((s) => s.replayable)
  // the cover takes every transition and every data key (data-cover.ts): a rule about data takes no transition of its own
  const keyed = replayable.map((g) => {
    const setup = { maxParallelToolCalls: g.maxParallelToolCalls, compaction: g.compaction !== undefined }
    return { g, covers: [...g.covers, ...dataKeys({ ...g, setup })] }
  })
  const selected = selectScenarios(keyed, size).map((k) => k.g)
  const suite: Suite = {
    format: SUITE_FORMAT,
    generatedBy: 'agentchart conformance generate',
    scenarios: [...selected.map((g) => toPortable(g)), ...forkScenarios()],
  }
  // the transitions these scenarios take, not the whole walk's
  const covered = new Set(selected.flatMap((s) => s.covers))
  const report = coverageOf({ ...exploration, covered })
  // what only the walks a driver cannot replay take is checked by the model tests, not shipped
  const missing = report.missing.map((m) => (m.reason === null && exploration.covered.has(m.key) ? { ...m, reason: NOT_PORTABLE } : m))
  return { suite, coverage: { ...report, missing }, selected }
}

// The suite's selection: the lazy greedy cover picks exactly what the plain greedy cover picks
// (the scenario with most uncovered keys, the earliest on a tie), then spreads the rest evenly.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { selectScenarios } from '../../src/testing/index.js'

/** The plain greedy cover, counted afresh at every pick: the definition the lazy one must match. */
function plainCover(covers: readonly (readonly string[])[]): number[] {
  const covered = new Set<string>()
  const chosen: number[] = []
  for (;;) {
    let best = -1
    let gain = 0
    covers.forEach((keys, i) => {
      const g = new Set(keys.filter((k) => !covered.has(k))).size
      if (!chosen.includes(i) && g > gain) [best, gain] = [i, g]
    })
    if (best < 0) return chosen
    chosen.push(best)
    covers[best].forEach((k) => covered.add(k))
  }
}

const coversArb = fc.array(fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'), { maxLength: 6 }), { maxLength: 40 })

describe('selecting the suite', () => {
  it('covers every key with the scenarios the plain greedy cover picks, and no more when size is 0', () => {
    fc.assert(
      fc.property(coversArb, (covers) => {
        const picked = selectScenarios(
          covers.map((c, i) => ({ covers: c, i })),
          0,
        ).map((s) => s.i)
        expect(picked).toEqual([...plainCover(covers)].sort((a, b) => a - b))
      }),
      { numRuns: 500 },
    )
  })

  it('fills up to the size with the rest, evenly spread, never picking one twice', () => {
    fc.assert(
      fc.property(coversArb, fc.nat(50), (covers, size) => {
        const picked = selectScenarios(
          covers.map((c, i) => ({ covers: c, i })),
          size,
        ).map((s) => s.i)
        const cover = plainCover(covers)
        expect(new Set(picked).size).toBe(picked.length)
        expect(picked.length).toBe(Math.min(covers.length, Math.max(size, cover.length)))
        for (const i of cover) expect(picked).toContain(i)
      }),
      { numRuns: 500 },
    )
  })
})

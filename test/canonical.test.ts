// Canonical JSON keys headers, route records and output schemas (RQ-4, RQ-5): the hand-written fast form must
// give exactly the string the replacer form gives, for the plain JSON it takes and for everything it hands back.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonical } from '../src/values/canonical.js'
import { propertyRuns } from './helpers.js'

/** The reference, written out here: JSON.stringify with every object rebuilt with its keys sorted. */
function reference(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  )
}

// keys that sort differently as strings and as numbers, a __proto__ own key, and ordinary names
const key = fc.oneof(fc.string(), fc.constantFrom('10', '9', '0', '01', '4294967294', '4294967295', '-1', '1.5', '__proto__', 'b', 'a', 'B'))
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 5 }),
  ),
})).value

describe('canonical', () => {
  it('equals the replacer form on plain JSON, whatever the key order', () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(canonical(value)).toBe(reference(value))
      }),
      { numRuns: propertyRuns(300) },
    )
  })

  it('equals the replacer form on what is not plain JSON', () => {
    const nullProto = Object.assign(Object.create(null) as object, { b: 1, a: [2, undefined] })
    const values: unknown[] = [
      { b: undefined, a: 1 },
      [1, undefined, () => 0],
      { when: new Date(0), z: { toJSON: () => 'z' } },
      nullProto,
      { n: NaN, i: -Infinity, z: -0 },
      [1, , 3], // eslint-disable-line no-sparse-arrays
      { s: Symbol('s'), [Symbol('k')]: 1, big: { x: new String('boxed') } },
      undefined,
    ]
    for (const value of values) expect(canonical(value)).toBe(reference(value))
  })

  it('throws on a cycle, as the replacer form does', () => {
    const cycle: Record<string, unknown> = { a: 1 }
    cycle.self = { back: cycle }
    expect(() => reference(cycle)).toThrow()
    expect(() => canonical(cycle)).toThrow()
  })
})

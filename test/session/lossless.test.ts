import { describe, expect, it } from 'vitest'
import { LosslessJsonError } from '../../src/errors.js'
import { MAX_JSON_DEPTH, deepFreeze, formatPath, isLosslessJson, toFrozenJson } from '../../src/session/lossless.js'

/** Expects toFrozenJson to refuse `value`, naming `path` and mentioning `what`. */
function refuses(value: unknown, path: string, what: RegExp, base?: string): void {
  let error: unknown
  try {
    toFrozenJson(value, base)
  } catch (err) {
    error = err
  }
  expect(error).toBeInstanceOf(LosslessJsonError)
  const e = error as LosslessJsonError
  expect(e.path).toBe(path)
  expect(e.code).toBe('NOT_LOSSLESS_JSON')
  expect(e.message).toContain(path)
  expect(e.message).toMatch(what)
}

class Point {
  x = 1
}

describe('toFrozenJson accepts', () => {
  it('SS-2: strings, booleans, null and finite numbers as they are', () => {
    for (const v of ['', 'x', true, false, null, 0, 1.5, -3, Number.MAX_VALUE, Number.MIN_VALUE]) {
      expect(toFrozenJson(v)).toBe(v)
    }
  })

  it('SS-2: returns a deep-frozen deep copy equal to the input', () => {
    const input = { a: [1, { b: 'c' }], d: { e: null, f: [[true]] } }
    const out = toFrozenJson(input)
    expect(out).toEqual(input)
    expect(out).not.toBe(input)
    expect(out.a).not.toBe(input.a)
    expect(out.a[1]).not.toBe(input.a[1])
    expect(Object.isFrozen(out)).toBe(true)
    expect(Object.isFrozen(out.a)).toBe(true)
    expect(Object.isFrozen(out.a[1])).toBe(true)
    expect(Object.isFrozen(out.d.f[0])).toBe(true)
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(Array.isArray(out.a)).toBe(true)
  })

  it('SS-2: later mutation of the input does not reach the copy', () => {
    const input = { list: [1, 2], inner: { s: 'x' } }
    const out = toFrozenJson(input)
    input.list.push(3)
    input.inner.s = 'y'
    expect(out).toEqual({ list: [1, 2], inner: { s: 'x' } })
  })

  it('SS-2: shared (acyclic) references are fine and copied per occurrence', () => {
    const shared = { k: 1 }
    const out = toFrozenJson({ a: shared, b: [shared, shared] })
    expect(out).toEqual({ a: { k: 1 }, b: [{ k: 1 }, { k: 1 }] })
  })

  it('SS-2: null-prototype objects are plain data and come back as ordinary objects', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 })
    const out = toFrozenJson(bare)
    expect(out).toEqual({ a: 1 })
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
  })

  it('SS-2: an own "__proto__" key (as JSON.parse makes) stays an own data property', () => {
    const input = JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as Record<string, unknown>
    const out = toFrozenJson(input)
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(Object.keys(out)).toEqual(['__proto__', 'y'])
    expect(JSON.stringify(out)).toBe('{"__proto__":{"x":1},"y":2}')
  })

  it('SS-2: frozen input is accepted and copied', () => {
    const input = Object.freeze({ a: Object.freeze([1]) })
    expect(toFrozenJson(input)).toEqual({ a: [1] })
  })

  it('SS-2: nesting up to MAX_JSON_DEPTH containers is accepted', () => {
    let v: unknown = 'leaf'
    for (let i = 0; i < MAX_JSON_DEPTH; i++) v = [v]
    expect(() => toFrozenJson(v)).not.toThrow()
  })

  it('SS-2: empty objects and arrays', () => {
    expect(toFrozenJson({ a: {}, b: [] })).toEqual({ a: {}, b: [] })
  })
})

describe('toFrozenJson refuses, naming the path', () => {
  it('SS-2: BigInt', () => refuses({ n: 1n }, 'data.n', /BigInt/))
  it('SS-2: undefined as a property value', () => refuses({ a: { b: undefined } }, 'data.a.b', /undefined/))
  it('SS-2: undefined as an array element', () => refuses({ a: [1, undefined] }, 'data.a[1]', /undefined/))
  it('SS-2: undefined as the whole value', () => refuses(undefined, 'data', /undefined/))
  it('SS-2: a function', () => refuses({ f: () => 1 }, 'data.f', /function/))
  it('SS-2: a symbol value', () => refuses({ s: Symbol('s') }, 'data.s', /symbol/))
  it('SS-2: a symbol key', () => refuses({ o: { [Symbol('k')]: 1 } }, 'data.o', /symbol-keyed/))
  it('SS-2: -0', () => refuses({ z: [0, -0] }, 'data.z[1]', /-0/))
  it('SS-2: NaN', () => refuses({ x: NaN }, 'data.x', /NaN/))
  it('SS-2: Infinity', () => refuses({ x: Infinity }, 'data.x', /Infinity/))
  it('SS-2: -Infinity', () => refuses({ x: -Infinity }, 'data.x', /Infinity/))
  it('SS-2: a sparse array (hole)', () => {
    // eslint-disable-next-line no-sparse-arrays
    refuses({ a: [1, , 3] }, 'data.a[1]', /hole/)
    refuses({ a: new Array(2) }, 'data.a[0]', /hole/)
  })
  it('SS-2: an array with a named property', () => {
    const a = Object.assign([1, 2], { extra: true })
    refuses({ a }, 'data.a', /non-index/)
  })
  it('SS-2: an object cycle', () => {
    const o: Record<string, unknown> = { a: 1 }
    o.self = o
    refuses(o, 'data.self', /cycle/)
  })
  it('SS-2: a cycle through an array', () => {
    const arr: unknown[] = []
    const o = { list: arr }
    arr.push({ back: o })
    refuses(o, 'data.list[0].back', /cycle/)
  })
  it('SS-2: a Map', () => refuses({ m: new Map() }, 'data.m', /exotic object \(Map\)/))
  it('SS-2: a Set', () => refuses({ s: new Set([1]) }, 'data.s', /exotic object \(Set\)/))
  it('SS-2: a Date', () => refuses({ d: new Date(0) }, 'data.d', /exotic object \(Date\)/))
  it('SS-2: a class instance', () => refuses({ p: new Point() }, 'data.p', /exotic object \(Point\)/))
  it('SS-2: a typed array', () => refuses({ t: new Uint8Array(2) }, 'data.t', /exotic object \(Uint8Array\)/))
  it('SS-2: a RegExp, a boxed string, an Error', () => {
    refuses({ r: /x/ }, 'data.r', /exotic/)
    refuses({ s: new String('x') }, 'data.s', /exotic/)
    refuses({ e: new Error('x') }, 'data.e', /exotic/)
  })
  it('SS-2: an Array subclass', () => {
    class List extends Array<number> {}
    refuses({ l: List.from([1]) }, 'data.l', /array subclass/)
  })
  it('SS-2: nesting deeper than MAX_JSON_DEPTH, by name instead of a stack overflow', () => {
    let v: unknown = 'leaf'
    for (let i = 0; i <= MAX_JSON_DEPTH; i++) v = { n: v }
    refuses(v, 'data' + '.n'.repeat(MAX_JSON_DEPTH), /deeper than 1000/)
  })
  it('SS-2: an object whose prototype is another plain object', () => {
    refuses({ o: Object.create({ inherited: 1 }) }, 'data.o', /exotic/)
  })
  it('SS-2: names deep message paths like data.message.content[0].text', () => {
    refuses({ message: { content: [{ type: 'text', text: 1n }] } }, 'data.message.content[0].text', /BigInt/)
  })
  it('SS-2: quotes keys that are not identifiers and honours a custom base path', () => {
    refuses({ 'a-b': { '0': NaN } }, 'seed[2]["a-b"]["0"]', /NaN/, 'seed[2]')
  })
})

describe('lossless helpers', () => {
  it('SS-2: isLosslessJson answers without throwing', () => {
    expect(isLosslessJson({ a: [1, 'x', null, true] })).toBe(true)
    expect(isLosslessJson({ a: new Map() })).toBe(false)
    expect(isLosslessJson(-0)).toBe(false)
    expect(isLosslessJson(undefined)).toBe(false)
  })

  it('SS-2: isLosslessJson rethrows unrelated errors (a throwing getter)', () => {
    const o = {
      get boom(): number {
        throw new TypeError('getter')
      },
    }
    expect(() => isLosslessJson(o)).toThrow(TypeError)
  })

  it('SS-2: deepFreeze freezes every level and returns its argument', () => {
    const v = { a: [{ b: 1 }], c: { d: [] as number[] } }
    expect(deepFreeze(v)).toBe(v)
    expect(Object.isFrozen(v.a[0])).toBe(true)
    expect(Object.isFrozen(v.c.d)).toBe(true)
    expect(deepFreeze(3)).toBe(3)
  })

  it('SS-2: formatPath renders indices, identifiers and odd keys', () => {
    expect(formatPath('data', ['message', 'content', 0, 'text'])).toBe('data.message.content[0].text')
    expect(formatPath('data', ['a b', 'ok'])).toBe('data["a b"].ok')
    expect(formatPath('', ['x', 1])).toBe('x[1]')
  })
})

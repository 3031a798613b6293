// Lossless JSON (SS-2): a value is accepted only if a JSON round trip would
// give it back unchanged. One recursive pass checks and deep-copies; the copy
// is frozen as it is built, so callers can never mutate what the log keeps.
// The log's own pass shares sealed parts instead of copying them (see below).
import { LosslessJsonError } from '../errors.js'

type Key = string | number

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/
/** Deeper values are refused by name rather than by a stack overflow. */
export const MAX_JSON_DEPTH = 1000

/** Renders `base` plus keys as `data.message.content[0].text`; shared so every refusal names paths alike. */
export function formatPath(base: string, keys: readonly PropertyKey[]): string {
  let out = base
  for (const key of keys) {
    if (typeof key === 'number') out += `[${key}]`
    else if (typeof key === 'string' && IDENTIFIER.test(key)) out += out === '' ? key : `.${key}`
    else out += `[${typeof key === 'symbol' ? key.toString() : JSON.stringify(key)}]`
  }
  return out
}

/** For zod refinements of numbers read from JSON: -0 is refused (JSON writes it as 0), naming the field. */
export const notMinusZero = (n: number): boolean => n !== 0 || 1 / n > 0
export const MINUS_ZERO = { message: '-0 does not survive JSON (it reads back as 0)' } as const

/** Checks that `value` is lossless JSON and returns a deep-frozen deep copy; the one gate every logged value passes (SS-2). */
export function toFrozenJson<T>(value: T, path = 'data'): T {
  return visit(value, { base: path, keys: [], ancestors: [], reuse: false, deepest: 0 }) as T
}

// ---- sealed values (in-house) ------------------------------------------------------------
// A sealed value is deep-frozen lossless JSON no deeper than SEALED_HEIGHT levels of containers: a copy this
// module made, or a value our own code built frozen from checked parts. Frozen, it can never change, so what was
// checked once stays checked, and the session's copy of an event takes a sealed part as it is instead of walking
// and copying it again (the parts the machine carries from one event into another, e.g. a logged
// chunk's block into the assistant message). Nothing from user code is ever sealed: user values are copied first.
const SEALED = new WeakSet<object>()
/** The most levels of containers a sealed value may have; one is taken as is only where MAX_JSON_DEPTH still holds. */
export const SEALED_HEIGHT = 32

/**
 * Registers `value` as sealed. Only for a value our code built and deep-froze, at most SEALED_HEIGHT containers
 * deep, whose every part is a string, a boolean, a finite number other than -0, null, or a container our code
 * built the same way or a sealed value. Why: see above.
 */
export function seal<T extends object>(value: T): T {
  SEALED.add(value)
  return value
}

/** toFrozenJson, and the copy is sealed when it is shallow enough (in-house: values later carried into events). */
export function toSealedJson<T>(value: T, path: string): T {
  const walk: Walk = { base: path, keys: [], ancestors: [], reuse: false, deepest: 0 }
  const copy = visit(value, walk)
  if (typeof copy === 'object' && copy !== null && walk.deepest <= SEALED_HEIGHT) SEALED.add(copy)
  return copy as T
}

/**
 * The copy an event keeps (Session.append): checked and copied like toFrozenJson, except that sealed parts are
 * taken as they are. Identity is the only difference (a sealed part is shared, not copied); in-house.
 */
export function toLoggedJson<T>(value: T, path: string): T {
  return visit(value, { base: path, keys: [], ancestors: [], reuse: true, deepest: 0 }) as T
}

// Walk state: `keys` is the path from the root to the value being visited
// and `ancestors` the containers on that path. The path string is built only
// on failure, so the happy path allocates little beyond the copy itself.
// Module-level functions (no per-call closures) keep this hot path cheap.
// `reuse` takes sealed values as they are; `deepest` counts the levels of containers seen.
interface Walk {
  readonly base: string
  readonly keys: Key[]
  readonly ancestors: object[]
  readonly reuse: boolean
  deepest: number
}

function fail(walk: Walk, what: string): never {
  throw new LosslessJsonError(formatPath(walk.base, walk.keys), what)
}

function visit(v: unknown, walk: Walk): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v
    case 'number':
      if (!Number.isFinite(v)) fail(walk, `${v} is not a finite number`)
      if (v === 0 && 1 / v < 0) fail(walk, '-0 does not survive JSON')
      return v
    case 'object':
      if (v === null) return null
      break
    case 'undefined':
      return fail(walk, 'undefined')
    case 'bigint':
      return fail(walk, 'BigInt')
    default: // function, symbol
      return fail(walk, typeof v)
  }
  const { keys, ancestors } = walk
  // a sealed part can hold no ancestor (it was frozen before them) and, below this bound, is within MAX_JSON_DEPTH
  if (walk.reuse && SEALED.has(v) && ancestors.length <= MAX_JSON_DEPTH - SEALED_HEIGHT) return v
  if (ancestors.length >= walk.deepest) walk.deepest = ancestors.length + 1
  if (ancestors.includes(v)) fail(walk, 'cycle')
  if (ancestors.length >= MAX_JSON_DEPTH) fail(walk, `nested deeper than ${MAX_JSON_DEPTH} levels`)
  if (Object.getOwnPropertySymbols(v).length > 0) fail(walk, 'symbol-keyed property')
  const proto: unknown = Object.getPrototypeOf(v)
  ancestors.push(v)
  let copy: object
  if (Array.isArray(v)) {
    if (proto !== Array.prototype) fail(walk, 'array subclass')
    const len = v.length
    // Holes are skipped by Object.keys and extra named properties add to it;
    // the element loop reports holes precisely, this catches the extras.
    if (Object.keys(v).length > len) fail(walk, 'array with non-index properties')
    const out = new Array<unknown>(len)
    for (let i = 0; i < len; i++) {
      keys.push(i)
      const el: unknown = v[i]
      if (el === undefined && !Object.hasOwn(v, i)) fail(walk, 'sparse array (hole)')
      out[i] = visit(el, walk)
      keys.pop()
    }
    copy = out
  } else {
    if (proto !== Object.prototype && proto !== null) {
      const name = (proto as { constructor?: { name?: unknown } }).constructor?.name
      fail(walk, `exotic object${typeof name === 'string' && name !== '' ? ` (${name})` : ''}`)
    }
    // Only own enumerable string keys are read: exactly what JSON sees.
    const src = v as Record<string, unknown>
    const out: Record<string, unknown> = {}
    const names = Object.keys(src)
    for (let i = 0; i < names.length; i++) {
      const key = names[i]
      keys.push(key)
      const el = visit(src[key], walk)
      // A plain assignment to "__proto__" would set the prototype instead.
      if (key === '__proto__') Object.defineProperty(out, key, { value: el, enumerable: true, writable: true, configurable: true })
      else out[key] = el
      keys.pop()
    }
    copy = out
  }
  ancestors.pop()
  return Object.freeze(copy)
}

/** Freezes an already-checked JSON value all the way down (for values built in-house, not taken from callers). */
export function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    Object.freeze(v)
    for (const key of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[key])
  }
  return v
}

/** Predicate form of the SS-2 check, for callers that want to branch rather than catch. */
export function isLosslessJson(v: unknown): boolean {
  try {
    toFrozenJson(v)
    return true
  } catch (err) {
    if (err instanceof LosslessJsonError) return false
    throw err
  }
}

// Lossless JSON (SS-2): a value is accepted only if a JSON round trip would
// give it back unchanged. One recursive pass checks and deep-copies; the copy
// is frozen as it is built, so callers can never mutate what the log keeps.
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
  return visit(value, { base: path, keys: [], ancestors: [] }) as T
}

// Walk state: `keys` is the path from the root to the value being visited
// and `ancestors` the containers on that path. The path string is built only
// on failure, so the happy path allocates little beyond the copy itself.
// Module-level functions (no per-call closures) keep this hot path cheap.
interface Walk {
  readonly base: string
  readonly keys: Key[]
  readonly ancestors: object[]
}

function fail(walk: Walk, what: string): never {
  throw new LosslessJsonError(formatPath(walk.base, walk.keys), what)
}

function visit(v: unknown, walk: Walk): unknown {
  switch (typeof v) {
    case 'string':
      // reading a long string flattens a concatenation (an id built from parts) into one, so the log keeps no parts
      if (v.length > 12) v.charCodeAt(0)
      return v
    case 'boolean':
      return v
    case 'number':
      if (!Number.isFinite(v)) fail(walk, `${v} is not a finite number`)
      if (!notMinusZero(v)) fail(walk, '-0 does not survive JSON')
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
  freezeParsed(v)
  return v
}

/**
 * Deep-freezes a value a schema built (plain objects and arrays of typed leaves) and says whether it is lossless
 * JSON, in one walk: a schema keeps a present `undefined` of an optional field, which JSON drops, and may pass a -0.
 */
export function freezeParsed(v: unknown): boolean {
  if (v === undefined) return false
  if (typeof v === 'number') return Number.isFinite(v) && notMinusZero(v)
  if (typeof v !== 'object' || v === null) return true
  Object.freeze(v)
  let lossless = true
  for (const key of Object.keys(v)) if (!freezeParsed((v as Record<string, unknown>)[key])) lossless = false
  return lossless
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

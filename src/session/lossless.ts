// Lossless JSON (SS-2): a value is accepted only if a JSON round trip would
// give it back unchanged. One recursive pass checks and deep-copies; the copy
// is frozen as it is built, so callers can never mutate what the log keeps.
import { types } from 'node:util'
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

/** Checks that `value` is lossless JSON and returns a deep-frozen deep copy. */
export function toFrozenJson<T>(value: T, path = 'data'): T {
  return visit(value, { base: path, keys: [], ancestors: [], keep: false }) as T
}

/**
 * The one gate every logged value passes (SS-2): checks that `value` is lossless JSON and returns it deep-frozen, a
 * copy except for each part that is already immutable lossless JSON (see `immutableJson`), which is kept as it is.
 * Why: a value the log already holds (a block of a logged chunk, a logged user message) is then held once, not twice.
 */
export function toLoggedJson<T>(value: T, path = 'data'): T {
  return visit(value, { base: path, keys: [], ancestors: [], keep: true }) as T
}

// Walk state: `keys` is the path from the root to the value being visited
// and `ancestors` the containers on that path. The path string is built only
// on failure, so the happy path allocates little beyond the copy itself.
// Module-level functions (no per-call closures) keep this hot path cheap.
interface Walk {
  readonly base: string
  readonly keys: Key[]
  readonly ancestors: object[]
  /** Whether a part that is already immutable lossless JSON is kept instead of copied. */
  readonly keep: boolean
}

/**
 * One constructor per key count, each making plain objects (prototype Object.prototype). Why: V8 sizes a
 * constructor's objects to the fields they come to hold (slack tracking), where `{}` reserves four and spills a
 * fifth into a separate store, so a copy made here is as small as the literal it copies.
 */
const PLAIN: (new () => Record<string, unknown>)[] = Array.from({ length: 11 }, () => {
  function Plain(): void {}
  Plain.prototype = Object.prototype
  return Plain as unknown as new () => Record<string, unknown>
})

/** An empty plain object with room for `fields` fields and no more (see PLAIN). */
function plainObject(fields: number): Record<string, unknown> {
  return fields < PLAIN.length ? new PLAIN[fields]() : {}
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
  if (walk.keep && Object.isFrozen(v) && immutableJson(v, ancestors)) return v
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
    const names = Object.keys(src)
    const out = plainObject(names.length)
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

/**
 * Whether a frozen object is immutable lossless JSON all the way down, so that keeping it is as good as a copy: not a
 * proxy, a plain object or array, every own property an enumerable data property (read by its descriptor, so no getter
 * runs) whose value is a lossless leaf or again such an object. Never throws: anything else is left to the copy, which
 * refuses or copies it as it would any value (a frozen object is no proof by itself: it may hold a Date or a getter).
 */
function immutableJson(v: object, ancestors: object[]): boolean {
  if (types.isProxy(v) || ancestors.includes(v) || ancestors.length >= MAX_JSON_DEPTH) return false
  const array = Array.isArray(v)
  if (Object.getPrototypeOf(v) !== (array ? Array.prototype : Object.prototype)) return false
  const own = Reflect.ownKeys(v)
  // an array's own keys are its indexes and `length`; anything more is a named property or a symbol
  if (array && own.length !== (v as unknown[]).length + 1) return false
  const count = array ? own.length - 1 : own.length
  ancestors.push(v)
  let ok = true
  for (let i = 0; ok && i < count; i++) {
    // an array is read by index (a hole has no descriptor), an object by its own keys
    const key = array ? i : own[i]
    const d = typeof key === 'symbol' ? undefined : Object.getOwnPropertyDescriptor(v, key)
    ok = d !== undefined && d.enumerable === true && 'value' in d && immutableLeafOrJson(d.value, ancestors)
  }
  ancestors.pop()
  return ok
}

function immutableLeafOrJson(v: unknown, ancestors: object[]): boolean {
  switch (typeof v) {
    case 'string':
      // flattened as the copy would (see visit)
      if (v.length > 12) v.charCodeAt(0)
      return true
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(v) && notMinusZero(v)
    case 'object':
      return v === null || (Object.isFrozen(v) && immutableJson(v, ancestors))
    default:
      return false
  }
}

/** Freezes an already-checked JSON value all the way down (for values built in-house, not taken from callers). */
export function deepFreeze<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v
  Object.freeze(v)
  for (const key of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[key])
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

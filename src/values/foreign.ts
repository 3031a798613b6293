// Values from outside (tool bodies, listeners, adapters, stored logs) are
// foreign: a property read may throw (getters, revoked proxies), `instanceof`
// may throw (a proxy's getPrototypeOf trap), String() may throw (null
// prototypes, hostile toString). These readers never throw, so the code that
// normalises foreign values into plain data cannot fail while it looks.

/** One property of a foreign value, or `undefined` when reading it throws. */
export function peek(value: unknown, key: PropertyKey): unknown {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return undefined
  try {
    return (value as Record<PropertyKey, unknown>)[key]
  } catch {
    return undefined
  }
}

/** `value instanceof type`, false when the check itself throws. */
export function isInstance<T>(value: unknown, type: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof type
  } catch {
    return false
  }
}

/** A record: a non-null object that is not an array; the one such check in src/, and it answers false for a revoked proxy (Array.isArray throws on one). */
export function isRecordLike(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  try {
    return !Array.isArray(value)
  } catch {
    return false
  }
}

/** `Array.isArray` that answers false instead of throwing. */
export function isArrayLike(value: unknown): value is unknown[] {
  try {
    return Array.isArray(value)
  } catch {
    return false
  }
}

/**
 * A reader for the fields of one foreign value, for normalisers: a read that throws becomes a
 * TypeError that names the field and what it threw, so the caller's error reads as one sentence.
 */
export function fieldsOf(value: unknown, what: string): (key: string) => unknown {
  return (key) => {
    try {
      return (value as Record<string, unknown>)[key]
    } catch (error) {
      throw new TypeError(`${what}: reading ${key} threw: ${describeThrown(error)}`, { cause: error })
    }
  }
}

/** What a thrown value says about itself, in one line; never throws. */
export function describeThrown(thrown: unknown): string {
  if (typeof thrown === 'string') return thrown
  const message = peek(thrown, 'message')
  if (typeof message === 'string' && message !== '') return message
  return describeValue(thrown)
}

/** A short rendering of any value for an error message: JSON where it has one, else its kind; never throws. */
export function describeValue(value: unknown, max = 80): string {
  switch (typeof value) {
    case 'string':
      return clip(JSON.stringify(value), max)
    case 'bigint':
      return `${value}n`
    case 'symbol':
      return value.toString()
    case 'function':
      return 'a function'
    case 'undefined':
      return 'undefined'
    case 'number':
    case 'boolean':
      return String(value)
  }
  if (value === null) return 'null'
  try {
    const seen = new WeakSet<object>()
    const json = JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'bigint') return `${v}n`
      if (typeof v === 'object' && v !== null) {
        if (seen.has(v)) return '[cycle]'
        seen.add(v)
      }
      return v
    })
    if (json !== undefined) return clip(json, max)
  } catch {
    // a throwing getter or toJSON, a revoked proxy: fall through to the kind
  }
  try {
    return Object.prototype.toString.call(value)
  } catch {
    return 'an unreadable value'
  }
}

/** Newlines and runs of blanks become one space: an error message stays one line. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ')
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text
}

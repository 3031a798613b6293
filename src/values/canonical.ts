// Canonical JSON: one serialisation per value whatever the order its keys were
// written in, so equal headers, route records and schemas compare as equal strings.

/** Sort object keys so equal headers and route records serialize equally. */
export function canonical(value: unknown): string {
  // the plain JSON the log holds is written by hand; anything else takes the general path
  return plainCanonical(value, 0) ?? general(value)
}

/** The reference form: JSON.stringify with every object rebuilt with sorted keys (integer-like keys first, as objects order them). */
function general(value: unknown): string {
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

const ARRAY_INDEX = /^(?:0|[1-9]\d*)$/
/** Past this depth the general path decides (and reports a cycle the way JSON.stringify does). */
const MAX_DEPTH = 64

/**
 * `general(value)` for plain JSON (strings, finite numbers, booleans, null, plain arrays and objects), written
 * without the replacer's rebuilt objects; undefined for anything else. Why: it runs on every request header of a
 * new agent, tool schemas included, and the replacer's copies made it the dearest part of preparing one.
 */
function plainCanonical(v: unknown, depth: number): string | undefined {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v)
    case 'boolean':
      return v ? 'true' : 'false'
    case 'number':
      return Number.isFinite(v) ? JSON.stringify(v) : undefined
    case 'object':
      break
    default:
      return undefined
  }
  if (v === null) return 'null'
  if (depth > MAX_DEPTH) return undefined
  const proto: unknown = Object.getPrototypeOf(v)
  if (Array.isArray(v)) {
    if (proto !== Array.prototype || 'toJSON' in v) return undefined
    let out = '['
    for (let i = 0; i < v.length; i++) {
      const el = plainCanonical(v[i], depth + 1)
      if (el === undefined) return undefined
      out += i === 0 ? el : `,${el}`
    }
    return `${out}]`
  }
  if (proto !== Object.prototype || 'toJSON' in v) return undefined
  const record = v as Record<string, unknown>
  const keys = Object.keys(record)
  // objects list array-index keys first, ascending; the rebuilt object of the reference keeps them there
  let indexed = 0
  while (indexed < keys.length && ARRAY_INDEX.test(keys[indexed]) && Number(keys[indexed]) < 4294967295) indexed++
  const named = keys.slice(indexed).sort()
  let out = '{'
  let first = true
  for (const key of indexed === 0 ? named : [...keys.slice(0, indexed), ...named]) {
    const el = plainCanonical(record[key], depth + 1)
    if (el === undefined) return undefined
    out += `${first ? '' : ','}${JSON.stringify(key)}:${el}`
    first = false
  }
  return `${out}}`
}

// Canonical JSON: one serialisation per value whatever the order its keys were
// written in, so equal headers, route records and schemas compare as equal strings.

/** Sort object keys so equal headers and route records serialize equally. */
export function canonical(value: unknown): string {
  // the plain JSON the log holds is written by hand; anything else takes the general path
  const parts: string[] = []
  return writePlain(value, 0, parts) ? parts.join('') : general(value)
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
 * Writes `general(value)` for plain JSON (strings, finite numbers, booleans, null, plain arrays and objects) into
 * `out`, without the replacer's rebuilt objects; false for anything else. Why: it runs on every request header of a
 * new agent, tool schemas included, and the replacer's copies made it the dearest part of preparing one. The parts
 * are joined once, so the key is one flat string rather than a tree of concatenations that the agent keeps.
 */
function writePlain(v: unknown, depth: number, out: string[]): boolean {
  switch (typeof v) {
    case 'string':
      out.push(JSON.stringify(v))
      return true
    case 'boolean':
      out.push(v ? 'true' : 'false')
      return true
    case 'number':
      if (!Number.isFinite(v)) return false
      out.push(JSON.stringify(v))
      return true
    case 'object':
      break
    default:
      return false
  }
  if (v === null) {
    out.push('null')
    return true
  }
  if (depth > MAX_DEPTH) return false
  const proto: unknown = Object.getPrototypeOf(v)
  if (Array.isArray(v)) {
    if (proto !== Array.prototype || 'toJSON' in v) return false
    out.push('[')
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out.push(',')
      if (!writePlain(v[i], depth + 1, out)) return false
    }
    out.push(']')
    return true
  }
  if (proto !== Object.prototype || 'toJSON' in v) return false
  const record = v as Record<string, unknown>
  const keys = Object.keys(record)
  // objects list array-index keys first, ascending; the rebuilt object of the reference keeps them there
  let indexed = 0
  while (indexed < keys.length && ARRAY_INDEX.test(keys[indexed]) && Number(keys[indexed]) < 4294967295) indexed++
  const named = keys.slice(indexed).sort()
  out.push('{')
  let first = true
  for (const key of indexed === 0 ? named : [...keys.slice(0, indexed), ...named]) {
    out.push(first ? '' : ',', JSON.stringify(key), ':')
    if (!writePlain(record[key], depth + 1, out)) return false
    first = false
  }
  out.push('}')
  return true
}

/** Structural equality of two lossless JSON values (key order aside). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  if (ka.length !== Object.keys(b).length) return false
  return ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

// The exact credentials an adapter sent, cut out of everything it reports.
// Patterns (failure.ts) catch the shapes keys usually have; a provider that
// echoes a key of any other shape is caught only by knowing the key itself.
import { isInstance } from '../values/foreign.js'
import { LlmError, redactSecrets } from './failure.js'

const REDACTED = '[redacted]'

/** Shorter secrets are not cut out: replacing every "abc" would garble messages and hide nothing worth hiding. */
const MIN_SECRET_LENGTH = 4

/** Copies of nested values deeper than this are cut off (a cause chain or body is never this deep). */
const MAX_DEPTH = 16

/** Replaces what an adapter sent with `[redacted]` in a text. */
export type Redactor = (text: string) => string

/** How a secret may reappear in an echo: as sent, percent-encoded (a URL), percent-decoded, JSON-escaped. */
function formsOf(secret: string): string[] {
  const forms = [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)]
  try {
    forms.push(decodeURIComponent(secret))
  } catch {
    // not percent-encoded: nothing to add
  }
  return forms
}

/**
 * The credentials a base URL carries in its user-info: the password (as written and decoded), the
 * `user:password` pair, and a lone user name only when there is no password (a token, as in
 * `https://<token>@host`); a user name beside a password is an ordinary name and stays.
 */
export function urlCredentials(url: string | undefined): string[] {
  if (url === undefined) return []
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return []
  }
  const { username, password } = parsed
  if (password) return [password, `${username}:${password}`]
  return username ? [username] : []
}

/**
 * A function that replaces each of `secrets` (in every form an echo may take), then the patterns of
 * `redactSecrets`, with `[redacted]`. Why: the adapter knows exactly what it sent, whatever its shape.
 */
export function credentialRedactor(secrets: Iterable<string | null | undefined>): Redactor {
  const forms = new Set<string>()
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) continue
    for (const form of formsOf(secret)) if (form.length >= MIN_SECRET_LENGTH) forms.add(form)
  }
  // longest first: a secret that contains another is cut out whole
  const ordered = [...forms].sort((a, b) => b.length - a.length)
  return (text) => {
    let out = text
    for (const form of ordered) if (out.includes(form)) out = out.split(form).join(REDACTED)
    return redactSecrets(out)
  }
}

/**
 * A copy of `value` with every string in it redacted: errors keep their class, name, message, stack
 * and cause; plain objects, arrays and `Headers` are copied; other objects (sockets, streams, class
 * instances with internal state) are left out, as are accessors, since either could hand the secret
 * back. Why: an error's cause is reported with it (to `agent/error` listeners, to a caller of the
 * adapter), and an SDK error holds the provider's whole echo: body, headers, message.
 */
export function redactedCopy(value: unknown, redact: Redactor): unknown {
  const copies = new Map<object, unknown>()
  const copy = (x: unknown, depth: number): unknown => {
    if (typeof x === 'string') return redact(x)
    if (typeof x !== 'object' || x === null) return typeof x === 'function' ? undefined : x
    if (copies.has(x)) return copies.get(x)
    if (depth > MAX_DEPTH) return undefined
    if (isInstance(x, Headers)) {
      const headers = new Headers()
      for (const [name, v] of x) headers.set(name, redact(v))
      copies.set(x, headers)
      return headers
    }
    const isError = isInstance(x, Error)
    const proto = Object.getPrototypeOf(x) as object | null
    const plain = Array.isArray(x) || proto === Object.prototype || proto === null
    if (!isError && !plain) return undefined
    const out = (Array.isArray(x) ? [] : Object.create(proto)) as Record<PropertyKey, unknown>
    copies.set(x, out)
    for (const key of Reflect.ownKeys(x)) {
      const descriptor = Object.getOwnPropertyDescriptor(x, key)
      if (descriptor === undefined || !('value' in descriptor)) continue
      const inner = copy(descriptor.value, depth + 1)
      if (inner === undefined && descriptor.value !== undefined) continue
      Object.defineProperty(out, key, { ...descriptor, value: inner })
    }
    // an engine may keep the stack behind an accessor, which the loop above leaves out
    if (isError && !Object.prototype.hasOwnProperty.call(out, 'stack')) {
      const stack = x.stack
      if (typeof stack === 'string') Object.defineProperty(out, 'stack', { value: redact(stack), writable: true, configurable: true })
    }
    return out
  }
  try {
    return copy(value, 0)
  } catch {
    // a hostile value (throwing getters, revoked proxies): only its description survives
    return new Error(REDACTED)
  }
}

/**
 * The LlmError an adapter reports, with its credentials cut out of its facts and its cause.
 * Why: everything reported (the log, a run() result, a listener, the viewer, the demo) starts here.
 */
export function withoutCredentials(error: LlmError, redact: Redactor): LlmError {
  const { failure } = error
  const facts = { ...failure, message: redact(failure.message), ...(failure.requestId !== undefined ? { requestId: redact(failure.requestId) } : {}) }
  const clean = new LlmError(facts, error.cause === undefined ? undefined : redactedCopy(error.cause, redact))
  clean.name = error.name
  if (typeof error.stack === 'string') clean.stack = redact(error.stack)
  return clean
}

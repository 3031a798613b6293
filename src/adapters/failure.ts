// Model failures as plain facts: whatever an adapter throws is turned into a
// frozen, serializable LlmFailure (BEHAVIOURS 1.5, TU-13).
import { isInstance, peek } from '../values/foreign.js'
import { LlmFailureSchema, type LlmFailure } from '../session/schemas.js'

/** The facts an LlmError or a failure finish is built from; bad optional facts are dropped. */
export interface LlmFailureInit {
  message: string
  code: string
  status?: number
  providerRetryAfterMs?: number
  requestId?: string
}

const UNKNOWN_MESSAGE = 'unknown error'
const MAX_CAUSE_DEPTH = 32

function nonEmptyString(x: unknown): string | undefined {
  return typeof x === 'string' && x.length > 0 ? x : undefined
}

const REDACTED = '[redacted]'
/** Credentials a provider or a transport may echo back in an error text. */
const SECRETS: ReadonlyArray<[RegExp, string]> = [
  // an Authorization (or Proxy-Authorization) header value, whatever its scheme
  [/((?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token|digest)\s+)?[^\s"',;]+/gi, `$1${REDACTED}`],
  // a bare bearer or basic credential
  [/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}/gi, `$1 ${REDACTED}`],
  // key headers: x-api-key, api-key, x-goog-api-key
  [/\b((?:x-(?:goog-)?)?api-key["']?\s*[:=]\s*["']?)[^\s"',;&]+/gi, `$1${REDACTED}`],
  // key and token query values: ?api_key=..., &access_token=..., &key=...
  [/([?&;](?:api[_-]?key|apikey|key|access[_-]?token|token|secret|password)=)[^\s&#"']+/gi, `$1${REDACTED}`],
  // api_key=... outside a query string
  // (a JSON field too: the name's closing quote may stand before the colon, as in {"api_key":"..."})
  [/\b((?:api[_-]?key|apikey|access[_-]?token|secret[_-]?key)["']?\s*[=:]\s*["']?)[^\s"',;&]+/gi, `$1${REDACTED}`],
  // provider key formats: sk-..., sk-proj-..., sk-ant-...
  [/\bsk-[A-Za-z0-9_-]{8,}/g, REDACTED],
  // a URL's user-info: the password of scheme://user:password@host, up to the authority's last @
  // (the user name stays)
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*:)[^\s/?#]+@/gi, `$1${REDACTED}@`],
  // a URL whose user-info is a lone token, as in https://<token>@github.com
  [/(\b[a-z][a-z0-9+.-]*:\/\/)[A-Za-z0-9._~-]{16,}@/gi, `$1${REDACTED}@`],
]

/**
 * The text with credentials replaced by `[redacted]`: Authorization values, bearer tokens,
 * `sk-…` keys, key headers, `api_key=` style query values and the password (or lone token) of a
 * URL's user-info.
 * Why: providers echo the request's credentials in some error bodies, and a failure's message is
 * logged, shown and sent to listeners; secrets must not reach any of them.
 */
export function redactSecrets(text: string): string {
  let out = text
  for (const [pattern, replacement] of SECRETS) out = out.replace(pattern, replacement)
  return out
}

/**
 * Builds a frozen LlmFailure that always satisfies LlmFailureSchema.
 * Why: adapters hand us loose facts (empty status text, NaN retry hints); a
 * failure must still be loggable, so invalid optional facts are dropped and an
 * empty message or code gets a placeholder instead of throwing.
 */
export function llmFailure(init: LlmFailureInit): LlmFailure {
  const out: {
    message: string
    code: string
    status?: number
    providerRetryAfterMs?: number
    requestId?: string
  } = {
    message: redactSecrets(nonEmptyString(peek(init, 'message')) ?? UNKNOWN_MESSAGE),
    code: nonEmptyString(peek(init, 'code')) ?? 'UNKNOWN',
  }
  const status = peek(init, 'status')
  const providerRetryAfterMs = peek(init, 'providerRetryAfterMs')
  const requestId = peek(init, 'requestId')
  if (typeof status === 'number' && Number.isInteger(status) && status >= 100 && status <= 599) out.status = status
  if (typeof providerRetryAfterMs === 'number' && Number.isFinite(providerRetryAfterMs) && providerRetryAfterMs > 0) {
    out.providerRetryAfterMs = providerRetryAfterMs
  }
  const id = nonEmptyString(requestId)
  if (id !== undefined) out.requestId = id
  return Object.freeze(out)
}

/**
 * A harness-coded model error: its `failure` facts survive normalization verbatim (TU-13).
 * `cause` is positional (`new LlmError(facts, error)`) and becomes the standard `Error.cause`.
 */
export class LlmError extends Error {
  readonly failure: LlmFailure
  constructor(failure: LlmFailureInit, cause?: unknown) {
    const facts = llmFailure(failure)
    super(facts.message, cause === undefined ? undefined : { cause })
    this.name = 'LlmError'
    this.failure = facts
  }

  /** The stable, provider-neutral code (same as `failure.code`). */
  get code(): string {
    return this.failure.code
  }
}

/** A thrown non-Error: its own string `message`, else its string conversion ('' when it has none). */
function plainMessage(x: unknown): string {
  if (typeof x === 'string') return x
  if (typeof x === 'object' && x !== null) {
    const message = peek(x, 'message')
    if (typeof message === 'string') return message
  }
  try {
    return String(x)
  } catch {
    return '' // e.g. Object.create(null) has no toString
  }
}

/** An Error's message followed by its cause chain, joined by ': ' (cycles and repeats skipped). */
function chainMessage(error: Error): string {
  const parts: string[] = []
  const seen = new Set<unknown>()
  let current: unknown = error
  while (current !== undefined && current !== null && !seen.has(current) && seen.size < MAX_CAUSE_DEPTH) {
    seen.add(current)
    const isError = isInstance(current, Error)
    const message = isError ? peek(current, 'message') : plainMessage(current)
    const text = typeof message === 'string' ? message : ''
    if (text.length > 0 && parts[parts.length - 1] !== text) parts.push(text)
    current = isError ? peek(current, 'cause') : undefined
  }
  return parts.join(': ')
}

/**
 * Normalizes anything thrown into LlmFailure facts (TU-13).
 * Why: turn/end{error}, failure finishes and recovery hooks need serializable
 * facts, never live Error objects; coded errors keep their facts, the rest is UNKNOWN.
 */
export function toLlmFailure(thrown: unknown): LlmFailure {
  try {
    if (isInstance(thrown, LlmError)) return thrown.failure
    if (typeof thrown === 'object' && thrown !== null) {
      const carried = peek(thrown, 'failure')
      if (carried !== undefined) {
        const failure = carriedFailure(carried)
        if (failure !== undefined) return failure
      }
    }
    const message = isInstance(thrown, Error) ? chainMessage(thrown) : plainMessage(thrown)
    return llmFailure({ message, code: 'UNKNOWN' })
  } catch {
    // a hostile value (throwing getters, revoked proxy) still normalizes
    return llmFailure({ message: UNKNOWN_MESSAGE, code: 'UNKNOWN' })
  }
}

/** A failure another library carries: trusted when it is valid, as a plain frozen copy with secrets redacted. */
function carriedFailure(carried: unknown): LlmFailure | undefined {
  let parsed
  try {
    parsed = LlmFailureSchema.safeParse(carried)
  } catch {
    return undefined // a hostile carrier: described like any thrown value
  }
  return parsed.success ? llmFailure(parsed.data) : undefined
}

/** Renders an abort reason: a cancel cause `{kind, reason?}`, an Error, or anything else. */
function describeReason(reason: unknown): string {
  if (typeof reason === 'object' && reason !== null && !(reason instanceof Error)) {
    const { kind, reason: detail } = reason as { kind?: unknown; reason?: unknown }
    if (typeof kind === 'string') return typeof detail === 'string' && detail.length > 0 ? `${kind} (${detail})` : kind
  }
  return reason instanceof Error ? chainMessage(reason) : plainMessage(reason)
}

/**
 * The failure of a request stopped by its signal (code ABORTED).
 * Why: an aborted stream must still end with a terminal finish{aborted{failure}}.
 */
export function abortedFailure(reason?: unknown): LlmFailure {
  let detail: string
  try {
    detail = reason === undefined ? '' : describeReason(reason)
  } catch {
    detail = ''
  }
  return llmFailure({ message: detail ? `request aborted: ${detail}` : 'request aborted', code: 'ABORTED' })
}

/** The provider's retry hint from its response headers: `retry-after-ms`, else `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(header: (name: string) => string | null | undefined, now: number = Date.now()): number | undefined {
  const positive = (n: number) => (Number.isFinite(n) && n > 0 ? n : undefined)
  const ms = header('retry-after-ms')?.trim()
  if (ms) {
    const value = positive(Number(ms))
    if (value !== undefined) return value
  }
  const after = header('retry-after')?.trim()
  if (!after) return undefined
  const seconds = Number(after)
  if (!Number.isNaN(seconds)) return positive(seconds * 1000)
  const date = Date.parse(after)
  return Number.isNaN(date) ? undefined : positive(date - now)
}

const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'ConnectionRefused', 'ConnectionClosed'])

/** A socket failure of fetch/undici: `TypeError: fetch failed`/`terminated`, or a coded system error in the cause chain. */
export function isNetworkError(x: unknown): boolean {
  let current: unknown = x
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const code = peek(current, 'code')
    const message = peek(current, 'message')
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || code.startsWith('UND_ERR'))) return true
    if (isInstance(current, TypeError) && (message === 'terminated' || message === 'fetch failed')) return true
    current = peek(current, 'cause')
  }
  return false
}

// Model failures as plain facts: whatever an adapter throws is turned into a
// frozen, serializable LlmFailure (BEHAVIOURS 1.5, TU-13).
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
    message: nonEmptyString(init?.message) ?? UNKNOWN_MESSAGE,
    code: nonEmptyString(init?.code) ?? 'UNKNOWN',
  }
  const { status, providerRetryAfterMs, requestId } = init ?? {}
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

/** A thrown non-Error: its own string `message`, else its string conversion. */
function plainMessage(x: unknown): string {
  if (typeof x === 'string') return x
  if (typeof x === 'object' && x !== null) {
    const message = (x as { message?: unknown }).message
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
    const text = current instanceof Error ? current.message : plainMessage(current)
    if (text.length > 0 && parts[parts.length - 1] !== text) parts.push(text)
    current = current instanceof Error ? current.cause : undefined
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
    if (thrown instanceof LlmError) return thrown.failure
    if (typeof thrown === 'object' && thrown !== null && 'failure' in thrown) {
      const carried = thrown.failure
      const parsed = LlmFailureSchema.safeParse(carried)
      if (parsed.success) return Object.isFrozen(carried) ? (carried as LlmFailure) : Object.freeze(parsed.data)
    }
    const message = thrown instanceof Error ? chainMessage(thrown) : plainMessage(thrown)
    return llmFailure({ message, code: 'UNKNOWN' })
  } catch {
    // a hostile value (throwing getters, revoked proxy) still normalizes
    return llmFailure({ message: UNKNOWN_MESSAGE, code: 'UNKNOWN' })
  }
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

// What an AI SDK model threw (or reported in an `error` stream part) as an
// LlmError with a provider-neutral code. The SDK's error classes are read by
// their names and fields (APICallError: statusCode, responseHeaders,
// isRetryable), never imported, so `ai` stays out of the dependencies.
import { isInstance, peek } from '../values/foreign.js'
import { abortedFailure, isNetworkError, LlmError, retryAfterMs, toLlmFailure } from './failure.js'

const CONTEXT_TEXT = /context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long|reduce the length/i

/** The AI SDK's own error names, and the code each stands for. */
const NAMED_CODES: Readonly<Record<string, string>> = {
  AI_LoadAPIKeyError: 'MISSING_CREDENTIAL',
  AI_NoSuchModelError: 'UNKNOWN_MODEL',
  AI_EmptyResponseBodyError: 'INVALID_RESPONSE',
  AI_JSONParseError: 'MALFORMED_RESPONSE',
  AI_TypeValidationError: 'MALFORMED_RESPONSE',
  AI_InvalidResponseDataError: 'MALFORMED_RESPONSE',
  AI_UnsupportedFunctionalityError: 'UNSUPPORTED_OPTION',
  AI_InvalidPromptError: 'INVALID_REQUEST',
  AI_InvalidArgumentError: 'INVALID_REQUEST',
}

/** An LlmError named AbortError with code ABORTED, for a request stopped by its signal. */
export function abortError(signal: AbortSignal, cause?: unknown): LlmError {
  const error = new LlmError(abortedFailure(signal.reason), cause ?? signal.reason)
  error.name = 'AbortError'
  return error
}

interface FailureContext {
  readonly provider: string
  readonly signal: AbortSignal
  /** Request id of the response, when its headers named one. */
  readonly requestId?: string
  /** True for the value of an `error` part inside a stream that had started (a provider-side failure). */
  readonly inStream?: boolean
}

/**
 * Maps what an AI SDK model threw to an LlmError:
 * APICallError by status (401 INVALID_CREDENTIAL, 403 AUTH, 402 QUOTA, 404 UNKNOWN_MODEL,
 * 408 TIMEOUT, 429 RATE_LIMIT with its retry-after, or QUOTA for insufficient_quota,
 * 400/413/422 CONTEXT_WINDOW_EXCEEDED or INVALID_REQUEST, 5xx SERVER, other 4xx INVALID_REQUEST),
 * without a status TRANSPORT (the SDK's "Cannot connect" errors); abort ABORTED; the SDK's named
 * errors (missing key, unknown model, unparseable data...) their codes; a provider's error event
 * inside the stream SERVER unless its type names rate limits, credentials or the context window;
 * socket errors TRANSPORT; anything else UNKNOWN.
 */
export function toAiSdkError(thrown: unknown, context: FailureContext): LlmError {
  if (isInstance(thrown, LlmError)) return thrown
  const { provider, signal } = context
  const name = peek(thrown, 'name')
  if (signal.aborted || name === 'AbortError' || name === 'ResponseAborted') return abortError(signal, thrown)
  const say = (message: string) => `${provider}: ${message}`
  const message = toLlmFailure(thrown).message
  const base = context.requestId !== undefined ? { requestId: context.requestId } : {}
  if (name === 'TimeoutError') return new LlmError({ ...base, message: say(message), code: 'TIMEOUT' }, thrown)
  if (isApiCallError(thrown)) return apiCallError(thrown, say, base)
  if (typeof name === 'string' && name in NAMED_CODES) return new LlmError({ ...base, message: say(message), code: NAMED_CODES[name] }, thrown)
  if (isNetworkError(thrown)) return new LlmError({ ...base, message: say(message), code: 'TRANSPORT' }, thrown)
  if (context.inStream === true) return new LlmError({ ...base, message: say(eventMessage(thrown, message)), code: eventCode(thrown) }, thrown)
  return new LlmError({ ...base, message: say(message), code: 'UNKNOWN' }, thrown)
}

/** APICallError, duck-typed: its name, or a url with a statusCode or isRetryable flag. */
function isApiCallError(x: unknown): boolean {
  if (peek(x, 'name') === 'AI_APICallError') return true
  return typeof peek(x, 'url') === 'string' && (typeof peek(x, 'statusCode') === 'number' || typeof peek(x, 'isRetryable') === 'boolean')
}

function apiCallError(thrown: unknown, say: (m: string) => string, base: { requestId?: string }): LlmError {
  const status = peek(thrown, 'statusCode')
  const headers = headerReader(peek(thrown, 'responseHeaders'))
  const requestId = headers('x-request-id') ?? headers('request-id') ?? base.requestId
  const message = say(toLlmFailure(thrown).message)
  const facts = { message, ...(requestId !== undefined ? { requestId } : {}) }
  if (typeof status !== 'number') {
    // the SDK wraps a failed connection as an APICallError without a status
    return new LlmError({ ...facts, code: 'TRANSPORT' }, thrown)
  }
  const body = peek(thrown, 'responseBody')
  const text = `${message} ${typeof body === 'string' ? body : ''}`
  return new LlmError({ ...facts, status, code: statusCode(status, text), providerRetryAfterMs: retryAfterMs(headers) }, thrown)
}

function statusCode(status: number, text: string): string {
  if (status === 401) return 'INVALID_CREDENTIAL'
  if (status === 403) return 'AUTH'
  if (status === 402) return 'QUOTA'
  if (status === 404) return 'UNKNOWN_MODEL'
  if (status === 408) return 'TIMEOUT'
  if (status === 429) return /insufficient_quota/i.test(text) ? 'QUOTA' : 'RATE_LIMIT'
  if (status >= 500) return 'SERVER'
  if ((status === 400 || status === 413 || status === 422) && CONTEXT_TEXT.test(text)) return 'CONTEXT_WINDOW_EXCEEDED'
  return 'INVALID_REQUEST'
}

/** The text an in-stream error event carries: its message, else its type or code. */
function eventMessage(event: unknown, fallback: string): string {
  const nested = peek(event, 'error')
  for (const source of [event, nested]) {
    const message = peek(source, 'message')
    if (typeof message === 'string' && message !== '') return message
  }
  const kind = peek(event, 'type') ?? peek(event, 'code')
  return typeof kind === 'string' && kind !== '' ? kind : fallback
}

/** An error event's code from the words its type, code and message use (e.g. Anthropic's overloaded_error). */
function eventCode(event: unknown): string {
  const nested = peek(event, 'error')
  const words = [event, nested]
    .flatMap((source) => ['type', 'code', 'message'].map((key) => peek(source, key)))
    .filter((x): x is string => typeof x === 'string')
    .join(' ')
  if (CONTEXT_TEXT.test(words)) return 'CONTEXT_WINDOW_EXCEEDED'
  if (/insufficient_quota|billing/i.test(words)) return 'QUOTA'
  if (/rate[ _-]?limit/i.test(words)) return 'RATE_LIMIT'
  if (/authentication/i.test(words)) return 'INVALID_CREDENTIAL'
  if (/permission/i.test(words)) return 'AUTH'
  if (/invalid[ _-]?request/i.test(words)) return 'INVALID_REQUEST'
  return 'SERVER'
}

/** A case-insensitive reader of a plain header record (or Headers). */
function headerReader(headers: unknown): (name: string) => string | undefined {
  if (isInstance(headers, Headers)) return (name) => headers.get(name) ?? undefined
  const entries = new Map<string, string>()
  if (typeof headers === 'object' && headers !== null) {
    try {
      for (const [key, value] of Object.entries(headers)) if (typeof value === 'string') entries.set(key.toLowerCase(), value)
    } catch {
      // a hostile record: no headers
    }
  }
  return (name) => entries.get(name)
}

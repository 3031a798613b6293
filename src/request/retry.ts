// The retry policy (RQ-14): which failed requests are tried again, and after
// how long. It only decides; the attempt machine logs `llm/retry`, waits in
// its cancellable backoff state, logs `llm/retry-started` and tries again.
import { ConfigError } from '../errors.js'
import type { LlmFailure } from '../session/schemas.js'
import { describeValue } from '../values/foreign.js'
import { MAX_TIMER_MS } from '../values/timer.js'

/** The codes worth another try by default: transient on the provider's side. */
export const DEFAULT_RETRYABLE_CODES: readonly string[] = Object.freeze(['EMPTY_RESPONSE', 'RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT'])

export interface RetryPolicyOptions {
  /** Retries per step after the first attempt; default 3. 0 never retries. */
  maxRetries?: number
  /** The cap of the first retry's delay, doubled for each further retry; default 1000 ms. */
  baseDelayMs?: number
  /** No delay is longer, a provider's Retry-After included; default 30000 ms. */
  maxDelayMs?: number
  /** Codes (or a test of the failure) worth retrying; default DEFAULT_RETRYABLE_CODES. */
  retryable?: readonly string[] | ((failure: LlmFailure) => boolean)
  /** The source of jitter, in [0, 1); default Math.random (tests pass their own). */
  random?: () => number
}

/** What a recovery listener may return: retry (after `delayMs`, in the machine's backoff state) or give up. */
export type RequestErrorAction = { kind: 'retry'; delayMs?: number } | undefined

/** What the policy reads of an `agent/request-error` payload. */
export interface RetryPayload {
  failure: LlmFailure
  /** The attempt that failed, 1 for the step's first request. */
  attempt: number
}

export const RETRY_DEFAULTS = Object.freeze({ maxRetries: 3, baseDelayMs: 1000, maxDelayMs: 30_000 })

/** A count (`integer`) or a delay, which a timer must be able to wait (at most MAX_TIMER_MS). */
function nonNegative(name: string, value: unknown, fallback: number, integer: boolean, at: string): number {
  if (value === undefined) return fallback
  const bad = typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (integer ? !Number.isSafeInteger(value) : value > MAX_TIMER_MS)
  if (bad) {
    const what = integer ? 'a non-negative integer' : `a number of milliseconds from 0 to ${MAX_TIMER_MS}`
    throw new ConfigError(`retryPolicy: ${name} must be ${what}, got ${describeValue(value)}`, { path: `${at}${name}` })
  }
  return value
}

interface Normalized {
  maxRetries: number
  baseDelayMs: number
  maxDelayMs: number
  isRetryable: (failure: LlmFailure) => boolean
  random: () => number
}

const RETRY_OPTIONS: readonly string[] = ['maxRetries', 'baseDelayMs', 'maxDelayMs', 'retryable', 'random']

/** The policy's options, checked; `at` prefixes each error's path (`retry.` when createAgent's `retry` gave them). */
function normalize(options: RetryPolicyOptions, at = ''): Normalized {
  if (typeof options !== 'object' || options === null) throw new ConfigError('retryPolicy: options must be an object')
  // a misspelt option would otherwise leave its default in force unnoticed
  const unknown = Object.keys(options).find((key) => !RETRY_OPTIONS.includes(key))
  if (unknown !== undefined)
    throw new ConfigError(`retryPolicy: unknown option ${unknown}; the options are ${RETRY_OPTIONS.join(', ')}`, { path: `${at}${unknown}` })
  const maxRetries = nonNegative('maxRetries', options.maxRetries, RETRY_DEFAULTS.maxRetries, true, at)
  const baseDelayMs = nonNegative('baseDelayMs', options.baseDelayMs, RETRY_DEFAULTS.baseDelayMs, false, at)
  const maxDelayMs = nonNegative('maxDelayMs', options.maxDelayMs, Math.max(RETRY_DEFAULTS.maxDelayMs, baseDelayMs), false, at)
  if (maxDelayMs < baseDelayMs) throw new ConfigError('retryPolicy: maxDelayMs must not be below baseDelayMs', { path: `${at}maxDelayMs` })
  const { retryable = DEFAULT_RETRYABLE_CODES, random = Math.random } = options
  let isRetryable: (failure: LlmFailure) => boolean
  if (typeof retryable === 'function') isRetryable = retryable
  else if (Array.isArray(retryable) && retryable.every((c) => typeof c === 'string')) {
    const codes = new Set(retryable)
    isRetryable = (failure) => codes.has(failure.code)
  } else throw new ConfigError('retryPolicy: retryable must be an array of codes or a function of the failure', { path: `${at}retryable` })
  if (typeof random !== 'function') throw new ConfigError('retryPolicy: random must be a function', { path: `${at}random` })
  return { maxRetries, baseDelayMs, maxDelayMs, isRetryable, random }
}

/**
 * The decision for one failure, or undefined to give up.
 * Why: exponential backoff with full jitter spreads clients out after an
 * outage; a provider's own Retry-After is what it asked for, so it is used as
 * is (capped at maxDelayMs) instead of the jittered delay.
 */
function decide(policy: Normalized, { failure, attempt }: RetryPayload): RequestErrorAction {
  const retry = attempt // the retry this would be: after attempt 1 fails, retry 1
  if (retry > policy.maxRetries || !policy.isRetryable(failure)) return undefined
  const hinted = failure.providerRetryAfterMs
  if (hinted !== undefined) return { kind: 'retry', delayMs: Math.round(Math.min(hinted, policy.maxDelayMs)) || 0 }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1))
  // a random() outside [0, 1] is clamped into it, and one that is not a number counts as 0
  const drawn = policy.random()
  const jitter = typeof drawn === 'number' && drawn > 0 ? Math.min(drawn, 1) : 0
  return { kind: 'retry', delayMs: Math.floor(jitter * ceiling) }
}

/**
 * A ready `agent/request-error` listener: retries retryable failures with
 * exponential backoff and full jitter, at most `maxRetries` times per step,
 * and otherwise leaves the decision to the rest of the chain (`next()`).
 * Why: every agent needs the same backoff; options are checked here, once.
 */
export function retryPolicy(options: RetryPolicyOptions = {}) {
  const policy = normalize(options)
  return (payload: RetryPayload, next: () => Promise<RequestErrorAction>): RequestErrorAction | Promise<RequestErrorAction> => decide(policy, payload) ?? next()
}

/** The policy as the default decision of `agent/request-error` (what the chain falls back to). */
export function defaultRetry(options: false | RetryPolicyOptions | undefined): ((payload: RetryPayload) => RequestErrorAction) | undefined {
  if (options === false) return undefined
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new ConfigError('retry must be false or retry policy options', { path: 'retry' })
  }
  const policy = normalize(options ?? {}, 'retry.')
  return (payload) => decide(policy, payload)
}

/** The default backoff wait: a timer that a cancel ends at once (the machine has left its backoff then). */
export function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

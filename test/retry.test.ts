// The retry policy's decisions on their own: which failures are retried, how
// many times, and after how long (full jitter, capped; Retry-After honoured).
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../src/index.js'
import { DEFAULT_RETRYABLE_CODES, retryPolicy, type RetryPolicyOptions } from '../src/request/retry.js'

const fail = (code: string, providerRetryAfterMs?: number) => ({ message: code, code, ...(providerRetryAfterMs ? { providerRetryAfterMs } : {}) })
const giveUp = Symbol('next')

/** The policy's answer, or `giveUp` when it leaves the decision to the rest of the chain. */
async function decide(options: RetryPolicyOptions, code: string, attempt: number, retryAfter?: number) {
  return retryPolicy(options)({ failure: fail(code, retryAfter), attempt }, async () => giveUp as never)
}

describe('retryPolicy', () => {
  it('retries the default retryable codes and leaves every other code to next()', async () => {
    expect(DEFAULT_RETRYABLE_CODES).toEqual(['EMPTY_RESPONSE', 'RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT'])
    for (const code of DEFAULT_RETRYABLE_CODES) expect(await decide({}, code, 1)).toMatchObject({ kind: 'retry' })
    for (const code of ['AUTH', 'INVALID_REQUEST', 'QUOTA', 'CONTEXT_WINDOW_EXCEEDED', 'ABORTED', 'UNKNOWN']) expect(await decide({}, code, 1)).toBe(giveUp)
  })

  it('exponential backoff with full jitter: a random share of base * 2^(retry-1), capped at maxDelayMs', async () => {
    const at = (random: number, attempt: number) => decide({ baseDelayMs: 100, maxDelayMs: 1000, random: () => random, maxRetries: 10 }, 'SERVER', attempt)
    expect(await at(0.5, 1)).toEqual({ kind: 'retry', delayMs: 50 })
    expect(await at(0.5, 2)).toEqual({ kind: 'retry', delayMs: 100 })
    expect(await at(0.5, 3)).toEqual({ kind: 'retry', delayMs: 200 })
    expect(await at(0.999, 5)).toEqual({ kind: 'retry', delayMs: 999 }) // 1600 capped at 1000
    expect(await at(0, 4)).toEqual({ kind: 'retry', delayMs: 0 })
  })

  it('retries at most maxRetries times per step (the attempt that failed counts them)', async () => {
    expect(await decide({ maxRetries: 2 }, 'SERVER', 2)).toMatchObject({ kind: 'retry' })
    expect(await decide({ maxRetries: 2 }, 'SERVER', 3)).toBe(giveUp)
    expect(await decide({ maxRetries: 0 }, 'SERVER', 1)).toBe(giveUp)
  })

  it("a provider's Retry-After is the delay, up to the cap", async () => {
    expect(await decide({ random: () => 0.99 }, 'RATE_LIMIT', 1, 1500)).toEqual({ kind: 'retry', delayMs: 1500 })
    expect(await decide({ maxDelayMs: 5000 }, 'RATE_LIMIT', 1, 120_000)).toEqual({ kind: 'retry', delayMs: 5000 })
  })

  it('retryable may be a list of codes or a test of the failure', async () => {
    expect(await decide({ retryable: ['QUOTA'] }, 'QUOTA', 1)).toMatchObject({ kind: 'retry' })
    expect(await decide({ retryable: ['QUOTA'] }, 'SERVER', 1)).toBe(giveUp)
    expect(await decide({ retryable: (f) => f.message.startsWith('SER') }, 'SERVER', 1)).toMatchObject({ kind: 'retry' })
  })

  it('bad options are refused when the policy is made', () => {
    expect(() => retryPolicy({ maxRetries: -1 })).toThrow(ConfigError)
    expect(() => retryPolicy({ maxRetries: 1.5 })).toThrow(/maxRetries must be a non-negative integer/)
    expect(() => retryPolicy({ baseDelayMs: Number.NaN })).toThrow(/baseDelayMs/)
    expect(() => retryPolicy({ baseDelayMs: 500, maxDelayMs: 100 })).toThrow(/maxDelayMs must not be below baseDelayMs/)
    expect(() => retryPolicy({ retryable: 'SERVER' as never })).toThrow(/retryable/)
  })
})

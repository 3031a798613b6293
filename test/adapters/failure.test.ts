import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { abortedFailure, llmFailure, LlmError, toLlmFailure } from '../../src/adapters/failure.js'
import { LlmFailureSchema } from '../../src/session/schemas.js'

describe('LlmError', () => {
  it('carries frozen facts and its message', () => {
    const cause = new Error('socket closed')
    const error = new LlmError({ message: 'rate limited', code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 1500, requestId: 'req_1' }, cause)
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('LlmError')
    expect(error.message).toBe('rate limited')
    expect(error.code).toBe('RATE_LIMIT')
    expect(error.cause).toBe(cause)
    expect(error.failure).toEqual({ message: 'rate limited', code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 1500, requestId: 'req_1' })
    expect(Object.isFrozen(error.failure)).toBe(true)
  })

  it('drops invalid optional facts instead of throwing', () => {
    const error = new LlmError({ message: '', code: '', status: 42, providerRetryAfterMs: Number.NaN, requestId: '' })
    expect(error.failure).toEqual({ message: 'unknown error', code: 'UNKNOWN' })
    expect(Object.keys(error.failure)).toEqual(['message', 'code'])
  })
})

describe('toLlmFailure', () => {
  it('TU-13 keeps the facts of a harness LLM error verbatim', () => {
    const error = new LlmError({ message: 'overloaded', code: 'SERVER', status: 529, providerRetryAfterMs: 2000, requestId: 'r-9' })
    const failure = toLlmFailure(error)
    expect(failure).toBe(error.failure)
    expect(failure).toEqual({ message: 'overloaded', code: 'SERVER', status: 529, providerRetryAfterMs: 2000, requestId: 'r-9' })
  })

  it('TU-13 keeps the facts of any object carrying a valid failure', () => {
    const carrier = { name: 'ForeignLlmError', failure: { message: 'quota', code: 'QUOTA', status: 402 } }
    const failure = toLlmFailure(carrier)
    expect(failure).toEqual({ message: 'quota', code: 'QUOTA', status: 402 })
    expect(Object.isFrozen(failure)).toBe(true)
  })

  it('TU-13 an invalid carried failure is not trusted', () => {
    expect(toLlmFailure({ failure: { message: '', code: 'X' }, message: 'outer' })).toEqual({ message: 'outer', code: 'UNKNOWN' })
  })

  it('TU-13 renders the whole cause chain of an Error', () => {
    const inner = new Error('inner')
    const middle = new Error('middle', { cause: inner })
    expect(toLlmFailure(new Error('outer', { cause: middle }))).toEqual({ message: 'outer: middle: inner', code: 'UNKNOWN' })
  })

  it('TU-13 a coded error inside a cause chain does not lend its code', () => {
    const coded = new LlmError({ message: 'timeout', code: 'TIMEOUT' })
    expect(toLlmFailure(new Error('scheduler failed', { cause: coded }))).toEqual({ message: 'scheduler failed: timeout', code: 'UNKNOWN' })
  })

  it('TU-13 non-Error causes and cycles render safely', () => {
    const a = new Error('a')
    const b = new Error('b', { cause: a })
    ;(a as { cause?: unknown }).cause = b
    expect(toLlmFailure(b).message).toBe('b: a')
    expect(toLlmFailure(new Error('x', { cause: 'plain cause' })).message).toBe('x: plain cause')
    expect(toLlmFailure(new Error('x', { cause: { message: 'obj cause' } })).message).toBe('x: obj cause')
  })

  it('TU-13 thrown non-Errors: own string message, else string conversion', () => {
    expect(toLlmFailure({ message: 'shaped like an error' })).toEqual({ message: 'shaped like an error', code: 'UNKNOWN' })
    expect(toLlmFailure({ message: 42 })).toEqual({ message: '[object Object]', code: 'UNKNOWN' })
    expect(toLlmFailure({})).toEqual({ message: '[object Object]', code: 'UNKNOWN' })
    expect(toLlmFailure('just a string')).toEqual({ message: 'just a string', code: 'UNKNOWN' })
    expect(toLlmFailure(404)).toEqual({ message: '404', code: 'UNKNOWN' })
    expect(toLlmFailure(undefined)).toEqual({ message: 'undefined', code: 'UNKNOWN' })
  })

  it('TU-13 an empty message becomes "unknown error"', () => {
    expect(toLlmFailure(new Error(''))).toEqual({ message: 'unknown error', code: 'UNKNOWN' })
    expect(toLlmFailure('')).toEqual({ message: 'unknown error', code: 'UNKNOWN' })
    expect(toLlmFailure(Object.create(null))).toEqual({ message: 'unknown error', code: 'UNKNOWN' })
  })

  it('TU-13 never throws on hostile values', () => {
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error('trap')
        },
        has: () => {
          throw new Error('trap')
        },
      },
    )
    expect(toLlmFailure(hostile)).toEqual({ message: 'unknown error', code: 'UNKNOWN' })
  })

  it('TU-13 the result is frozen and satisfies LlmFailureSchema for anything thrown', () => {
    fc.assert(
      fc.property(fc.anything(), (thrown) => {
        const failure = toLlmFailure(thrown)
        expect(Object.isFrozen(failure)).toBe(true)
        expect(LlmFailureSchema.safeParse(failure).success).toBe(true)
      }),
    )
  })
})

describe('TU-13 credentials in a URL', () => {
  it('the password of a URL user-info is redacted, the user name and host stay', () => {
    const failure = toLlmFailure(new Error('GET https://alice:hunter2@api.example.com/v1/x failed'))
    expect(failure.message).not.toMatch(/hunter2/)
    expect(failure.message).toContain('https://alice:[redacted]@api.example.com/v1/x')
  })

  it("a password holding @ or : is redacted up to the authority's last @", () => {
    const message = toLlmFailure(new Error('connect postgres://svc:p@ss:w0rd@db:5432/app refused; ftp://u:x@h')).message
    expect(message).not.toMatch(/p@ss|w0rd/)
    expect(message).toContain('postgres://svc:[redacted]@db:5432/app')
    expect(message).toContain('ftp://u:[redacted]@h')
  })

  it('a lone token as user-info is redacted; URLs without user-info and e-mail addresses are kept', () => {
    const message = toLlmFailure(
      new Error('clone https://ghp_0123456789abcdefABCDEF@github.com/o/r failed; see https://example.com/a@b and mail ops@example.com'),
    ).message
    expect(message).not.toMatch(/ghp_0123456789/)
    expect(message).toContain('https://[redacted]@github.com/o/r')
    expect(message).toContain('https://example.com/a@b')
    expect(message).toContain('ops@example.com')
  })
})

describe('abortedFailure and llmFailure', () => {
  it('abortedFailure has code ABORTED and names the reason', () => {
    expect(abortedFailure()).toEqual({ message: 'request aborted', code: 'ABORTED' })
    expect(abortedFailure({ kind: 'user' })).toEqual({ message: 'request aborted: user', code: 'ABORTED' })
    expect(abortedFailure({ kind: 'hook', reason: 'budget' }).message).toBe('request aborted: hook (budget)')
    expect(abortedFailure(new Error('gone')).message).toBe('request aborted: gone')
    expect(Object.isFrozen(abortedFailure('x'))).toBe(true)
  })

  it('llmFailure keeps only valid facts', () => {
    expect(llmFailure({ message: 'm', code: 'C', status: 503.5, providerRetryAfterMs: -1 })).toEqual({ message: 'm', code: 'C' })
    expect(llmFailure({ message: 'm', code: 'C', status: 503, providerRetryAfterMs: 10 })).toEqual({
      message: 'm',
      code: 'C',
      status: 503,
      providerRetryAfterMs: 10,
    })
  })
})

describe('TU-13 credentials in a JSON body', () => {
  it('a key in a JSON field {"api_key":"..."} is redacted, the quote between name and colon notwithstanding', () => {
    const message = toLlmFailure(new Error('rejected {"api_key":"q9Zx71Lm0PpT","access_token": "tok-88aa77bb", "model":"m"}')).message
    expect(message).not.toMatch(/q9Zx71Lm0PpT|tok-88aa77bb/)
    expect(message).toContain('{"api_key":"[redacted]","access_token": "[redacted]", "model":"m"}')
  })
})

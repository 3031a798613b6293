// Lease defaults shared by every store: who a holder is, how long a lease
// lasts, and the checks on what callers pass in.
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { ConfigError } from '../errors.js'
import { MAX_TIMER_MS } from '../values/timer.js'
import type { OpenSessionOptions } from './types.js'

/** A lease lapses this long after its last renewal unless configured otherwise. */
export const DEFAULT_LEASE_MS = 15_000

/** `<hostname>:<pid>:<random>`: enough for an operator to find the process that drives a session. */
export function defaultHolder(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
}

/** The holder names of serveSessions workers start with this; a session such a holder left is an orphan to re-offer. */
export const WORKER_PREFIX = 'worker:'

/**
 * Session ids are non-empty strings of at most 512 characters (they are primary keys) with no lone surrogate: a
 * store's text column would write one as U+FFFD, and the id listed would not be the id opened.
 */
export function checkSessionId(sessionId: unknown): string {
  if (typeof sessionId !== 'string' || sessionId === '' || sessionId.length > 512) {
    throw new ConfigError(`a session id must be a non-empty string of at most 512 characters, got ${JSON.stringify(sessionId) ?? String(sessionId)}`, {
      path: 'sessionId',
    })
  }
  const lone = LONE_SURROGATE.exec(sessionId)
  if (lone !== null)
    throw new ConfigError(`a session id must be well-formed text: ${JSON.stringify(sessionId)} has a lone surrogate at ${lone.index}`, { path: 'sessionId' })
  return sessionId
}

/** A surrogate that is not half of a pair (with the `u` flag a pair is one code point and does not match). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u

/** The holder and lease length an open asked for, checked. */
export function leaseRequest(options: OpenSessionOptions | undefined): { holder: string; leaseMs: number } {
  const leaseMs = options?.leaseMs ?? DEFAULT_LEASE_MS
  // at most the longest a Node timer waits: the lease is renewed a third of the way through
  if (typeof leaseMs !== 'number' || !Number.isSafeInteger(leaseMs) || leaseMs < 10 || leaseMs > MAX_TIMER_MS) {
    throw new ConfigError(`leaseMs must be an integer number of milliseconds from 10 to ${MAX_TIMER_MS}, got ${String(leaseMs)}`, { path: 'leaseMs' })
  }
  const holder = options?.holder ?? defaultHolder()
  if (typeof holder !== 'string' || holder === '') throw new ConfigError('holder must be a non-empty string', { path: 'holder' })
  if (options?.check !== undefined && typeof options.check !== 'function') throw new ConfigError('check must be a function', { path: 'check' })
  return { holder, leaseMs }
}

// memoryStore(): sessions kept in this process, as JSON text, with the same
// lease and fencing rules as the durable stores. For tests and for agents
// that only need the store API; nothing survives the process.
import { SessionInUseError, StoreError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'
import { checkSessionId, leaseRequest } from './lease.js'
import { checkBatch, decodeRows, type StoredRow } from './rows.js'
import { settled } from './sync.js'
import type { Lease, OpenSessionOptions, SessionHandle, SessionInfo, SessionStore } from './types.js'

interface Stored {
  readonly id: string
  readonly createdAt: number
  updatedAt: number
  readonly rows: StoredRow[]
  holder: string | null
  token: number
  expiresAt: number
}

/** A store in memory (tests, single-process tools): same contract, no durability. */
export function memoryStore(): SessionStore {
  const sessions = new Map<string, Stored>()
  let closed = false
  const assertOpen = (id: string) => {
    if (closed) throw new StoreError('STORE_CLOSED', id, 'this memory store is closed')
  }

  function handle(stored: Stored, created: boolean, events: readonly unknown[], lease: Lease, leaseMs: number): SessionHandle {
    const { id } = stored
    const fence = () => {
      assertOpen(id)
      if (stored.token !== lease.token) {
        throw new StoreError('LEASE_LOST', id, `session ${id}: the lease of ${lease.holder} (token ${lease.token}) was taken over (token ${stored.token})`)
      }
    }
    return {
      sessionId: id,
      created,
      events,
      lease,
      append(batch: readonly SessionEvent[]) {
        fence()
        checkBatch(id, stored.rows.length, batch)
        const rows = batch.map((event) => ({ seq: event.seq, event: JSON.stringify(event) }))
        for (const row of rows) stored.rows.push(row)
        stored.updatedAt = Date.now()
        stored.expiresAt = stored.updatedAt + leaseMs
      },
      renew() {
        return settled(() => {
          fence()
          stored.expiresAt = Date.now() + leaseMs
        })
      },
      release() {
        if (stored.token === lease.token && stored.holder !== null) {
          stored.holder = null
          stored.expiresAt = 0
        }
        return Promise.resolve()
      },
    }
  }

  return {
    kind: 'memory',
    open(sessionId: string, options?: OpenSessionOptions) {
      return settled(() => {
        const id = checkSessionId(sessionId)
        assertOpen(id)
        const { holder, leaseMs } = leaseRequest(options)
        const now = Date.now()
        const existing = sessions.get(id)
        if (existing && existing.holder !== null && existing.expiresAt > now) throw new SessionInUseError(id, existing.holder, existing.expiresAt)
        const events = existing ? decodeRows(id, existing.rows) : []
        options?.check?.(events)
        const stored: Stored = existing ?? { id, createdAt: now, updatedAt: now, rows: [], holder: null, token: 0, expiresAt: 0 }
        stored.token++
        stored.holder = holder
        stored.expiresAt = now + leaseMs
        sessions.set(id, stored)
        const lease = Object.freeze({ holder, token: stored.token, expiresAt: stored.expiresAt })
        return handle(stored, existing === undefined, events, lease, leaseMs)
      })
    },
    load(sessionId: string) {
      return settled(() => {
        const id = checkSessionId(sessionId)
        assertOpen(id)
        const stored = sessions.get(id)
        return stored ? decodeRows(id, stored.rows) : undefined
      })
    },
    list(options?: { limit?: number }) {
      const now = Date.now()
      const all = [...sessions.values()]
        .sort((a, b) => b.updatedAt - a.updatedAt)
        .slice(0, options?.limit ?? Infinity)
        .map((s): SessionInfo => ({
          id: s.id,
          createdAt: s.createdAt,
          updatedAt: s.updatedAt,
          length: s.rows.length,
          lease: s.holder !== null && s.expiresAt > now ? { holder: s.holder, expiresAt: s.expiresAt } : null,
        }))
      return Promise.resolve(all)
    },
    close() {
      closed = true
      return Promise.resolve()
    },
  }
}

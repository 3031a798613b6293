// memoryStore(): sessions kept in this process, as JSON text, with the same
// lease and fencing rules as the durable stores. For tests and for agents
// that only need the store API; nothing survives the process.
import { SessionInUseError, StoreError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'
import { ChunkFolder, checkChunkRetention, type ChunkRetention } from './fold.js'
import { checkSessionId, leaseRequest } from './lease.js'
import { checkBatch, decodeRows, type StoredRow } from './rows.js'
import { settled } from './sync.js'
import type { Lease, OpenSessionOptions, SessionHandle, SessionInfo, SessionStore } from './types.js'

interface Stored {
  readonly id: string
  readonly createdAt: number
  updatedAt: number
  rows: StoredRow[]
  /** Stored events (a folded row holds several). */
  length: number
  holder: string | null
  token: number
  expiresAt: number
}

export interface MemoryStoreOptions {
  /** What happens to a finished step's `assistant/chunk` rows (default 'fold'; docs/persistence.md, chunk retention). */
  chunks?: ChunkRetention
}

/** A store in memory (tests, single-process tools): same contract, no durability. */
export function memoryStore(options: MemoryStoreOptions = {}): SessionStore {
  const retention = checkChunkRetention(options?.chunks)
  const sessions = new Map<string, Stored>()
  let closed = false
  const assertOpen = (id: string) => {
    if (closed) throw new StoreError('STORE_CLOSED', id, 'this memory store is closed')
  }

  function handle(stored: Stored, created: boolean, events: readonly unknown[], lease: Lease, leaseMs: number): SessionHandle {
    const { id } = stored
    const folder = new ChunkFolder(retention, events)
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
        checkBatch(id, stored.length, batch)
        const plan = folder.plan(batch)
        const gone = new Set(plan.drop)
        for (const row of plan.rows) if (row.replaces) gone.add(row.seq)
        const kept = gone.size === 0 ? stored.rows : stored.rows.filter((row) => !gone.has(row.seq))
        for (const row of plan.rows) kept.push({ seq: row.seq, event: row.event })
        // a fold row replaces rows older than others kept: keep seq order for decodeRows
        if (gone.size > 0) kept.sort((a, b) => a.seq - b.seq)
        stored.rows = kept
        stored.length += batch.length
        plan.commit()
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
        const stored: Stored = existing ?? { id, createdAt: now, updatedAt: now, rows: [], length: 0, holder: null, token: 0, expiresAt: 0 }
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
          length: s.length,
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

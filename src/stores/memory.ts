// memoryStore(): sessions kept in this process, as JSON text, with the same
// lease and fencing rules as the durable stores. For tests and for agents
// that only need the store API; nothing survives the process.
import { SessionInUseError, StoreError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'
import { ChunkFolder, checkChunkRetention, type ChunkRetention } from './fold.js'
import { checkSessionId, leaseRequest } from './lease.js'
import { checkBatch, decodeRows, readRange, type StoredRow } from './rows.js'
import { parseCheckpoint } from './checkpoint.js'
import { settled } from './sync.js'
import type { CheckpointText, Lease, OpenSessionOptions, SessionHandle, SessionInfo, SessionStore } from './types.js'
import { MAILBOX, MailboxError, RidingMail, wakes, type MailboxBackend, type MailBody, type MailRecord, type SessionQueue } from './mailbox.js'
import { scanningQueue, SignalHub } from './local-queue.js'

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
  /** The latest checkpoint committed with a batch, or null. */
  checkpoint: CheckpointText | null
}

export interface MemoryStoreOptions {
  /** What happens to a finished step's `assistant/chunk` rows (default 'fold'; docs/persistence.md, chunk retention). */
  chunks?: ChunkRetention
}

/** A store in memory (tests, single-process tools): same contract, no durability. */
export function memoryStore(options: MemoryStoreOptions = {}): SessionStore {
  const retention = checkChunkRetention(options?.chunks)
  const sessions = new Map<string, Stored>()
  /** Mailbox rows, oldest first; consumed ones are dropped. */
  const mail: MailRecord[] = []
  let mailSeq = 0
  const signals = new SignalHub()
  const rides = new WeakMap<SessionHandle, { riding: RidingMail; token: number; stored: Stored }>()
  let closed = false
  const assertOpen = (id: string) => {
    if (closed) throw new StoreError('STORE_CLOSED', id, 'this memory store is closed')
  }

  function handle(stored: Stored, created: boolean, events: readonly unknown[], from: number, lease: Lease, leaseMs: number): SessionHandle {
    const { id } = stored
    const folder = new ChunkFolder(retention, events)
    const fence = () => {
      assertOpen(id)
      if (stored.token !== lease.token) {
        throw new StoreError('LEASE_LOST', id, `session ${id}: the lease of ${lease.holder} (token ${lease.token}) was taken over (token ${stored.token})`)
      }
    }
    const riding = new RidingMail()
    const handle: SessionHandle = {
      sessionId: id,
      created,
      events,
      from,
      read: (start, end) => readRange(id, stored.rows, start, end),
      lease,
      append(batch: readonly SessionEvent[], checkpoint?: CheckpointText) {
        fence()
        checkBatch(id, stored.length, batch)
        const riders = riding.take(batch[batch.length - 1].seq + 1)
        consume(riders.ids)
        riders.settle()
        const plan = folder.plan(batch)
        const gone = new Set(plan.drop)
        for (const row of plan.rows) if (row.replaces) gone.add(row.seq)
        const kept = gone.size === 0 ? stored.rows : stored.rows.filter((row) => !gone.has(row.seq))
        for (const row of plan.rows) kept.push({ seq: row.seq, event: row.event })
        // a fold row replaces rows older than others kept: keep seq order for decodeRows
        if (gone.size > 0) kept.sort((a, b) => a.seq - b.seq)
        stored.rows = kept
        stored.length += batch.length
        if (checkpoint !== undefined && checkpoint.length <= stored.length) stored.checkpoint = { length: checkpoint.length, text: checkpoint.text }
        plan.commit()
        stored.updatedAt = Date.now()
        stored.expiresAt = stored.updatedAt + leaseMs
        signals.emit({ kind: 'commit', sessionId: id })
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
    rides.set(handle, { riding, token: lease.token, stored })
    return handle
  }

  /** Drops consumed rows (the caller checked the lease). */
  function consume(ids: readonly string[]): void {
    if (ids.length === 0) return
    const gone = new Set(ids)
    for (let i = mail.length - 1; i >= 0; i--) if (gone.has(mail[i].id)) mail.splice(i, 1)
  }

  const live = (s: Stored, now: number) => s.holder !== null && s.expiresAt > now
  let queue: SessionQueue | undefined
  const mailbox: MailboxBackend = {
    post(sessionId: string, body: MailBody) {
      return settled(() => {
        const id = checkSessionId(sessionId)
        assertOpen(id)
        const stored = sessions.get(id)
        if (stored === undefined) throw new MailboxError('SESSION_UNKNOWN', `no session ${id} in this memory store`, { path: 'sessionId' })
        const record: MailRecord = { id: String(++mailSeq), sessionId: id, body: JSON.parse(JSON.stringify(body)) as MailBody }
        mail.push(record)
        signals.emit({ kind: 'mail', sessionId: id })
        return { ...record, held: live(stored, Date.now()) }
      })
    },
    tail: (sessionId, fromSeq) =>
      settled(() => {
        const stored = sessions.get(sessionId)
        return stored === undefined ? undefined : decodeRows(sessionId, stored.rows).slice(fromSeq)
      }),
    pending: (sessionId) => settled(() => mail.filter((row) => row.sessionId === sessionId)),
    pendingCount: (sessionId) => settled(() => mail.filter((row) => row.sessionId === sessionId).length),
    info: (sessionId) => settled(() => infoOf(sessions.get(sessionId), Date.now())),
    held(handle) {
      const mine = rides.get(handle)
      if (mine === undefined) throw new MailboxError('MAILBOX_UNSUPPORTED', `session ${handle.sessionId}: this handle was not opened by this memory store`)
      return {
        expect: (ids, length) =>
          mine.riding.expect(ids, length, (alone) =>
            settled(() => {
              assertOpen(handle.sessionId)
              if (mine.stored.token !== mine.token)
                throw new StoreError('LEASE_LOST', handle.sessionId, `session ${handle.sessionId}: the lease was taken over`)
              consume(alone)
            }),
          ),
      }
    },
    subscribe: (listener) => signals.subscribe(listener),
    ready: () => Promise.resolve(),
    orphans(workerPrefix, limit, sessionId) {
      const now = Date.now()
      const candidates = sessionId === undefined ? [...sessions.values()] : [sessions.get(sessionId)].filter((s) => s !== undefined)
      const found = candidates.filter(
        (s) => !live(s, now) && ((s.holder !== null && s.holder.startsWith(workerPrefix)) || mail.some((row) => row.sessionId === s.id && wakes(row.body))),
      )
      return Promise.resolve(found.slice(0, limit).map((s) => s.id))
    },
    queue: () => (queue ??= scanningQueue(() => mailbox, 50)),
  }

  const store: SessionStore & { [MAILBOX]: MailboxBackend } = {
    [MAILBOX]: mailbox,
    kind: 'memory',
    open(sessionId: string, options?: OpenSessionOptions) {
      return settled(() => {
        const id = checkSessionId(sessionId)
        assertOpen(id)
        const { holder, leaseMs } = leaseRequest(options)
        const now = Date.now()
        const existing = sessions.get(id)
        if (existing && existing.holder !== null && existing.expiresAt > now) throw new SessionInUseError(id, existing.holder, existing.expiresAt)
        // from a checkpoint: only the tail after it is read here; the opener reads what else it needs through `read`
        const saved = options?.checkpoint === true && existing?.checkpoint ? parseCheckpoint(existing.checkpoint.text) : undefined
        const from = saved !== undefined && saved.length <= existing!.length ? saved.length : 0
        const events = existing ? (from > 0 ? readRange(id, existing.rows, from, existing.length) : decodeRows(id, existing.rows)) : []
        if (from > 0) {
          const rows = existing!.rows
          options?.check?.(events, { checkpoint: saved!.value, length: existing!.length, read: (start, end) => readRange(id, rows, start, end) })
        } else options?.check?.(events)
        const stored: Stored = existing ?? {
          id,
          createdAt: now,
          updatedAt: now,
          rows: [],
          length: 0,
          holder: null,
          token: 0,
          expiresAt: 0,
          checkpoint: null,
        }
        stored.token++
        stored.holder = holder
        stored.expiresAt = now + leaseMs
        sessions.set(id, stored)
        const lease = Object.freeze({ holder, token: stored.token, expiresAt: stored.expiresAt })
        return handle(stored, existing === undefined, events, from, lease, leaseMs)
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
        .map((s) => infoOf(s, now)!)
      return Promise.resolve(all)
    },
    close() {
      closed = true
      return Promise.resolve()
    },
  }
  return store
}

function infoOf(s: Stored | undefined, now: number): SessionInfo | undefined {
  if (s === undefined) return undefined
  return {
    id: s.id,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    length: s.length,
    lease: s.holder !== null && s.expiresAt > now ? { holder: s.holder, expiresAt: s.expiresAt } : null,
  }
}

// The store contract: where a session log lives between processes. A store
// opens (or creates) a session under a lease, hands back what it holds, and
// commits batches that continue it; every commit is fenced by the lease.
import type { SessionEvent } from '../session/schemas.js'
import type { StoredCheckpoint } from './checkpoint.js'

/** Who drives a session, until when, and the fencing token every commit carries. */
export interface Lease {
  /** Names the driver in SESSION_IN_USE errors: host, pid and a random suffix unless given. */
  readonly holder: string
  /** Grows by one at every successful open; a writer whose token is stale can no longer commit. */
  readonly token: number
  /** Epoch ms at which the lease lapses unless renewed (commits and the renewal timer extend it). */
  readonly expiresAt: number
}

export interface OpenSessionOptions {
  /** Names this driver (default: `<hostname>:<pid>:<random>`). */
  holder?: string
  /** How long the lease lasts without renewal, ms (default 15 000). */
  leaseMs?: number
  /**
   * Runs on the stored events before anything is written; a throw fails the
   * open and leaves the store untouched (bad data is refused, never repaired blind).
   */
  check?: (events: readonly unknown[], stored?: StoredCheckpoint) => void
  /**
   * Open from the latest checkpoint where the store keeps one: `check` then gets it as `stored`, and `events`
   * (and the handle's `events`) hold only the tail after it, from seq `stored.checkpoint.length`
   * (docs/persistence.md, checkpoints). Stores without checkpoints ignore it and hand over the whole log.
   */
  checkpoint?: boolean
}

/** A checkpoint to commit with a batch: the JSON text, describing the events [0, length). */
export interface CheckpointText {
  readonly length: number
  readonly text: string
}

/** One opened session: its stored log and the lease under which this process may append. */
export interface SessionHandle {
  readonly sessionId: string
  /** True when this open created the session. */
  readonly created: boolean
  /** The stored events, parsed from JSON and checked for contiguous seqs (the session validates the rest). */
  readonly events: readonly unknown[]
  /** The seq of `events[0]`: past 0 when the open started from a checkpoint (absent: 0). */
  readonly from?: number
  /**
   * Reads stored events [from, to) synchronously, chunk rows expanded (PostgreSQL through a worker thread); absent
   * where no synchronous read exists (most custom stores): the session then keeps its whole log in memory.
   */
  readonly read?: (from: number, to: number) => readonly unknown[]
  /** True when `read` blocks this thread on another process (PostgreSQL's worker): the session reads back only old events, never what a turn needs. */
  readonly readBlocks?: boolean
  readonly lease: Lease
  /**
   * Commits `events` in one transaction. They must continue the stored log
   * (the first seq equals its length) and the lease token must still be
   * current; otherwise nothing is written and a StoreError (LEASE_LOST,
   * STORE_CONFLICT) is thrown. Synchronous stores return undefined. A store that keeps checkpoints stores
   * `checkpoint` in the same transaction (its length is at most the batch's end); others ignore it.
   */
  append(events: readonly SessionEvent[], checkpoint?: CheckpointText): void | Promise<void>
  /** Extends the lease; fails with LEASE_LOST once another driver took the session over. */
  renew(): Promise<void>
  /** Gives the lease up so the next opener need not wait for it to lapse; idempotent. */
  release(): Promise<void>
}

/** What `list()` tells about one stored session. */
export interface SessionInfo {
  readonly id: string
  /** Epoch ms. */
  readonly createdAt: number
  readonly updatedAt: number
  /** Number of stored events. */
  readonly length: number
  /** The live lease, or null when nobody drives the session (never opened, released, or lapsed). */
  readonly lease: { readonly holder: string; readonly expiresAt: number } | null
}

/** A place session logs live: memoryStore(), sqliteStore(), postgresStore(), or your own. */
export interface SessionStore {
  /** 'memory', 'sqlite', 'postgres', or a custom store's name. */
  readonly kind: string
  /**
   * Opens the session, creating it if it does not exist, and takes its lease.
   * Rejects with SESSION_IN_USE (naming the holder) while another driver's lease
   * is live, and with STORED_LOG_INVALID when the stored data is damaged.
   */
  open(sessionId: string, options?: OpenSessionOptions): Promise<SessionHandle>
  /** Reads a stored log without taking its lease (viewers, exports); undefined for an unknown session. */
  load(sessionId: string): Promise<readonly unknown[] | undefined>
  /** The stored sessions, most recently updated first. */
  list(options?: { limit?: number }): Promise<SessionInfo[]>
  /** Releases the store's resources (the file, the pool it created); handles fail afterwards. */
  close(): Promise<void>
}

// Stored rows in and out: every store keeps one JSON text per event keyed by
// (session, seq), or one per folded run of a step's chunks keyed by its first seq. Reading refuses gaps and malformed text by seq; writing
// refuses a batch that would not continue the log.
import { StoreError, StoredLogError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'
import { expandFolded } from './fold.js'

/**
 * What an open read, held weakly when it can be read again: the session keeps its own copy, so `events()` reads the
 * range again only if asked after it was collected. Why: a handle that held it would keep the whole validated log for
 * the agent's life. Without `readAgain` (no synchronous read) it is held as it is.
 */
export function weaklyHeld(events: readonly unknown[], readAgain?: () => readonly unknown[]): () => readonly unknown[] {
  return readAgain === undefined ? heldAsIs(events) : heldWeakly(new WeakRef(events), readAgain)
}

// apart, so that no closure of the weak holder shares a scope with the events themselves
const heldAsIs = (events: readonly unknown[]) => () => events

function heldWeakly(first: WeakRef<readonly unknown[]>, readAgain: () => readonly unknown[]): () => readonly unknown[] {
  let weak = first
  return () => {
    const held = weak.deref()
    if (held !== undefined) return held
    const again = readAgain()
    weak = new WeakRef(again)
    return again
  }
}

/** One stored event as a store reads it back. */
export interface StoredRow {
  readonly seq: number
  readonly event: string
}

/**
 * Parses rows (in seq order) into events, expanding folded chunk rows (fold.ts); a gap, malformed JSON or a
 * mismatched seq names the session and seq. `first` is the seq of the first row (a tail read starts past 0).
 */
export function decodeRows(sessionId: string, rows: readonly StoredRow[], first = 0): unknown[] {
  const events: unknown[] = []
  for (const row of rows) {
    const i = first + events.length
    const seq = Number(row.seq)
    if (seq !== i) {
      throw new StoredLogError(sessionId, i, seq > i ? `seq gap: seq ${i} is missing (the next stored seq is ${seq})` : `duplicate or unordered seq ${seq}`)
    }
    let event: unknown
    try {
      event = JSON.parse(row.event)
    } catch (error) {
      throw new StoredLogError(sessionId, i, `malformed JSON: ${(error as Error).message}`, { cause: error })
    }
    if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new StoredLogError(sessionId, i, 'the stored value is not an event object')
    const folded = expandFolded(sessionId, i, event)
    if (folded !== undefined) {
      for (const chunk of folded) events.push(chunk)
      continue
    }
    if ((event as { seq?: unknown }).seq !== i) {
      throw new StoredLogError(sessionId, i, `the stored event says seq ${JSON.stringify((event as { seq?: unknown }).seq)}`)
    }
    events.push(event)
  }
  return events
}

/** Checks a batch continues a log of `length` events with contiguous seqs (a store's own guard before its transaction). */
export function checkBatch(sessionId: string, length: number, events: readonly SessionEvent[]): void {
  for (let i = 0; i < events.length; i++) {
    if (events[i].seq !== length + i) {
      throw new StoreError(
        'STORE_CONFLICT',
        sessionId,
        `session ${sessionId}: a batch must continue the stored log at seq ${length + i}, got seq ${events[i].seq}`,
      )
    }
  }
}

/**
 * The events [from, to) of rows in seq order, chunk rows expanded: starts at the row holding `from` (a fold row's
 * first seq may come before it), found by binary search.
 */
export function readRange(sessionId: string, rows: readonly StoredRow[], from: number, to: number): unknown[] {
  if (to <= from) return []
  let lo = 0
  let hi = rows.length - 1
  let start = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (Number(rows[mid].seq) <= from) {
      start = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  if (start < 0) return []
  const picked: StoredRow[] = []
  for (let i = start; i < rows.length && Number(rows[i].seq) < to; i++) picked.push(rows[i])
  return sliceDecoded(sessionId, picked, from, to)
}

/** Decodes rows that begin at or before `from` and keeps the events [from, to). */
export function sliceDecoded(sessionId: string, rows: readonly StoredRow[], from: number, to: number): unknown[] {
  if (rows.length === 0) return []
  const first = Number(rows[0].seq)
  return decodeRows(sessionId, rows, first).slice(from - first, to - first)
}

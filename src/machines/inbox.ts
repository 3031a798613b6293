// The inbox as a pure projection of `agent/inbox/spliced` events (IN-2..IN-14):
// the machines, the public view and resume all fold splices with these.
import type { EventData, InboxTarget, UserMessage } from '../session/schemas.js'
import type { AgentEvent } from './types.js'

export type SpliceData = EventData<'agent/inbox/spliced'>

export interface InboxLists {
  readonly nextTurn: readonly UserMessage[]
  readonly nextStep: readonly UserMessage[]
}

/** Array.prototype.splice's start normalization (IN-3). */
export function normalizeStart(start: unknown, length: number): number {
  const n = typeof start === 'number' ? Math.trunc(start) : Number.NaN
  if (Number.isNaN(n)) return 0
  if (n < 0) return Math.max(length + n, 0)
  return Math.min(n, length)
}

/**
 * The normalized splice `splice(target, start, deleteCount?, ...inserted)` makes (IN-3), or null when it
 * would neither remove nor insert (IN-2). An omitted deleteCount with nothing to insert removes to the end.
 */
export function spliceOf(lists: InboxLists, target: InboxTarget, start: unknown, deleteCount: unknown, inserted: readonly UserMessage[]): SpliceData | null {
  const length = listOf(lists, target).length
  const at = normalizeStart(start, length)
  const wanted = deleteCount === undefined && inserted.length === 0 ? Infinity : typeof deleteCount === 'number' ? Math.trunc(deleteCount) : 0
  const count = Number.isNaN(wanted) ? 0 : Math.min(Math.max(wanted, 0), length - at)
  if (count === 0 && inserted.length === 0) return null
  return count > 0 ? { target, start: at, removedCount: count, inserted: [...inserted], outcome: 'canceled' } : { target, start: at, inserted: [...inserted] }
}

/** An id the lists hold more than once (IN-6), if any. */
export function duplicatePending(lists: InboxLists): string | null {
  const seen = new Set<string>()
  for (const message of [...lists.nextStep, ...lists.nextTurn]) {
    if (seen.has(message.id)) return message.id
    seen.add(message.id)
  }
  return null
}

/** The id an inbox request would leave pending twice (IN-6), or null (also for events that are not inbox requests). */
export function duplicatedBy(lists: InboxLists, event: AgentEvent): string | null {
  switch (event.type) {
    case 'inbox.send':
      return findPending(lists, event.message.id) ? event.message.id : null
    case 'inbox.replace': {
      const found = findPending(lists, event.id)
      if (!found) return null
      return duplicatePending(applySplice(lists, { target: found.target, start: found.index, removedCount: 1, inserted: [event.message] }))
    }
    case 'inbox.splice': {
      const splice = spliceOf(lists, event.target, event.start, event.deleteCount, event.messages)
      return splice && duplicatePending(applySplice(lists, splice))
    }
    default:
      return null
  }
}

export const alreadyPending = (id: string) => `message ${JSON.stringify(id)} is already pending (IN-6)`

/** The list a target names. */
export function listOf(lists: InboxLists, target: InboxTarget): readonly UserMessage[] {
  return target === 'next-turn' ? lists.nextTurn : lists.nextStep
}

/** Lists after applying one splice; throws when the splice does not fit the lists (IN-14). */
export function applySplice(lists: InboxLists, splice: SpliceData): InboxLists {
  const list = listOf(lists, splice.target)
  const removed = splice.removedCount ?? 0
  if (splice.start > list.length || splice.start + removed > list.length) {
    throw new RangeError(`splice at ${splice.start} removing ${removed} does not fit ${splice.target} of length ${list.length}`)
  }
  const next = [...list.slice(0, splice.start), ...splice.inserted, ...list.slice(splice.start + removed)]
  return splice.target === 'next-turn' ? { nextTurn: next, nextStep: lists.nextStep } : { nextTurn: lists.nextTurn, nextStep: next }
}

/** Where a pending id sits, if anywhere (IN-5, IN-6). */
export function findPending(lists: InboxLists, id: string): { target: InboxTarget; index: number } | null {
  let index = lists.nextStep.findIndex((m) => m.id === id)
  if (index >= 0) return { target: 'next-step', index }
  index = lists.nextTurn.findIndex((m) => m.id === id)
  if (index >= 0) return { target: 'next-turn', index }
  return null
}

/** True when either list holds work. */
export function hasPending(lists: InboxLists): boolean {
  return lists.nextTurn.length > 0 || lists.nextStep.length > 0
}

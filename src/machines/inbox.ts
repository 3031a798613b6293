// The inbox as a pure projection of `agent/inbox/spliced` events (IN-2..IN-14):
// the machines, the public view and resume all fold splices with these.
import type { EventData, InboxTarget, UserMessage } from '../session/schemas.js'

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

// The inbox, in one place: the pure projection of `agent/inbox/spliced`
// events (IN-2..IN-14) that the machines, the public view and resume all
// fold with; the draft steps that claim, insert and discard; and the named
// implementations of the inbox requests every machine accepts in every phase.
import type { EventData, InboxTarget, UserMessage } from '../session/schemas.js'
import { actionOn, baseSetup, guardOn, type Draft, named } from './setup.js'
import type { AgentEvent, CallerUndo, InboxLists } from './types.js'
import { forgetTurnOptions, queueTurnOptions, takeTurnOptions } from './turn-options.js'

export type SpliceData = EventData<'agent/inbox/spliced'>

// ---- the projection ----------------------------------------------------------

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

/** The text of the ALREADY_PENDING refusal. */
export const alreadyPending = (id: string) => `message ${JSON.stringify(id)} is already pending (IN-6)`

/** The text of the NOT_PENDING refusal (`inbox.remove` and `inbox.replace` answer false with it, IN-5). */
export const notPending = (id: string) => `message ${JSON.stringify(id)} is not pending`

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

// ---- draft steps ---------------------------------------------------------------

const listKey = (target: InboxTarget) => (target === 'next-turn' ? 'nextTurn' : 'nextStep')

/** What an API request may change beside the lists, as it was before the request (restored if its splice is refused). */
const undoOf = (d: Draft): CallerUndo => ({ wakeLatched: d.get('activity').wakeLatched })

/** Splice the next-step list (and at a turn boundary the first prompt) into the proposal's claim (IN-9). */
export function claimInbox(d: Draft, turnBoundary: boolean): void {
  const claimed: UserMessage[] = []
  const nextStep = d.get('nextStep')
  if (nextStep.length > 0) {
    d.append('agent/inbox/spliced', { target: 'next-step', start: 0, removedCount: nextStep.length, inserted: [] })
    claimed.push(...nextStep)
    d.set({ nextStep: [] })
  }
  const nextTurn = d.get('nextTurn')
  if (turnBoundary && nextTurn.length > 0) {
    d.append('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] })
    claimed.push(nextTurn[0])
    d.set({ nextTurn: nextTurn.slice(1) })
    takeTurnOptions(d, nextTurn[0].id)
  }
  const turn = d.get('turn')
  for (const message of claimed) d.notify('agent/inbox/claimed', { message, turn })
  d.set({ proposal: { claimed, entering: [], asked: false } })
}

/** Insert messages at the end of a list as one splice, then announce them (TL-12 tool contexts). */
export function insertInbox(d: Draft, target: InboxTarget, messages: readonly UserMessage[]): void {
  if (messages.length === 0) return
  const key = listKey(target)
  const list = d.get(key)
  d.append('agent/inbox/spliced', { target, start: list.length, inserted: [...messages] })
  d.set({ [key]: [...list, ...messages] })
  for (const message of messages) d.notify('agent/inbox/inserted', { message })
}

/** Durably discard one whole list as a canceled splice, then announce each message (IN-4). */
function discardList(d: Draft, target: InboxTarget, caller: CallerUndo): void {
  const key = listKey(target)
  const list = d.get(key)
  if (list.length === 0) return
  d.append('agent/inbox/spliced', { target, start: 0, removedCount: list.length, inserted: [], outcome: 'canceled' }, { caller })
  d.set({ [key]: [] })
  if (target === 'next-turn')
    forgetTurnOptions(
      d,
      list.map((m) => m.id),
    )
  for (const message of list) d.notify('agent/inbox/discarded', { message })
}

/** An API caller's clear: both lists, next-step first (IN-5), and the wake latch with them (CX-3). */
export function clearInbox(d: Draft): void {
  const caller = undoOf(d)
  discardList(d, 'next-step', caller)
  discardList(d, 'next-turn', caller)
  d.setActivity({ wakeLatched: false })
}

// ---- named implementations -------------------------------------------------------

const REQUESTS = ['inbox.send', 'inbox.replace', 'inbox.splice'] as const

export const inboxImplementations = named({
  actions: {
    /** IN-6: refuse a request that would leave an id pending twice; nothing is appended. */
    rejectDuplicate: actionOn(REQUESTS, (d, e) => {
      d.emit({ type: 'fx.reject', code: 'ALREADY_PENDING', message: alreadyPending(duplicatedBy(d.context, e) ?? '') })
    }),
    /** IN-1: insert at the end of the target; once the activity is cancelled a waking send waits in next-turn (CX-12, MT-5). */
    insertSent: actionOn(['inbox.send'], (d, e) => {
      const target: InboxTarget = e.wakeup && d.get('activity').cancelCause !== null ? 'next-turn' : e.target
      const key = listKey(target)
      const list = d.get(key)
      // next-step holds steers and injects alike: the log keeps which one this was
      const splice: SpliceData = { target, start: list.length, inserted: [e.message], ...(target === 'next-step' ? { wakeup: e.wakeup } : {}) }
      d.append('agent/inbox/spliced', splice, { caller: undoOf(d) })
      d.set({ [key]: [...list, e.message] })
      queueTurnOptions(d, e.message.id, target === 'next-turn' ? e.options : undefined)
      d.notify('agent/inbox/inserted', { message: e.message })
    }),
    /** A waking send the current activity cannot deliver is replayed when it converges (CX-12, MT-3). */
    latchWake: actionOn(['inbox.send'], (d) => d.setActivity({ wakeLatched: true })),
    /** IN-5: remove one pending message as a canceled splice. */
    removePending: actionOn(['inbox.remove'], (d, e) => {
      const found = findPending(d.context, e.id)
      if (!found) return d.emit({ type: 'fx.reject', code: 'NOT_PENDING', message: notPending(e.id) })
      const key = listKey(found.target)
      const list = d.get(key)
      d.append('agent/inbox/spliced', { target: found.target, start: found.index, removedCount: 1, inserted: [], outcome: 'canceled' }, { caller: undoOf(d) })
      d.set({ [key]: list.filter((_, i) => i !== found.index) })
      forgetTurnOptions(d, [e.id])
      d.notify('agent/inbox/discarded', { message: list[found.index] })
    }),
    /** IN-4: replace in place with one canceled splice, then discarded(old) and inserted(new). */
    replacePending: actionOn(['inbox.replace'], (d, e) => {
      const found = findPending(d.context, e.id)
      if (!found) return d.emit({ type: 'fx.reject', code: 'NOT_PENDING', message: notPending(e.id) })
      const key = listKey(found.target)
      const list = d.get(key)
      const splice: SpliceData = { target: found.target, start: found.index, removedCount: 1, inserted: [e.message], outcome: 'canceled' }
      d.append('agent/inbox/spliced', splice, { caller: undoOf(d) })
      d.set({ [key]: list.map((m, i) => (i === found.index ? e.message : m)) })
      if (e.message.id !== e.id) forgetTurnOptions(d, [e.id])
      d.notify('agent/inbox/discarded', { message: list[found.index] })
      d.notify('agent/inbox/inserted', { message: e.message })
    }),
    /** IN-3: an Array-style splice of one list; removals are canceled, nothing wakes. */
    splicePending: actionOn(['inbox.splice'], (d, e) => {
      const lists: InboxLists = d.context
      const splice = spliceOf(lists, e.target, e.start, e.deleteCount, e.messages)
      if (!splice) return
      const removed = listOf(lists, e.target).slice(splice.start, splice.start + (splice.removedCount ?? 0))
      d.append('agent/inbox/spliced', splice, { caller: undoOf(d) })
      d.set(applySplice(lists, splice))
      forgetTurnOptions(
        d,
        removed.filter((m) => !splice.inserted.some((n) => n.id === m.id)).map((m) => m.id),
      )
      for (const message of removed) d.notify('agent/inbox/discarded', { message })
      for (const message of splice.inserted) d.notify('agent/inbox/inserted', { message })
    }),
    /** IN-5: discard everything pending, next-step first. */
    clearPending: actionOn(['inbox.clear'], (d) => clearInbox(d)),
    /** A refused append: the lists become what the log projects, and a refused API request's latch change is undone (IN-7). */
    restoreInbox: actionOn(['append.failed'], (d, e) => {
      d.set({ nextTurn: e.lists.nextTurn, nextStep: e.lists.nextStep })
      if (e.caller) d.setActivity({ wakeLatched: e.caller.wakeLatched })
    }),
  },
  guards: {
    isDuplicate: guardOn(REQUESTS, (context, e) => duplicatedBy(context, e) !== null),
    /** A send that wakes, unless the agent is being disposed (CX-15). */
    isWakingSend: guardOn(['inbox.send'], (context, e) => e.wakeup && !context.activity.disposing),
    /** The refused append was the activity's own: an API caller's refused request only restores the inbox (it bubbles up here). */
    isActivityFailure: guardOn(['append.failed'], (_context, e) => e.caller === undefined),
  },
})

export const inboxSetup = baseSetup.extend(inboxImplementations)

/** Inbox requests, valid in every phase but `disposed`; a refused append restores the lists. */
export const inboxOn = {
  'inbox.send': [{ guard: 'isDuplicate', actions: 'rejectDuplicate' }, { actions: 'insertSent' }],
  'inbox.remove': { actions: 'removePending' },
  'inbox.replace': [{ guard: 'isDuplicate', actions: 'rejectDuplicate' }, { actions: 'replacePending' }],
  'inbox.splice': [{ guard: 'isDuplicate', actions: 'rejectDuplicate' }, { actions: 'splicePending' }],
  'inbox.clear': { actions: 'clearPending' },
  'append.failed': { actions: 'restoreInbox' },
} as const

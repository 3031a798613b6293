// The inbox, in one place: the pure projection of `agent/inbox/spliced`
// events (IN-2..IN-14) that the machines, the public view and resume all
// fold with; the draft steps that claim, insert and discard; and the named
// implementations of the inbox requests every machine accepts in every phase.
import type { EventData, InboxTarget, UserMessage } from '../session/schemas.js'
import { actionOn, baseSetup, guardOn, type Draft, named } from './setup.js'
import type { AgentEvent, CallerUndo, InboxLists } from './types.js'
import { NO_PROPOSAL } from './context.js'
import { forgetTurnOptions, queueTurnOptions, takeTurnOptions } from './turn-options.js'

export type SpliceData = EventData<'agent/inbox/spliced'>

// ---- the projection ----------------------------------------------------------

/** Array.prototype.splice's start normalization (IN-3). */
export function normalizeStart(start: unknown, length: number): number {
  const n = typeof start === 'number' ? Math.trunc(start) : Number.NaN
  // NaN counts as 0, and so does -0 (the log records the start)
  if (Number.isNaN(n) || n === 0) return 0
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
const notPending = (id: string) => `message ${JSON.stringify(id)} is not pending`

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

const listsOf = (d: Draft): InboxLists => ({ nextTurn: d.get('nextTurn'), nextStep: d.get('nextStep') })

/** What an API request may change beside the lists, as it was before the request (restored if its splice is refused). */
const undoOf = (d: Draft): CallerUndo => ({ wakeLatched: d.get('activity').wakeLatched })

/** Log one splice and apply it, then announce what it removed and inserted; a removed prompt's options go with it. */
function spliceInbox(d: Draft, splice: SpliceData, caller?: CallerUndo): void {
  const lists = listsOf(d)
  const removed = listOf(lists, splice.target).slice(splice.start, splice.start + (splice.removedCount ?? 0))
  d.append('agent/inbox/spliced', splice, caller ? { caller } : undefined)
  d.set(applySplice(lists, splice))
  const gone = removed.filter((m) => !splice.inserted.some((n) => n.id === m.id))
  forgetTurnOptions(d, gone)
  for (const message of removed) d.notify('agent/inbox/discarded', { message })
  for (const message of splice.inserted) d.notify('agent/inbox/inserted', { message })
}

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
  d.set({ proposal: claimed.length === 0 ? NO_PROPOSAL : { claimed, entering: [], asked: false } })
}

/** Insert messages at the end of a list as one splice, then announce them (TL-12 tool contexts). */
export function insertInbox(d: Draft, target: InboxTarget, messages: readonly UserMessage[]): void {
  if (messages.length > 0) spliceInbox(d, { target, start: listOf(listsOf(d), target).length, inserted: [...messages] })
}

/** An API caller's clear: both lists, next-step first (IN-5), and the wake latch with them (CX-3). */
export function clearInbox(d: Draft): void {
  const caller = undoOf(d)
  for (const target of ['next-step', 'next-turn'] as const) {
    const removedCount = listOf(listsOf(d), target).length
    if (removedCount > 0) spliceInbox(d, { target, start: 0, removedCount, inserted: [], outcome: 'canceled' }, caller)
  }
  d.setActivity({ wakeLatched: false })
}

/** IN-4, IN-5: replace or remove one pending message in place as a canceled splice; refused when it is not pending. */
function replaceFound(d: Draft, id: string, inserted: UserMessage[]): void {
  const found = findPending(listsOf(d), id)
  if (!found) return d.emit({ type: 'fx.reject', code: 'NOT_PENDING', message: notPending(id) })
  spliceInbox(d, { target: found.target, start: found.index, removedCount: 1, inserted, outcome: 'canceled' }, undoOf(d))
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
      const start = listOf(listsOf(d), target).length
      // next-step holds steers and injects alike: the log keeps which one this was
      spliceInbox(d, { target, start, inserted: [e.message], ...(target === 'next-step' ? { wakeup: e.wakeup } : {}) }, undoOf(d))
      queueTurnOptions(d, e.message.id, target === 'next-turn' ? e.options : undefined)
    }),
    /** A waking send the current activity cannot deliver is replayed when it converges (CX-12, MT-3). */
    latchWake: actionOn(['inbox.send'], (d) => d.setActivity({ wakeLatched: true })),
    /** IN-5: remove one pending message as a canceled splice. */
    removePending: actionOn(['inbox.remove'], (d, e) => replaceFound(d, e.id, [])),
    /** IN-4: replace in place with one canceled splice, then discarded(old) and inserted(new). */
    replacePending: actionOn(['inbox.replace'], (d, e) => replaceFound(d, e.id, [e.message])),
    /** IN-3: an Array-style splice of one list; removals are canceled, nothing wakes. */
    splicePending: actionOn(['inbox.splice'], (d, e) => {
      const splice = spliceOf(listsOf(d), e.target, e.start, e.deleteCount, e.messages)
      if (splice) spliceInbox(d, splice, undoOf(d))
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

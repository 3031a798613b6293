// Transitions every phase shares (inbox mutations) and those of a live
// activity (cancel, waking sends), reused by the standalone machines.
import type { InboxTarget, UserMessage } from '../session/schemas.js'
import { alreadyPending, applySplice, duplicatedBy, findPending, spliceOf } from './inbox.js'
import { act, cancelActivity, clearInbox, type Draft, type EventOf } from './setup.js'
import type { AgentContext, AgentEvent } from './types.js'

const listKey = (target: InboxTarget) => (target === 'next-turn' ? 'nextTurn' : 'nextStep')

/** Close an inbox mutation: the runtime answers `reply`, or restores the lists if an append failed (IN-7). */
function settleInbox(d: Draft, before: { nextTurn: readonly UserMessage[]; nextStep: readonly UserMessage[] }, reply?: EventOf<'inbox.committed'>) {
  d.emit({ type: 'fx.sync', id: d.id(), reply, onFault: { type: 'inbox.restore', nextTurn: before.nextTurn, nextStep: before.nextStep } })
}

const snapshotLists = (d: Draft) => ({ nextTurn: d.get('nextTurn'), nextStep: d.get('nextStep') })

/** IN-6: a send, replace or splice that would leave an id pending twice is refused, appending nothing. */
const duplicates = ({ context, event }: { context: AgentContext; event: AgentEvent }) => duplicatedBy(context, event) !== null
const rejectDuplicate = act((d, e) => d.emit({ type: 'fx.reject', code: 'ALREADY_PENDING', message: alreadyPending(duplicatedBy(d.context, e)!) }))

/** Inbox transitions valid in every phase but `disposed`. */
export const inboxOn = {
  'inbox.send': [
    { guard: duplicates, actions: rejectDuplicate },
    {
      actions: act<'inbox.send'>((d, e) => {
        const before = snapshotLists(d)
        // CX-12 / MT-5: once the activity is cancelled, a waking send waits for the next turn
        const target: InboxTarget = e.wakeup && d.get('cause') !== null ? 'next-turn' : e.target
        const key = listKey(target)
        const list = d.get(key)
        d.append('agent/inbox/spliced', { target, start: list.length, inserted: [e.message] })
        d.set({ [key]: [...list, e.message] })
        settleInbox(d, before, { type: 'inbox.committed', message: e.message, target, wakeup: e.wakeup })
      }),
    },
  ],
  'inbox.remove': {
    actions: act<'inbox.remove'>((d, e) => {
      const found = findPending(d.context, e.id)
      if (!found) return
      const before = snapshotLists(d)
      const key = listKey(found.target)
      const list = d.get(key)
      d.append('agent/inbox/spliced', { target: found.target, start: found.index, removedCount: 1, inserted: [], outcome: 'canceled' })
      d.set({ [key]: list.filter((_, i) => i !== found.index) })
      d.notify('agent/inbox/discarded', { message: list[found.index] })
      settleInbox(d, before)
    }),
  },
  'inbox.replace': [
    { guard: duplicates, actions: rejectDuplicate },
    {
      actions: act<'inbox.replace'>((d, e) => {
        const found = findPending(d.context, e.id)
        if (!found) return
        const before = snapshotLists(d)
        const key = listKey(found.target)
        const list = d.get(key)
        d.append('agent/inbox/spliced', {
          target: found.target,
          start: found.index,
          removedCount: 1,
          inserted: [e.message],
          outcome: 'canceled',
        })
        d.set({ [key]: list.map((m, i) => (i === found.index ? e.message : m)) })
        d.notify('agent/inbox/discarded', { message: list[found.index] })
        d.notify('agent/inbox/inserted', { message: e.message })
        settleInbox(d, before)
      }),
    },
  ],
  // IN-3: an Array-style splice of one list; removals are canceled, nothing wakes
  'inbox.splice': [
    { guard: duplicates, actions: rejectDuplicate },
    {
      actions: act<'inbox.splice'>((d, e) => {
        const before = snapshotLists(d)
        const splice = spliceOf(before, e.target, e.start, e.deleteCount, e.messages)
        if (!splice) return
        const removed = d.get(listKey(e.target)).slice(splice.start, splice.start + (splice.removedCount ?? 0))
        d.append('agent/inbox/spliced', splice)
        d.set(applySplice(before, splice))
        for (const message of removed) d.notify('agent/inbox/discarded', { message })
        for (const message of splice.inserted) d.notify('agent/inbox/inserted', { message })
        settleInbox(d, before)
      }),
    },
  ],
  'inbox.clear': {
    actions: act((d) => {
      const before = snapshotLists(d)
      clearInbox(d)
      settleInbox(d, before)
    }),
  },
  'inbox.restore': {
    actions: act<'inbox.restore'>((d, e) => d.set({ nextTurn: e.nextTurn, nextStep: e.nextStep })),
  },
} as const

/** Cancel during a live activity (CX-1..CX-3, CX-14); the inbox part is undoable like any mutation. */
export const cancelRunning = act<'agent.cancel'>((d, e) => {
  const before = snapshotLists(d)
  cancelActivity(d, e)
  if (!e.keepInbox) settleInbox(d, before)
})

/** CX-4: cancelling an idle agent aborts nothing; without keepInbox parked items are discarded, undoably. */
export const cancelIdle = act<'agent.cancel'>((d, e) => {
  if (e.cause.kind === 'disposed') d.set({ disposing: true })
  if (e.keepInbox) return
  const before = snapshotLists(d)
  clearInbox(d)
  settleInbox(d, before)
})

/** Transitions of a running activity. */
export const runningOn = {
  'agent.cancel': { actions: cancelRunning },
  'inbox.committed': {
    actions: act<'inbox.committed'>((d, e) => {
      d.notify('agent/inbox/inserted', { message: e.message })
      // CX-12: a wake that the cancelled activity cannot deliver is latched; disposal never latches (CX-15)
      if (e.wakeup && d.get('cause') !== null && !d.get('disposing')) d.set({ latch: true })
    }),
  },
} as const

/** Both, for the machines that run on their own. */
export const activeOn = { ...inboxOn, ...runningOn } as const

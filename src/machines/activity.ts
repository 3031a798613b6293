// What every live activity shares: waiting for the one effect it asked for,
// being cancelled (CX-1..CX-4), latching waking sends it cannot deliver, and
// the facts that say whether a decision point needs a round trip at all.
// The turn, step, attempt and tool batch machines run inside an activity,
// so they are built on this layer.
import { and, not } from 'xstate'
import { actionOn, guard, guardOn, named, labelGuards } from './setup.js'
import { clearInbox, inboxOn, inboxSetup } from './inbox.js'
import type { AgentContext, HookName } from './types.js'

/** Every event that answers an effect the machine waits for, by id. */
const ANSWERS = [
  'hook.done',
  'hook.failed',
  'request.prepared',
  'model.settled',
  'model.failed',
  'tool.settled',
  'tool.classified',
  'job.settled',
  'compaction.measured',
  'compaction.summarised',
  'compaction.failed',
  'appends.confirmed',
  'append.failed',
  'backoff.elapsed',
] as const
const ANSWER_TYPES: ReadonlySet<string> = new Set(ANSWERS)

/** A decision point waits for a hook's answer when someone listens there, or when someone watches (see Facts.observed). */
export const asks = (context: AgentContext, hook: HookName): boolean => context.facts.observed || context.facts.listened.includes(hook)

export const activityImplementations = named({
  actions: {
    /** CX-1..CX-3, CX-14: the first cause aborts the signal; without keepInbox the inbox (and latch) is cleared either way. */
    cancelActivity: actionOn(['agent.cancel'], (d, e) => {
      if (d.get('activity').cancelCause === null) {
        d.setActivity({ cancelCause: e.cause })
        d.emit({ type: 'fx.abort', cause: e.cause })
      }
      if (e.cause.kind === 'disposed') d.setActivity({ disposing: true })
      if (!e.keepInbox) clearInbox(d)
    }),
    /** What the runtime reports of listeners, observers and tools replaces what the machine knew. */
    learnFacts: actionOn(['facts.changed'], (d, e) => d.set({ facts: { ...d.get('facts'), ...e.facts } })),
  },
  guards: {
    /** The answer the machine (or a tool batch lane, by `params`) waits for; anything older is a late answer to drop. */
    isAwaited: guardOn(ANSWERS, (context, e, params: { lane: WaitLane } | undefined) => {
      if (params) return 'id' in e && e.id === context.toolBatch[params.lane]
      return e.type === 'append.failed' ? e.unstarted.includes(context.ids.waiting) : e.id === context.ids.waiting
    }),
    /** The live activity has been cancelled. */
    isCancelled: guard((context) => context.activity.cancelCause !== null),
    /** Someone may act synchronously on what the machine does: a boundary waits one round trip so it is heard first. */
    isObserved: guard((context) => context.facts.observed),
  },
})

export const activitySetup = inboxSetup.extend(activityImplementations)

type Transition = { guard?: unknown }

/** The tool batch's lanes wait apart from the machine's one awaited answer: each keeps the id it waits for here. */
type WaitLane = 'preId' | 'postId' | 'classifyId'

/**
 * The transitions of a state that waits for one answer (the machine's, or its lane's in a tool batch): every answer
 * event's transitions also check `isAwaited`, so a late answer to an effect the machine stopped waiting for is dropped.
 * Other events pass as written.
 */
export function awaiting<const T extends Record<string, unknown>>(on: T, lane?: WaitLane): T {
  const awaited = lane ? { type: 'isAwaited' as const, params: { lane } } : 'isAwaited'
  const wrap = (t: Transition): Transition => ({ ...t, guard: t.guard === undefined ? awaited : and([awaited as never, t.guard as never]) })
  const guarded = (t: unknown) => (Array.isArray(t) ? t.map(wrap) : wrap(t as Transition))
  return Object.fromEntries(Object.entries(on).map(([event, t]) => [event, ANSWER_TYPES.has(event) ? guarded(t) : t])) as T
}

/**
 * Transitions of a live activity: cancel, and a waking send it cannot deliver, which is latched for its
 * convergence (CX-12; disposal never latches, CX-15). Anything else bubbles up to the inbox requests.
 */
export const runningOn = labelGuards(
  activitySetup.createStateConfig({
    on: {
      'agent.cancel': { actions: 'cancelActivity' },
      'inbox.send': { guard: and([not('isDuplicate'), 'isWakingSend', 'isCancelled']), actions: ['insertSent', 'latchWake'] },
    },
  }),
).on

/** Both, for the machines that run on their own (their root has no parent to bubble to). */
export const activityOn = activitySetup.createStateConfig({
  on: {
    ...inboxOn,
    ...runningOn,
    'inbox.send': [runningOn['inbox.send'], ...inboxOn['inbox.send']],
    'facts.changed': { actions: 'learnFacts' },
  },
}).on

type Transitions = Record<string, unknown>
const asList = (t: unknown): readonly unknown[] => (t === undefined ? [] : Array.isArray(t) ? t : [t])

/**
 * The root transitions of a machine that runs one part on its own: the part's own first, then the
 * activity's for the same event (what would bubble up to the agent's levels if it ran inside it).
 */
export function standaloneOn<T extends Transitions>(own: T): T & typeof activityOn {
  const merged = Object.entries(own).map(([event, t]) => [event, [...asList(t), ...asList((activityOn as Transitions)[event])]])
  return { ...activityOn, ...Object.fromEntries(merged) } as T & typeof activityOn
}

// agent: the phases idle, running and maintenance (+ final disposed). Owns
// the inbox, the wake latch and the cancellation cause; runs one `turn` at a
// time and goes straight on to the next while work is pending (PH-4).
import { and, not } from 'xstate'
import { runningOn } from './activity.js'
import { attached } from './attachment.js'
import { initialContext } from './context.js'
import { action, actionOn, guard, named, labelGuards } from './draft.js'
import { clearInbox, hasPending, inboxOn } from './inbox.js'
import { compactionState } from './compaction.js'
import { turnSetup, turnState, type TurnImplementations } from './turn.js'

export const agentImplementations = named({
  actions: {
    /** RS-4: a crash-truncated log gets its closers before this instance does anything else. */
    appendRepairClosers: action((d) => {
      for (const closer of d.get('instance').repair) {
        const { type, data, intent } = closer
        d.emit({ type: 'fx.append', eventType: type, data, ...intent })
      }
      d.set({ instance: { ...d.get('instance'), repair: [] } })
      d.confirm()
    }),
    reportRepairFailure: actionOn(['append.failed'], (d, e) => d.notify('agent/error', { turn: d.get('turn'), step: 0, failure: e.failure })),
    /** PH-2: a fresh signal and status running, confirmed before turn/start so a cancel from that listener opens no turn (TU-3). */
    announceRunning: action((d) => {
      d.set({ cancelCause: null, wakeLatched: false })
      d.emit({ type: 'fx.signal' })
      d.notify('agent/status', { status: 'running' })
      d.confirm()
    }),
    announceIdle: action((d) => d.notify('agent/status', { status: 'idle' })),
    /** PH-4: the next turn gets a fresh signal and a cleared wake latch. */
    renewSignal: action((d) => {
      d.set({ wakeLatched: false })
      d.emit({ type: 'fx.signal' })
    }),
    clearCancelCause: action((d) => d.set({ cancelCause: null })),
    dropWakeLatch: action((d) => d.set({ wakeLatched: false })),
    /** CX-4: nothing to abort; without keepInbox parked items are discarded (disposal marks the agent). */
    cancelWhileIdle: actionOn(['agent.cancel'], (d, e) => {
      if (e.cause.kind === 'disposed') d.set({ disposing: true })
      if (!e.keepInbox) clearInbox(d)
    }),
    /** A refused summary of agent.compact() goes to agent/error; no turn is involved. */
    reportCompactionStoreFailure: actionOn(['append.failed'], (d, e) => d.notify('agent/error', { turn: d.get('turn'), step: 0, failure: e.failure })),
    /** MT-1: the job the API registered starts now, with its own signal. */
    startJob: action((d) => {
      d.set({ cancelCause: null })
      d.emit({ type: 'fx.job', id: d.await() })
    }),
  },
  guards: {
    hasRepairClosers: guard((context) => context.instance.repair.length > 0),
    isWakeLatched: guard((context) => context.wakeLatched),
    /** CX-13 / MT-3: a latched wake replays at convergence if work is still pending (never while disposing). */
    hasLatchedWork: guard((context) => context.wakeLatched && !context.disposing && hasPending(context)),
    /** PH-4, Decision 5 (and 9 for max-steps): after a completed, max-tokens or max-steps turn, pending work opens the next turn at once. */
    continuesToNextTurn: guard(
      (context) =>
        (context.endReason?.kind === 'completed' || context.endReason?.kind === 'max-tokens' || context.endReason?.kind === 'max-steps') &&
        context.cancelCause === null &&
        !context.disposing &&
        hasPending(context),
    ),
  },
})

export type AgentImplementations = typeof agentImplementations & TurnImplementations

/** The setup every machine's implementations are in: extend it, or `.provide()` on a machine to swap one. */
export const agentSetup = turnSetup.extend(agentImplementations)

const agentConfig = labelGuards(
  attached<AgentImplementations>()(
    agentSetup.createStateConfig({
      initial: 'resuming',
      on: inboxOn,
      states: {
        resuming: {
          always: [{ guard: 'hasRepairClosers', target: 'repairing' }, { target: 'idle' }],
        },
        repairing: {
          entry: 'appendRepairClosers',
          on: {
            'appends.confirmed': { guard: 'isAwaited', target: 'idle' },
            'append.failed': { target: 'idle', actions: ['restoreInbox', 'reportRepairFailure'] },
          },
        },
        idle: {
          always: [
            { guard: 'hasLatchedWork', target: 'running' },
            { guard: 'isWakeLatched', actions: 'dropWakeLatch' },
          ],
          on: {
            // PH-2: a waking send from idle runs; anything else an inbox request does bubbles to the root
            'inbox.send': { guard: and([not('isDuplicate'), 'isWakingSend']), target: 'running', actions: 'insertSent' },
            'agent.cancel': { actions: 'cancelWhileIdle' },
            'maintenance.start': { target: 'maintenance' },
            // CP-4: agent.compact() compacts from idle, like a maintenance job
            'compaction.start': { target: 'compacting', actions: 'beginManualCompaction' },
            'agent.dispose': { target: 'disposed' },
          },
        },
        running: {
          initial: 'starting',
          on: runningOn,
          exit: 'clearCancelCause',
          states: {
            starting: {
              entry: 'announceRunning',
              on: {
                'appends.confirmed': [
                  // TU-3: cancelled from the running-status listener: no turn/start
                  { guard: and(['isAwaited', 'isCancelled']), target: '#agent.idle', actions: 'announceIdle' },
                  { guard: 'isAwaited', target: 'turn' },
                ],
                // IN-7: the waking send's splice was refused: back to idle as if it never came (no status change)
                'append.failed': { guard: 'isAwaited', target: '#agent.idle', actions: 'restoreInbox' },
              },
            },
            turn: {
              ...turnState,
              onDone: [
                { guard: 'continuesToNextTurn', target: 'turn', reenter: true, actions: 'renewSignal' },
                { target: '#agent.idle', actions: 'announceIdle' },
              ],
            },
          },
        },
        maintenance: {
          entry: 'startJob',
          exit: 'clearCancelCause',
          on: {
            'job.settled': { guard: 'isAwaited', target: 'idle' },
            // MT-5: abort the job; later wakes are forced into next-turn and latch
            'agent.cancel': { actions: 'cancelActivity' },
            // MT-3: a waking send during maintenance latches
            'inbox.send': { guard: and([not('isDuplicate'), 'isWakingSend']), actions: ['insertSent', 'latchWake'] },
          },
        },
        compacting: {
          ...compactionState,
          exit: 'clearCancelCause',
          onDone: { target: 'idle' },
          on: {
            // like maintenance (MT-3): waking sends latch until it ends (a cancel ends the summariser's wait, in the region)
            'inbox.send': { guard: and([not('isDuplicate'), 'isWakingSend']), actions: ['insertSent', 'latchWake'] },
            // the summary or its record was refused: reported, and the agent is idle again
            'append.failed': { target: 'idle', actions: ['restoreInbox', 'reportCompactionStoreFailure'] },
          },
        },
        disposed: { type: 'final' },
      },
    }),
  ),
)

/**
 * Where an instance resumes a call that waits for approval (TL-18): inside the open turn's step, its tool batch
 * dispatch waiting for the answer and the commit lane ready to write what it owes. The runtime restores this
 * state with `machine.resolveState({ value, context })` and then sends `agent.resumed`.
 */
export const AWAITING_APPROVAL = { running: { turn: { step: { toolBatch: { running: { dispatch: 'awaitingApproval', commit: 'waiting' } } } } } } as const

/** The agent: idle, running (one turn at a time), maintenance, disposed. */
export const agentMachine = agentSetup.createMachine({
  id: 'agent',
  context: ({ input }) => initialContext(input),
  ...agentConfig,
})

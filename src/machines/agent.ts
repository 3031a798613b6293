// agent: the phases idle, running and maintenance (+ final disposed). Owns
// the inbox, the wake latch and the cancellation cause; runs one `turn` at a
// time and goes straight on to the next while work is pending (PH-4).
import { and, not } from 'xstate'
import { awaiting, runningOn } from './activity.js'
import { attached } from './attachment.js'
import { initialContext } from './context.js'
import { action, actionOn, guard, guardOn, named, labelGuards } from './setup.js'
import { clearInbox, hasPending, inboxOn } from './inbox.js'
import { compactionState } from './compaction.js'
import { dropTurnOptions } from './turn-options.js'
import { turnSetup, turnState, type TurnImplementations } from './turn.js'

const agentImplementations = named({
  actions: {
    /** RS-4: a crash-truncated log gets its closers before this instance does anything else. */
    appendRepairClosers: action((d) => {
      for (const { type, data, intent } of d.get('instance').repair) d.emit({ type: 'fx.append', eventType: type, data, ...intent })
      d.set({ instance: { ...d.get('instance'), repair: [] } })
      d.confirm()
    }),
    /** A refused repair closer, or a refused summary of agent.compact(), goes to agent/error; no turn is involved. */
    reportStoreFailure: actionOn(['append.failed'], (d, e) => d.notify('agent/error', { turn: d.get('turn'), step: 0, failure: e.failure })),
    /** CP-7: agent.compact() could not measure the history; compact() rejects with the same failure. */
    reportCompactionFailure: action((d) => d.notify('agent/error', { turn: d.get('turn'), step: 0, failure: d.get('compaction').failure! })),
    /** PH-2: a fresh signal and status running. */
    announceRunning: action((d) => {
      d.setActivity({ cancelCause: null, wakeLatched: false })
      d.emit({ type: 'fx.signal' })
      d.notify('agent/status', { status: 'running' })
    }),
    /** IN-7: the waking send that started this activity was refused: the turn it began never happened. */
    undoRefusedWake: actionOn(['append.failed'], (d) => d.set({ turn: d.get('turn') - 1, endReason: null })),
    announceIdle: action((d) => d.notify('agent/status', { status: 'idle' })),
    /** PH-4: the next turn gets a fresh signal and a cleared wake latch. */
    renewSignal: action((d) => {
      d.setActivity({ wakeLatched: false })
      d.emit({ type: 'fx.signal' })
    }),
    clearCancelCause: action((d) => d.setActivity({ cancelCause: null })),
    /** A turn's own options (agent.run) end with it: the next turn starts from the seed config without them. */
    dropTurnOptions: action((d) => dropTurnOptions(d)),
    dropWakeLatch: action((d) => d.setActivity({ wakeLatched: false })),
    /** CX-4: nothing to abort; without keepInbox parked items are discarded (disposal marks the agent). */
    cancelWhileIdle: actionOn(['agent.cancel'], (d, e) => {
      if (e.cause.kind === 'disposed') d.setActivity({ disposing: true })
      if (!e.keepInbox) clearInbox(d)
    }),
    /** TL-18: an answer for a call that does not wait now is refused, naming why. */
    refuseApproval: actionOn(['approval.answered'], (d, e) => {
      const [code, message] =
        e.logged === true || d.get('toolBatch').asked.includes(e.callId)
          ? (['APPROVAL_ALREADY_ANSWERED', `the approval of call ${e.callId} was already answered or closed`] as const)
          : (['APPROVAL_UNKNOWN', `no call waits for approval under id ${JSON.stringify(e.callId)}`] as const)
      d.emit({ type: 'fx.reject', code, message, callId: e.callId })
    }),
    /** MT-1: a job is accepted only from idle. */
    refuseBusy: action((d) => d.emit({ type: 'fx.reject', code: 'AGENT_BUSY', message: 'accepted only while the agent is idle with no job running' })),
    /** CP-4: agent.compact() needs compaction on. */
    refuseCompactionOff: action((d) =>
      d.emit({
        type: 'fx.reject',
        code: 'COMPACTION_OFF',
        message: 'compaction is off: give createAgent a compaction option (and a context window) to use agent.compact()',
      }),
    ),
    /** MT-1: the job the API registered starts now, with its own signal. */
    startJob: action((d) => {
      d.setActivity({ cancelCause: null })
      d.emit({ type: 'fx.job', id: d.await() })
    }),
  },
  guards: {
    isCompactionOff: guard((context) => context.instance.compaction === 'off'),
    /** The refused append was the caller's waking send, and the turn it started came after it: nothing of the turn happened. */
    isRefusedWake: guardOn(['append.failed'], (_context, e) => e.caller !== undefined && e.skipped.includes('turn/start')),
    hasRepairClosers: guard((context) => context.instance.repair.length > 0),
    /** TL-18: a disposal parked the approval wait, and every call before the waiting one has committed: stop here. */
    isParked: guard((context) => {
      const b = context.toolBatch
      return b.parked && b.approval !== null && b.nextCommit >= b.nextStart && b.inFlight === 1 && b.postId === 0
    }),
    isWakeLatched: guard((context) => context.activity.wakeLatched),
    /** CX-13 / MT-3: a latched wake replays at convergence if work is still pending (never while disposing). */
    hasLatchedWork: guard((context) => context.activity.wakeLatched && !context.activity.disposing && hasPending(context)),
    /** PH-4, Decision 5 (and 9 for max-steps): after a completed, max-tokens or max-steps turn, pending work opens the next turn at once. */
    continuesToNextTurn: guard(
      (context) =>
        (context.endReason?.kind === 'completed' || context.endReason?.kind === 'max-tokens' || context.endReason?.kind === 'max-steps') &&
        context.activity.cancelCause === null &&
        !context.activity.disposing &&
        hasPending(context),
    ),
  },
})

type AgentImplementations = typeof agentImplementations & TurnImplementations

/** The setup every machine's implementations are in: extend it, or `.provide()` on a machine to swap one. */
export const agentSetup = turnSetup.extend(agentImplementations)

const agentConfig = labelGuards(
  attached<AgentImplementations>()(
    agentSetup.createStateConfig({
      initial: 'resuming',
      on: {
        ...inboxOn,
        'facts.changed': { actions: 'learnFacts' },
        // TL-18: an answer for a call that waits is taken where it waits; any other is refused here
        'approval.answered': { actions: 'refuseApproval' },
        // MT-1, CP-4: a job or a compaction is accepted only from idle (which takes them first)
        'maintenance.start': { actions: 'refuseBusy' },
        'compaction.start': [{ guard: 'isCompactionOff', actions: 'refuseCompactionOff' }, { actions: 'refuseBusy' }],
      },
      states: {
        resuming: {
          always: [
            // TL-18: the log stops while a call waits for approval: this instance goes on waiting there
            { guard: 'hasApprovalWait', target: '#agent.running.turn.step.toolBatch.dispatch.awaitingApproval', actions: 'restoreApprovalWait' },
            { guard: 'hasRepairClosers', target: 'repairing' },
            { target: 'idle' },
          ],
        },
        repairing: {
          entry: 'appendRepairClosers',
          on: awaiting({
            'appends.confirmed': { target: 'idle' },
            'append.failed': { target: 'idle', actions: ['restoreInbox', 'reportStoreFailure'] },
          }),
        },
        idle: {
          always: [
            { guard: 'hasLatchedWork', target: 'running' },
            { guard: 'isWakeLatched', actions: 'dropWakeLatch' },
          ],
          on: {
            // PH-2: a waking send from idle runs; anything else an inbox request does bubbles to the root
            'inbox.send': [
              // nobody watches: nothing can cancel between the status, turn/start and the claim; with nobody to wait on
              // and no policy to check at pre-step either, the first step opens at once (ST-2)
              {
                guard: and([not('isObserved'), not('isDuplicate'), 'isWakingSend', not('waitsOnProposal'), not('isAutoCompaction')]),
                target: 'running.turn.step',
                actions: ['insertSent', 'announceRunning', 'openTurn', 'propose', 'openStep'],
              },
              {
                guard: and([not('isObserved'), not('isDuplicate'), 'isWakingSend']),
                target: 'running.turn.proposing',
                actions: ['insertSent', 'announceRunning', 'openTurn'],
              },
              { guard: and([not('isDuplicate'), 'isWakingSend']), target: 'running', actions: 'insertSent' },
            ],
            'agent.cancel': { actions: 'cancelWhileIdle' },
            'maintenance.start': { target: 'maintenance' },
            // CP-4: agent.compact() compacts from idle, like a maintenance job
            'compaction.start': [
              { guard: 'isCompactionOff', actions: 'refuseCompactionOff' },
              { target: 'compacting', actions: 'beginManualCompaction' },
            ],
            'agent.dispose': { target: 'disposed' },
          },
        },
        running: {
          initial: 'starting',
          // TL-18: a disposal during an approval wait ends this instance inside the wait, with no turn/end
          always: { guard: 'isParked', target: 'disposed' },
          on: {
            ...runningOn,
            // IN-7, unwatched: the waking send's splice was refused after the turn went on in the same macrostep
            'append.failed': { guard: 'isRefusedWake', target: '#agent.idle', actions: ['restoreInbox', 'undoRefusedWake'] },
          },
          exit: 'clearCancelCause',
          states: {
            // TU-3: confirmed before turn/start, so a cancel from the running-status listener opens no turn
            starting: {
              entry: ['announceRunning', 'confirmAppends'],
              on: awaiting({
                'appends.confirmed': [
                  // TU-3: cancelled from the running-status listener: no turn/start
                  { guard: 'isCancelled', target: '#agent.idle', actions: 'announceIdle' },
                  { target: 'turn', actions: 'openTurn' },
                ],
                // IN-7: the waking send's splice was refused: back to idle as if it never came (no status change)
                'append.failed': { target: '#agent.idle', actions: 'restoreInbox' },
              }),
            },
            turn: {
              ...turnState,
              exit: 'dropTurnOptions',
              onDone: [
                { guard: and(['continuesToNextTurn', 'isObserved']), target: 'turn', reenter: true, actions: ['renewSignal', 'openTurn'] },
                { guard: 'continuesToNextTurn', target: 'turn.proposing', reenter: true, actions: ['renewSignal', 'openTurn'] },
                { target: '#agent.idle', actions: 'announceIdle' },
              ],
            },
          },
        },
        maintenance: {
          entry: 'startJob',
          exit: 'clearCancelCause',
          on: {
            ...awaiting({
              'job.settled': { target: 'idle' },
              // the job never started: the store failed before it (MT-2: runMaintenance's promise rejects with that)
              'append.failed': { target: 'idle', actions: 'restoreInbox' },
            }),
            // MT-5: abort the job; later wakes are forced into next-turn and latch
            'agent.cancel': { actions: 'cancelActivity' },
            // MT-3: a waking send during maintenance latches
            'inbox.send': { guard: and([not('isDuplicate'), 'isWakingSend']), actions: ['insertSent', 'latchWake'] },
          },
        },
        compacting: {
          ...compactionState,
          exit: 'clearCancelCause',
          onDone: [{ guard: 'hasFailedMeasure', target: 'idle', actions: 'reportCompactionFailure' }, { target: 'idle' }],
          on: {
            // like maintenance (MT-3): waking sends latch until it ends (a cancel ends the summariser's wait, in the region)
            'inbox.send': { guard: and([not('isDuplicate'), 'isWakingSend']), actions: ['insertSent', 'latchWake'] },
            // the summary or its record was refused: reported, and the agent is idle again
            'append.failed': { target: 'idle', actions: ['restoreInbox', 'reportStoreFailure'] },
          },
        },
        disposed: { type: 'final' },
      },
    }),
  ),
)

/** The agent: idle, running (one turn at a time), maintenance, disposed. */
export const agentMachine = agentSetup.createMachine({
  id: 'agent',
  context: ({ input }) => initialContext(input),
  ...agentConfig,
})

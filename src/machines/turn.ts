// turn: turn/start (`opening`), then proposals (claim the inbox, then
// agent/pre-step), each entered one a `step`; after a step that ran tools,
// `continuing` to the next proposal; after a terminal step with nothing
// pending, `stopping` (agent/turn-stopping, then re-check); `closing` appends
// turn/end with its reason. Zero-step exits: blocked, completed. A turn that
// ran the instance's maxSteps steps ends max-steps where it would propose again.
import { and, not, or } from 'xstate'
import type { LlmFailure, TurnEndReason, UserMessage } from '../session/schemas.js'
import { asks, awaiting, standaloneOn } from './activity.js'
import { attached } from './attachment.js'
import { NO_PROPOSAL, initialContext } from './context.js'
import { action, actionOn, guard, guardOn, type Draft, named, labelGuards } from './setup.js'
import { compactionState } from './compaction.js'
import { claimInbox } from './inbox.js'
import { stepLimitOf } from './turn-options.js'
import type { AgentContext } from './types.js'
import { stepSetup, stepState, type StepImplementations } from './step.js'

/** What agent/pre-step decided about the claimed messages (the runtime hands over checked data). */
type PreStepAnswer = { kind: 'reject' } | { kind: 'enter'; messages: readonly UserMessage[] }

/** HK-12: someone assembles each step's prompt, so a proposal waits for the assembly before agent/pre-step. */
const assemblesPrompt = (context: AgentContext): boolean => context.facts.listened.includes('system-prompt/assemble')

/** ST-2: ask agent/pre-step about the claimed messages when anyone listens or watches; with nobody to decide, it is entered as claimed. */
function askPreStep(d: Draft): void {
  const claimed = d.get('proposal').claimed
  if (!asks(d.context, 'agent/pre-step')) return d.set({ proposal: claimed.length === 0 ? NO_PROPOSAL : { claimed, entering: claimed, asked: false } })
  d.set({ proposal: { claimed, entering: [], asked: true } })
  const payload = { messages: claimed, turn: d.get('turn'), step: d.get('step') + 1 }
  d.hook('agent/pre-step', payload, { fallback: { kind: 'enter', messages: claimed }, abandonOnCancel: true })
}

/** The reason a turn ends with when nothing went wrong: max-tokens is sticky (TU-12). */
const standingReason = (d: Draft): TurnEndReason => (d.get('maxTokensSeen') ? { kind: 'max-tokens' } : { kind: 'completed' })

/** The turn ends `error` before the step it proposed opens; agent/error names that step (Decision 7). */
function failBeforeStep(d: Draft, failure: LlmFailure): void {
  d.set({ failure: { failure, step: d.get('step') + 1 }, endReason: { kind: 'error', error: failure } })
}

const turnImplementations = named({
  actions: {
    /** TU-1: the next turn number, a clean slate, and turn/start. */
    openTurn: action((d) => {
      const turn = d.get('turn') + 1
      d.set({ turn, step: 0, maxTokensSeen: false, lastStep: 'none', endReason: null, failure: null, stepOutcome: null })
      d.append('turn/start', { turn })
    }),
    /**
     * Watched, wait until the appends so far are in the log before claiming: a listener that cancels on turn/start
     * or on an event of the step that just closed is heard first, so its discards come before the claim (CX-6, IN-10).
     */
    confirmAppends: action((d) => d.confirm()),
    /** IN-9, IN-10: the claim runs synchronously right after turn/start or the previous step/end. */
    claimProposal: action((d) => claimInbox(d, d.get('step') === 0)),
    /**
     * IN-9, then HK-12 (prompt assembly, when anyone assembles), then ST-2: the claim runs at once; the system
     * prompt and tools are assembled for the claimed messages before agent/pre-step decides about it.
     */
    propose: action((d) => {
      claimInbox(d, d.get('step') === 0)
      const claimed = d.get('proposal').claimed
      if (!assemblesPrompt(d.context)) return askPreStep(d)
      d.set({ proposal: { claimed, entering: [], asked: true, assembling: true } })
      d.hook('system-prompt/assemble', { messages: claimed, turn: d.get('turn'), step: d.get('step') + 1 }, { abandonOnCancel: true })
    }),
    /** HK-12: the step's prompt is assembled; agent/pre-step comes next, as for any proposal. */
    proposeAssembled: actionOn(['hook.done'], (d) => askPreStep(d)),
    /** ST-3: the enter decision is authoritative (a decision that is not `enter` enters nothing). */
    enterProposal: actionOn(['hook.done'], (d, e) => {
      const decision = e.value as PreStepAnswer
      d.set({ proposal: { claimed: d.get('proposal').claimed, entering: decision.kind === 'enter' ? decision.messages : [], asked: false } })
    }),
    /** TU-10: agent/turn-stopping, entered only when anyone listens or watches there. */
    askTurnStopping: action((d) => d.hook('agent/turn-stopping', { turn: d.get('turn') }, { abandonOnCancel: true })),
    endBlocked: action((d) => d.set({ endReason: { kind: 'blocked' } })),
    endWithStandingReason: action((d) => d.set({ endReason: standingReason(d) })),
    endAborted: action((d) => d.set({ endReason: { kind: 'aborted', reason: d.get('activity').cancelCause ?? { kind: 'user' } } })),
    /** TU-16 (Decision 9): the turn ran its last allowed step; it ends max-steps, naming the limit, instead of proposing another. */
    endMaxSteps: action((d) => d.set({ endReason: { kind: 'max-steps', limit: stepLimitOf(d.context) ?? d.get('step') } })),
    /** HK-4: a throwing pre-step ends the turn before its step opens (Decision 7: agent/error names that step). */
    failProposal: actionOn(['hook.failed'], (d, e) => failBeforeStep(d, e.failure)),
    /** CP-7: a failed token estimate at the pre-step checkpoint ends the turn `error` before the step opens, as HK-4. */
    failCompactionCheck: action((d) => failBeforeStep(d, d.get('compaction').failure!)),
    /** HK-5: a throwing turn-stopping listener ends the turn `error`. */
    failTurnStopping: actionOn(['hook.failed'], (d, e) => {
      d.set({ failure: { failure: e.failure, step: d.get('step') }, endReason: { kind: 'error', error: e.failure } })
    }),
    /**
     * A refused append of this turn ends it `error` (TU-14), unless a cancel came first: cancellation never ends in
     * error (CX-5). A step whose step/start came after the refusal in the same macrostep never opened.
     */
    failTurn: actionOn(['append.failed'], (d, e) => {
      if (e.skipped.includes('step/start')) d.set({ step: d.get('step') - 1 })
      if (d.get('activity').cancelCause !== null) return
      d.set({ failure: { failure: e.failure, step: d.get('step') }, endReason: { kind: 'error', error: e.failure } })
    }),
    /** ST-4: the refused append came before this turn's step/end in the same macrostep, so step/end was skipped: write it. */
    appendOwedStepEnd: actionOn(['append.failed'], (d, e) => {
      if (e.skipped.includes('step/end')) d.append('step/end', { turn: d.get('turn'), step: d.get('step') })
    }),
    /** PH-8 then TU-15: agent/error comes before the turn/end{error} it explains; turn/end waits for its confirmation. */
    closeTurn: action((d) => {
      const endReason = d.get('endReason') ?? standingReason(d)
      const failure = d.get('failure')
      if (endReason.kind === 'error' && failure) d.notify('agent/error', { turn: d.get('turn'), step: failure.step, failure: failure.failure })
      d.set({ endReason })
      d.append('turn/end', { turn: d.get('turn'), reason: endReason })
      d.confirm()
    }),
    /** TU-4: turn/start was refused: nothing was claimed, agent/error reports it, and no turn/end follows. */
    reportTurnStartFailure: actionOn(['append.failed'], (d, e) => {
      d.notify('agent/error', { turn: d.get('turn'), step: 0, failure: e.failure })
      d.set({ turn: d.get('turn') - 1, endReason: null })
    }),
    /** TU-15: a refused turn/end (or the step/end before it) is reported, not retried; the driver still goes idle. */
    reportTurnEndFailure: actionOn(['append.failed'], (d, e) => {
      d.notify('agent/error', { turn: d.get('turn'), step: d.get('step'), failure: e.failure })
      d.set({ endReason: null })
    }),
  },
  guards: {
    /** HK-12: the answer is the prompt assembly's, not agent/pre-step's. */
    isAssembled: guard((context) => context.proposal.assembling === true),
    isRejected: guardOn(['hook.done'], (_context, e) => (e.value as PreStepAnswer).kind === 'reject'),
    /** The proposal waits for agent/pre-step's answer (someone decides there, or watches, when it was made). */
    asksPreStep: guard((context) => context.proposal.asked),
    /** A proposal made now would wait for someone: a prompt assembly (HK-12) or agent/pre-step (ST-2). */
    waitsOnProposal: guard((context) => assemblesPrompt(context) || asks(context, 'agent/pre-step')),
    asksTurnStopping: guard((context) => asks(context, 'agent/turn-stopping')),
    /** TU-7, TU-8: the claim took nothing (nothing was claimed to enter). */
    hasEmptyClaim: guard((context) => context.proposal.claimed.length === 0),
    /** TU-7, TU-8: the decision entered nothing. */
    isEmptyEntry: guardOn(['hook.done'], (_context, e) => {
      const decision = e.value as PreStepAnswer
      return decision.kind === 'enter' && decision.messages.length === 0
    }),
    /** TU-9: the last step ran tools without concluding, so the next step is entered even with nothing new. */
    followsToolStep: guard((context) => context.lastStep === 'continue'),
    isStepAborted: guard((context) => context.stepOutcome === 'aborted'),
    isStepFailed: guard((context) => context.stepOutcome === 'error'),
    /** TU-9: the step ran tools without concluding the turn. */
    stepContinues: guard((context) => context.stepOutcome === 'continue'),
    /** TU-10, IN-12: input is waiting for the next step boundary. */
    hasStepInput: guard((context) => context.nextStep.length > 0),
    /** TU-16: the turn has run as many steps as the instance allows, so no further step opens. */
    atStepLimit: guard((context) => {
      const limit = stepLimitOf(context)
      return limit !== null && context.step >= limit
    }),
    isTurnStartFailure: guardOn(['append.failed'], (_context, e) => e.eventType === 'turn/start'),
    isTurnEndFailure: guardOn(['append.failed'], (_context, e) => e.eventType === 'turn/end'),
    /** SS-12: a turn/end after a refused step/end would close the turn over an open step. */
    isStepEndFailure: guardOn(['append.failed'], (_context, e) => e.eventType === 'step/end'),
  },
})

export type TurnImplementations = typeof turnImplementations & StepImplementations
export const turnSetup = stepSetup.extend(turnImplementations)

/**
 * The turn's states. turn/start is written by the transition that enters it (`openTurn`), so a restored instance
 * can enter a turn that its log already opened (TL-18); each transition into `step` opens it the same way.
 */
export const turnState = labelGuards(
  attached<TurnImplementations>()(
    turnSetup.createStateConfig({
      initial: 'opening',
      on: {
        'append.failed': [
          // TU-4: the claim and the pre-step after a refused turn/start never happened
          { guard: 'isTurnStartFailure', target: '.done', actions: ['restoreInbox', 'reportTurnStartFailure'] },
          // TU-15, SS-12: the log stops inside the step whose step/end was refused; repair closes it on reopen
          { guard: 'isStepEndFailure', target: '.done', actions: ['restoreInbox', 'reportTurnEndFailure'] },
          // TU-14: anything else of the turn's own refused ends it error (a refused API request bubbles up to the inbox)
          { guard: 'isActivityFailure', target: '.closing', actions: ['restoreInbox', 'failTurn', 'appendOwedStepEnd'] },
        ],
      },
      states: {
        // entered only when watched: the claim waits until a listener of turn/start has been heard (CX-9)
        opening: {
          entry: 'confirmAppends',
          on: awaiting({
            'appends.confirmed': [
              // CX-9: cancelled from a turn/start observer: the claim still runs, then no pre-step
              { guard: 'isCancelled', target: 'closing', actions: ['claimProposal', 'endAborted'] },
              { target: 'proposing' },
            ],
          }),
        },
        proposing: {
          entry: 'propose',
          // ST-2: nobody decides or watches: the claimed messages are entered as they are, at once
          always: [
            // TU-7 (zero steps) and TU-8 (after a terminal step): close with the standing outcome
            { guard: and([not('asksPreStep'), 'hasEmptyClaim', not('followsToolStep')]), target: 'closing', actions: 'endWithStandingReason' },
            // CP-1: the compaction policy is checked at the pre-step checkpoint, before the step opens
            { guard: and([not('asksPreStep'), 'isAutoCompaction']), target: 'compacting', actions: 'beginAutoCompaction' },
            { guard: not('asksPreStep'), target: 'step', actions: 'openStep' },
          ],
          on: {
            // CX-16 / ST-4: a cancel wins over the pending decision; a late decision is dropped by its id
            'agent.cancel': { target: 'closing', actions: ['cancelActivity', 'endAborted'] },
            ...awaiting({
              'hook.done': [
                // HK-12: assembled; agent/pre-step is asked next (or, with nobody to decide, the step opens at once)
                { guard: 'isAssembled', actions: 'proposeAssembled' },
                { guard: 'isRejected', target: 'closing', actions: 'endBlocked' },
                { guard: and(['isEmptyEntry', not('followsToolStep')]), target: 'closing', actions: 'endWithStandingReason' },
                { guard: 'isAutoCompaction', target: 'compacting', actions: ['enterProposal', 'beginAutoCompaction'] },
                { target: 'step', actions: ['enterProposal', 'openStep'] },
              ],
              // HK-4, HK-12: a throwing pre-step or prompt assembly: no step, the claimed messages are lost
              'hook.failed': { target: 'closing', actions: 'failProposal' },
            }),
          },
        },
        compacting: {
          ...compactionState,
          onDone: [
            { guard: 'isCancelled', target: 'closing', actions: 'endAborted' },
            { guard: 'hasFailedMeasure', target: 'closing', actions: 'failCompactionCheck' },
            { target: 'step', actions: 'openStep' },
          ],
        },
        step: {
          ...stepState,
          onDone: [
            { guard: or(['isStepAborted', 'isCancelled']), target: 'closing', actions: 'endAborted' },
            { guard: 'isStepFailed', target: 'closing' },
            // TU-9 / TU-10: tools ran, or input is waiting: another proposal in this turn (when watched, after a round trip)
            { guard: and([or(['stepContinues', 'hasStepInput']), 'isObserved']), target: 'continuing' },
            // TU-16: the step that reached the limit closed with its results; no further proposal
            { guard: and([or(['stepContinues', 'hasStepInput']), 'atStepLimit']), target: 'closing', actions: 'endMaxSteps' },
            // ST-2: after a tool step or with input waiting, with nobody to wait on and no policy to check, the next step opens at once
            {
              guard: and([or(['stepContinues', 'hasStepInput']), not('waitsOnProposal'), not('isAutoCompaction')]),
              target: 'step',
              actions: ['propose', 'openStep'],
            },
            { guard: or(['stepContinues', 'hasStepInput']), target: 'proposing' },
            // TU-10: turn-stopping with nobody listening or watching can steer nothing: the turn ends as it stands
            { guard: not('asksTurnStopping'), target: 'closing', actions: 'endWithStandingReason' },
            { target: 'stopping' },
          ],
        },
        // entered only when watched: a listener of the step's last events is heard before the next claim
        continuing: {
          entry: 'confirmAppends',
          on: awaiting({
            'appends.confirmed': [
              // cancelled from an observer of the step's last events: no further proposal
              { guard: 'isCancelled', target: 'closing', actions: 'endAborted' },
              // TU-16: the step that reached the limit closed with its results; no further proposal
              { guard: 'atStepLimit', target: 'closing', actions: 'endMaxSteps' },
              { target: 'proposing' },
            ],
          }),
        },
        stopping: {
          entry: 'askTurnStopping',
          on: {
            // CX-6: cancelled during turn-stopping: the turn ends aborted and no further step runs
            'agent.cancel': { target: 'closing', actions: ['cancelActivity', 'endAborted'] },
            ...awaiting({
              'hook.done': [
                // TU-16: input arrived for a next step, but the turn has run its last allowed step
                { guard: and(['hasStepInput', 'atStepLimit']), target: 'closing', actions: 'endMaxSteps' },
                { guard: 'hasStepInput', target: 'proposing' },
                { target: 'closing', actions: 'endWithStandingReason' },
              ],
              'hook.failed': { target: 'closing', actions: 'failTurnStopping' },
            }),
          },
        },
        closing: {
          entry: 'closeTurn',
          on: {
            ...awaiting({ 'appends.confirmed': { target: 'done' } }),
            'append.failed': [
              { guard: and(['isAwaited', or(['isTurnEndFailure', 'isStepEndFailure'])]), target: 'done', actions: ['restoreInbox', 'reportTurnEndFailure'] },
              // an earlier append of this macrostep was refused (turn/end with it): write them again
              { guard: 'isAwaited', target: 'closing', reenter: true, actions: ['restoreInbox', 'failTurn', 'appendOwedStepEnd'] },
              // a failure of an earlier macrostep (its turn/end is not the one refused)
              { actions: 'restoreInbox' },
            ],
          },
        },
        done: { type: 'final' },
      },
    }),
  ),
)

/** The turn on its own: from turn/start to turn/end over whatever the inbox holds. */
export const turnMachine = turnSetup.createMachine({
  id: 'turn',
  context: ({ input }) => ({ ...initialContext(input) }),
  entry: 'openTurn',
  ...turnState,
  on: standaloneOn(turnState.on),
})

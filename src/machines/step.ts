// step: step/start and each entered user/message (written by the transition
// that enters the step), then the model request (`attempt`, with its
// retries) and the tool calls (`toolBatch`), then step/end as it closes. Every exit after step/start writes step/end (ST-4);
// the outcome tells the turn what comes next.
import { and, not } from 'xstate'
import { standaloneOn } from './activity.js'
import { attached } from './attachment.js'
import { attemptSetup, attemptState, type AttemptImplementations } from './attempt.js'
import { NO_PROPOSAL, initialContext, newToolBatch } from './context.js'
import { action, actionOn, guardOn, named, labelGuards } from './setup.js'
import { toolBatchState } from './tool-batch.js'

const stepImplementations = named({
  actions: {
    /** step/start, then each entered message as user/message in decision order (ST-3). */
    openStep: action((d) => {
      const turn = d.get('turn')
      const step = d.get('step') + 1
      d.set({ step, stepOutcome: null, toolBatch: newToolBatch([], d.get('instance').maxParallelToolCalls) })
      d.setRequest({ attempt: 0, failure: null })
      d.append('step/start', { turn, step })
      for (const message of d.get('proposal').entering) d.append('user/message', message, { surfaceOp: 'append' })
      d.set({ proposal: NO_PROPOSAL })
    }),
    /** step/end; the turn reads what kind of step it was, and max-tokens stays for the turn (TU-12). */
    closeStep: action((d) => {
      d.append('step/end', { turn: d.get('turn'), step: d.get('step') })
      const outcome = d.get('stepOutcome')
      d.set({
        lastStep: outcome === 'completed' || outcome === 'max-tokens' ? 'terminal' : 'continue',
        maxTokensSeen: d.get('maxTokensSeen') || outcome === 'max-tokens',
      })
    }),
    /** A refused append inside the step ends it `error` (its step/end still comes). */
    failStep: actionOn(['append.failed'], (d, e) => {
      d.set({ stepOutcome: 'error', failure: { failure: e.failure, step: d.get('step') }, endReason: { kind: 'error', error: e.failure } })
    }),
    /** TU-14: a refused step/start leaves no step events at all. */
    failUnopenedStep: actionOn(['append.failed'], (d, e) => {
      const step = d.get('step')
      d.set({ stepOutcome: 'error', failure: { failure: e.failure, step }, endReason: { kind: 'error', error: e.failure }, step: step - 1 })
    }),
  },
  guards: {
    isStepStartFailure: guardOn(['append.failed'], (_context, e) => e.eventType === 'step/start'),
    /** The refused append came before this step's step/start in the same macrostep: the step never opened, and the turn deals with it. */
    skippedStepStart: guardOn(['append.failed'], (_context, e) => e.skipped.includes('step/start')),
  },
})

export type StepImplementations = typeof stepImplementations & AttemptImplementations
export const stepSetup = attemptSetup.extend(stepImplementations)

export const stepState = labelGuards(
  attached<StepImplementations>()(
    stepSetup.createStateConfig({
      initial: 'attempt',
      on: {
        'append.failed': [
          { guard: 'isStepStartFailure', target: '.unopened', actions: ['restoreInbox', 'failUnopenedStep'] },
          // ST-4: anything else of the step's own refused: close it with step/end, the turn ends error
          { guard: and(['isActivityFailure', not('skippedStepStart')]), target: '.closed', actions: ['restoreInbox', 'failStep'] },
        ],
      },
      states: {
        // the attempt leaves for the tool batch or `closed` itself
        attempt: attemptState,
        // the batch leaves for `closed` itself once both its lanes are done
        toolBatch: toolBatchState,
        closed: { id: 'stepClosed', type: 'final', entry: 'closeStep' },
        unopened: { type: 'final' },
      },
    }),
  ),
)

/** The step on its own: one entered proposal of an open turn. */
export const stepMachine = stepSetup.createMachine({
  id: 'step',
  context: ({ input }) => ({ ...initialContext(input), turn: 1 }),
  entry: 'openStep',
  ...stepState,
  on: standaloneOn(stepState.on),
})

// step: opening (step/start, then each entered user/message) -> requesting
// (attempts) -> tools -> closing (step/end). Every exit after step/start
// writes step/end (ST-4); the outcome tells the turn what comes next.
import { activeOn } from './active.js'
import { attemptState } from './attempt.js'
import { act, agentSetup, awaited, awaitedAndCancelled, initialContext, type Draft } from './setup.js'
import { toolBatchState } from './tool-batch.js'
import { newBatch } from './batch.js'

const outcomeIs =
  (...outcomes: string[]) =>
  ({ context }: { context: { stepOutcome: string | null } }) =>
    context.stepOutcome !== null && outcomes.includes(context.stepOutcome)

function faultOutcome(d: Draft, e: { failure: { message: string; code: string }; error: unknown }): void {
  d.set({ stepOutcome: 'error', failure: { failure: e.failure, error: e.error, step: d.get('step') }, end: { kind: 'error', error: e.failure } })
}

export const stepState = agentSetup.createStateConfig({
  initial: 'opening',
  states: {
    opening: {
      entry: act((d) => {
        const turn = d.get('turn')
        const step = d.get('step') + 1
        d.set({ step, stepOutcome: null, tools: newBatch([], d.get('instance').maxParallelToolCalls) })
        d.setRequest({ attempt: 0, failure: null })
        d.append('step/start', { turn, step })
        // ST-3: the enter decision is authoritative, in decision order
        for (const message of d.get('proposal').entering) d.append('user/message', message, { surfaceOp: 'append' })
        d.set({ proposal: { batch: [], entering: [] } })
        d.sync()
      }),
      on: {
        sync: [
          // CX-6: cancelled from a step/start observer: close the step before any request
          { guard: awaitedAndCancelled, target: 'closing', actions: act((d) => d.set({ stepOutcome: 'aborted' })) },
          { guard: awaited, target: 'requesting' },
        ],
        fault: [
          {
            // TU-14: a refused step/start leaves no step events at all
            guard: ({ event }) => event.eventType === 'step/start',
            target: 'unopened',
            actions: act<'fault'>((d, e) => {
              faultOutcome(d, e)
              d.set({ step: d.get('step') - 1 })
            }),
          },
          { target: 'closing', actions: act<'fault'>(faultOutcome) },
        ],
      },
    },
    requesting: {
      ...attemptState,
      onDone: [{ guard: outcomeIs('continue'), target: 'tools' }, { target: 'closing' }],
    },
    tools: { ...toolBatchState, onDone: 'closing' },
    closing: {
      entry: act((d) => {
        d.append('step/end', { turn: d.get('turn'), step: d.get('step') })
        const outcome = d.get('stepOutcome')
        d.set({
          lastStep: outcome === 'completed' || outcome === 'max-tokens' ? 'terminal' : 'continue',
          sticky: d.get('sticky') || outcome === 'max-tokens',
        })
        d.sync()
      }),
      on: {
        sync: { guard: awaited, target: 'done' },
        fault: [
          // ST-4: an earlier append of this macrostep was refused (e.g. the anchor), so step/end was never tried: write it now
          { guard: ({ event }) => event.eventType !== 'step/end', target: 'closing', reenter: true, actions: act<'fault'>(faultOutcome) },
          { target: 'done', actions: act<'fault'>(faultOutcome) },
        ],
      },
    },
    unopened: { type: 'final' },
    done: { type: 'final' },
  },
})

/** The step on its own: one entered proposal of an open turn. */
export const stepMachine = agentSetup.createMachine({
  id: 'step',
  context: ({ input }) => ({ ...initialContext(input), turn: 1 }),
  on: activeOn,
  ...stepState,
})

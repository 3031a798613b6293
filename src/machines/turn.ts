// turn: opening (turn/start) -> claiming + proposing (agent/pre-step) ->
// stepping -> settling -> stopping (agent/turn-stopping, then re-check) ->
// closing (turn/end with its reason). Zero-step exits: blocked, completed.
import type { UserMessage } from '../session/schemas.js'
import { activeOn, cancelRunning } from './active.js'
import { abortedEnd, act, agentSetup, awaited, cancelled, claim, fail, initialContext, standingEnd, type Draft, type EventOf } from './setup.js'
import { stepState } from './step.js'

type Decision = { kind: 'reject' } | { kind: 'enter'; messages: readonly UserMessage[] }
const decisionOf = (event: { type: string }) => (event as EventOf<'hook.done'>).value as Decision

const enteredEmpty = (event: { type: string }) => {
  const decision = decisionOf(event)
  return decision.kind === 'enter' && decision.messages.length === 0
}

const endAborted = act((d) => d.set({ end: abortedEnd(d) }))

const hookFailure = (d: Draft, e: EventOf<'hook.failed'>, step: number) => fail(d, { failure: e.failure, error: e.error, step })

export const turnState = agentSetup.createStateConfig({
  initial: 'opening',
  states: {
    opening: {
      entry: act((d) => {
        const turn = d.get('turn') + 1
        d.set({ turn, step: 0, sticky: false, lastStep: 'none', end: null, failure: null, stepOutcome: null })
        d.append('turn/start', { turn })
        d.sync()
      }),
      on: {
        sync: { guard: awaited, target: 'claiming' },
        // TU-4: nothing claimed, no turn/end; agent/error reports it and the driver goes idle
        fault: {
          target: 'done',
          actions: act<'fault'>((d, e) => {
            d.notify('agent/error', { turn: d.get('turn'), step: 0, error: e.error })
            d.set({ turn: d.get('turn') - 1, end: null })
          }),
        },
      },
    },
    // IN-10: the claim runs synchronously right after turn/start or the previous step/end
    claiming: {
      entry: act((d) => claim(d, d.get('step') === 0)),
      // CX-6 / CX-9: cancelled before the proposal (e.g. from a turn/start observer): no pre-step runs
      always: [{ guard: cancelled, target: 'closing', actions: endAborted }, { target: 'proposing' }],
    },
    proposing: {
      entry: act((d) => {
        const batch = d.get('proposal').batch
        const payload = { messages: batch, turn: d.get('turn'), step: d.get('step') + 1 }
        d.hook('agent/pre-step', payload, { kind: 'enter', messages: batch })
      }),
      on: {
        // CX-16 / ST-4: a cancel wins over the pending decision; a late decision is dropped by its id
        'agent.cancel': { target: 'closing', actions: [cancelRunning, endAborted] },
        'hook.done': [
          {
            guard: (a) => awaited(a) && decisionOf(a.event).kind === 'reject',
            target: 'closing',
            actions: act((d) => d.set({ end: { kind: 'blocked' } })),
          },
          {
            // TU-7 (zero steps) and TU-8 (after a terminal step): close with the standing outcome
            guard: (a) => awaited(a) && enteredEmpty(a.event) && a.context.lastStep !== 'continue',
            target: 'closing',
            actions: act((d) => d.set({ end: standingEnd(d) })),
          },
          {
            guard: awaited,
            target: 'stepping',
            actions: act<'hook.done'>((d, e) =>
              d.set({ proposal: { batch: d.get('proposal').batch, entering: (e.value as { messages: readonly UserMessage[] }).messages } }),
            ),
          },
        ],
        // HK-4: no step, the claimed batch is lost
        'hook.failed': {
          guard: awaited,
          target: 'closing',
          actions: act<'hook.failed'>((d, e) => hookFailure(d, e, d.get('step') + 1)),
        },
      },
    },
    stepping: { ...stepState, onDone: 'settling' },
    settling: {
      always: [
        {
          guard: ({ context }) => context.stepOutcome === 'aborted' || context.cause !== null,
          target: 'closing',
          actions: endAborted,
        },
        { guard: ({ context }) => context.stepOutcome === 'error', target: 'closing' },
        // TU-9 / TU-10: tools ran, or input is waiting: another proposal in this turn
        {
          guard: ({ context }) => context.stepOutcome === 'continue' || context.nextStep.length > 0,
          target: 'claiming',
        },
        { target: 'stopping' },
      ],
    },
    stopping: {
      entry: act((d) => d.hook('agent/turn-stopping', { turn: d.get('turn') }, undefined)),
      on: {
        // CX-6: cancelled during turn-stopping: the turn ends aborted and no further step runs
        'agent.cancel': { target: 'closing', actions: [cancelRunning, endAborted] },
        'hook.done': [
          { guard: (a) => awaited(a) && a.context.nextStep.length > 0, target: 'claiming' },
          { guard: awaited, target: 'closing', actions: act((d) => d.set({ end: standingEnd(d) })) },
        ],
        'hook.failed': {
          guard: awaited,
          target: 'closing',
          actions: act<'hook.failed'>((d, e) => hookFailure(d, e, d.get('step'))),
        },
      },
    },
    closing: {
      entry: act((d) => {
        const end = d.get('end') ?? standingEnd(d)
        const failure = d.get('failure')
        // PH-8: agent/error comes before the turn/end{error} it explains
        if (end.kind === 'error' && failure) d.notify('agent/error', { turn: d.get('turn'), step: failure.step, error: failure.error })
        d.set({ end })
        d.append('turn/end', { turn: d.get('turn'), reason: end })
        d.sync()
      }),
      on: {
        sync: { guard: awaited, target: 'done' },
        // TU-15: a refused turn/end is reported, not retried; the driver still goes idle
        fault: {
          target: 'done',
          actions: act<'fault'>((d, e) => {
            d.notify('agent/error', { turn: d.get('turn'), step: d.get('step'), error: e.error })
            d.set({ end: null })
          }),
        },
      },
    },
    done: { type: 'final' },
  },
})

/** The turn on its own: from turn/start to turn/end over whatever the inbox holds. */
export const turnMachine = agentSetup.createMachine({
  id: 'turn',
  context: ({ input }) => initialContext(input),
  on: activeOn,
  ...turnState,
})

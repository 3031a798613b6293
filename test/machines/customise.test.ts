// The customisations docs/machines.md shows, each run on a real agent: swap a
// named guard or action with `.provide()` and hand the result to createAgent.
import { describe, expect, it } from 'vitest'
import { assertEvent } from 'xstate'
import { defineTool, userMessage } from '../../src/index.js'
import { agentMachine, agentSetup } from '../../src/machines/index.js'
import { errorResponse, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { z } from 'zod'
import { scriptedAgent, tick, trace, turnEnds } from '../helpers.js'

/** Retry only failures worth retrying, and at most three attempts per step, whatever listeners answer. */
const RETRYABLE = new Set(['RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT', 'EMPTY_RESPONSE'])
const carefulRetries = agentMachine.provide({
  guards: {
    isRetry: ({ context, event }) => {
      assertEvent(event, 'hook.done')
      const asked = (event.value as { kind?: string } | undefined)?.kind === 'retry'
      const code = context.request.failure?.failure.code ?? ''
      return asked && RETRYABLE.has(code) && context.request.attempt < 3
    },
  },
})

/** At most `limit` steps per turn: after that, tool results end the turn instead of going back to the model. */
const stepBudget = (limit: number) =>
  agentMachine.provide({ guards: { stepContinues: ({ context }) => context.stepOutcome === 'continue' && context.step < limit } })

/** A cancelled stream leaves no interrupted prefix in the log: the step just ends aborted. */
const noInterruptedPrefix = agentMachine.provide({ actions: { keepInterruptedPrefix: agentSetup.assign({ stepOutcome: 'aborted' }) } })

const busy = errorResponse({ message: 'busy', code: 'RATE_LIMIT' })

describe('customising the agent machine with .provide()', () => {
  it('a stricter retry guard: at most three attempts of a retryable failure, whatever the listener says', async () => {
    const { agent, model } = scriptedAgent([busy, busy, busy, busy, textResponse('late')], { machine: carefulRetries })
    agent.on('agent/request-error', () => ({ kind: 'retry' }))
    agent.followup('go')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(3)
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error: { message: 'busy', code: 'RATE_LIMIT' } }])
  })

  it('a stricter retry guard: a failure outside the retryable set is not retried at all', async () => {
    const { agent, model } = scriptedAgent([errorResponse({ message: 'bad key', code: 'AUTH' }), textResponse('never')], {
      machine: carefulRetries,
    })
    agent.on('agent/request-error', () => ({ kind: 'retry' }))
    agent.followup('go')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(1)
    expect(turnEnds(agent)[0]).toMatchObject({ kind: 'error', error: { code: 'AUTH' } })
  })

  it('the default machine retries as long as the listener asks (the customisation is what changed it)', async () => {
    const { agent, model } = scriptedAgent([busy, busy, busy, busy, textResponse('late')])
    agent.on('agent/request-error', () => ({ kind: 'retry' }))
    agent.followup('go')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(5)
    expect(turnEnds(agent)).toEqual([{ kind: 'completed' }])
  })

  it('a step budget: a model that keeps calling tools gets two steps, then the turn ends', async () => {
    const look = defineTool({ name: 'look', description: 'look around', input: z.object({}), executionMode: 'parallel', execute: () => 'nothing new' })
    const again: ScriptEntry = () => toolCallResponse([{ id: `c${Math.random()}`, name: 'look', arguments: '{}' }])
    const { agent, model } = scriptedAgent([again, again, again, again], { machine: stepBudget(2), tools: [look] })
    agent.followup('explore')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(2)
    expect(trace(agent).filter((e) => e.startsWith('step/start'))).toEqual(['step/start{1,1}', 'step/start{1,2}'])
    expect(turnEnds(agent)).toEqual([{ kind: 'completed' }])
  })

  it('no interrupted prefix: a cancelled stream writes no assistant/message', async () => {
    const slow: ScriptEntry = async function* () {
      yield* textResponse('a partial answer').slice(0, 2)
      await new Promise(() => {})
    } as unknown as ScriptEntry
    const run = async (machine = agentMachine) => {
      const { agent } = scriptedAgent([slow], { machine })
      agent.followup(userMessage('go'))
      await tick(5)
      agent.cancel()
      await agent.whenIdle()
      return trace(agent)
    }
    expect(await run()).toContain('assistant/message(interrupted)')
    const without = await run(noInterruptedPrefix)
    expect(without.some((e) => e.startsWith('assistant/message'))).toBe(false)
    expect(without.slice(-2)).toEqual(['step/end{1,1}', 'turn/end{1,aborted}'])
  })
})

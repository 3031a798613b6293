// The inspect option: the root actor and its transitions are visible to an
// inspector (the Stately inspector takes the same callback).
import { describe, expect, it } from 'vitest'
import type { InspectionEvent } from 'xstate'
import { userMessage } from '../../src/index.js'
import { textResponse } from '../../src/testing/index.js'
import { scriptedAgent } from '../helpers.js'

describe('inspection', () => {
  it('createAgent({ inspect }) reports the actor, its events and every microstep of a turn', async () => {
    const seen: InspectionEvent[] = []
    const { agent } = scriptedAgent([textResponse('hi')], { inspect: (event) => void seen.push(event) })
    agent.followup(userMessage('hello'))
    await agent.whenIdle()
    expect(seen.some((e) => e.type === '@xstate.actor' && e.actorRef === agent.actor)).toBe(true)
    const received = seen.filter((e) => e.type === '@xstate.event').map((e) => (e as { event: { type: string } }).event.type)
    expect(received).toContain('inbox.send')
    expect(received).toContain('model.settled')
    // the inspector sees the turn pass through its states, those it passes within one event too (every microstep)
    const values = seen
      .filter((e) => e.type === '@xstate.microstep')
      .map((e) => JSON.stringify((e as unknown as { snapshot: { value: unknown } }).snapshot.value))
    // the step closes and the turn closes within the model.settled event that ends the step
    expect(values.some((v) => v.includes('"closed"'))).toBe(true)
    expect(values.some((v) => v.includes('"closing"'))).toBe(true)
    expect(values.some((v) => v.includes('"streaming"'))).toBe(true)
    expect(values.at(-1)).toBe('"idle"')
  })
})

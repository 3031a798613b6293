import { describe, expect, it } from 'vitest'
import { userMessage } from '../src/index.js'
import { textResponse } from '../src/testing/index.js'
import { scriptedAgent, trace } from './helpers.js'

describe('smoke', () => {
  it('TU-2: a one-step text turn', async () => {
    const { agent } = scriptedAgent([textResponse('hello')])
    agent.followup(userMessage('hi'))
    await agent.whenIdle()
    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(hi)',
      'request/header',
      'request/context',
      'assistant/message',
      'step/end{1,1}',
      'turn/end{1,completed}',
    ])
  })
})

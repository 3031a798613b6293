// SS-12 — enclosure: every log the loop writes nests its events properly,
// whatever path the turn took; the checker flags each kind of breach.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool, userMessage, type SessionEvent } from '../../src/index.js'
import { checkSessionInvariants, errorResponse, hang, maxTokensResponse, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { scriptedAgent, tick } from '../helpers.js'

const enclosureRules = new Set(['turn-enclosure', 'event-enclosure', 'call-result-pairing', 'balanced'])

describe('SS-12 — enclosure', () => {
  it('SS-12: logs of tool turns, retries, max-tokens, rejects and cancels all keep the enclosure rules', async () => {
    const echo = defineTool({ name: 'echo', description: 'e', input: z.object({}).loose(), executionMode: 'parallel', execute: () => 'ok' })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'a', name: 'echo', arguments: '{}' },
          { id: 'b', name: 'echo', arguments: '{}' },
        ]),
        errorResponse({ message: 'busy', code: 'SERVER' }),
        maxTokensResponse('cut'),
        textResponse('done'),
        hang,
      ],
      { tools: [echo] },
    )
    let retries = 0
    agent.on('agent/request-error', () => (retries++ === 0 ? { kind: 'retry' } : undefined))
    agent.followup(userMessage('one'))
    await agent.whenIdle()
    agent.followup(userMessage('two'))
    await agent.whenIdle()
    const off = agent.on('agent/pre-step', () => ({ kind: 'reject' }))
    agent.followup(userMessage('three'))
    await agent.whenIdle()
    off()
    agent.followup(userMessage('four'))
    await tick(5)
    agent.cancel()
    await agent.whenIdle()
    const reasons = agent.session.events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason.kind] : []))
    expect(reasons).toEqual(['max-tokens', 'completed', 'blocked', 'aborted'])
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('SS-12: the checker names each breach of enclosure with its seq', async () => {
    const { agent } = scriptedAgent([textResponse('hi')])
    agent.followup('hi')
    await agent.whenIdle()
    const good = agent.session.events.map((e) => ({ ...e })) as SessionEvent[]
    const at = (type: string) => good.findIndex((e) => e.type === type)
    const breaches: Array<[string, (log: any[]) => void]> = [
      ['a second turn/start inside the open turn', (log) => log.splice(at('step/start'), 0, { type: 'turn/start', data: { turn: 2 } })],
      ['a step/start outside a turn', (log) => log.unshift({ type: 'step/start', data: { turn: 1, step: 1 } })],
      [
        'a chunk naming another step',
        (log) => (log[at('assistant/chunk')] = { ...log[at('assistant/chunk')], data: { ...log[at('assistant/chunk')].data, step: 2 } }),
      ],
      ['turn/end while the step is open', (log) => log.splice(at('step/end'), 1)],
      ['a request/header outside any turn', (log) => log.push({ type: 'request/header', data: good[at('request/header')].data })],
    ]
    for (const [what, breach] of breaches) {
      const log = good.map((e) => ({ ...e }))
      breach(log)
      const renumbered = log.map((e, seq) => ({ ...e, seq, time: 0 }))
      const found = checkSessionInvariants(renumbered).filter((v) => enclosureRules.has(v.rule))
      expect(found.length, what).toBeGreaterThan(0)
      expect(found[0].seq, what).toBeGreaterThanOrEqual(0)
    }
  })
})

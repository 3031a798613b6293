// A property over random tool batches: whatever the modes, caps, settle
// orders and cancellation points, the scheduler keeps its promises.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defineTool, userMessage } from '../../src/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { propertyRuns, tick } from '../helpers.js'

interface Harness {
  open: Array<{ callId: string; release: () => void }>
  inFlight: Set<string>
  exclusiveInFlight: Set<string>
  violations: string[]
  maxInFlight: number
}

function tools(h: Harness) {
  const make = (name: 'p' | 'x') =>
    defineTool({
      name,
      description: name === 'p' ? 'parallel-safe read' : 'exclusive write',
      input: z.object({}),
      executionMode: name === 'p' ? 'parallel' : 'exclusive',
      execute: (_args, { callId }) => {
        if (h.exclusiveInFlight.size > 0) h.violations.push(`${callId} started while barrier ${[...h.exclusiveInFlight]} ran`)
        if (name === 'x' && h.inFlight.size > 0) h.violations.push(`barrier ${callId} started while ${[...h.inFlight]} ran`)
        h.inFlight.add(callId)
        if (name === 'x') h.exclusiveInFlight.add(callId)
        h.maxInFlight = Math.max(h.maxInFlight, h.inFlight.size)
        return new Promise<string>((resolve) => {
          h.open.push({
            callId,
            release: () => {
              h.inFlight.delete(callId)
              h.exclusiveInFlight.delete(callId)
              resolve(`done ${callId}`)
            },
          })
        })
      },
    })
  return [make('p'), make('x')]
}

describe('TL property', () => {
  it('TL-3/TL-4/TL-7/TL-14/TL-15: random batches keep model order, the cap, barriers and call/result pairing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { minLength: 5, maxLength: 30 }),
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.nat(), { minLength: 60, maxLength: 60 }),
        fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
        fc.boolean(),
        async (parallel, cap, picks, cancelAt, keepInbox) => {
          const h: Harness = { open: [], inFlight: new Set(), exclusiveInFlight: new Set(), violations: [], maxInFlight: 0 }
          const calls = parallel.map((p, i) => ({ id: `c${i}`, name: p ? 'p' : 'x', arguments: '{}' }))
          const model = scriptedModel([toolCallResponse(calls), textResponse('done')])
          const agent = createAgent({ model, tools: tools(h), maxParallelToolCalls: cap, logger: { error: () => {} } })
          agent.followup(userMessage('go'))
          let idle = false
          void agent.whenIdle().then(() => (idle = true))
          for (let round = 0; !idle && round < 400; round++) {
            await tick(0)
            if (round === cancelAt) agent.cancel({ kind: 'user' }, { keepInbox })
            if (h.open.length > 0) {
              const [next] = h.open.splice(picks[round % picks.length] % h.open.length, 1)
              next.release()
            }
          }
          expect(idle).toBe(true)
          expect(h.violations).toEqual([])
          expect(h.maxInFlight).toBeLessThanOrEqual(cap)
          const events = agent.session.events
          const callIds = events.filter((e) => e.type === 'tool/call').map((e) => (e.data as { callId: string }).callId)
          const resultIds = events.filter((e) => e.type === 'tool/result').map((e) => (e.data as any).message.source.callId)
          // every call, started or synthetic, appears once in model order with exactly one result
          expect(callIds).toEqual(calls.map((c) => c.id))
          expect(resultIds).toEqual(calls.map((c) => c.id))
          expect(checkSessionInvariants(events)).toEqual([])
        },
      ),
      { numRuns: propertyRuns(40) },
    )
  }, 120_000)
})

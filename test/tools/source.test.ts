// Tool sources: a tool list the agent reads again before each step's request
// (what mcpTools returns). The step's tools are fixed at that read: the
// request, the scheduler's modes and the calls all see the same ones.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool, type SessionEvent, type ToolDefinition } from '../../src/index.js'
import { textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, scriptedAgent } from '../helpers.js'

type Result = Extract<SessionEvent, { type: 'tool/result' }>
const results = (events: readonly SessionEvent[]) => events.filter((e): e is Result => e.type === 'tool/result')
const offered = (requests: readonly { tools?: readonly { name: string }[] }[]) => requests.map((r) => (r.tools ?? []).map((t) => t.name))
const plain = (name: string, execute: () => string | Promise<string> = () => name) => defineTool({ name, description: name, input: z.object({}), execute })

describe('tool sources', () => {
  it('a tool a source adds during a step is offered from the next step on, not inside the step; the header logs the change', async () => {
    const live: ToolDefinition[] = []
    const reads: unknown[] = []
    const late = plain('late')
    const { agent, model } = scriptedAgent(
      [
        () => (live.push(late), toolCallResponse([{ id: 'c1', name: 'late', arguments: '{}' }])),
        toolCallResponse([{ id: 'c2', name: 'late', arguments: '{}' }]),
        textResponse('done'),
      ],
      { tools: [plain('fixed'), { currentTools: (read) => (reads.push(read), live) }] },
    )
    await agent.run('go')
    // read once at createAgent, then before each request, told which one
    expect(reads).toEqual([undefined, { turn: 1, step: 1 }, { turn: 1, step: 2 }, { turn: 1, step: 3 }])
    expect(offered(model.requests)).toEqual([['fixed'], ['fixed', 'late'], ['fixed', 'late']])
    expect(results(agent.session.events).map((e) => e.data.error?.code ?? e.data.message.content[0].content)).toEqual(['UNKNOWN_TOOL', 'late'])
    expect(ofType(agent, 'request/header').map((e) => e.data.reason)).toEqual(['initial', 'change'])
  })

  it("a source's promise is awaited before the request; its tools' execution modes reach the scheduler (parallel calls overlap)", async () => {
    let inFlight = 0
    let most = 0
    const parallel = defineTool({
      name: 'p',
      description: 'parallel',
      input: z.object({}),
      executionMode: 'parallel',
      execute: async () => {
        most = Math.max(most, ++inFlight)
        await new Promise((resolve) => setTimeout(resolve, 5))
        inFlight--
        return 'p'
      },
    })
    let listed: ToolDefinition[] = []
    const { agent, model } = scriptedAgent(
      [
        () => ((listed = [parallel]), textResponse('first')),
        toolCallResponse([
          { id: 'c1', name: 'p', arguments: '{}' },
          { id: 'c2', name: 'p', arguments: '{}' },
        ]),
        textResponse('done'),
      ],
      { tools: { currentTools: () => new Promise<ToolDefinition[]>((resolve) => setTimeout(() => resolve(listed), 1)) } },
    )
    await agent.run('one')
    await agent.run('two')
    expect(offered(model.requests)).toEqual([[], ['p'], ['p']])
    expect(most).toBe(2)
  })

  it('a source may not shadow a plain tool, and a source that throws keeps its last list; both are reported, the turn goes on', async () => {
    const errors: string[] = []
    let fail = false
    const source = {
      currentTools: () => {
        if (fail) throw new Error('listing broke')
        return [plain('fixed', () => 'shadow'), plain('extra')]
      },
    }
    const { agent, model } = scriptedAgent(
      [
        () => ((fail = true), toolCallResponse([{ id: 'c1', name: 'fixed', arguments: '{}' }])),
        toolCallResponse([{ id: 'c2', name: 'extra', arguments: '{}' }]),
        textResponse('ok'),
      ],
      { tools: [plain('fixed'), source], logger: { error: (message) => errors.push(message) } },
    )
    const result = await agent.run('go')
    expect(result.end.kind).toBe('completed')
    expect(offered(model.requests)).toEqual([
      ['extra', 'fixed'],
      ['extra', 'fixed'],
      ['extra', 'fixed'],
    ])
    expect(results(agent.session.events).map((e) => e.data.message.content[0].content)).toEqual(['fixed', 'extra'])
    expect(errors.some((m) => /two tools are named fixed/.test(m))).toBe(true)
    expect(errors.filter((m) => /a tool source failed to list its tools/.test(m))).toHaveLength(2)
  })
})

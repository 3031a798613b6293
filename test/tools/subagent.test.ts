// Subagents: an agent as a tool, owned by its parent, with logs that name each other.
import { describe, expect, it } from 'vitest'
import { z } from 'zod/v4'
import { agentTool, createAgent, defineTool, parentOf, subagentsOf, SUBAGENT_SOURCE, type Agent, type SessionEventOf } from '../../src/index.js'
import { memoryStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, tick, track } from '../helpers.js'

const usage = { inputTokens: 10, outputTokens: 5 }
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })

/** The prompt's source and the child's log, for every child made during the test (read from the parent's results). */
function childLinks(parent: Agent) {
  return ofType(parent, 'tool/result').map((e) => ({
    callId: e.data.message.source.callId,
    meta: e.data.meta as { subagent: { sessionId: string; end: string } },
  }))
}

describe('subagents: agentTool', () => {
  it('a parent with two parallel children and one exclusive: each child answers its call, the logs name each other, usage rolls up', async () => {
    const research = agentTool({
      name: 'research',
      description: 'Research a topic',
      input: z.object({ task: z.string() }),
      executionMode: 'parallel',
      agent: ({ task }) => ({ model: scriptedModel([textResponse(`notes on ${task}`, { usage })]), id: `child-${task}` }),
    })
    const summarise = agentTool({
      name: 'summarise',
      description: 'Summarise notes',
      input: z.object({ notes: z.string() }),
      prompt: ({ notes }) => `Summarise: ${notes}`,
      agent: () => ({ model: scriptedModel([textResponse('summary', { usage })]) }),
      output: (result) => ({ content: `SUMMARY: ${result.text}` }),
    })
    const parent = track(
      createAgent({
        model: scriptedModel([
          toolCallResponse([call('r1', 'research', { task: 'a' }), call('r2', 'research', { task: 'b' }), call('s1', 'summarise', { notes: 'x' })], undefined, {
            usage,
          }),
          textResponse('done', { usage }),
        ]),
        tools: [research, summarise],
      }),
    )
    const result = await parent.run('plan')
    expect(result.end).toEqual({ kind: 'completed' })
    const links = childLinks(parent)
    expect(links.map((l) => l.callId)).toEqual(['r1', 'r2', 's1'])
    expect(links.map((l) => l.meta.subagent.end)).toEqual(['completed', 'completed', 'completed'])
    expect(links[0].meta.subagent.sessionId).toBe('child-a')
    const contents = ofType(parent, 'tool/result').map((e) => e.data.message.content[0].content)
    expect(contents).toEqual(['notes on a', 'notes on b', 'SUMMARY: summary'])
    // the parent's two requests and its three children's, 15 tokens each
    expect(result.usage.totalTokens).toBe(5 * 15)
    expect(result.turn !== null && result.subagentUsage?.totalTokens).toBe(3 * 15)
    expect(subagentsOf(parent)).toEqual([])
    expect(checkSessionInvariants(parent.session.events)).toEqual([])
  })

  it('while the call runs the child is listed under its parent; once it ends the child is disposed and unlisted', async () => {
    const listed: Agent[][] = []
    let child: Agent | undefined
    const tool = agentTool({
      name: 'ask',
      description: 'Ask a child',
      input: z.object({ prompt: z.string() }),
      agent: () => ({
        model: scriptedModel([
          () => {
            listed.push([...subagentsOf(parent)])
            return textResponse('child answer')
          },
        ]),
        id: 'kid',
      }),
      output: (result, agent) => ((child = agent), result.text),
    })
    const parent = track(
      createAgent({ id: 'mom', model: scriptedModel([toolCallResponse([call('c1', 'ask', { prompt: 'hello child' })]), textResponse('ok')]), tools: [tool] }),
    )
    await parent.run('go')
    expect(listed).toEqual([[child]])
    const meta = ofType(parent, 'tool/result')[0].data.meta as { subagent: Record<string, unknown> }
    expect(meta.subagent).toMatchObject({ sessionId: 'kid', turn: 1, steps: 1, end: 'completed' })
    expect(subagentsOf(parent)).toEqual([])
    expect(() => child!.followup('more')).toThrow(/disposed/)
  })

  it('the child log records its parent: source plugin agentchart/subagent with the parent session and call', async () => {
    let child: Agent | undefined
    const tool = agentTool({
      name: 'ask',
      description: 'Ask a child',
      input: z.object({ prompt: z.string() }),
      agent: () => ({ model: scriptedModel([textResponse('child answer')]) }),
      output: (result, agent) => {
        child = agent
        expect(parentOf(agent)).toMatchObject({ callId: 'c1', depth: 1 })
        return result.text
      },
    })
    const parent = track(
      createAgent({ id: 'mom', model: scriptedModel([toolCallResponse([call('c1', 'ask', { prompt: 'hello child' })]), textResponse('ok')]), tools: [tool] }),
    )
    await parent.run('go')
    const prompt = child!.session.events.find((e): e is SessionEventOf<'user/message'> => e.type === 'user/message')!
    expect(prompt.data.source).toEqual({
      kind: 'plugin',
      plugin: SUBAGENT_SOURCE,
      parentSessionId: 'mom',
      parentTurn: 1,
      parentStep: 1,
      parentCallId: 'c1',
      tool: 'ask',
    })
    expect(prompt.data.content).toEqual([{ type: 'text', text: 'hello child' }])
    expect(checkSessionInvariants(child!.session.events)).toEqual([])
  })

  it('cancelling the parent mid-turn ends every child turn aborted with cause parent, and no child request starts after it', async () => {
    const kids: Agent[] = []
    const models: ReturnType<typeof scriptedModel>[] = []
    const tool = agentTool({
      name: 'research',
      description: 'Research',
      input: z.object({ task: z.string() }),
      executionMode: 'parallel',
      agent: () => {
        const model = scriptedModel(['hang', textResponse('never')])
        models.push(model)
        return { model }
      },
      output: (result, agent) => {
        kids.push(agent)
        return result.text
      },
    })
    const parent = track(
      createAgent({
        model: scriptedModel([toolCallResponse([call('r1', 'research', { task: 'a' }), call('r2', 'research', { task: 'b' })]), textResponse('never')]),
        tools: [tool],
      }),
    )
    const run = parent.run('plan')
    while (subagentsOf(parent).length < 2 || models.some((m) => m.requests.length === 0)) await tick(1)
    parent.cancel()
    const result = await run
    expect(result.end).toMatchObject({ kind: 'aborted', reason: { kind: 'user' } })
    expect(kids).toHaveLength(2)
    for (const kid of kids) {
      expect(ofType(kid, 'turn/end').map((e) => e.data.reason)).toEqual([{ kind: 'aborted', reason: { kind: 'parent' } }])
      expect(checkSessionInvariants(kid.session.events)).toEqual([])
    }
    await tick(20)
    expect(models.map((m) => m.requests.length)).toEqual([1, 1])
    expect(checkSessionInvariants(parent.session.events)).toEqual([])
  })

  it('disposing the parent disposes its children', async () => {
    let kid: Agent | undefined
    const tool = agentTool({
      name: 'research',
      description: 'Research',
      input: z.object({ task: z.string() }),
      agent: () => ({ model: scriptedModel(['hang']) }),
      output: (result, agent) => {
        kid = agent
        return result.text
      },
    })
    const parent = createAgent({ model: scriptedModel([toolCallResponse([call('r1', 'research', { task: 'a' })]), textResponse('never')]), tools: [tool] })
    void parent.run('plan')
    while (subagentsOf(parent).length < 1) await tick(1)
    const child = subagentsOf(parent)[0]
    await parent.dispose()
    expect(kid).toBe(child)
    expect(() => child.followup('more')).toThrow(/disposed/)
    expect(subagentsOf(parent)).toEqual([])
  })

  it("a child that fails gives its call an error result and the parent's turn goes on", async () => {
    const tool = agentTool({
      name: 'research',
      description: 'Research',
      input: z.object({ task: z.string() }),
      agent: () => ({ model: scriptedModel([() => Promise.reject(new Error('child model down'))]), retry: false }),
    })
    const parent = track(
      createAgent({ model: scriptedModel([toolCallResponse([call('r1', 'research', { task: 'a' })]), textResponse('went on')]), tools: [tool] }),
    )
    const result = await parent.run('plan')
    expect(result).toMatchObject({ end: { kind: 'completed' }, text: 'went on' })
    const [toolResult] = ofType(parent, 'tool/result')
    expect(toolResult.data.message.content[0].isError).toBe(true)
    expect(toolResult.data.message.content[0].content).toMatch(/ended error: .*child model down/)
    expect((toolResult.data.meta as { subagent: { end: string } }).subagent.end).toBe('error')
  })

  it('a depth limit stops runaway delegation: the call past the limit gets a SUBAGENT_DEPTH error result, every level above completes', async () => {
    const levels: Agent[] = []
    const delegating = (): ReturnType<typeof agentTool> =>
      agentTool({
        name: 'delegate',
        description: 'Delegate again',
        input: z.object({ task: z.string() }),
        maxDepth: 2,
        agent: () => ({
          model: scriptedModel([toolCallResponse([call('d', 'delegate', { task: 'deeper' })]), textResponse('level done')]),
          tools: [delegating()],
        }),
        output: (result, agent) => (levels.push(agent), result.text),
      })
    const parent = track(
      createAgent({ model: scriptedModel([toolCallResponse([call('d', 'delegate', { task: 'deep' })]), textResponse('top done')]), tools: [delegating()] }),
    )
    const result = await parent.run('go')
    expect(result).toMatchObject({ end: { kind: 'completed' }, text: 'top done' })
    // levels finish innermost first: the child at depth 2 made the refused call
    expect(levels.map((agent) => parentOf(agent)?.depth)).toEqual([2, 1])
    const refused = ofType(levels[0], 'tool/result')[0].data
    expect(refused.error).toEqual({ name: 'SubagentError', code: 'SUBAGENT_DEPTH' })
    expect(refused.message.content[0].content).toMatch(/deeper than 2 levels/)
    for (const agent of [parent, ...levels]) expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('the app can steer a running child by its handle', async () => {
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    const childModel = scriptedModel([
      async () => {
        await gate
        return toolCallResponse([call('w', 'wait', {})])
      },
      (request) => textResponse(`saw ${request.messages.filter((m) => m.role === 'user').length} user messages`),
    ])
    const wait = defineTool({ name: 'wait', description: 'wait', input: z.object({}), execute: () => 'waited' })
    const tool = agentTool({
      name: 'research',
      description: 'Research',
      input: z.object({ task: z.string() }),
      agent: () => ({ model: childModel, tools: [wait] }),
    })
    const parent = track(
      createAgent({ model: scriptedModel([toolCallResponse([call('r1', 'research', { task: 'a' })]), textResponse('done')]), tools: [tool] }),
    )
    const run = parent.run('plan')
    while (subagentsOf(parent).length < 1) await tick(1)
    subagentsOf(parent)[0].steer('also check b')
    release()
    await run
    const content = ofType(parent, 'tool/result')[0].data.message.content[0].content
    // the prompt, the tool result and the steer
    expect(content).toBe('saw 3 user messages')
  })

  it('with a store, the child is stored beside the parent under <parent session>.<call id>', async () => {
    const store = memoryStore()
    const tool = agentTool({
      name: 'ask',
      description: 'Ask',
      input: z.object({ prompt: z.string() }),
      agent: () => ({ model: scriptedModel([textResponse('stored answer')]) }),
    })
    const parent = await createAgent({
      store,
      sessionId: 'p1',
      model: scriptedModel([toolCallResponse([call('c1', 'ask', { prompt: 'q' })]), textResponse('ok')]),
      tools: [tool],
    })
    await parent.run('go')
    await parent.dispose()
    const stored = (await store.load('p1.c1')) as Array<{ type: string; data: { message?: { source?: unknown } } }>
    expect((stored.find((e) => e.type === 'user/message')?.data as { source?: unknown } | undefined)?.source).toMatchObject({
      parentSessionId: 'p1',
      parentCallId: 'c1',
    })
    expect(stored.some((e) => e.type === 'turn/end')).toBe(true)
    expect((ofType(parent, 'tool/result')[0].data.meta as { subagent: { sessionId: string } }).subagent.sessionId).toBe('p1.c1')
  })

  it('with a store, call ids that differ only in characters outside [A-Za-z0-9_.:-] get children of their own', async () => {
    const store = memoryStore()
    const tool = agentTool({
      name: 'ask',
      description: 'Ask',
      input: z.object({ prompt: z.string() }),
      executionMode: 'parallel',
      agent: ({ prompt }) => ({ model: scriptedModel([textResponse(`answer to ${prompt}`)]) }),
    })
    const parent = await createAgent({
      store,
      sessionId: 'p1',
      model: scriptedModel([toolCallResponse([call('a/b', 'ask', { prompt: 'slash' }), call('a_b', 'ask', { prompt: 'underscore' })]), textResponse('ok')]),
      tools: [tool],
    })
    await parent.run('go')
    await parent.dispose()
    expect(childLinks(parent).map((l) => [l.callId, l.meta.subagent.sessionId])).toEqual([
      ['a/b', 'p1.a%002fb'],
      ['a_b', 'p1.a_b'],
    ])
    const answers = ofType(parent, 'tool/result').map((e) => e.data.message.content[0].content)
    expect(answers).toEqual(['answer to slash', 'answer to underscore'])
  })

  it('with a store, a later step or turn that reuses a call id starts a fresh child (<parent>.<call id>~2, ~3), not the first call’s conversation', async () => {
    const store = memoryStore()
    const prompts: number[] = []
    const tool = agentTool({
      name: 'ask',
      description: 'Ask',
      input: z.object({ prompt: z.string() }),
      agent: () => ({
        model: {
          provider: 'test',
          model: 'count',
          async *stream(request) {
            prompts.push(request.messages.length)
            yield* textResponse(`child answer ${prompts.length}`)
          },
        },
      }),
    })
    const parent = await createAgent({
      store,
      sessionId: 'p1',
      model: scriptedModel([
        toolCallResponse([call('c1', 'ask', { prompt: 'q1' })]),
        toolCallResponse([call('c1', 'ask', { prompt: 'q1 again' })]),
        textResponse('one'),
        toolCallResponse([call('c1', 'ask', { prompt: 'q2' })]),
        textResponse('two'),
      ]),
      tools: [tool],
    })
    await parent.run('first')
    await parent.run('second')
    await parent.dispose()
    expect(childLinks(parent).map((l) => l.meta.subagent.sessionId)).toEqual(['p1.c1', 'p1.c1~2', 'p1.c1~3'])
    // each child's one request saw only its own prompt
    expect(prompts).toEqual([1, 1, 1])
    expect(ofType(parent, 'tool/result').map((e) => e.data.message.content[0].content)).toEqual(['child answer 1', 'child answer 2', 'child answer 3'])
    for (const [id, parentTurn, parentStep] of [
      ['p1.c1~2', 1, 2],
      ['p1.c1~3', 2, 1],
    ] as const) {
      const log = (await store.load(id)) as Array<{ type: string; data: { source?: unknown } }>
      expect(log.find((e) => e.type === 'user/message')?.data.source).toMatchObject({ parentSessionId: 'p1', parentTurn, parentStep, parentCallId: 'c1' })
      expect(checkSessionInvariants(log as never)).toEqual([])
    }
  })

  it("the child reports to the parent's inspector: one inspector sees the parent's and the child's agent actors", async () => {
    const seen = new Map<string, Set<string>>() // root actor session id -> machine ids of its snapshots
    const inspect = (event: { type: string; rootId?: string; actorRef?: { sessionId: string; logic?: { id?: string } } }) => {
      if (event.type !== '@xstate.snapshot' || !event.rootId) return
      const ids = seen.get(event.rootId) ?? new Set<string>()
      seen.set(event.rootId, ids.add(event.actorRef?.logic?.id ?? '?'))
    }
    const ask = agentTool({
      name: 'ask',
      description: 'Ask a child',
      input: z.object({ task: z.string() }),
      agent: () => ({ model: scriptedModel([textResponse('child answer')]) }),
    })
    const parent = track(
      createAgent({
        model: scriptedModel([toolCallResponse([call('a1', 'ask', { task: 'x' })]), textResponse('done')]),
        tools: [ask],
        inspect: inspect as never,
      }),
    )
    await parent.run('go')
    expect([...seen.values()].filter((ids) => ids.has('agent'))).toHaveLength(2)
  })

  it('refuses a definition without an agent function, naming the option', () => {
    expect(() => agentTool({ name: 'x', description: '', input: z.object({}), agent: 'nope' as never })).toThrow(/agent must be a function/)
    expect(() => agentTool({ name: 'x', description: '', input: z.object({}), agent: () => ({}) as never, maxDepth: 0 })).toThrow(
      /maxDepth must be a positive integer/,
    )
  })
})

// Hostile children: a child that never ends, one whose own code throws, one whose options cannot be built.
// Whatever the child does, the parent's call gets a result and the parent's turn goes on (or ends as its own cancel says).
import { describe, expect, it } from 'vitest'
import { z } from 'zod/v4'
import { agentTool, createAgent, defineTool, subagentsOf, type ModelAdapter } from '../../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, tick, track, turnEnds } from '../helpers.js'

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })
const quiet = { error: () => {} }

/** A model whose stream never yields and ignores its abort signal. */
const deaf: ModelAdapter = {
  provider: 'deaf',
  model: 'deaf-1',
  async *stream() {
    await new Promise(() => {})
  },
}

/** A child that calls a tool whose body never settles and ignores its signal. */
const stuckChild = () => ({
  model: scriptedModel([toolCallResponse([call('s1', 'stuck', {})]), textResponse('unreachable')]),
  tools: [defineTool({ name: 'stuck', description: 'never ends', input: z.object({}), execute: () => new Promise<string>(() => {}) })],
  logger: quiet,
})

const parentModel = () =>
  scriptedModel([toolCallResponse([call('c1', 'delegate', { task: 't' })]), (request) => textResponse(`after: ${request.messages.at(-1)?.role}`)])

describe('subagents: hostile children', () => {
  it("a child that never ends and ignores its cancel: the call's timeout gives it an error result, the parent's turn completes", async () => {
    const delegate = agentTool({
      name: 'delegate',
      description: 'delegate',
      input: z.object({ task: z.string() }),
      timeoutMs: 50,
      agent: () => ({ model: deaf, logger: quiet }),
    })
    const parent = track(createAgent({ model: parentModel(), tools: [delegate], logger: quiet }))
    const result = await parent.run('go')
    expect(result.end.kind).toBe('completed')
    const [callResult] = ofType(parent, 'tool/result')
    expect(callResult.data.message.content[0].isError).toBe(true)
    expect(subagentsOf(parent)).toEqual([])
  })

  it("a child stuck in a tool that ignores its signal: the parent's timeout still gives the call an error result", async () => {
    const delegate = agentTool({ name: 'delegate', description: 'delegate', input: z.object({ task: z.string() }), timeoutMs: 50, agent: stuckChild })
    const parent = track(createAgent({ model: parentModel(), tools: [delegate], logger: quiet }))
    const result = await parent.run('go')
    expect(result.end.kind).toBe('completed')
    expect(ofType(parent, 'tool/result')[0].data.message.content[0].isError).toBe(true)
  })

  it("cancelling the parent while a child is stuck in a tool ends the parent's turn aborted, and the parent keeps serving", async () => {
    const delegate = agentTool({ name: 'delegate', description: 'delegate', input: z.object({ task: z.string() }), agent: stuckChild })
    const parent = track(createAgent({ model: parentModel(), tools: [delegate], logger: quiet }))
    const run = parent.run('go')
    while (ofType(parent, 'tool/call').length < 1 || subagentsOf(parent).length < 1) await tick(1)
    await tick(5)
    parent.cancel({ kind: 'user' })
    expect((await run).end).toMatchObject({ kind: 'aborted', reason: { kind: 'user' } })
    expect(await createAgentAfter(parent)).toBe('completed')
  })

  it("cancelling the parent while such a child hangs ends the parent's turn aborted; the child is abandoned after its grace", async () => {
    const delegate = agentTool({
      name: 'delegate',
      description: 'delegate',
      input: z.object({ task: z.string() }),
      agent: () => ({ model: deaf, logger: quiet }),
    })
    const parent = track(createAgent({ model: parentModel(), tools: [delegate], logger: quiet }))
    const run = parent.run('go')
    while (subagentsOf(parent).length < 1) await tick(1)
    parent.cancel({ kind: 'user' })
    const result = await run
    expect(result.end).toMatchObject({ kind: 'aborted', reason: { kind: 'user' } })
    expect(subagentsOf(parent)).toEqual([])
    // the parent keeps serving
    const next = await createAgentAfter(parent)
    expect(next).toBe('completed')
  })

  it("a child whose system prompt throws ends its turn error; the call's result is an error and the parent's turn goes on", async () => {
    const delegate = agentTool({
      name: 'delegate',
      description: 'delegate',
      input: z.object({ task: z.string() }),
      agent: () => ({
        model: scriptedModel([textResponse('never')]),
        logger: quiet,
        systemPrompt: () => {
          throw new Error('prompt builder exploded')
        },
      }),
    })
    const parent = track(createAgent({ model: parentModel(), tools: [delegate], logger: quiet }))
    const result = await parent.run('go')
    expect(result.end.kind).toBe('completed')
    const [callResult] = ofType(parent, 'tool/result')
    expect(callResult.data.message.content[0]).toMatchObject({ isError: true })
    expect(String(callResult.data.message.content[0].content)).toMatch(/error/)
    expect((callResult.data.meta as { subagent: { end: string } }).subagent.end).toBe('error')
  })

  it("a child listener that throws ends the child's turn error; the parent's call is an error result and the parent goes on", async () => {
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    const wait = defineTool({ name: 'wait', description: 'wait', input: z.object({}), execute: () => 'waited' })
    const delegate = agentTool({
      name: 'delegate',
      description: 'delegate',
      input: z.object({ task: z.string() }),
      agent: () => ({
        model: scriptedModel([
          async () => {
            await gate
            return toolCallResponse([call('w1', 'wait', {})])
          },
          textResponse('never'),
        ]),
        tools: [wait],
        logger: quiet,
      }),
    })
    const parent = track(createAgent({ model: parentModel(), tools: [delegate], logger: quiet }))
    const run = parent.run('go')
    while (subagentsOf(parent).length < 1) await tick(1)
    // the app reaches the child by its handle while the call runs; its listener throws at the child's next step
    const [child] = subagentsOf(parent)
    child.on('agent/pre-step', () => {
      throw new Error('listener exploded')
    })
    release()
    const result = await run
    expect(result.end.kind).toBe('completed')
    const [callResult] = ofType(parent, 'tool/result')
    expect(callResult.data.message.content[0].isError).toBe(true)
    expect((callResult.data.meta as { subagent: { end: string } }).subagent.end).toBe('error')
    expect(turnEnds(child).map((r) => r.kind)).toEqual(['error'])
  })

  it('options that cannot be built (the agent function throws, or returns no model) give the call an error result', async () => {
    for (const agent of [
      () => {
        throw new Error('no options today')
      },
      () => ({}) as never,
    ]) {
      const delegate = agentTool({ name: 'delegate', description: 'delegate', input: z.object({ task: z.string() }), agent })
      const parent = track(createAgent({ model: parentModel(), tools: [delegate], logger: quiet }))
      const result = await parent.run('go')
      expect(result.end.kind).toBe('completed')
      expect(ofType(parent, 'tool/result')[0].data.message.content[0].isError).toBe(true)
    }
  })
})

async function createAgentAfter(parent: ReturnType<typeof track>): Promise<string> {
  parent.followup('and now?')
  await parent.whenIdle()
  return turnEnds(parent).at(-1)!.kind
}

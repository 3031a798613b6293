// The three extension points of the seed loop that wrap a step's work: prompt
// assembly at every step (system-prompt/assemble, HK-12), the model stream
// (llm/stream, RQ-1) and each tool body (tools/execute, TL-10).
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defineTool, type Agent, type StreamChunk, type ToolDefinition } from '../../src/index.js'
import { errorResponse, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, scriptedAgent, tick, trace, track } from '../helpers.js'

const lookup = defineTool({ name: 'lookup', description: 'look a key up', input: z.object({ key: z.string() }), execute: ({ key }) => `value of ${key}` })
const clock = defineTool({ name: 'clock', description: 'the time', input: z.object({}), execute: () => '12:00' })
const headers = (agent: Agent) => ofType(agent, 'request/header').map((e) => ({ reason: e.data.reason, system: e.data.header.system }))
/** Each tool/result as [call id, content, error code]. */
const results = (agent: Agent) =>
  ofType(agent, 'tool/result').map((e) => {
    const block = e.data.message.content[0]
    return { callId: block.toolCallId, content: block.content, isError: block.isError === true, code: e.data.error?.code }
  })

describe('system-prompt/assemble: the prompt and tools of every step (HK-12)', () => {
  it('HK-12/RQ-4: a systemPrompt function re-read at every step logs one request/header{change} when its text changes', async () => {
    const prompts: Array<{ turn: number; step: number; messages: string[] }> = []
    const { agent, model } = scriptedAgent(
      [toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{"key":"a"}' }]), textResponse('done'), textResponse('again')],
      {
        tools: [lookup],
        systemPrompt: ({ turn, step, messages }) => {
          prompts.push({ turn, step, messages: messages.map((m) => (m.content[0] as { text: string }).text) })
          return step === 1 ? 'You are terse.' : 'You are terse. A tool has run.'
        },
      },
    )
    await agent.run('first')
    await agent.run('second')
    expect(prompts).toEqual([
      { turn: 1, step: 1, messages: ['first'] },
      { turn: 1, step: 2, messages: [] },
      { turn: 2, step: 1, messages: ['second'] },
    ])
    expect(model.requests.map((r) => r.system)).toEqual(['You are terse.', 'You are terse. A tool has run.', 'You are terse.'])
    expect(headers(agent).map((h) => [h.reason, h.system])).toEqual([
      ['initial', 'You are terse.'],
      ['change', 'You are terse. A tool has run.'],
      ['change', 'You are terse.'],
    ])
  })

  it('HK-12: an unchanged assembly logs no further request/header, and a fixed prompt runs no assembly at all', async () => {
    let calls = 0
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{"key":"a"}' }]), textResponse('done')], {
      tools: [lookup],
      systemPrompt: () => (calls++, 'same every step'),
    })
    await agent.run('go')
    expect(calls).toBe(2)
    expect(headers(agent).map((h) => h.reason)).toEqual(['initial'])
  })

  it('HK-12: listeners add sections through next(); an assembly with no sections sends no system field', async () => {
    const { agent, model } = scriptedAgent([textResponse('one'), textResponse('two')], { systemPrompt: 'Base rules.' })
    let extra = true
    agent.on('system-prompt/assemble', async (_p, next) => {
      const assembly = await next()
      return extra ? { ...assembly, sections: [...assembly.sections, 'Today is Tuesday.'] } : { ...assembly, sections: [] }
    })
    await agent.run('first')
    extra = false
    await agent.run('second')
    expect(model.requests[0]!.system).toBe('Base rules.\n\nToday is Tuesday.')
    expect(model.requests[1]).not.toHaveProperty('system')
    expect(headers(agent).map((h) => [h.reason, h.system ?? null])).toEqual([
      ['initial', 'Base rules.\n\nToday is Tuesday.'],
      ['change', null],
    ])
  })

  it('TL-5: a tools function whose list grows between steps: the new tool is offered and callable at the next step', async () => {
    let offered: ToolDefinition<any>[] = [lookup]
    const { agent, model } = scriptedAgent(
      [
        toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{"key":"a"}' }]),
        toolCallResponse([{ id: 'c2', name: 'clock', arguments: '{}' }]),
        textResponse('done'),
      ],
      { tools: () => offered },
    )
    agent.on('tools/result', () => void (offered = [lookup, clock]))
    await agent.run('go')
    expect(model.requests.map((r) => (r.tools ?? []).map((t) => t.name))).toEqual([['lookup'], ['clock', 'lookup'], ['clock', 'lookup']])
    expect(results(agent).map((r) => r.content)).toEqual(['value of a', '12:00'])
    expect(headers(agent).map((h) => h.reason)).toEqual(['initial', 'change'])
  })

  it('HK-12: runs once per proposed step, not per attempt: a retried request reuses its step’s assembly', async () => {
    let assembled = 0
    const { agent } = scriptedAgent([errorResponse({ message: 'busy', code: 'RATE_LIMIT' }), textResponse('ok')], {
      systemPrompt: () => `prompt ${++assembled}`,
      sleep: async () => {},
    })
    await agent.run('go')
    expect(assembled).toBe(1)
    expect(ofType(agent, 'llm/retry')).toHaveLength(1)
  })

  it('HK-12/TU-14: a throwing assembly ends the turn error before any step or request; the next turn runs', async () => {
    let fail = true
    const { agent, model } = scriptedAgent([textResponse('fine')], {
      systemPrompt: () => {
        if (fail) throw new Error('the memory service is down')
        return 'ok'
      },
    })
    const errors: unknown[] = []
    agent.on('agent/error', ({ error }) => void errors.push(error))
    const result = await agent.run('first')
    expect(result.end).toMatchObject({ kind: 'error', error: { message: 'the memory service is down' } })
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'turn/start{1}', 'spliced(next-turn -1)', 'turn/end{1,error}'])
    expect(model.requests).toHaveLength(0)
    expect(errors).toHaveLength(1)
    fail = false
    expect((await agent.run('second')).end.kind).toBe('completed')
  })

  it('HK-12: a tools function returning something that is not a tool list ends the turn error, naming what was wrong', async () => {
    const { agent } = scriptedAgent([textResponse('never')], { tools: () => [lookup, { name: 'lookup' }] as never })
    const result = await agent.run('go')
    expect(result.end).toMatchObject({ kind: 'error', error: { message: expect.stringMatching(/two tools are named lookup/) } })
  })

  it('HK-12/ST-4: the assembly receives the turn signal; a cancel while it runs ends the turn aborted with no step', async () => {
    let seen: AbortSignal | undefined
    const { agent, model } = scriptedAgent([textResponse('never')], {
      systemPrompt: ({ signal }) =>
        new Promise((resolve) => {
          seen = signal
          signal.addEventListener('abort', () => resolve('late'))
        }),
    })
    const run = agent.run('go')
    await tick()
    agent.cancel()
    expect((await run).end.kind).toBe('aborted')
    expect(seen?.aborted).toBe(true)
    expect(trace(agent).some((t) => t.startsWith('step/start'))).toBe(false)
    expect(model.requests).toHaveLength(0)
  })

  it('HK-12: assembly comes after the claim and before agent/pre-step', async () => {
    const order: string[] = []
    const { agent } = scriptedAgent([textResponse('ok')], { systemPrompt: () => (order.push('assemble'), 'p') })
    agent.on('agent/inbox/claimed', () => void order.push('claimed'))
    agent.on('agent/pre-step', (_p, next) => (order.push('pre-step'), next()))
    await agent.run('go')
    expect(order).toEqual(['claimed', 'assemble', 'pre-step'])
  })
})

describe('llm/stream: around the model stream (RQ-1)', () => {
  it('RQ-1: a recording middleware sees every chunk, and the log is what it would be without it', async () => {
    const script = [toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{"key":"a"}' }]), textResponse('done')]
    const plain = scriptedAgent(script, { tools: [lookup] }).agent
    await plain.run('go')
    const { agent } = scriptedAgent(script, { tools: [lookup] })
    const recorded: StreamChunk[][] = []
    agent.on('llm/stream', async function* (_p, next) {
      const chunks: StreamChunk[] = []
      recorded.push(chunks)
      for await (const chunk of await next()) {
        chunks.push(chunk)
        yield chunk
      }
    })
    await agent.run('go')
    expect(recorded).toEqual(script)
    expect(trace(agent)).toEqual(trace(plain))
  })

  it('RQ-1: a replaying middleware serves a whole turn without the adapter; its chunks are logged as an adapter’s', async () => {
    const recording = [textResponse('from the cache')]
    const model = scriptedModel([])
    const agent = track(createAgent({ model, logger: { error: () => {} } }))
    agent.on('llm/stream', ({ step }) => recording[step - 1]!)
    const result = await agent.run('go')
    expect(result.text).toBe('from the cache')
    expect(model.requests).toHaveLength(0)
    expect(ofType(agent, 'assistant/chunk').map((e) => e.data.chunk)).toEqual(recording[0])
  })

  it('RQ-1: a chunk from middleware that is not a stream chunk is logged as the malformed finish it stands for', async () => {
    const { agent } = scriptedAgent([])
    agent.on('llm/stream', () => [{ type: 'text-delta', text: 42 }] as never)
    const result = await agent.run('go')
    expect(result.end).toMatchObject({ kind: 'error', error: { code: 'MALFORMED_RESPONSE' } })
  })

  it('HK-6/RQ-7: a throwing llm/stream ends the turn error directly; agent/request-error is never asked', async () => {
    const { agent } = scriptedAgent([textResponse('never')])
    let asked = 0
    agent.on('agent/request-error', (_p, next) => (asked++, next()))
    agent.on('llm/stream', async function* () {
      yield { type: 'text-delta', index: 0, text: 'partial' } as StreamChunk
      throw new Error('the recorder broke')
    })
    const result = await agent.run('go')
    expect(result.end).toMatchObject({ kind: 'error', error: { message: 'the recorder broke' } })
    expect(asked).toBe(0)
    expect(ofType(agent, 'llm/retry')).toHaveLength(0)
    expect(trace(agent).slice(-2)).toEqual(['step/end{1,1}', 'turn/end{1,error}'])
  })

  it('HK-6: an adapter failure passed through middleware is still offered to recovery', async () => {
    const { agent } = scriptedAgent([errorResponse({ message: 'busy', code: 'RATE_LIMIT' }), textResponse('ok')], { sleep: async () => {} })
    agent.on('llm/stream', (_p, next) => next())
    const result = await agent.run('go')
    expect(result.end.kind).toBe('completed')
    expect(ofType(agent, 'llm/retry')).toHaveLength(1)
  })

  it('CX-2: cancellation reaches llm/stream: its signal aborts and the turn ends aborted', async () => {
    const { agent } = scriptedAgent([])
    let signalled: AbortSignal | undefined
    agent.on('llm/stream', async function* ({ signal }) {
      signalled = signal
      yield { type: 'text-delta', index: 0, text: 'thinking' } as StreamChunk
      await new Promise((resolve) => signal.addEventListener('abort', resolve))
    })
    const run = agent.run('go')
    await tick(5)
    agent.cancel()
    expect((await run).end.kind).toBe('aborted')
    expect(signalled?.aborted).toBe(true)
  })
})

describe('tools/execute: around each tool body (TL-10)', () => {
  const slow = (name: string, ms: number) =>
    defineTool({
      name,
      description: `a slow tool ${name}`,
      input: z.object({}),
      executionMode: 'parallel',
      execute: async () => {
        await tick(ms)
        return `secret-token-${name}`
      },
    })

  it('TL-10: a wrapper times and redacts the results of parallel calls, which run their wrappers concurrently', async () => {
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'c1', name: 'a', arguments: '{}' },
          { id: 'c2', name: 'b', arguments: '{}' },
        ]),
        textResponse('done'),
      ],
      { tools: [slow('a', 20), slow('b', 5)] },
    )
    const events: string[] = []
    const timings: Record<string, number> = {}
    agent.on('tools/execute', async ({ callId, arguments: args }, next) => {
      expect(Object.isFrozen(args)).toBe(true)
      events.push(`start ${callId}`)
      const started = performance.now()
      const outcome = await next()
      timings[callId] = performance.now() - started
      events.push(`end ${callId}`)
      return { ...outcome, content: outcome.content.replace(/secret-token-\w+/, '[redacted]') }
    })
    await agent.run('go')
    expect(events.slice(0, 2)).toEqual(['start c1', 'start c2'])
    expect(Object.keys(timings).sort()).toEqual(['c1', 'c2'])
    expect(results(agent).map((r) => [r.callId, r.content])).toEqual([
      ['c1', '[redacted]'],
      ['c2', '[redacted]'],
    ])
  })

  it('TL-10/HK-9: a throwing wrapper is that call’s error result; post-execute still runs, and the turn goes on', async () => {
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{"key":"a"}' }]), textResponse('done')], { tools: [lookup] })
    const post: string[] = []
    agent.on('tools/execute', () => {
      throw Object.assign(new Error('sandbox refused'), { code: 'SANDBOX' })
    })
    agent.on('tools/post-execute', ({ outcome }, next) => (post.push(outcome.content), next()))
    const result = await agent.run('go')
    expect(result.end.kind).toBe('completed')
    expect(results(agent)).toEqual([{ callId: 'c1', isError: true, content: 'Error: sandbox refused', code: 'SANDBOX' }])
    expect(post).toEqual(['Error: sandbox refused'])
  })

  it('TL-10: a dry-run wrapper answers without running the body, with what a body may return', async () => {
    let ran = 0
    const write = defineTool({ name: 'write', description: 'write a file', input: z.object({ path: z.string() }), execute: () => (ran++, 'written') })
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'write', arguments: '{"path":"/tmp/x"}' }]), textResponse('done')], { tools: [write] })
    agent.on('tools/execute', ({ name, arguments: args }) => ({ content: `dry run: ${name} ${JSON.stringify(args)}`, isError: false }))
    await agent.run('go')
    expect(ran).toBe(0)
    expect(results(agent).map((r) => r.content)).toEqual(['dry run: write {"path":"/tmp/x"}'])
  })

  it('TL-10: next() checks the arguments first: a bad call is the same INVALID_ARGS error result through a wrapper', async () => {
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{"key":1}' }]), textResponse('done')], { tools: [lookup] })
    agent.on('tools/execute', (_p, next) => next())
    await agent.run('go')
    expect(results(agent).map((r) => r.code)).toEqual(['INVALID_ARGS'])
  })

  it('CX-2: cancellation reaches tools/execute through its signal', async () => {
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{"key":"a"}' }]), textResponse('never')], { tools: [lookup] })
    let signalled: AbortSignal | undefined
    agent.on('tools/execute', ({ signal }) => {
      signalled = signal
      return new Promise((resolve) => signal.addEventListener('abort', () => resolve('stopped')))
    })
    const run = agent.run('go')
    await tick(5)
    agent.cancel()
    expect((await run).end.kind).toBe('aborted')
    expect(signalled?.aborted).toBe(true)
  })
})

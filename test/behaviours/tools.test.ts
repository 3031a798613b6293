// TL — the tool batch: barriers, the rolling pool, model-order commits,
// the pipeline around each body, and what cancellation and failure leave.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defineTool, userMessage, type Agent, type SessionEvent, type SessionEventOf } from '../../src/index.js'
import { textResponse, toolCallResponse } from '../../src/testing/index.js'
import { scriptedAgent, tick, trace } from '../helpers.js'

/** A tool whose bodies wait until the test releases them, recording when they start and end. */
function gated(name: string, mode: 'parallel' | 'exclusive' | ((args: unknown) => 'parallel' | 'exclusive') = 'parallel') {
  const log: string[] = []
  const open = new Map<string, (result?: unknown) => void>()
  let inFlight = 0
  let maxInFlight = 0
  const tool = defineTool({
    name,
    description: `${name} tool`,
    input: z.object({}).loose(),
    executionMode: mode,
    execute: (_args, { callId, signal }) => {
      log.push(`start ${callId}`)
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      return new Promise<any>((resolve, reject) => {
        open.set(callId, (result) => {
          inFlight--
          log.push(`end ${callId}`)
          if (result instanceof Error) reject(result)
          else resolve(result ?? `done ${callId}`)
        })
        signal.addEventListener('abort', () => log.push(`abort seen ${callId}`))
      })
    },
  })
  return {
    tool,
    log,
    get maxInFlight() {
      return maxInFlight
    },
    started: () => [...open.keys()],
    release: async (callId: string, result?: unknown) => {
      const fn = open.get(callId)
      if (!fn) throw new Error(`${callId} has not started`)
      fn(result)
      await tick(2)
    },
  }
}

const calls = (ids: string[], name = 'read', args = '{}') => ids.map((id) => ({ id, name, arguments: args }))
const toolEvents = (agent: Agent) => trace(agent).filter((t) => t.startsWith('tool/'))
const results = (agent: Agent) => agent.session.events.filter((e): e is Extract<SessionEvent, { type: 'tool/result' }> => e.type === 'tool/result')
const resultOf = (agent: Agent, callId: string) => results(agent).find((e) => e.data.message.source.callId === callId)!
const contentOf = (agent: Agent, callId: string) => resultOf(agent, callId).data.message.content[0].content

describe('TL — tools', () => {
  it('TL-1: arguments are parsed before scheduling; the log keeps the raw text; bad JSON is an INVALID_ARGS result', async () => {
    const seen: unknown[] = []
    const echo = defineTool({
      name: 'echo',
      description: 'echo',
      input: z.object({ x: z.number().optional() }),
      execute: (args) => {
        seen.push(args)
        return 'ok'
      },
    })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'a', name: 'echo', arguments: '' },
          { id: 'b', name: 'echo', arguments: '{"x":1}' },
          { id: 'c', name: 'echo', arguments: '{"x":' },
        ]),
        textResponse('fine'),
      ],
      { tools: [echo] },
    )
    agent.followup('go')
    await agent.whenIdle()
    expect(seen).toEqual([{}, { x: 1 }])
    const logged = agent.session.events.filter((e) => e.type === 'tool/call').map((e) => (e.data as { arguments: string }).arguments)
    expect(logged).toEqual(['', '{"x":1}', '{"x":'])
    const bad = resultOf(agent, 'c')
    expect(bad.data.error).toEqual({ name: 'InvalidArgumentsError', code: 'INVALID_ARGS' })
    expect(bad.data.message.content[0].content).toMatch(/^Error: invalid arguments for tool echo: \(root\): /)
    expect(trace(agent).at(-1)).toBe('turn/end{1,completed}')
  })

  it('TL-1: a validation failure names the failing path and what was expected', async () => {
    const typed = defineTool({ name: 'typed', description: 't', input: z.object({ n: z.number() }), execute: () => 'x' })
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'a', name: 'typed', arguments: '{"n":"two"}' }]), textResponse('k')], {
      tools: [typed],
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(contentOf(agent, 'a')).toMatch(/^Error: invalid arguments for tool typed: n: .*number/)
  })

  it('TL-2: only an exact parallel classification is parallel; other values, throws and unknown tools are exclusive', async () => {
    const weird = gated('weird', (() => 'PARALLEL') as never)
    const thrower = gated('thrower', () => {
      throw new Error('no idea')
    })
    const good = gated('good', (args) => ((args as { p?: boolean }).p ? 'parallel' : 'exclusive'))
    for (const [g, args] of [
      [weird, '{}'],
      [thrower, '{}'],
      [good, '{"p":false}'],
    ] as const) {
      const { agent } = scriptedAgent([toolCallResponse(calls(['c1', 'c2'], g.tool.name, args)), textResponse('k')], { tools: [g.tool] })
      agent.followup('go')
      await tick(5)
      expect(g.started()).toEqual(['c1']) // a barrier: c2 waits
      await g.release('c1')
      await g.release('c2')
      await agent.whenIdle()
    }
    const ok = gated('good2', (args) => ((args as { p?: boolean }).p ? 'parallel' : 'exclusive'))
    const { agent } = scriptedAgent([toolCallResponse(calls(['c1', 'c2'], 'good2', '{"p":true}')), textResponse('k')], { tools: [ok.tool] })
    agent.followup('go')
    await tick(5)
    expect(ok.started()).toEqual(['c1', 'c2'])
    await ok.release('c2')
    await ok.release('c1')
    await agent.whenIdle()
  })

  it('TL-2: an unknown tool is exclusive: the call after it waits for its result', async () => {
    const r = gated('read')
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'u', name: 'nope', arguments: '{}' }, ...calls(['r1'])]), textResponse('k')], { tools: [r.tool] })
    agent.followup('go')
    await tick(5)
    expect(toolEvents(agent)).toEqual(['tool/call(u)', 'tool/result(u)', 'tool/call(r1)'])
    await r.release('r1')
    await agent.whenIdle()
  })

  it('TL-3: reads r1, w2, r3 run strictly as r1, then w2, then r3', async () => {
    const r = gated('read')
    const w = gated('write', 'exclusive')
    const { agent } = scriptedAgent([toolCallResponse([...calls(['r1']), ...calls(['w2'], 'write'), ...calls(['r3'])]), textResponse('k')], {
      tools: [r.tool, w.tool],
    })
    agent.followup('go')
    await tick(5)
    expect(r.started()).toEqual(['r1'])
    expect(w.started()).toEqual([])
    await r.release('r1')
    expect(w.started()).toEqual(['w2'])
    expect(r.started()).toEqual(['r1'])
    await w.release('w2')
    expect(r.started()).toEqual(['r1', 'r3'])
    await r.release('r3')
    await agent.whenIdle()
    expect(toolEvents(agent)).toEqual(['tool/call(r1)', 'tool/result(r1)', 'tool/call(w2)', 'tool/result(w2)', 'tool/call(r3)', 'tool/result(r3)'])
  })

  it('TL-3: consecutive parallel-safe calls share one pool', async () => {
    const r = gated('read')
    const { agent } = scriptedAgent([toolCallResponse(calls(['a', 'b', 'c'])), textResponse('k')], { tools: [r.tool] })
    agent.followup('go')
    await tick(5)
    expect(r.started()).toEqual(['a', 'b', 'c'])
    for (const id of ['c', 'b', 'a']) await r.release(id)
    await agent.whenIdle()
  })

  it('TL-4: the default cap is 10 dispatches in flight', async () => {
    const r = gated('read')
    const ids = Array.from({ length: 12 }, (_, i) => `c${i + 1}`)
    const { agent } = scriptedAgent([toolCallResponse(calls(ids)), textResponse('k')], { tools: [r.tool] })
    agent.followup('go')
    await tick(5)
    expect(r.started()).toHaveLength(10)
    await r.release('c1')
    expect(r.started()).toHaveLength(11)
    for (const id of ids.slice(1)) await r.release(id)
    await agent.whenIdle()
    expect(r.maxInFlight).toBe(10)
  })

  it('TL-4: a cap of 1 is fully serial', async () => {
    const r = gated('read')
    const { agent } = scriptedAgent([toolCallResponse(calls(['a', 'b', 'c'])), textResponse('k')], { tools: [r.tool], maxParallelToolCalls: 1 })
    agent.followup('go')
    await tick(5)
    expect(r.started()).toEqual(['a'])
    await r.release('a')
    expect(r.started()).toEqual(['a', 'b'])
    await r.release('b')
    await r.release('c')
    await agent.whenIdle()
    expect(r.maxInFlight).toBe(1)
  })

  it('TL-4: a cap that is not a positive integer is rejected at createAgent', () => {
    const model = { provider: 'p', model: 'm', stream: async function* () {} }
    for (const bad of [0, -1, 1.5, Number.NaN, '3' as never]) {
      expect(() => createAgent({ model, maxParallelToolCalls: bad })).toThrow(/maxParallelToolCalls must be a positive safe integer/)
    }
  })

  it('TL-5: a call is reclassified right before it starts; one no longer parallel-safe becomes the next barrier', async () => {
    let writesLocked = false
    const r = gated('read', () => (writesLocked ? 'exclusive' : 'parallel'))
    const { agent } = scriptedAgent([toolCallResponse(calls(['a', 'b', 'c'])), textResponse('k')], {
      tools: [r.tool],
      maxParallelToolCalls: 2,
    })
    agent.followup('go')
    await tick(5)
    expect(r.started()).toEqual(['a', 'b'])
    writesLocked = true // c is now exclusive: it waits until a and b have both committed
    await r.release('a')
    expect(r.started()).toEqual(['a', 'b'])
    await r.release('b')
    expect(r.started()).toEqual(['a', 'b', 'c'])
    await r.release('c')
    await agent.whenIdle()
    expect(toolEvents(agent)).toEqual(['tool/call(a)', 'tool/call(b)', 'tool/result(a)', 'tool/result(b)', 'tool/call(c)', 'tool/result(c)'])
  })

  it('TL-6: tool/call is appended when a call starts: cap 2, c1 settles first', async () => {
    const r = gated('read')
    const { agent } = scriptedAgent([toolCallResponse(calls(['c1', 'c2', 'c3', 'c4'])), textResponse('k')], {
      tools: [r.tool],
      maxParallelToolCalls: 2,
    })
    agent.followup('go')
    await tick(5)
    await r.release('c1')
    expect(toolEvents(agent)).toEqual(['tool/call(c1)', 'tool/call(c2)', 'tool/result(c1)', 'tool/call(c3)'])
    for (const id of ['c2', 'c3', 'c4']) await r.release(id)
    await agent.whenIdle()
  })

  it('TL-7: a later call that settles first waits: results commit in model order', async () => {
    const r = gated('read')
    const { agent } = scriptedAgent([toolCallResponse(calls(['c1', 'c2'])), textResponse('k')], { tools: [r.tool] })
    const order: string[] = []
    agent.on('tools/pre-execute', async (p, next) => {
      order.push(`pre ${p.callId}`)
      await tick(3)
      order.push(`pre done ${p.callId}`)
      return next()
    })
    agent.on('tools/post-execute', (p, next) => {
      order.push(`post ${p.callId}`)
      return next()
    })
    agent.on('tools/result', (p) => {
      order.push(`result ${p.callId}`)
    })
    agent.followup('go')
    for (let i = 0; i < 500 && r.started().length < 2; i++) await tick(1)
    await r.release('c2')
    expect(toolEvents(agent)).toEqual(['tool/call(c1)', 'tool/call(c2)'])
    await r.release('c1')
    await agent.whenIdle()
    expect(toolEvents(agent)).toEqual(['tool/call(c1)', 'tool/call(c2)', 'tool/result(c1)', 'tool/result(c2)'])
    // pre-execute one call at a time in model order; post-execute and results in model order
    expect(order).toEqual(['pre c1', 'pre done c1', 'pre c2', 'pre done c2', 'post c1', 'result c1', 'post c2', 'result c2'])
  })

  it('TL-8: tool/result carries the model call id, error code, meta, surfaceOp and cites its tool/call', async () => {
    const meta = defineTool({
      name: 'meta',
      description: 'm',
      input: z.object({}),
      execute: () => ({ content: 'with meta', meta: { rows: 3 } }),
    })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'm1', name: 'meta', arguments: '{}' },
          { id: 'u1', name: 'ghost', arguments: '{}' },
        ]),
        textResponse('k'),
      ],
      { tools: [meta] },
    )
    agent.on('tools/post-execute', (p, next) => (p.callId === 'm1' ? { kind: 'accept', content: 'replaced' } : next()))
    agent.followup('go')
    await agent.whenIdle()
    const call = agent.session.events.find((e) => e.type === 'tool/call' && e.data.callId === 'm1')!
    const m1 = resultOf(agent, 'm1')
    expect(m1.surfaceOp).toBe('append')
    expect(m1.sourceEventSeqs).toEqual([call.seq])
    expect(m1.data.message).toMatchObject({
      role: 'user',
      source: { kind: 'tool', callId: 'm1' },
      content: [{ type: 'tool-result', toolCallId: 'm1', content: 'replaced', isError: false }],
    })
    expect(m1.data.meta).toEqual({ rows: 3 })
    expect(m1.data.error).toBeUndefined()
    expect(resultOf(agent, 'u1').data.error).toEqual({ name: 'UnknownToolError', code: 'UNKNOWN_TOOL' })
  })

  it('TL-9: body throws, unknown tools, denials and failing listeners are error results; the turn goes on', async () => {
    const boom = defineTool({
      name: 'boom',
      description: 'b',
      input: z.object({}),
      execute: () => {
        throw new Error('kaput')
      },
    })
    const fine = defineTool({ name: 'fine', description: 'f', input: z.object({}), execute: () => 'fine' })
    const { agent, model } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'b', name: 'boom', arguments: '{}' },
          { id: 'u', name: 'nope', arguments: '{}' },
          { id: 'd', name: 'fine', arguments: '{}' },
          { id: 'p', name: 'fine', arguments: '{}' },
        ]),
        textResponse('after'),
      ],
      { tools: [boom, fine] },
    )
    agent.on('tools/pre-execute', (p, next) => (p.callId === 'd' ? { kind: 'deny', reason: 'not today' } : next()))
    agent.on('tools/post-execute', (p, next) => {
      if (p.callId === 'p') throw new Error('post listener broke')
      return next()
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(contentOf(agent, 'b')).toBe('Error: kaput')
    expect(contentOf(agent, 'u')).toBe('Error: unknown tool "nope"')
    expect(contentOf(agent, 'd')).toBe('Error: not today')
    expect(contentOf(agent, 'p')).toBe('Error: post listener broke')
    for (const id of ['b', 'u', 'd', 'p']) expect(resultOf(agent, id).data.message.content[0].isError).toBe(true)
    expect(model.requests).toHaveLength(2)
    expect(trace(agent).at(-1)).toBe('turn/end{1,completed}')
  })

  it('TL-10: the pipeline runs pre-execute, body, post-execute, tools/result, then the durable tool/result', async () => {
    const order: string[] = []
    const t = defineTool({
      name: 't',
      description: 't',
      input: z.object({}),
      execute: () => {
        order.push('body')
        return 'v'
      },
    })
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'x', name: 't', arguments: '{}' }]), textResponse('k')], { tools: [t] })
    agent.on('tools/pre-execute', (_p, next) => {
      order.push('pre')
      return next()
    })
    agent.on('tools/post-execute', (_p, next) => {
      order.push('post')
      return next()
    })
    agent.on('tools/result', () => {
      order.push('live result')
    })
    agent.on('session/event', ({ event }) => {
      if (event.type === 'tool/result') order.push('durable result')
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(order).toEqual(['pre', 'body', 'post', 'live result', 'durable result'])
  })

  it('TL-10: a denial still runs post-execute; a throwing pre-execute skips it', async () => {
    const t = defineTool({ name: 't', description: 't', input: z.object({}), execute: () => 'v' })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'deny', name: 't', arguments: '{}' },
          { id: 'throw', name: 't', arguments: '{}' },
        ]),
        textResponse('k'),
      ],
      { tools: [t] },
    )
    const posts: string[] = []
    agent.on('tools/pre-execute', (p) => {
      if (p.callId === 'deny') return { kind: 'deny', reason: 'no' }
      throw new Error('pre broke')
    })
    agent.on('tools/post-execute', (p, next) => {
      posts.push(`${p.callId}:${p.outcome.content}`)
      return next()
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(posts).toEqual(['deny:Error: no'])
    expect(contentOf(agent, 'throw')).toBe('Error: pre broke')
  })

  it('TL-10: post-execute may replace content, replace the value, or block with feedback and contexts', async () => {
    const t = defineTool({ name: 't', description: 't', input: z.object({}), execute: () => ({ content: 'orig', additionalContexts: ['from body'] }) })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'keep', name: 't', arguments: '{}' },
          { id: 'content', name: 't', arguments: '{}' },
          { id: 'value', name: 't', arguments: '{}' },
          { id: 'block', name: 't', arguments: '{}' },
        ]),
        textResponse('k'),
      ],
      { tools: [t] },
    )
    agent.on('tools/post-execute', (p, next) => {
      switch (p.callId) {
        case 'content':
          return { kind: 'accept', content: 'new content' }
        case 'value':
          return { kind: 'accept', value: { a: 1 } }
        case 'block':
          return { kind: 'block', feedback: 'blocked: try again', additionalContexts: [userMessage('blocker note', { id: 'bn' })] }
        default:
          return next()
      }
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(contentOf(agent, 'keep')).toBe('orig')
    expect(contentOf(agent, 'content')).toBe('new content')
    expect(contentOf(agent, 'value')).toBe('{"a":1}')
    expect(contentOf(agent, 'block')).toBe('blocked: try again')
    expect(resultOf(agent, 'block').data.message.content[0].isError).toBe(true)
    // a block keeps only the blocker's own contexts (TL-12)
    const entered = agent.session.events.filter((e) => e.type === 'user/message').map((e) => (e.data.content[0] as { text: string }).text)
    expect(entered).toEqual(['go', 'from body', 'from body', 'from body', 'blocker note'])
  })

  it('TL-11: each execution receives callId, name, its turn and step, frozen arguments, the agent and the turn signal', async () => {
    const got: Array<Record<string, unknown>> = []
    const t = defineTool({
      name: 't',
      description: 't',
      input: z.object({ q: z.string() }),
      execute: (args, ctx) => {
        got.push({
          args,
          frozen: Object.isFrozen(args),
          callId: ctx.callId,
          name: ctx.name,
          turn: ctx.turn,
          step: ctx.step,
          agent: ctx.agent,
          signal: ctx.signal,
        })
        return 'ok'
      },
    })
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'x', name: 't', arguments: '{"q":"hi"}' }]), textResponse('k')], { tools: [t] })
    const hookPayloads: Array<Record<string, unknown>> = []
    agent.on('tools/pre-execute', (p, next) => {
      hookPayloads.push({ ...p, frozen: Object.isFrozen(p.arguments) })
      return next()
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(got[0]).toMatchObject({ args: { q: 'hi' }, frozen: true, callId: 'x', name: 't', turn: 1, step: 1, agent })
    expect(got[0].signal).toBeInstanceOf(AbortSignal)
    expect(hookPayloads[0]).toMatchObject({ callId: 'x', name: 't', arguments: { q: 'hi' }, agent, frozen: true, turn: 1, step: 1 })
    expect(hookPayloads[0].signal).toBe(got[0].signal)
  })

  it('TL-12: additional contexts go to next-step in model order and enter after this step closes', async () => {
    const t = defineTool({
      name: 't',
      description: 't',
      input: z.object({ n: z.string() }),
      executionMode: 'parallel',
      execute: async ({ n }) => {
        if (n === 'first') await tick(5)
        return { content: n, additionalContexts: [`ctx ${n}`] }
      },
    })
    const { agent, model } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'a', name: 't', arguments: '{"n":"first"}' },
          { id: 'b', name: 't', arguments: '{"n":"second"}' },
        ]),
        textResponse('k'),
      ],
      { tools: [t] },
    )
    agent.followup('go')
    await agent.whenIdle()
    const log = trace(agent)
    expect(log.slice(log.indexOf('tool/call(a)'))).toEqual([
      'tool/call(a)',
      'tool/call(b)',
      'tool/result(a)',
      'spliced(next-step +1)',
      'tool/result(b)',
      'spliced(next-step +1)',
      'step/end{1,1}',
      'spliced(next-step -2)', // claimed right after step/end (IN-10)
      'step/start{1,2}',
      'user/message(ctx first)',
      'user/message(ctx second)',
      'assistant/message',
      'step/end{1,2}',
      'turn/end{1,completed}',
    ])
    const last = model.requests[1].messages
    expect(last.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'user', 'user', 'user'])
  })

  it('TL-13: a concluding success ends the step terminal with no follow-up request', async () => {
    const finish = defineTool({ name: 'finish', description: 'f', input: z.object({}), execute: () => ({ content: 'bye', concludesTurn: true }) })
    const { agent, model } = scriptedAgent([toolCallResponse([{ id: 'f', name: 'finish', arguments: '{}' }])], { tools: [finish] })
    agent.followup('go')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(1)
    expect(trace(agent).slice(-3)).toEqual(['tool/result(f)', 'step/end{1,1}', 'turn/end{1,completed}'])
  })

  it('TL-13: with its own contexts pending the turn still continues; an error result never concludes', async () => {
    const finish = defineTool({
      name: 'finish',
      description: 'f',
      input: z.object({}),
      execute: () => ({ content: 'bye', concludesTurn: true, additionalContexts: ['one more thing'] }),
    })
    const failing = defineTool({
      name: 'failing',
      description: 'f',
      input: z.object({}),
      execute: () => ({ content: 'no', isError: true, concludesTurn: true }),
    })
    const first = scriptedAgent([toolCallResponse([{ id: 'f', name: 'finish', arguments: '{}' }]), textResponse('ok')], { tools: [finish] })
    first.agent.followup('go')
    await first.agent.whenIdle()
    expect(first.model.requests).toHaveLength(2)
    expect(trace(first.agent)).toContain('user/message(one more thing)')
    const second = scriptedAgent([toolCallResponse([{ id: 'x', name: 'failing', arguments: '{}' }]), textResponse('ok')], { tools: [failing] })
    second.agent.followup('go')
    await second.agent.whenIdle()
    expect(second.model.requests).toHaveLength(2)
  })

  it('TL-14: cancelled before the first call starts: synthetic pairs in model order, no tool hooks', async () => {
    const r = gated('read')
    const { agent } = scriptedAgent([toolCallResponse(calls(['a', 'b']))], { tools: [r.tool] })
    const hooks: string[] = []
    agent.on('tools/pre-execute', (_p, next) => {
      hooks.push('pre')
      return next()
    })
    agent.on('tools/post-execute', (_p, next) => {
      hooks.push('post')
      return next()
    })
    agent.on('session/event', ({ event }) => {
      if (event.type === 'assistant/message') agent.cancel()
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(hooks).toEqual([])
    expect(r.started()).toEqual([])
    expect(trace(agent).slice(-6)).toEqual(['tool/call(a)', 'tool/result(a)', 'tool/call(b)', 'tool/result(b)', 'step/end{1,1}', 'turn/end{1,aborted}'])
    for (const id of ['a', 'b']) {
      const res = resultOf(agent, id)
      expect(res.data.message.content[0].content).toBe('Error: tool call aborted before dispatch')
      expect(res.data.error).toEqual({ name: 'AbortError', code: 'ABORTED_BEFORE_DISPATCH' })
    }
  })

  it('TL-15: cancelling while calls run drains them; later groups never start and get synthetic pairs', async () => {
    const r = gated('read')
    const w = gated('write', 'exclusive')
    const contexts = defineTool({
      name: 'ctx',
      description: 'c',
      input: z.object({}),
      executionMode: 'parallel',
      execute: async (_a, { signal }) => {
        await new Promise((resolve) => signal.addEventListener('abort', resolve))
        return { content: 'late', additionalContexts: ['parked context'] }
      },
    })
    const { agent } = scriptedAgent(
      [toolCallResponse([...calls(['r1', 'r2']), { id: 'c3', name: 'ctx', arguments: '{}' }, ...calls(['w4'], 'write'), ...calls(['r5'])])],
      { tools: [r.tool, w.tool, contexts] },
    )
    agent.followup('go')
    await tick(5)
    expect(r.started()).toEqual(['r1', 'r2'])
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    await tick(2)
    expect(trace(agent).at(-1)).not.toMatch(/turn\/end/) // started bodies are still draining
    await r.release('r1') // succeeds after the abort: recorded as aborted
    await r.release('r2', new Error('own failure')) // its own error stays
    await agent.whenIdle()
    expect(r.log.filter((l) => l.startsWith('abort seen'))).toEqual(['abort seen r1', 'abort seen r2'])
    expect(contentOf(agent, 'r1')).toBe('Error: tool call aborted')
    expect(resultOf(agent, 'r1').data.error).toEqual({ name: 'AbortError', code: 'ABORTED' })
    expect(contentOf(agent, 'r2')).toBe('Error: own failure')
    expect(contentOf(agent, 'c3')).toBe('Error: tool call aborted')
    expect(w.started()).toEqual([])
    for (const id of ['w4', 'r5']) expect(resultOf(agent, id).data.error?.code).toBe('ABORTED_BEFORE_DISPATCH')
    expect(toolEvents(agent)).toEqual([
      'tool/call(r1)',
      'tool/call(r2)',
      'tool/call(c3)',
      'tool/result(r1)',
      'tool/result(r2)',
      'tool/result(c3)',
      'tool/call(w4)',
      'tool/result(w4)',
      'tool/call(r5)',
      'tool/result(r5)',
    ])
    // the context was staged and stays parked with keepInbox
    expect(agent.inbox.nextStep.map((m) => (m.content[0] as { text: string }).text)).toEqual(['parked context'])
    expect(trace(agent).at(-1)).toBe('turn/end{1,aborted}')
  })

  it('TL-16: cancelled during pre-execute: the body is skipped, the pipeline still runs, the rest get synthetic pairs', async () => {
    const r = gated('read', 'exclusive')
    const { agent } = scriptedAgent([toolCallResponse(calls(['a', 'b']))], { tools: [r.tool] })
    const seen: string[] = []
    agent.on('tools/pre-execute', async (p, next) => {
      agent.cancel()
      await tick(2)
      return next()
    })
    agent.on('tools/post-execute', (p, next) => {
      seen.push(`post ${p.callId} ${p.outcome.error?.code}`)
      return next()
    })
    agent.on('tools/result', (p) => {
      seen.push(`result ${p.callId}`)
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(r.started()).toEqual([])
    expect(seen).toEqual(['post a ABORTED_BEFORE_DISPATCH', 'result a'])
    expect(resultOf(agent, 'a').data.error?.code).toBe('ABORTED_BEFORE_DISPATCH')
    expect(resultOf(agent, 'b').data.error?.code).toBe('ABORTED_BEFORE_DISPATCH')
    expect(trace(agent).at(-1)).toBe('turn/end{1,aborted}')
  })

  it('TL-17: a scheduler failure starts nothing new, drains in-flight calls, and ends the turn error without fabricated results', async () => {
    const r = gated('read')
    const { agent } = scriptedAgent([toolCallResponse(calls(['a', 'b', 'c']))], { tools: [r.tool], maxParallelToolCalls: 2 })
    const append = agent.session.append.bind(agent.session)
    agent.session.append = ((type: string, data: any, intent?: any) => {
      if (type === 'tool/result' && data.message.source.callId === 'a') throw new Error('store is full')
      return append(type as never, data, intent)
    }) as typeof agent.session.append
    const errors: unknown[] = []
    agent.on('agent/error', (p) => {
      errors.push(p.error)
    })
    agent.followup('go')
    await tick(5)
    await r.release('a') // committing a fails: the scheduler stops
    expect(r.started()).toEqual(['a', 'b'])
    expect(trace(agent).some((t) => t.startsWith('turn/end'))).toBe(false) // b is still draining
    await r.release('b')
    await agent.whenIdle()
    expect(r.started()).toEqual(['a', 'b'])
    expect(toolEvents(agent)).toEqual(['tool/call(a)', 'tool/call(b)'])
    const end = agent.session.events.at(-1)!
    expect(end.type).toBe('turn/end')
    expect((end.data as any).reason).toEqual({ kind: 'error', error: { message: 'store is full', code: 'UNKNOWN' } })
    expect(trace(agent).slice(-2)).toEqual(['step/end{1,1}', 'turn/end{1,error}'])
    expect(errors).toHaveLength(1)
  })
})

describe('TL — details', () => {
  it('TL-10: a post-execute decision that replaces both content and value is an error result', async () => {
    const t = defineTool({ name: 't', description: 't', input: z.object({}), execute: () => 'v' })
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'x', name: 't', arguments: '{}' }]), textResponse('k')], { tools: [t] })
    agent.on('tools/post-execute', () => ({ kind: 'accept', content: 'a', value: 'b' }))
    agent.followup('go')
    await agent.whenIdle()
    expect(contentOf(agent, 'x')).toBe('Error: tools/post-execute returned both content and value')
  })

  it('TL-11: the body also learns the name it was called by', async () => {
    const names: string[] = []
    const t = defineTool({ name: 'named', description: 't', input: z.object({}), execute: (_a, ctx) => (names.push(ctx.name), 'ok') })
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'x', name: 'named', arguments: '{}' }]), textResponse('k')], { tools: [t] })
    agent.followup('go')
    await agent.whenIdle()
    expect(names).toEqual(['named'])
  })
})

describe('TL-15 cancel({ graceMs }): an escape from a body that ignores its signal', () => {
  /** A tool whose body ignores its signal and settles only when the test says so. */
  function deaf() {
    const release: Array<(value: string) => void> = []
    const tool = defineTool({
      name: 'deaf',
      description: 'ignores its signal',
      input: z.object({}).loose(),
      execute: () => new Promise<string>((resolve) => release.push(resolve)),
    })
    return { tool, release: (value: string) => release.shift()?.(value) }
  }
  const results = (agent: Agent) => agent.session.events.filter((e): e is SessionEventOf<'tool/result'> => e.type === 'tool/result')
  const turnEnds = (agent: Agent) => agent.session.events.flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []))

  it('TL-15: without a grace the cancelled turn waits for the body (the default); it ends once the body settles', async () => {
    const { tool, release } = deaf()
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'deaf', arguments: '{}' }])], { tools: [tool] })
    agent.followup('go')
    await tick(5)
    agent.cancel()
    await tick(20)
    expect(agent.status).toBe('running')
    release('late but awaited')
    await agent.whenIdle()
    expect(turnEnds(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    expect(results(agent).map((e) => e.data.error?.code)).toEqual(['ABORTED'])
  })

  it('TL-15: after the grace the body is abandoned (TOOL_OUTCOME_UNKNOWN), the turn ends aborted, later turns run and the late result is dropped', async () => {
    const { tool, release } = deaf()
    const { agent } = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'deaf', arguments: '{}' }]), textResponse('second turn')], { tools: [tool] })
    agent.followup('go')
    await tick(5)
    agent.cancel({ kind: 'user' }, { graceMs: 10 })
    await agent.whenIdle()
    expect(turnEnds(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    const [result] = results(agent)
    expect(result.data.message.content[0]).toMatchObject({ toolCallId: 'c1', isError: true })
    expect(result.data.error?.code).toBe('TOOL_OUTCOME_UNKNOWN')

    // the agent keeps serving; the abandoned body's late result is dropped by id
    const run = await agent.run('again')
    expect(run.end).toEqual({ kind: 'completed' })
    const length = agent.session.length
    release('too late')
    await tick(5)
    expect(agent.session.length).toBe(length)
    expect(results(agent)).toHaveLength(1)
    expect(agent.status).toBe('idle')
  })

  it('TL-15: a grace never reaches the next activity: a turn that ended in time leaves the next turn’s work alone', async () => {
    const { tool, release } = deaf()
    const quick = defineTool({ name: 'quick', description: 'honours its signal', input: z.object({}).loose(), execute: () => 'quick' })
    const { agent } = scriptedAgent(
      [toolCallResponse([{ id: 'q1', name: 'quick', arguments: '{}' }]), toolCallResponse([{ id: 'd1', name: 'deaf', arguments: '{}' }]), textResponse('done')],
      { tools: [tool, quick] },
    )
    agent.on('tools/post-execute', async (_payload, next) => {
      await tick(2)
      return next()
    })
    agent.followup('first')
    await tick(1)
    agent.cancel({ kind: 'user' }, { graceMs: 30 })
    await agent.whenIdle()
    agent.followup('second')
    await tick(60) // well past the first cancel's grace, while d1 still runs
    expect(agent.status).toBe('running')
    release('real result')
    await agent.whenIdle()
    const d1 = results(agent).find((e) => e.data.message.content[0].toolCallId === 'd1')!
    expect(d1.data.message.content[0]).toMatchObject({ content: 'real result' })
    expect(d1.data.error).toBeUndefined()
  })

  it('TL-15: graceMs must be a number of milliseconds >= 0; Infinity means no grace', async () => {
    const { agent } = scriptedAgent([textResponse('ok')])
    for (const graceMs of [-1, Number.NaN, '10']) {
      expect(() => agent.cancel({ kind: 'user' }, { graceMs: graceMs as number })).toThrow(/cancel: graceMs must be a number of milliseconds >= 0/)
    }
    agent.cancel({ kind: 'user' }, { graceMs: Infinity })
    expect(agent.status).toBe('idle')
  })
})

// OpenTelemetry spans of an agent (docs/telemetry.md): the tree follows the machines (turn, step, attempt,
// backoff, tool call, compaction), the attributes follow the GenAI semantic conventions, and the same tree comes
// from a stored log after the fact. Spans are read back from the trace SDK's in-memory exporter.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { openaiModel } from '../../src/adapters/openai.js'
import {
  COMPACTION_INSTRUCTIONS,
  ConfigError,
  createAgent,
  createSession,
  defineTool,
  forkSession,
  type ModelRequest,
  type StreamChunk,
} from '../../src/index.js'
import { memoryStore } from '../../src/stores/index.js'
import { errorResponse, scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { exportSessionSpans } from '../../src/telemetry/index.js'
import { delta, finishChunk, sse, startChatServer } from '../adapters/chat-server.js'
import { track } from '../helpers.js'
import { memoryTracer, spanTree, steppingClock, watchedTracer, type SpanNode } from './support.js'

const overloaded = { message: 'overloaded', code: 'SERVER', status: 503, providerRetryAfterMs: 250 }
const quiet = { error: () => {} }
const nextTick = () => new Promise((resolve) => setTimeout(resolve, 1))

/** Two parallel-safe calls, then two exclusive ones; each body takes a few timer ticks. */
function tools() {
  const lookup = defineTool({
    name: 'lookup',
    description: 'parallel-safe',
    input: z.object({ q: z.string() }),
    executionMode: 'parallel',
    execute: async ({ q }) => {
      await nextTick()
      return `found ${q}`
    },
  })
  const write = defineTool({
    name: 'write',
    description: 'exclusive',
    input: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      await nextTick()
      return `wrote ${path}`
    },
  })
  return [lookup, write]
}

/** A failed request retried after its backoff, then four tool calls, then the answer. */
const retryThenTools = (): ScriptEntry[] => [
  errorResponse(overloaded),
  toolCallResponse(
    [
      { id: 'a', name: 'lookup', arguments: '{"q":"x"}' },
      { id: 'b', name: 'lookup', arguments: '{"q":"y"}' },
      { id: 'c', name: 'write', arguments: '{"path":"p"}' },
      { id: 'd', name: 'write', arguments: '{"path":"q"}' },
    ],
    undefined,
    { usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 3, cacheWriteTokens: 2 } },
  ),
  textResponse('all done', { usage: { inputTokens: 20, outputTokens: 2 } }),
]

const instant = async () => {}
const allNodes = (nodes: readonly SpanNode[]): SpanNode[] => nodes.flatMap((n) => [n, ...allNodes(n.children)])
const CONTENT_KEYS = ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result']

describe('telemetry: the span tree of a turn', () => {
  it('a retried request is two sibling chat spans with the backoff between them; parallel calls overlap, exclusive ones follow each other', async () => {
    const otel = memoryTracer()
    const session = createSession({ now: steppingClock() })
    const agent = track(
      createAgent({ model: scriptedModel(retryThenTools()), tools: tools(), session, sleep: instant, logger: quiet, telemetry: { tracer: otel.tracer } }),
    )
    expect((await agent.run('go')).end).toEqual({ kind: 'completed' })

    const [turn, ...others] = spanTree(otel.spans())
    expect(others).toEqual([])
    expect(turn).toMatchObject({ name: 'invoke_agent', kind: SpanKind.INTERNAL, status: { code: SpanStatusCode.UNSET } })
    expect(turn.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.conversation.id': agent.id,
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted-1',
      'agentchart.turn': 1,
      'agentchart.turn.end_reason': 'completed',
      'agentchart.state': 'running.turn',
      // the turn's usage is the sum of its attempts'
      'gen_ai.usage.input_tokens': 30,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.usage.cache_read.input_tokens': 3,
      'gen_ai.usage.cache_creation.input_tokens': 2,
    })
    expect(turn.children.map((n) => [n.name, n.attributes['agentchart.step']])).toEqual([
      ['step', 1],
      ['step', 2],
    ])
    const [step1, step2] = turn.children
    expect(step1.children.map((n) => n.name)).toEqual([
      'chat scripted-1',
      'backoff',
      'chat scripted-1',
      'execute_tool lookup',
      'execute_tool lookup',
      'execute_tool write',
      'execute_tool write',
    ])
    const [failed, backoff, answered, a, b, c, d] = step1.children

    expect(failed).toMatchObject({ kind: SpanKind.CLIENT, status: { code: SpanStatusCode.ERROR, message: 'overloaded' } })
    expect(failed.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted-1',
      'gen_ai.conversation.id': agent.id,
      'gen_ai.response.finish_reasons': ['error'],
      'error.type': 'SERVER',
      'agentchart.attempt': 1,
      'agentchart.state': 'running.turn.step.attempt',
    })
    expect(failed.attributes).not.toHaveProperty('agentchart.retry')
    expect(backoff.attributes).toMatchObject({
      'agentchart.retry': 1,
      'agentchart.retry.delay_ms': 250,
      'agentchart.retry.failure': 'SERVER',
      'agentchart.state': 'running.turn.step.attempt.backoff',
    })
    expect(answered).toMatchObject({ kind: SpanKind.CLIENT, status: { code: SpanStatusCode.UNSET } })
    expect(answered.attributes).toMatchObject({
      'agentchart.attempt': 2,
      'agentchart.retry': 1,
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 5,
      'gen_ai.usage.cache_read.input_tokens': 3,
      'gen_ai.usage.cache_creation.input_tokens': 2,
    })
    expect(answered.attributes).not.toHaveProperty('error.type')
    // the attempt, its backoff and the retry follow each other
    expect(failed.end).toBeLessThanOrEqual(backoff.start)
    expect(backoff.end).toBeLessThanOrEqual(answered.start)
    expect(answered.end).toBeLessThanOrEqual(a.start)

    for (const [span, id, name] of [
      [a, 'a', 'lookup'],
      [b, 'b', 'lookup'],
      [c, 'c', 'write'],
      [d, 'd', 'write'],
    ] as const) {
      expect(span.kind).toBe(SpanKind.INTERNAL)
      expect(span.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': name,
        'gen_ai.tool.call.id': id,
        'gen_ai.tool.type': 'function',
        'agentchart.state': 'running.turn.step.toolBatch',
      })
      expect(span.status.code).toBe(SpanStatusCode.UNSET)
    }
    // parallel: b started before a ended; exclusive: c after both, d after c
    expect(a.start).toBeLessThan(b.start)
    expect(b.start).toBeLessThan(a.end)
    expect(c.start).toBeGreaterThanOrEqual(Math.max(a.end, b.end))
    expect(d.start).toBeGreaterThanOrEqual(c.end)
    // every child inside its parent, the steps one after the other
    for (const parent of [turn, step1, step2])
      for (const child of parent.children) expect([child.start >= parent.start, child.end <= parent.end]).toEqual([true, true])
    expect(step1.end).toBeLessThanOrEqual(step2.start)
    expect(step2.children.map((n) => [n.name, n.attributes['gen_ai.response.finish_reasons']])).toEqual([['chat scripted-1', ['stop']]])

    // content is never recorded by default
    for (const node of allNodes([turn])) for (const key of CONTENT_KEYS) expect(node.attributes, `${node.name} ${key}`).not.toHaveProperty(key)
  })

  it('a cancel during a tool call: the turn span ends with the cause, the call that was cut off ends with its error', async () => {
    const otel = memoryTracer()
    let agent!: ReturnType<typeof createAgent>
    const stuck = defineTool({
      name: 'stuck',
      description: 'waits for its signal',
      input: z.object({}),
      execute: (_args, { signal }) =>
        new Promise<string>((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(new Error('stopped')))
          agent.cancel({ kind: 'hook', reason: 'enough' })
        }),
    })
    agent = track(
      createAgent({
        model: scriptedModel([toolCallResponse([{ id: 's1', name: 'stuck', arguments: '{}' }]), textResponse('never')]),
        tools: [stuck],
        session: createSession({ now: steppingClock() }),
        logger: quiet,
        telemetry: { tracer: otel.tracer },
      }),
    )
    expect((await agent.run('go')).end).toEqual({ kind: 'aborted', reason: { kind: 'hook', reason: 'enough' } })
    const [turn] = spanTree(otel.spans())
    // a cancel is not an error of the turn: its status stays unset, the cause is named
    expect(turn.status.code).toBe(SpanStatusCode.UNSET)
    expect(turn.attributes).toMatchObject({ 'agentchart.turn.end_reason': 'aborted', 'agentchart.cancel.cause': 'hook', 'agentchart.cancel.reason': 'enough' })
    const [step] = turn.children
    expect(turn.children).toHaveLength(1)
    expect(step.children.map((n) => n.name)).toEqual(['chat scripted-1', 'execute_tool stuck'])
    const call = step.children[1]
    expect(call.status.code).toBe(SpanStatusCode.ERROR)
    // a body's own throw carries no code in the log: error.type is the conventions' fallback
    expect(call.attributes['error.type']).toBe('_OTHER')
    expect(call.end).toBeLessThanOrEqual(step.end)
  })

  it('a cancel during the backoff: the backoff (the delay the policy caps at 30 s) ends with the step, marked cancelled, and no retry attempt follows', async () => {
    const otel = memoryTracer()
    const agent = track(
      createAgent({
        model: scriptedModel([errorResponse({ ...overloaded, providerRetryAfterMs: 60_000 }), textResponse('never')]),
        session: createSession({ now: steppingClock() }),
        logger: quiet,
        telemetry: { tracer: otel.tracer },
      }),
    )
    agent.on('session/event', ({ event }) => {
      if (event.type === 'llm/retry') queueMicrotask(() => agent.cancel())
    })
    expect((await agent.run('go')).end).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    const [turn] = spanTree(otel.spans())
    expect(turn.attributes).toMatchObject({ 'agentchart.turn.end_reason': 'aborted', 'agentchart.cancel.cause': 'user' })
    const [step] = turn.children
    expect(step.children.map((n) => n.name)).toEqual(['chat scripted-1', 'backoff'])
    expect(step.children[1].attributes).toMatchObject({ 'agentchart.retry': 1, 'agentchart.retry.delay_ms': 30_000, 'agentchart.retry.cancelled': true })
    expect(step.children[1].end).toBe(step.end)
  })

  it('a cancel that cuts a stream: the chat span ends with the prefix the log keeps, marked interrupted', async () => {
    const otel = memoryTracer()
    async function* partial(request: ModelRequest): AsyncGenerator<StreamChunk> {
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'text-delta', index: 0, text: 'Once upon' }
      await new Promise((resolve) => request.signal.addEventListener('abort', resolve))
      throw Object.assign(new Error('aborted'), { name: 'AbortError' })
    }
    const agent = track(
      createAgent({
        model: scriptedModel([(request) => partial(request)]),
        session: createSession({ now: steppingClock() }),
        logger: quiet,
        telemetry: { tracer: otel.tracer, captureContent: true },
      }),
    )
    agent.on('session/event', ({ event }) => {
      if (event.type === 'assistant/chunk' && event.data.chunk.type === 'text-delta') queueMicrotask(() => agent.cancel())
    })
    expect((await agent.run('tell me a story')).end).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    const [turn] = spanTree(otel.spans())
    const [chat] = turn.children[0].children
    expect(chat.attributes).toMatchObject({ 'agentchart.interrupted': true })
    expect(chat.status.code).toBe(SpanStatusCode.UNSET)
    expect(JSON.parse(chat.attributes['gen_ai.output.messages'] as string)).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'Once upon' }] }])
  })

  it('a request that fails for good ends the chat span and the turn span ERROR with the failure code as error.type', async () => {
    const otel = memoryTracer()
    const quota = { message: 'no credit', code: 'QUOTA', status: 402 }
    const agent = track(createAgent({ model: scriptedModel([errorResponse(quota)]), logger: quiet, telemetry: { tracer: otel.tracer } }))
    expect((await agent.run('go')).end).toEqual({ kind: 'error', error: quota })
    const [turn] = spanTree(otel.spans())
    expect(turn).toMatchObject({
      status: { code: SpanStatusCode.ERROR, message: 'no credit' },
      attributes: { 'error.type': 'QUOTA', 'agentchart.turn.end_reason': 'error' },
    })
    const [chat] = turn.children[0].children
    expect(chat).toMatchObject({ name: 'chat scripted-1', status: { code: SpanStatusCode.ERROR }, attributes: { 'error.type': 'QUOTA' } })
  })
})

describe('telemetry: compaction', () => {
  /** A model with an 800-token window that summarises when asked. */
  function windowedModel() {
    let summaries = 0
    const entry = (request: ModelRequest) =>
      request.system === COMPACTION_INSTRUCTIONS
        ? textResponse(`summary ${++summaries}`, { usage: { inputTokens: 500, outputTokens: 9 } })
        : textResponse('answer '.padEnd(400, 'x'))
    return scriptedModel(
      Array.from({ length: 40 }, () => entry),
      { contextWindow: 800 },
    )
  }

  it('an automatic compaction is a span of its turn before the step; agent.compact() from idle is a root span of its own', async () => {
    const otel = memoryTracer()
    const agent = track(
      createAgent({ model: windowedModel(), session: createSession({ now: steppingClock() }), logger: quiet, telemetry: { tracer: otel.tracer } }),
    )
    for (let n = 1; n <= 7; n++) await agent.run(`question ${n}`)
    expect((await agent.compact()).compacted).toBe(true)

    const roots = spanTree(otel.spans())
    const compacting = roots.find((turn) => turn.children.some((n) => n.name === 'compaction'))!
    expect(compacting.name).toBe('invoke_agent')
    const [compaction, step] = compacting.children
    expect(compacting.children.map((n) => n.name)).toEqual(['compaction', 'step'])
    expect(compaction.attributes).toMatchObject({
      'agentchart.compaction.reason': 'auto',
      'agentchart.compaction.context_window': 800,
      'agentchart.state': 'running.turn.compacting',
      'gen_ai.conversation.id': agent.id,
    })
    expect(compaction.attributes['agentchart.compaction.tokens_after']).toBeLessThan(compaction.attributes['agentchart.compaction.tokens_before'] as number)
    // the summariser's request runs between the claim and the step: the span covers that time
    expect(compaction.start).toBeLessThan(compaction.end)
    expect(compaction.end).toBeLessThanOrEqual(step.start)

    const manual = roots.at(-1)!
    expect(manual).toMatchObject({ name: 'compaction', children: [] })
    expect(manual.attributes).toMatchObject({ 'agentchart.compaction.reason': 'manual', 'agentchart.state': 'compacting' })
    // from idle the log holds only the compaction's end
    expect(manual.start).toBe(manual.end)
    expect(roots.filter((n) => n.name === 'invoke_agent')).toHaveLength(7)
  })

  it('a request refused for its size: the failed chat span, the compaction under the step, then the new attempt', async () => {
    const otel = memoryTracer()
    const overflow = { message: 'prompt is too long', code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 }
    let requests = 0
    const model = scriptedModel(
      Array.from({ length: 10 }, () => (request: ModelRequest) => {
        if (request.system === COMPACTION_INSTRUCTIONS) return textResponse('summary')
        return ++requests === 3 ? errorResponse(overflow) : textResponse('answer '.padEnd(200, 'x'))
      }),
      { contextWindow: 100_000 },
    )
    const agent = track(
      createAgent({
        model,
        compaction: { auto: false, keepRecent: 0.001 },
        session: createSession({ now: steppingClock() }),
        logger: quiet,
        telemetry: { tracer: otel.tracer },
      }),
    )
    for (const prompt of ['one', 'two', 'three']) expect((await agent.run(prompt)).end).toEqual({ kind: 'completed' })
    const step = spanTree(otel.spans())[2].children[0]
    expect(step.children.map((n) => n.name)).toEqual(['chat scripted-1', 'compaction', 'chat scripted-1'])
    const [refused, compaction, retried] = step.children
    expect(refused.attributes).toMatchObject({ 'error.type': 'CONTEXT_WINDOW_EXCEEDED', 'agentchart.attempt': 1 })
    expect(compaction.attributes).toMatchObject({ 'agentchart.compaction.reason': 'overflow', 'agentchart.state': 'running.turn.step.attempt.compacting' })
    expect(retried.attributes).toMatchObject({ 'agentchart.attempt': 2, 'gen_ai.response.finish_reasons': ['stop'] })
    expect([refused.end <= compaction.start, compaction.start < compaction.end, compaction.end <= retried.start]).toEqual([true, true, true])
  })

  it('a failed summary is an ERROR compaction span with the failure code', async () => {
    const otel = memoryTracer()
    const failing = { message: 'summariser down', code: 'SERVER', status: 500 }
    const model = scriptedModel([textResponse('answer '.padEnd(400, 'x')), textResponse('answer '.padEnd(400, 'x')), errorResponse(failing)], {
      contextWindow: 800,
    })
    const agent = track(createAgent({ model, logger: quiet, telemetry: { tracer: otel.tracer } }))
    await agent.run('one')
    await agent.run('two')
    expect((await agent.compact()).compacted).toBe(false)
    const manual = spanTree(otel.spans()).at(-1)!
    expect(manual).toMatchObject({
      name: 'compaction',
      status: { code: SpanStatusCode.ERROR },
      attributes: { 'error.type': 'SERVER', 'agentchart.compaction.reason': 'manual' },
    })
  })
})

describe('telemetry: a stored log', () => {
  it('exportSessionSpans of the stored log gives the live tree: names, parents, attributes, times and statuses', async () => {
    const live = memoryTracer()
    const store = memoryStore()
    const agent = await createAgent({
      store,
      sessionId: 'stored-1',
      model: scriptedModel(retryThenTools()),
      tools: tools(),
      sleep: instant,
      logger: quiet,
      telemetry: { tracer: live.tracer },
    })
    await agent.run('go')
    await agent.run('again')
    await agent.dispose()
    const events = (await store.load('stored-1'))!

    const after = memoryTracer()
    const written = exportSessionSpans(events, { tracer: after.tracer, sessionId: 'stored-1' })
    const liveTree = spanTree(live.spans(), 0)
    expect(spanTree(after.spans(), 0)).toEqual(liveTree)
    expect(written).toBe(live.spans().length)
    expect(liveTree.map((n) => n.name)).toEqual(['invoke_agent', 'invoke_agent'])
    // the second turn asks the exhausted script: an error turn, exported as it happened
    expect(liveTree[1].attributes['error.type']).toBe('SCRIPT_EXHAUSTED')
  })

  it("a fork exports only its own turns: the history it inherited is its parent's", async () => {
    const parent = track(createAgent({ model: scriptedModel([textResponse('Lisbon.'), textResponse('Tram.')]), logger: quiet }))
    await parent.run('Where in May?')
    await parent.run('Getting around?')
    const upTo = parent.session.events.find((e) => e.type === 'turn/end')!.seq
    const live = memoryTracer()
    const child = track(
      createAgent({
        model: scriptedModel([textResponse('By bike.')]),
        session: forkSession(parent.session, { upTo, id: 'by-bike' }),
        logger: quiet,
        telemetry: { tracer: live.tracer },
      }),
    )
    await child.run('And by bike?')
    const after = memoryTracer()
    exportSessionSpans(child.session.events, { tracer: after.tracer, sessionId: 'by-bike' })
    const tree = spanTree(live.spans(), 0)
    expect(tree.map((n) => [n.name, n.attributes['agentchart.turn'], n.attributes['gen_ai.conversation.id']])).toEqual([['invoke_agent', 2, 'by-bike']])
    expect(spanTree(after.spans(), 0)).toEqual(tree)
  })

  it('a log cut short mid-turn exports its open spans ended at the last event, marked incomplete', () => {
    const otel = memoryTracer()
    const t = 1_700_000_000_000
    const events = [
      { seq: 0, time: t, type: 'turn/start', data: { turn: 1 } },
      { seq: 1, time: t + 1, type: 'step/start', data: { turn: 1, step: 1 } },
      {
        seq: 2,
        time: t + 2,
        type: 'user/message',
        data: { id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } },
        surfaceOp: 'append',
      },
      { seq: 3, time: t + 5, type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'text' } } },
    ]
    expect(exportSessionSpans(events, { tracer: otel.tracer })).toBe(3)
    const [turn] = spanTree(otel.spans())
    const [step] = turn.children
    const [chat] = step.children
    for (const span of [turn, step, chat]) expect([span.end, span.attributes['agentchart.incomplete']]).toEqual([5, true])
    expect(chat.start).toBe(2)
  })

  it('a resumed agent reopens the turn its log left open and closes it as the repair does', async () => {
    const store = memoryStore()
    const first = await createAgent({ store, sessionId: 'resumed', model: scriptedModel(['hang']), logger: quiet })
    void first.run('go')
    while (!first.session.events.some((e) => e.type === 'request/context')) await nextTick()
    // a crash: the lease and the open turn are left behind, the log stops mid-step
    const events = first.session.events
    const crashed = memoryStore()
    const handle = await crashed.open('resumed')
    await handle.append(events)
    await handle.release()
    await first.dispose()

    const otel = memoryTracer()
    const again = await createAgent({ store: crashed, sessionId: 'resumed', model: scriptedModel([]), logger: quiet, telemetry: { tracer: otel.tracer } })
    await again.whenIdle()
    const [turn, ...rest] = spanTree(otel.spans())
    expect(rest).toEqual([])
    expect(turn).toMatchObject({ name: 'invoke_agent', attributes: { 'agentchart.turn': 1, 'agentchart.turn.end_reason': 'interrupted' } })
    expect(turn.children.map((n) => n.name)).toEqual(['step'])
    await again.dispose()
  })

  it('refuses what is not a log, naming the event and field', () => {
    const { tracer } = memoryTracer()
    expect(() => exportSessionSpans('nope' as never, { tracer })).toThrow(ConfigError)
    expect(() => exportSessionSpans([{ seq: 0, time: 1, type: 'turn/start', data: { turn: 0 } }], { tracer })).toThrow(/turn/)
    expect(() => exportSessionSpans([], { tracer: {} as never })).toThrow(/options\.tracer/)
  })
})

describe('telemetry: content, options and failures', () => {
  it('captureContent: true records the request, the answer, the system prompt and tool arguments and results; never an API key', async () => {
    const secret = 'sk-test-do-not-export-4242'
    const provider = await startChatServer((_body, received) =>
      received.length === 0
        ? sse(
            delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"weather"}' } }] }),
            finishChunk('tool_calls'),
          )
        : sse(delta({ content: 'sunny' }), finishChunk('stop')),
    )
    try {
      const otel = memoryTracer()
      const agent = track(
        createAgent({
          model: openaiModel({ model: 'gpt-test', baseURL: provider.baseURL, apiKey: secret }),
          tools: tools(),
          systemPrompt: 'You answer briefly.',
          logger: quiet,
          telemetry: { tracer: otel.tracer, captureContent: true },
        }),
      )
      expect((await agent.run('what is the weather?')).text).toBe('sunny')
      const [turn] = spanTree(otel.spans())
      const [step1, step2] = turn.children
      const [chat, call] = step1.children
      expect(chat.name).toBe('chat gpt-test')
      expect(chat.attributes['gen_ai.provider.name']).toBe('openai')
      expect(JSON.parse(chat.attributes['gen_ai.input.messages'] as string)).toEqual([
        { role: 'user', parts: [{ type: 'text', content: 'what is the weather?' }] },
      ])
      expect(JSON.parse(chat.attributes['gen_ai.system_instructions'] as string)).toEqual([{ type: 'text', content: 'You answer briefly.' }])
      expect(JSON.parse(chat.attributes['gen_ai.output.messages'] as string)).toEqual([
        { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'lookup', arguments: { q: 'weather' } }], finish_reason: 'tool_calls' },
      ])
      expect(call.attributes).toMatchObject({ 'gen_ai.tool.call.arguments': '{"q":"weather"}', 'gen_ai.tool.call.result': 'found weather' })
      const second = step2.children[0]
      expect(JSON.parse(second.attributes['gen_ai.input.messages'] as string).map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool'])
      expect(JSON.parse(second.attributes['gen_ai.output.messages'] as string)).toEqual([
        { role: 'assistant', parts: [{ type: 'text', content: 'sunny' }], finish_reason: 'stop' },
      ])
      expect(JSON.stringify(otel.spans().map((s) => [s.attributes, s.events, s.status]))).not.toContain(secret)
      expect(provider.received[0].headers.authorization).toBe(`Bearer ${secret}`)
    } finally {
      await provider.close()
    }
  })

  it("a call that waits for a person's approval shows the wait on its own span, with the question and the answer as events", async () => {
    const otel = memoryTracer()
    const deploy = defineTool({ name: 'deploy', description: 'needs a person', input: z.object({}), execute: () => 'deployed' })
    const agent = track(
      createAgent({
        model: scriptedModel([toolCallResponse([{ id: 'd1', name: 'deploy', arguments: '{}' }]), textResponse('done')]),
        tools: [deploy],
        approvals: true,
        session: createSession({ now: steppingClock() }),
        logger: quiet,
        telemetry: { tracer: otel.tracer },
      }),
    )
    agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'production' }))
    agent.on('tools/approval-requested', ({ callId }) => queueMicrotask(() => agent.approve(callId)))
    expect((await agent.run('ship it')).text).toBe('done')
    const call = spanTree(otel.spans())[0].children[0].children[1]
    expect(call.name).toBe('execute_tool deploy')
    expect(call.events.map((e) => [e.name, e.attributes])).toEqual([
      ['agentchart.approval.requested', { 'gen_ai.tool.call.id': 'd1', 'gen_ai.tool.name': 'deploy' }],
      ['agentchart.approval.answered', { 'gen_ai.tool.call.id': 'd1', 'agentchart.approval.decision': 'approve' }],
    ])
    for (const event of call.events) expect([call.start <= event.time, event.time <= call.end]).toEqual([true, true])
  })

  it("telemetry.context puts every turn under the application's own span, in its trace", async () => {
    const otel = memoryTracer()
    const request = otel.tracer.startSpan('POST /chat')
    const agent = track(
      createAgent({
        model: scriptedModel([textResponse('one'), textResponse('two')]),
        logger: quiet,
        telemetry: { tracer: otel.tracer, context: trace.setSpan(ROOT_CONTEXT, request) },
      }),
    )
    await agent.run('first')
    await agent.run('second')
    request.end()
    const [root, ...others] = spanTree(otel.spans())
    expect(others).toEqual([])
    expect(root.name).toBe('POST /chat')
    expect(root.children.map((n) => [n.name, n.attributes['agentchart.turn']])).toEqual([
      ['invoke_agent', 1],
      ['invoke_agent', 2],
    ])
    expect(new Set(otel.spans().map((s) => s.spanContext().traceId)).size).toBe(1)
  })

  it('refuses a telemetry option that is not a tracer, naming it, before anything runs', () => {
    const model = scriptedModel([])
    expect(() => createAgent({ model, telemetry: {} as never })).toThrow(ConfigError)
    expect(() => createAgent({ model, telemetry: {} as never })).toThrow(/telemetry\.tracer/)
    expect(() => createAgent({ model, telemetry: { tracer: memoryTracer().tracer, captureContent: 'yes' as never } })).toThrow(/telemetry\.captureContent/)
  })

  it('a tracer that throws is reported once and the agent goes on without spans', async () => {
    const errors: string[] = []
    const tracer = {
      startSpan: () => {
        throw new Error('exporter down')
      },
      startActiveSpan: () => {
        throw new Error('exporter down')
      },
    }
    const agent = track(
      createAgent({
        model: scriptedModel([textResponse('fine')]),
        logger: { error: (message) => errors.push(message) },
        telemetry: { tracer: tracer as never },
      }),
    )
    expect((await agent.run('go')).text).toBe('fine')
    expect(errors).toEqual([expect.stringMatching(/telemetry tracer threw/)])
  })

  it('a tracer that throws mid-turn: the spans it had started end, marked incomplete, so the SDK still exports them', async () => {
    const errors: unknown[] = []
    const otel = memoryTracer()
    // the turn and the step start; the chat span's start throws
    const watched = watchedTracer(otel.tracer, 2)
    const agent = track(
      createAgent({
        model: scriptedModel([textResponse('fine')]),
        logger: { error: (_message, error) => errors.push(error) },
        telemetry: { tracer: watched.tracer },
      }),
    )
    expect((await agent.run('go')).text).toBe('fine')
    expect(errors).toEqual([expect.objectContaining({ message: 'exporter down' })])
    expect(watched.open()).toEqual([])
    const [turn] = spanTree(otel.spans())
    expect([turn.name, turn.attributes['agentchart.incomplete'], turn.children.map((n) => [n.name, n.attributes['agentchart.incomplete']])]).toEqual([
      'invoke_agent',
      true,
      [['step', true]],
    ])
  })

  it('a tracer whose startSpan gives no span is a ConfigError naming the tracer option: thrown by an export, reported once by a live agent', async () => {
    const notASpan = { startSpan: () => ({}) } as never
    const agent = track(createAgent({ model: scriptedModel([textResponse('fine')]), logger: quiet }))
    await agent.run('go')
    let thrown: unknown
    try {
      exportSessionSpans(agent.session.events, { tracer: notASpan })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(ConfigError)
    expect(thrown).toMatchObject({ path: 'options.tracer', message: expect.stringMatching(/options\.tracer.*Span/) })

    const reported: unknown[] = []
    const live = track(
      createAgent({
        model: scriptedModel([textResponse('fine')]),
        logger: { error: (_message, error) => reported.push(error) },
        telemetry: { tracer: notASpan },
      }),
    )
    expect((await live.run('go')).text).toBe('fine')
    expect(reported).toHaveLength(1)
    expect(reported[0]).toBeInstanceOf(ConfigError)
    expect(reported[0]).toMatchObject({ path: 'telemetry.tracer' })
  })
})

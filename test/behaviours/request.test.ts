// RQ — Request attempts and retry: the attempt pipeline, the seed config,
// header and route records, the frozen request, failures and recovery.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  ConfigError,
  createAgent,
  createSession,
  defineTool,
  LlmError,
  toLlmFailure,
  userMessage,
  type Agent,
  type LlmCallConfig,
  type ModelAdapter,
  type ModelRequest,
  type SessionEvent,
  type StreamChunk,
} from '../../src/index.js'
import { errorResponse, hang, scriptedModel, textResponse } from '../../src/testing/index.js'
import { ofType, refuseAppends, scriptedAgent, tick, trace, track, turnEnds } from '../helpers.js'

type EventOf<T extends SessionEvent['type']> = Extract<SessionEvent, { type: T }>

const server = { message: 'upstream overloaded', code: 'SERVER', status: 503, requestId: 'req-1' }
/** A failed attempt that streamed visible text before its error finish. */
const textThenError = (text: string): StreamChunk[] => [...textResponse(text).slice(0, -1), ...errorResponse(server)]
const lookup = defineTool({ name: 'lookup', description: 'look something up', input: z.object({ q: z.string() }), execute: () => 'x' })

describe('RQ — Request attempts and retry', () => {
  it('RQ-1: an attempt runs agent/request, logs header and route, dispatches, logs chunks, then classifies, inside the open step', async () => {
    const timeline: string[] = []
    const { agent } = scriptedAgent([
      (request) => {
        timeline.push(`dispatch(${request.messages.length})`)
        return textResponse('hi')
      },
    ])
    agent.on('session/event', ({ event }) => void timeline.push(event.type))
    agent.on('agent/request', (_p, next) => {
      timeline.push('agent/request')
      return next()
    })
    agent.followup('go')
    await agent.whenIdle()
    const chunks = textResponse('hi').map(() => 'assistant/chunk')
    expect(timeline.slice(timeline.indexOf('step/start'))).toEqual([
      'step/start',
      'user/message',
      'agent/request',
      'request/header',
      'request/context',
      'dispatch(1)',
      ...chunks,
      'assistant/message',
      'step/end',
      'turn/end',
    ])
  })

  it('RQ-2: next() yields a deep-frozen seed from the options, then the latest header config; a replacement is logged and becomes the seed', async () => {
    const { agent, model } = scriptedAgent([textResponse('1'), textResponse('2'), textResponse('3')], { maxTokens: 64 })
    const seeds: LlmCallConfig[] = []
    const payloadKeys: string[][] = []
    agent.on('agent/request', async (p, next) => {
      payloadKeys.push(Object.keys(p).sort())
      const seed = await next()
      seeds.push(seed)
      if (p.turn === 1) return { ...seed, model: 'switched', stop: ['END'] }
      return seed
    })
    agent.followup('one')
    agent.followup('two')
    await agent.whenIdle()
    const resumed = createSession({ seed: agent.session.events })
    const { agent: next, model: nextModel } = scriptedAgent([textResponse('3')], { session: resumed })
    const nextSeeds: LlmCallConfig[] = []
    next.on('agent/request', async (_p, n) => {
      const seed = await n()
      nextSeeds.push(seed)
      return seed
    })
    next.followup('three')
    await next.whenIdle()

    expect(seeds).toEqual([
      { provider: 'scripted', model: 'scripted-1', maxTokens: 64 },
      { provider: 'scripted', model: 'switched', maxTokens: 64, stop: ['END'] },
    ])
    for (const seed of seeds) expect(Object.isFrozen(seed)).toBe(true)
    expect(Object.isFrozen(seeds[1].stop)).toBe(true)
    expect(() => {
      ;(seeds[0] as { model: string }).model = 'mutated'
    }).toThrow(TypeError)
    expect(() => seeds[1].stop!.push('more')).toThrow(TypeError)
    expect(model.requests.map((r) => r.config.model)).toEqual(['switched', 'switched'])
    expect(ofType(agent, 'request/header').map((e) => e.data.header.config)).toEqual([
      { provider: 'scripted', model: 'switched', maxTokens: 64, stop: ['END'] },
    ])
    // the waterfall sees no messages
    expect(payloadKeys[0]).toEqual(['agent', 'signal', 'step', 'turn'])
    // a new instance seeds from its own options, not from the previous instance's switch
    expect(nextSeeds).toEqual([{ provider: 'scripted', model: 'scripted-1' }])
    expect(nextModel.requests[0].config).toEqual({ provider: 'scripted', model: 'scripted-1' })
  })

  it.each([
    { name: 'an empty model', change: (c: LlmCallConfig) => ({ ...c, model: '' }) },
    { name: 'no provider at all', change: (c: LlmCallConfig) => ({ model: c.model }) as LlmCallConfig },
  ])('RQ-3: $name after agent/request ends the turn error, pointing at the options or agent/request; nothing is sent', async ({ change }) => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    agent.on('agent/request', async (_p, next) => change(await next()))
    agent.followup('go')
    await agent.whenIdle()

    expect(model.requests).toHaveLength(0)
    expect(ofType(agent, 'request/header')).toEqual([])
    const [end] = turnEnds(agent)
    expect(end.kind).toBe('error')
    const { message } = (end as { error: { message: string } }).error
    expect(message).toMatch(/no provider\/model/)
    expect(message).toMatch(/createAgent/)
    expect(message).toMatch(/agent\/request/)
    expect(trace(agent).slice(-2)).toEqual(['step/end{1,1}', 'turn/end{1,error}'])
  })

  it.each([0, -1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 1, '10' as unknown as number])(
    'RQ-3: maxTokens %s fails agent creation before anything is registered',
    (maxTokens) => {
      const session = createSession()
      const seen: unknown[] = []
      session.observe((event) => void seen.push(event))
      expect(() => createAgent({ model: scriptedModel([]), session, maxTokens })).toThrow(ConfigError)
      expect(session.events).toEqual([])
      expect(seen).toEqual([])
    },
  )

  it('RQ-4: the first request logs an initial header; later ones only when the canonical header changes', async () => {
    const { agent } = scriptedAgent([textResponse('1'), textResponse('2'), textResponse('3'), textResponse('4')])
    agent.on('agent/request', async (p, next) => {
      const seed = await next()
      if (p.turn === 2) return Object.fromEntries(Object.entries(seed).reverse()) as LlmCallConfig // same header, other key order
      if (p.turn === 3) return { ...seed, temperature: 0.2 }
      return seed
    })
    for (const text of ['one', 'two', 'three', 'four']) agent.followup(text)
    await agent.whenIdle()

    const headers = ofType(agent, 'request/header')
    expect(headers.map((e) => e.data.reason)).toEqual(['initial', 'change'])
    expect(headers.map((e) => ofType(agent, 'turn/start').filter((t) => t.seq < e.seq).length)).toEqual([1, 3])
    expect(headers[1].data.header.config).toEqual({ provider: 'scripted', model: 'scripted-1', temperature: 0.2 })
  })

  it('RQ-4: a new instance over a log with a header logs reason resume even when nothing changed', async () => {
    const { agent } = scriptedAgent([textResponse('1')])
    agent.followup('one')
    await agent.whenIdle()
    const { agent: resumed } = scriptedAgent([textResponse('2'), textResponse('3')], { session: createSession({ seed: agent.session.events }) })
    resumed.followup('two')
    resumed.followup('three')
    await resumed.whenIdle()
    const live = resumed.session.events.slice(resumed.session.seedLength).filter((e) => e.type === 'request/header') as EventOf<'request/header'>[]
    expect(live.map((e) => e.data)).toEqual([{ header: { config: { provider: 'scripted', model: 'scripted-1' } }, reason: 'resume' }])
  })

  it('RQ-4: the header carries system text and tool schemas, and empty ones count as absent', async () => {
    const { agent: bare, model: bareModel } = scriptedAgent([textResponse('1')], { systemPrompt: '', tools: [] })
    bare.followup('go')
    await bare.whenIdle()
    expect(ofType(bare, 'request/header')[0].data.header).toEqual({ config: { provider: 'scripted', model: 'scripted-1' } })
    expect('system' in bareModel.requests[0]).toBe(false)
    expect('tools' in bareModel.requests[0]).toBe(false)

    const { agent, model } = scriptedAgent([textResponse('1')], { systemPrompt: 'Be brief.', tools: [lookup] })
    agent.followup('go')
    await agent.whenIdle()
    const { header } = ofType(agent, 'request/header')[0].data
    expect(header.system).toBe('Be brief.')
    expect(header.tools!.map((t) => t.name)).toEqual(['lookup'])
    expect(model.requests[0].system).toBe('Be brief.')
    expect(model.requests[0].tools).toEqual(header.tools)
  })

  it('RQ-5: request/context is logged on the first request and whenever provider, model or context window changes', async () => {
    const model = scriptedModel([textResponse('1'), textResponse('2'), textResponse('3')], { contextWindow: 128_000 })
    const agent = track(createAgent({ model, logger: { error: () => {} } }))
    agent.on('agent/request', async (p, next) => {
      const seed = await next()
      return p.turn === 3 ? { ...seed, model: 'bigger' } : seed
    })
    for (const text of ['one', 'two', 'three']) agent.followup(text)
    await agent.whenIdle()

    const contexts = ofType(agent, 'request/context')
    expect(contexts.map((e) => e.data)).toEqual([
      { provider: 'scripted', model: 'scripted-1', contextWindow: 128_000 },
      { provider: 'scripted', model: 'bigger', contextWindow: 128_000 },
    ])
    // each comes before its dispatch, inside the turn it belongs to
    expect(contexts.map((e) => ofType(agent, 'turn/start').filter((t) => t.seq < e.seq).length)).toEqual([1, 3])
  })

  it('RQ-5: a resumed instance logs the route only if it differs from the latest one in the log', async () => {
    const model = () => scriptedModel([textResponse('x'), textResponse('y')], { contextWindow: 8_000 })
    const first = track(createAgent({ model: model(), logger: { error: () => {} } }))
    first.followup('one')
    await first.whenIdle()
    const session = createSession({ seed: first.session.events })
    const second = track(createAgent({ model: model(), session, logger: { error: () => {} } }))
    second.followup('two')
    second.followup('three')
    await second.whenIdle()
    const live = second.session.events.slice(session.seedLength)
    expect(live.filter((e) => e.type === 'request/context')).toEqual([])
    // the header is logged regardless (RQ-4 / RS-3), the unchanged route is not
    expect(live.filter((e) => e.type === 'request/header').map((e) => e.data.reason)).toEqual(['resume'])
    const third = track(
      createAgent({
        model: scriptedModel([textResponse('z')], { contextWindow: 16_000 }),
        session: createSession({ seed: second.session.events }),
        logger: { error: () => {} },
      }),
    )
    third.followup('four')
    await third.whenIdle()
    expect(
      ofType(third, 'request/context')
        .slice(-1)
        .map((e) => e.data),
    ).toEqual([{ provider: 'scripted', model: 'scripted-1', contextWindow: 16_000 }])
  })

  it('RQ-5: an adapter context window that is not a positive safe integer is refused by name and never logged', async () => {
    for (const contextWindow of ['big', 1.5, -5, 0, Number.NaN, Infinity]) {
      const model = Object.assign(scriptedModel([]), { contextWindow }) as unknown as ModelAdapter
      // with compaction off too: request/context would log it, and a log holding it could not be opened again
      for (const compaction of [false, undefined] as const) {
        const error = (() => {
          try {
            createAgent({ model, compaction })
          } catch (thrown) {
            return thrown
          }
        })()
        expect(error, String(contextWindow)).toBeInstanceOf(ConfigError)
        expect((error as ConfigError).path).toBe('model.contextWindow')
        expect((error as Error).message).toMatch(/^model\.contextWindow must be a positive safe integer/)
      }
    }
  })

  it('RQ-5: a context window that goes bad after creation fails that attempt by name; the log still opens, later turns run', async () => {
    let window: unknown = 8_000
    const model = Object.defineProperty(scriptedModel([textResponse('one'), textResponse('three')]), 'contextWindow', { get: () => window })
    const agent = track(createAgent({ model, compaction: false, logger: { error: () => {} } }))
    const errors: unknown[] = []
    agent.on('agent/error', (p) => void errors.push(p.error))
    agent.followup('one')
    await agent.whenIdle()
    window = 'big'
    agent.followup('two')
    await agent.whenIdle()
    expect(turnEnds(agent)[1]).toMatchObject({
      kind: 'error',
      error: { message: expect.stringMatching(/model\.contextWindow must be a positive safe integer \(the tokens one request may carry\), got "big"/) },
    })
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(ConfigError)
    expect(model.requests).toHaveLength(1)
    expect(() => createSession({ seed: agent.session.events })).not.toThrow()
    window = 16_000
    agent.followup('three')
    await agent.whenIdle()
    expect(turnEnds(agent).map((r) => r.kind)).toEqual(['completed', 'error', 'completed'])
    expect(ofType(agent, 'request/context').map((e) => e.data.contextWindow)).toEqual([8_000, 16_000])
  })

  it('RQ-6: the dispatched request is deep-frozen: header config, derived messages, system/tools, session id, turn signal', async () => {
    let request: ModelRequest | undefined
    let turnSignal: AbortSignal | undefined
    const { agent } = scriptedAgent(
      [
        (r) => {
          request = r
          return textResponse('ok')
        },
      ],
      { systemPrompt: 'sys', tools: [lookup], maxTokens: 100 },
    )
    agent.on('agent/pre-step', (p, next) => {
      turnSignal = p.signal
      return next()
    })
    agent.followup(userMessage('hi', { id: 'p1' }))
    await agent.whenIdle()

    const r = request!
    expect(r.sessionId).toBe(agent.session.id)
    expect(r.signal).toBe(turnSignal)
    expect(r.config).toEqual({ provider: 'scripted', model: 'scripted-1', maxTokens: 100 })
    expect(r.config).toEqual(ofType(agent, 'request/header')[0].data.header.config)
    expect(r.messages.map((m) => m.id)).toEqual(['p1'])
    expect(r.system).toBe('sys')
    for (const part of [r, r.config, r.messages, r.messages[0], r.messages[0].content, r.tools, r.tools![0], r.tools![0].inputSchema]) {
      expect(Object.isFrozen(part)).toBe(true)
    }
    expect(() => (r.messages as unknown[]).push({})).toThrow(TypeError)
    expect(() => {
      ;(r.tools![0] as { name: string }).name = 'renamed'
    }).toThrow(TypeError)
  })

  it('RQ-6: an adapter that tries to mutate the request throws, and the turn ends error', async () => {
    const model: ModelAdapter = {
      provider: 'mutating',
      model: 'm-1',

      async *stream(request) {
        ;(request.messages as unknown[]).push(userMessage('smuggled'))
      },
    }
    const agent = track(createAgent({ model, logger: { error: () => {} } }))
    agent.followup('go')
    await agent.whenIdle()
    const [end] = turnEnds(agent)
    expect(end).toMatchObject({ kind: 'error', error: { code: 'UNKNOWN' } })
    expect((end as { error: { message: string } }).error.message).toMatch(/not extensible|read.only|frozen/i)
    expect(agent.messages().some((m) => m.content.some((b) => 'text' in b && b.text === 'smuggled'))).toBe(false)
  })

  it('RQ-7: an adapter throw arrives as a failure finish and is offered to recovery', async () => {
    const model: ModelAdapter = {
      provider: 'throwing',
      model: 't-1',
      stream() {
        throw new LlmError(server)
      },
    }
    const agent = track(createAgent({ model, logger: { error: () => {} } }))
    const offered: unknown[] = []
    agent.on('agent/request-error', (p) => void offered.push(p.failure))
    agent.followup('go')
    await agent.whenIdle()
    expect(offered).toEqual([server])
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error: server }])
  })

  it.each([
    {
      name: 'a throwing agent/request listener',
      setup: (a: Agent) =>
        a.on('agent/request', () => {
          throw new LlmError({ message: 'no route today', code: 'NO_ADAPTER' })
        }),
      error: { message: 'no route today', code: 'NO_ADAPTER' },
    },
    {
      name: 'a refused chunk append',
      setup: (a: Agent) => refuseAppends(a, 'assistant/chunk'),
      error: { message: 'refused assistant/chunk', code: 'UNKNOWN' },
    },
  ])('RQ-7: $name ends the turn error directly, never offered to agent/request-error', async ({ setup, error }) => {
    const { agent } = scriptedAgent([textResponse('hello'), textResponse('hello')])
    let offered = 0
    agent.on('agent/request-error', () => {
      offered++
      return { kind: 'retry' }
    })
    const errors: unknown[] = []
    agent.on('agent/error', (p) => void errors.push(p.error))
    setup(agent)
    agent.followup('go')
    await agent.whenIdle()
    expect(offered).toBe(0)
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error }])
    expect(errors).toHaveLength(1)
    expect(trace(agent).slice(-2)).toEqual(['step/end{1,1}', 'turn/end{1,error}'])
    expect(ofType(agent, 'assistant/chunk')).toEqual([])
  })

  it("RQ-7: after a refused chunk append the adapter's stream is closed, not left suspended", async () => {
    let closed = false
    const model: ModelAdapter = {
      provider: 'closing',
      model: 'c-1',
      async *stream() {
        try {
          for (const chunk of textResponse('never fully logged')) yield chunk
        } finally {
          closed = true
        }
      },
    }
    const agent = track(createAgent({ model, logger: { error: () => {} } }))
    refuseAppends(agent, 'assistant/chunk')
    agent.followup('go')
    await agent.whenIdle()
    await tick(5)
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error: { message: 'refused assistant/chunk', code: 'UNKNOWN' } }])
    expect(closed).toBe(true)
  })

  it("RQ-8: a stream ended by the turn's own cancellation is handled as cancellation, not as a request failure", async () => {
    const { agent } = scriptedAgent([hang])
    let offered = 0
    agent.on('agent/request-error', () => void offered++)
    const reported: unknown[] = []
    agent.on('agent/error', (p) => void reported.push(p))
    agent.on('session/event', ({ event }) => {
      if (event.type === 'request/context') void tick(1).then(() => agent.cancel({ kind: 'hook', reason: 'enough' }))
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(offered).toBe(0)
    expect(reported).toEqual([])
    expect(turnEnds(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'enough' } }])
  })

  it('RQ-8: a finish{aborted} the turn did not cause is an ordinary request failure (default: error ABORTED)', async () => {
    const failure = { message: 'provider dropped the request', code: 'ABORTED' }
    const { agent } = scriptedAgent([[{ type: 'finish', reason: { kind: 'aborted', failure } }]])
    const offered: unknown[] = []
    agent.on('agent/request-error', (p) => void offered.push(p.failure))
    agent.followup('go')
    await agent.whenIdle()
    expect(offered).toEqual([failure])
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error: failure }])
  })

  it.each([
    { name: 'a listener returning nothing', listen: true },
    { name: 'no listener, retry policy off', listen: false },
  ])('RQ-9: a request failure is offered while the step is open; by default ($name) step/end, agent/error, turn/end{error}', async ({ listen }) => {
    const { agent, model } = scriptedAgent([errorResponse(server)], { retry: false })
    const calls: Array<Record<string, unknown>> = []
    if (listen) {
      agent.on('agent/request-error', (p) => {
        calls.push({ turn: p.turn, step: p.step, provider: p.provider, failure: p.failure, signal: p.signal instanceof AbortSignal, open: trace(agent).at(-1) })
      })
    }
    const timeline: string[] = []
    let reported: { turn: number; step: number; error: unknown } | undefined
    agent.on('agent/error', (p) => {
      timeline.push('agent/error')
      reported = p
    })
    agent.on('session/event', ({ event }) => {
      if (event.type === 'step/end' || event.type === 'turn/end') timeline.push(event.type)
    })
    agent.followup('go')
    await agent.whenIdle()

    if (listen) expect(calls).toEqual([{ turn: 1, step: 1, provider: 'scripted', failure: server, signal: true, open: 'request/context' }])
    expect(timeline).toEqual(['step/end', 'agent/error', 'turn/end'])
    expect(reported!.turn).toBe(1)
    expect(reported!.step).toBe(1)
    expect(reported!.error).toBeInstanceOf(Error)
    expect(toLlmFailure(reported!.error)).toEqual(server)
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error: server }])
    expect(ofType(agent, 'assistant/message')).toEqual([])
    expect(model.requests).toHaveLength(1)
  })

  it('RQ-10: a retry is a new attempt of the same step: agent/request again, history derived again, one turn', async () => {
    const { agent, model } = scriptedAgent([errorResponse(server), errorResponse({ message: 'again', code: 'TIMEOUT' }), textResponse('at last')])
    const statuses: string[] = []
    agent.on('agent/status', (p) => void statuses.push(p.status))
    const recoveries: string[] = []
    agent.on('agent/request-error', (p) => {
      recoveries.push(`${p.turn}.${p.step}:${p.failure.code}`)
      return { kind: 'retry' }
    })
    const requests: string[] = []
    let preSteps = 0
    agent.on('agent/pre-step', (_p, next) => {
      preSteps++
      return next()
    })
    agent.on('agent/request', async (p, next) => {
      requests.push(`${p.turn}.${p.step}`)
      const seed = await next()
      return requests.length === 3 ? { ...seed, temperature: 0 } : seed // the third attempt changes the header
    })
    agent.followup('go')
    await agent.whenIdle()

    expect(recoveries).toEqual(['1.1:SERVER', '1.1:TIMEOUT'])
    expect(requests).toEqual(['1.1', '1.1', '1.1'])
    expect(preSteps).toBe(1)
    expect(model.requests).toHaveLength(3)
    expect(model.requests.map((r) => r.messages)).toEqual([model.requests[0].messages, model.requests[0].messages, model.requests[0].messages])
    expect(new Set(model.requests.map((r) => r.messages)).size).toBe(3) // derived afresh for each attempt
    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(go)',
      'request/header',
      'request/context',
      'request/header',
      'assistant/message',
      'step/end{1,1}',
      'turn/end{1,completed}',
    ])
    expect(ofType(agent, 'request/header').map((e) => e.data.reason)).toEqual(['initial', 'change'])
    expect(statuses).toEqual(['running', 'idle'])
  })

  it("RQ-11: a failed attempt's chunks stay in the log but not in history; the anchor cites only its own attempt", async () => {
    const { agent, model } = scriptedAgent([textThenError('half an answer'), textResponse('whole answer'), textResponse('next')])
    agent.on('agent/request-error', () => ({ kind: 'retry' }))
    agent.followup('one')
    agent.followup('two')
    await agent.whenIdle()

    const chunks = ofType(agent, 'assistant/chunk').filter((e) => e.data.turn === 1)
    const failedFinish = chunks.findIndex((e) => e.data.chunk.type === 'finish')
    expect(chunks[failedFinish].data.chunk).toMatchObject({ reason: { kind: 'error' } })
    const anchors = ofType(agent, 'assistant/message').filter((e) => e.data.turn === 1)
    expect(anchors).toHaveLength(1)
    expect(anchors[0].data.interrupted).toBeUndefined()
    expect(anchors[0].sourceEventSeqs).toEqual(chunks.slice(failedFinish + 1).map((e) => e.seq))
    const texts = (r: ModelRequest) => r.messages.flatMap((m) => m.content.map((b) => ('text' in b ? b.text : '')))
    expect(texts(model.requests[1])).toEqual(['one'])
    expect(texts(model.requests[2])).toEqual(['one', 'whole answer', 'two'])
  })

  it('RQ-12: cancellation beats retry: a cancel before recovery resolves ends the turn aborted with no further attempt', async () => {
    const { agent, model } = scriptedAgent([textThenError('streamed text'), textResponse('never')])
    const errors: unknown[] = []
    agent.on('agent/error', (p) => void errors.push(p))
    agent.on('agent/request-error', () => {
      agent.cancel({ kind: 'parent' })
      return { kind: 'retry' }
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(1)
    expect(turnEnds(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'parent' } }])
    expect(errors).toEqual([])
    expect(ofType(agent, 'assistant/message')).toEqual([]) // no interrupted prefix for a failed stream
  })

  it('RQ-12: a recovery listener that waits for the turn signal lets the turn settle aborted{cause}', async () => {
    const { agent, model } = scriptedAgent([errorResponse(server), textResponse('never')])
    agent.on(
      'agent/request-error',
      (p) =>
        new Promise((resolve) => {
          p.signal.addEventListener('abort', () => resolve({ kind: 'retry' }), { once: true })
          void tick(2).then(() => agent.cancel({ kind: 'hook', reason: 'budget' }))
        }),
    )
    agent.followup('go')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(1)
    expect(turnEnds(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'budget' } }])
  })

  it('RQ-13: a throwing recovery listener retries nothing and ends the turn error describing its own failure', async () => {
    const { agent, model } = scriptedAgent([errorResponse(server), textResponse('never')])
    const thrown = new Error('retry policy crashed')
    const errors: unknown[] = []
    agent.on('agent/error', (p) => void errors.push(p.error))
    agent.on('agent/request-error', () => {
      throw thrown
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(1)
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error: { message: 'retry policy crashed', code: 'UNKNOWN' } }])
    expect(errors).toEqual([thrown])
    expect(trace(agent).slice(-2)).toEqual(['step/end{1,1}', 'turn/end{1,error}'])
  })
})

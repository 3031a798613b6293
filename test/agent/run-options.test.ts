// Per-turn options: agent.run(input, { request, maxSteps, signal }) and the
// same on followup apply to that turn only, are logged in its request
// headers, and nothing of them reaches the next turn.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, createAgent, defineTool, userMessage, type SessionEvent } from '../../src/index.js'
import { checkSessionInvariants, hang, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { track } from '../helpers.js'

const quiet = { error: () => {} }

/** The config of each logged request/header, in order. */
const headers = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'request/header' ? [{ turn: turnAt(events, e.seq), config: e.data.header.config }] : []))

/** The turn an event belongs to: the latest turn/start before it. */
function turnAt(events: readonly SessionEvent[], seq: number): number {
  for (let i = seq; i >= 0; i--) if (events[i].type === 'turn/start') return (events[i].data as { turn: number }).turn
  return 0
}

const turnEnds = (events: readonly SessionEvent[]) => events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: unknown }).reason)

const echo = defineTool({ name: 'echo', description: 'echoes', input: z.object({}), execute: () => 'echoed' })
const callEcho = (id: string) => toolCallResponse([{ id, name: 'echo', arguments: '{}' }])

describe('per-turn request options', () => {
  it('RQ-2: a response schema whose refinement throws gives the turn an objectError, and nothing rejects unhandled', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const schema = z.object({ a: z.number() }).refine(() => {
        throw new Error('boom in refine')
      })
      const agent = track(createAgent({ model: scriptedModel([textResponse('{"a":1}')]), logger: quiet }))
      const result = await agent.run('as JSON', { request: { responseFormat: schema } })
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(result.end).toEqual({ kind: 'completed' })
      expect(result.object).toBeUndefined()
      expect(result.objectError).toMatch(/cannot be checked synchronously/)
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('RQ-2: two queued turns whose schemas share one JSON Schema each check the answer with their own refinement', async () => {
    const positive = z.object({ x: z.number() }).refine((v) => v.x > 0, 'x must be positive')
    const negative = z.object({ x: z.number() }).refine((v) => v.x < 0, 'x must be negative')
    const agent = track(createAgent({ model: scriptedModel([textResponse('{"x":1}'), textResponse('{"x":1}')]), logger: quiet }))
    // the second run's options are checked (and its schema seen) while the first turn is still to run
    const [first, second] = await Promise.all([
      agent.run('one', { request: { responseFormat: positive } }),
      agent.run('two', { request: { responseFormat: negative } }),
    ])
    expect(first).toMatchObject({ object: { x: 1 } })
    expect(first.objectError).toBeUndefined()
    expect(second.object).toBeUndefined()
    expect(second.objectError).toMatch(/x must be negative/)
    // the log cannot tell them apart: one header serves both turns
    expect(headers(agent.session.events)).toHaveLength(1)
  })

  it('RQ-2: a request option given as undefined is an option not given', async () => {
    const model = scriptedModel([textResponse('ok')])
    const agent = track(createAgent({ model, logger: quiet, request: { temperature: undefined } }))
    const result = await agent.run('plain', { request: { responseFormat: undefined, maxTokens: undefined } })
    expect(result.end).toEqual({ kind: 'completed' })
    expect(model.requests[0].config).not.toHaveProperty('responseFormat')
    expect(model.requests[0].config).not.toHaveProperty('temperature')
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('RQ-2: a structured turn, then a plain turn: the second is plain and its request has no responseFormat', async () => {
    const model = scriptedModel([textResponse('{"order":"A-17","status":"shipped"}'), textResponse('It shipped yesterday.')])
    const agent = track(createAgent({ model, logger: quiet }))
    const schema = z.object({ order: z.string(), status: z.enum(['shipped', 'pending']) })
    const structured = await agent.run<z.infer<typeof schema>>('Status of A-17 as JSON', { request: { responseFormat: schema, temperature: 0 } })
    expect(structured.end).toEqual({ kind: 'completed' })
    expect(structured.object).toEqual({ order: 'A-17', status: 'shipped' })
    const plain = await agent.run('And in words?')
    expect(plain).toMatchObject({ end: { kind: 'completed' }, text: 'It shipped yesterday.' })
    expect(plain.object).toBeUndefined()
    expect(plain.objectError).toBeUndefined()

    const logged = headers(agent.session.events)
    expect(logged.map((h) => h.turn)).toEqual([1, 2])
    expect(logged[0].config).toMatchObject({ temperature: 0, responseFormat: { type: 'json', schema: { type: 'object' } } })
    expect(logged[1].config).not.toHaveProperty('responseFormat')
    expect(logged[1].config).not.toHaveProperty('temperature')
    expect(model.requests[1].config).not.toHaveProperty('responseFormat')
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('RQ-2: a turn option is merged over createAgent request options, provider options one level deep, and only for its turn', async () => {
    const model = scriptedModel([textResponse('a'), textResponse('b')])
    const agent = track(createAgent({ model, logger: quiet, request: { temperature: 0.7, providerOptions: { openai: { seed: 1, top_p: 0.9 } } } }))
    await agent.run('one', { request: { temperature: 0.1, providerOptions: { openai: { seed: 2 } } } })
    await agent.run('two')
    const [first, second] = headers(agent.session.events)
    expect(first.config).toMatchObject({ temperature: 0.1, providerOptions: { openai: { seed: 2, top_p: 0.9 } } })
    expect(second.config).toMatchObject({ temperature: 0.7, providerOptions: { openai: { seed: 1, top_p: 0.9 } } })
  })

  it('RQ-2: options on a followup queued behind a running turn apply to their own turn only', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const model = scriptedModel([async () => (await gate, textResponse('first')), textResponse('second'), textResponse('third')])
    const agent = track(createAgent({ model, logger: quiet }))
    const first = agent.run('one')
    await new Promise((resolve) => setImmediate(resolve))
    agent.followup('two', { request: { temperature: 0.2, stop: ['END'] } })
    const third = agent.run('three')
    release()
    await first
    expect(await third).toMatchObject({ turn: 3, text: 'third' })
    const logged = headers(agent.session.events)
    expect(logged.map((h) => h.turn)).toEqual([1, 2, 3])
    expect(logged[0].config).not.toHaveProperty('temperature')
    expect(logged[1].config).toMatchObject({ temperature: 0.2, stop: ['END'] })
    expect(logged[2].config).not.toHaveProperty('temperature')
    expect(logged[2].config).not.toHaveProperty('stop')
    expect(model.requests.map((r) => r.config.temperature)).toEqual([undefined, 0.2, undefined])
  })

  it('IN-5: a prompt discarded from the inbox takes its options with it: the same id queued again later runs without them', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const model = scriptedModel([async () => (await gate, textResponse('first')), textResponse('second')])
    const agent = track(createAgent({ model, logger: quiet }))
    const first = agent.run('one')
    await new Promise((resolve) => setImmediate(resolve))
    agent.followup(userMessage('two', { id: 'p2' }), { request: { temperature: 0.9 } })
    expect(agent.inbox.remove('p2')).toBe(true)
    agent.inbox.splice('next-turn', 0, 0, userMessage('two again', { id: 'p2' }))
    release()
    await first
    await agent.whenIdle()
    // the same config as turn 1's, so no new header is logged (RQ-4); the request shows it
    expect(model.requests.map((r) => r.config.temperature)).toEqual([undefined, undefined])
    expect(headers(agent.session.events).map((h) => h.turn)).toEqual([1])
  })

  it('RQ-2: an agent/request listener sees the turn options in its seed, and its switches in that turn end with it', async () => {
    const model = scriptedModel([textResponse('a'), textResponse('b')])
    const agent = track(createAgent({ model, logger: quiet }))
    const seen: unknown[] = []
    agent.on('agent/request', async ({ turn }, next) => {
      const seed = await next()
      seen.push(seed.temperature)
      return turn === 1 ? { ...seed, toolChoice: 'none' } : seed
    })
    await agent.run('one', { request: { temperature: 0.3 } })
    await agent.run('two')
    expect(seen).toEqual([0.3, undefined])
    const [first, second] = headers(agent.session.events)
    expect(first.config).toMatchObject({ temperature: 0.3, toolChoice: 'none' })
    expect(second.config).not.toHaveProperty('toolChoice')
  })
})

describe('per-turn maxSteps', () => {
  it('TU-16: maxSteps on a run overrides the agent limit for that turn; the next turn has the agent limit again', async () => {
    const model = scriptedModel([callEcho('a1'), callEcho('b1'), callEcho('b2'), textResponse('done')])
    const agent = track(createAgent({ model, tools: [echo], maxSteps: 5, logger: quiet }))
    const limited = await agent.run('go', { maxSteps: 1 })
    expect(limited).toMatchObject({ end: { kind: 'max-steps', limit: 1 }, steps: 1 })
    const free = await agent.run('again')
    expect(free).toMatchObject({ end: { kind: 'completed' }, steps: 3 })
    expect(turnEnds(agent.session.events)).toEqual([{ kind: 'max-steps', limit: 1 }, { kind: 'completed' }])
  })

  it('TU-16: maxSteps: Infinity lifts the agent limit for one turn', async () => {
    const model = scriptedModel([callEcho('a1'), callEcho('a2'), textResponse('done'), callEcho('b1'), callEcho('b2')])
    const agent = track(createAgent({ model, tools: [echo], maxSteps: 2, logger: quiet }))
    expect(await agent.run('go', { maxSteps: Infinity })).toMatchObject({ end: { kind: 'completed' }, steps: 3 })
    expect(await agent.run('again')).toMatchObject({ end: { kind: 'max-steps', limit: 2 }, steps: 2 })
  })
})

describe('per-turn signal', () => {
  it('CX-1: aborting the signal of a run cancels that turn, with the cause from the signal', async () => {
    const model = scriptedModel([hang, textResponse('next')])
    const agent = track(createAgent({ model, logger: quiet }))
    const controller = new AbortController()
    const run = agent.run('go', { signal: controller.signal })
    const later = agent.run('then this')
    await new Promise((resolve) => setImmediate(resolve))
    controller.abort({ kind: 'hook', reason: 'the caller went away' })
    expect(await run).toMatchObject({ turn: 1, end: { kind: 'aborted', reason: { kind: 'hook', reason: 'the caller went away' } } })
    // only that turn: the queued run stays queued (parked after an aborted turn, PH-5) and runs on the next waking send
    expect(await later).toMatchObject({ turn: null, end: { kind: 'parked' } })
    expect(agent.inbox.nextTurn.map((m) => m.content)).toEqual([[{ type: 'text', text: 'then this' }]])
  })

  it('CX-1: a signal whose reason is not a cancel cause cancels as the user; aborting after the turn ended does nothing', async () => {
    const model = scriptedModel([hang, textResponse('b')])
    const agent = track(createAgent({ model, logger: quiet }))
    const controller = new AbortController()
    const run = agent.run('go', { signal: controller.signal })
    await new Promise((resolve) => setImmediate(resolve))
    controller.abort()
    expect(await run).toMatchObject({ end: { kind: 'aborted', reason: { kind: 'user' } } })
    const done = new AbortController()
    expect(await agent.run('b', { signal: done.signal })).toMatchObject({ end: { kind: 'completed' } })
    done.abort()
    expect(agent.status).toBe('idle')
    expect(turnEnds(agent.session.events)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }, { kind: 'completed' }])
  })

  it('CX-1: a signal whose reason throws when read, or is the disposed cause, cancels that turn as the user; the agent serves on', async () => {
    const reasons = [
      {
        get kind(): string {
          throw new Error('boom')
        },
      },
      new Proxy(
        {},
        {
          get: () => {
            throw new Error('trap')
          },
        },
      ),
      { kind: 'disposed' },
    ]
    const model = scriptedModel([...reasons.map(() => hang), textResponse('still here')])
    const agent = track(createAgent({ model, logger: quiet }))
    for (const reason of reasons) {
      const controller = new AbortController()
      const run = agent.run('go', { signal: controller.signal })
      await new Promise((resolve) => setImmediate(resolve))
      controller.abort(reason)
      expect(await run).toMatchObject({ end: { kind: 'aborted', reason: { kind: 'user' } } })
    }
    await expect(agent.run('and now')).resolves.toMatchObject({ end: { kind: 'completed' } })
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('CX-1: cancel({ kind: "disposed" }) is disposal: the turn ends aborted with that cause and the agent is disposed, not left unable to run', async () => {
    const model = scriptedModel([hang])
    const agent = createAgent({ model, logger: quiet })
    const run = agent.run('go')
    await new Promise((resolve) => setImmediate(resolve))
    agent.cancel({ kind: 'disposed' })
    expect(await run).toMatchObject({ end: { kind: 'aborted', reason: { kind: 'disposed' } } })
    await agent.dispose()
    await expect(async () => agent.run('again')).rejects.toMatchObject({ code: 'AGENT_DISPOSED' })
  })

  it('IN-5: aborting the signal of a followup still queued discards it; the running turn goes on', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const model = scriptedModel([async () => (await gate, textResponse('first')), textResponse('unused')])
    const agent = track(createAgent({ model, logger: quiet }))
    const first = agent.run('one')
    await new Promise((resolve) => setImmediate(resolve))
    const controller = new AbortController()
    const queued = agent.run('two', { signal: controller.signal })
    controller.abort()
    expect(await queued).toMatchObject({ turn: null, end: { kind: 'discarded' } })
    release()
    expect(await first).toMatchObject({ end: { kind: 'completed' }, text: 'first' })
    await agent.whenIdle()
    expect(model.requests).toHaveLength(1)
  })
})

describe('per-turn options are checked', () => {
  it('RQ-3: bad options throw a ConfigError naming the option, and nothing is queued', () => {
    const agent = track(createAgent({ model: scriptedModel([]), logger: quiet }))
    const cases: Array<[unknown, string]> = [
      [{ maxSteps: 0 }, 'options.maxSteps'],
      [{ request: { provider: 'x' } }, 'options.request'],
      [{ request: { temperature: 'hot' } }, 'options.request.temperature'],
      [{ signal: 'stop' }, 'options.signal'],
      [{ temprature: 1 }, 'options.temprature'],
      ['fast', 'options'],
      [{ signal: AbortSignal.abort() }, 'options.signal'],
    ]
    for (const [options, path] of cases) {
      expect(() => agent.followup('x', options as never), JSON.stringify(options)).toThrow(expect.objectContaining({ name: 'ConfigError', path }))
    }
    expect(agent.inbox.nextTurn).toEqual([])
    expect(agent.session.events).toEqual([])
  })

  it('IN-1: a steer joins the running turn and takes no options: passing some throws a ConfigError', () => {
    const agent = track(createAgent({ model: scriptedModel([]), logger: quiet }))
    expect(() => agent.steer('x', { maxSteps: 1 } as never)).toThrow(ConfigError)
    expect(() => agent.steer('x', { maxSteps: 1 } as never)).toThrow(/steer takes no options/)
    expect(agent.inbox.nextStep).toEqual([])
  })
})

// TU — Turn: numbering, the zero-step exits, turn-stopping, sticky max-tokens,
// failures after turn/start, and balanced boundaries on every exit path.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, createSession, DEFAULT_MAX_STEPS, defineTool, LlmError, userMessage, type Agent } from '../../src/index.js'
import { checkSessionInvariants, errorResponse, hang, maxTokensResponse, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { record, refuseAppends, scriptedAgent, tick, trace, turnEnds } from '../helpers.js'

const lookup = defineTool({ name: 'lookup', description: 'look something up', input: z.object({}), execute: () => 'found it' })

describe('TU — Turn', () => {
  it('TU-1: the first turn is numbered after the highest turn/start of the log; later turns add exactly 1', async () => {
    const { agent } = scriptedAgent([textResponse('a'), textResponse('b')])
    agent.followup('one')
    agent.followup('two')
    await agent.whenIdle()
    expect(agent.session.events.filter((e) => e.type === 'turn/start').map((e) => e.data)).toEqual([{ turn: 1 }, { turn: 2 }])

    // a new instance over that history (a seeded session) continues at 3, then 4
    const session = createSession({ seed: agent.session.events })
    const { agent: resumed } = scriptedAgent([textResponse('c'), textResponse('d')], { session })
    resumed.followup('three')
    await resumed.whenIdle()
    resumed.followup('four')
    await resumed.whenIdle()
    const live = resumed.session.events.slice(resumed.session.seedLength)
    expect(live.filter((e) => e.type === 'turn/start').map((e) => e.data)).toEqual([{ turn: 3 }, { turn: 4 }])
    expect(live.filter((e) => e.type === 'turn/end').map((e) => e.data.turn)).toEqual([3, 4])
  })

  it('TU-2: a one-step text turn logs the full sequence and fires the live events in order', async () => {
    const { agent, model } = scriptedAgent([textResponse('hello')])
    const live: string[] = []
    const logAtClaim: string[][] = []
    agent.on('agent/inbox/inserted', () => void live.push('inserted'))
    agent.on('agent/status', (p) => void live.push(`status:${p.status}`))
    agent.on('agent/inbox/claimed', (p) => {
      live.push(`claimed{${p.turn}}`)
      logAtClaim.push(trace(agent))
    })
    agent.on('agent/pre-step', (p, next) => {
      live.push(`pre-step{${p.turn},${p.step}}`)
      return next()
    })
    agent.on('agent/request', (p, next) => {
      live.push(`request{${p.turn},${p.step}}`)
      return next()
    })
    agent.on('agent/turn-stopping', (p) => void live.push(`turn-stopping{${p.turn}}`))

    agent.followup(userMessage('hi'))
    await agent.whenIdle()

    expect(trace(agent, { chunks: true })).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(hi)',
      'request/header',
      'request/context',
      ...textResponse('hello').map(() => 'assistant/chunk'),
      'assistant/message',
      'step/end{1,1}',
      'turn/end{1,completed}',
    ])
    expect(live).toEqual(['inserted', 'status:running', 'claimed{1}', 'pre-step{1,1}', 'request{1,1}', 'turn-stopping{1}', 'status:idle'])
    // turn/start precedes the claim, and the claim splice precedes its notification
    expect(logAtClaim).toEqual([['spliced(next-turn +1)', 'turn/start{1}', 'spliced(next-turn -1)']])
    expect(model.requests).toHaveLength(1)
  })

  it('TU-3: cancelled from the agent/status{running} listener, no turn/start is written and the driver goes idle', async () => {
    const { agent, model } = scriptedAgent([textResponse('later')])
    const statuses = record(agent, ['agent/status'])
    let cancels = 1
    agent.on('agent/status', (p) => {
      if (p.status === 'running' && cancels-- > 0) agent.cancel({ kind: 'user' }, { keepInbox: true })
    })
    const prompt = userMessage('parked')
    agent.followup(prompt)
    await agent.whenIdle()

    expect(trace(agent)).toEqual(['spliced(next-turn +1)'])
    expect(agent.status).toBe('idle')
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual([prompt.id])
    expect(model.requests).toHaveLength(0)

    // nothing was consumed: the next activity opens turn 1 with the parked prompt
    agent.followup('next')
    await agent.whenIdle()
    expect(agent.session.events.filter((e) => e.type === 'turn/start').map((e) => e.data.turn)).toEqual([1, 2])
    expect(trace(agent).filter((t) => t.startsWith('user/message'))).toEqual(['user/message(parked)', 'user/message(next)'])
  })

  it('TU-3: without keepInbox the same cancel discards the woken prompt, still with no turn', async () => {
    const { agent } = scriptedAgent([])
    agent.on('agent/status', (p) => {
      if (p.status === 'running') agent.cancel()
    })
    agent.followup('dropped')
    await agent.whenIdle()
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'spliced(next-turn -1 canceled)'])
    expect(agent.inbox.hasPending).toBe(false)
  })

  it('TU-4: a failed turn/start claims nothing, reports agent/error, goes idle and does not retry', async () => {
    const { agent, model } = scriptedAgent([textResponse('a'), textResponse('b')])
    const failure = new Error('store unavailable')
    const errors: Array<{ turn: number; step: number; error: unknown }> = []
    agent.on('agent/error', ({ turn, step, error }) => void errors.push({ turn, step, error }))
    const live = record(agent, ['agent/status', 'agent/inbox/claimed'])
    const store = refuseAppends(agent, 'turn/start', failure)

    const context = userMessage('context')
    const prompt = userMessage('prompt')
    agent.inject(context)
    expect(() => agent.followup(prompt)).not.toThrow()
    await agent.whenIdle()

    expect(trace(agent)).toEqual(['spliced(next-step +1)', 'spliced(next-turn +1)'])
    expect(store.refused).toEqual(['turn/start'])
    expect(errors).toEqual([{ turn: 1, step: 0, error: failure }])
    expect(live).toEqual(['agent/status:running', 'agent/status:idle'])
    expect(agent.inbox.nextStep.map((m) => m.id)).toEqual([context.id])
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual([prompt.id])
    expect(model.requests).toHaveLength(0)
    await tick(5)
    expect(store.refused).toEqual(['turn/start'])

    // the queue survived intact: once the store works, a waking send drains it from turn 1
    store.restore()
    agent.followup('after')
    await agent.whenIdle()
    expect(trace(agent).filter((t) => t.startsWith('turn/') || t.startsWith('user/'))).toEqual([
      'turn/start{1}',
      'user/message(context)',
      'user/message(prompt)',
      'turn/end{1,completed}',
      'turn/start{2}',
      'user/message(after)',
      'turn/end{2,completed}',
    ])
  })

  it('TU-5: a rejected first proposal closes the turn blocked with no step; later input stays parked', async () => {
    const { agent, model } = scriptedAgent([])
    const statuses = record(agent, ['agent/status'])
    const late = userMessage('late steer')
    agent.on('agent/pre-step', () => {
      agent.steer(late) // inserted after the claim
      return { kind: 'reject' }
    })
    const first = userMessage('first')
    const second = userMessage('second')
    agent.followup(first)
    agent.followup(second)
    await agent.whenIdle()

    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'spliced(next-turn +1)',
      'spliced(next-step +1)',
      'turn/end{1,blocked}',
    ])
    expect(model.requests).toHaveLength(0)
    expect(agent.session.events.some((e) => e.type === 'user/message')).toBe(false)
    // the claimed prompt is consumed; the later prompt and the late steer stay parked
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual([second.id])
    expect(agent.inbox.nextStep.map((m) => m.id)).toEqual([late.id])
    expect(agent.status).toBe('idle')
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
  })

  it('TU-6: a rejected later proposal also ends the turn blocked, right after the last step/end', async () => {
    const { agent, model } = scriptedAgent([textResponse('one')])
    let steered = false
    agent.on('agent/turn-stopping', () => {
      if (!steered) agent.steer('more')
      steered = true
    })
    agent.on('agent/pre-step', (p, next) => (p.step === 2 ? { kind: 'reject' } : next()))
    agent.followup('go')
    await agent.whenIdle()

    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(go)',
      'request/header',
      'request/context',
      'assistant/message',
      'step/end{1,1}',
      'spliced(next-step +1)',
      'spliced(next-step -1)',
      'turn/end{1,blocked}',
    ])
    expect(model.requests).toHaveLength(1)
  })

  it('TU-7: the woken prompt removed before the claim gives a zero-step completed turn with no model call', async () => {
    const { agent, model } = scriptedAgent([])
    const proposals: unknown[] = []
    const prompt = userMessage('removed')
    agent.on('agent/status', (p) => {
      if (p.status === 'running') agent.inbox.remove(prompt.id)
    })
    agent.on('agent/pre-step', (p, next) => {
      proposals.push(p.messages)
      return next()
    })
    agent.followup(prompt)
    await agent.whenIdle()

    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'spliced(next-turn -1 canceled)', 'turn/start{1}', 'turn/end{1,completed}'])
    expect(proposals).toEqual([[]])
    expect(model.requests).toHaveLength(0)
  })

  it('TU-7: a batch rewritten to empty completes with no step, and (Decision 5) the driver goes on to pending work', async () => {
    const { agent, model } = scriptedAgent([textResponse('answer two')])
    const statuses = record(agent, ['agent/status'])
    agent.on('agent/pre-step', (p, next) => (p.turn === 1 ? { kind: 'enter', messages: [] } : next()))
    agent.followup('one')
    agent.followup('two')
    await agent.whenIdle()

    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'spliced(next-turn +1)',
      'turn/end{1,completed}',
      'turn/start{2}',
      'spliced(next-turn -1)',
      'step/start{2,1}',
      'user/message(two)',
      'request/header',
      'request/context',
      'assistant/message',
      'step/end{2,1}',
      'turn/end{2,completed}',
    ])
    expect(model.requests).toHaveLength(1)
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
  })

  it.each([
    { name: 'completed', first: textResponse('one'), end: 'completed' },
    { name: 'max-tokens', first: maxTokensResponse('cut'), end: 'max-tokens' },
  ])('TU-8: after a terminal $name step, an empty proposal ends the turn $end without a step or another turn-stopping', async ({ first, end }) => {
    const { agent, model } = scriptedAgent([first])
    let stopping = 0
    agent.on('agent/turn-stopping', () => {
      stopping++
      if (stopping === 1) agent.steer('dropped by pre-step')
    })
    agent.on('agent/pre-step', (p, next) => (p.step === 2 ? { kind: 'enter', messages: [] } : next()))
    agent.followup('go')
    await agent.whenIdle()

    expect(trace(agent).slice(-4)).toEqual(['step/end{1,1}', 'spliced(next-step +1)', 'spliced(next-step -1)', `turn/end{1,${end}}`])
    expect(agent.session.events.filter((e) => e.type === 'step/start')).toHaveLength(1)
    expect(stopping).toBe(1)
    expect(model.requests).toHaveLength(1)
  })

  it('TU-9: after a tool step that did not conclude, the next step is entered even with an empty batch', async () => {
    const { agent, model } = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]), textResponse('done')], {
      tools: [lookup],
    })
    const proposals: Array<{ step: number; messages: number }> = []
    agent.on('agent/pre-step', (p, next) => {
      proposals.push({ step: p.step, messages: p.messages.length })
      return next()
    })
    agent.followup('look it up')
    await agent.whenIdle()

    expect(proposals).toEqual([
      { step: 1, messages: 1 },
      { step: 2, messages: 0 },
    ])
    expect(trace(agent).slice(-4)).toEqual(['step/start{1,2}', 'assistant/message', 'step/end{1,2}', 'turn/end{1,completed}'])
    expect(model.requests).toHaveLength(2)
    // the second request is the unchanged history plus the assistant message and the tool result
    const [first, second] = model.requests
    expect(second.messages.slice(0, first.messages.length)).toEqual(first.messages)
    expect(second.messages.slice(first.messages.length).map((m) => m.role)).toEqual(['assistant', 'user'])
    expect(second.messages.at(-1)!.content).toEqual([{ type: 'tool-result', toolCallId: 'c1', content: 'found it', isError: false }])
  })

  it('TU-10: after a terminal step turn-stopping is awaited, then input it staged runs another step of the same turn', async () => {
    const { agent, model } = scriptedAgent([textResponse('one'), textResponse('two')])
    const calls: Array<{ turn: number; signal: boolean; logTail: string }> = []
    let preStepSignal: AbortSignal | undefined
    agent.on('agent/pre-step', (p, next) => {
      preStepSignal ??= p.signal
      return next()
    })
    agent.on('agent/turn-stopping', async (p) => {
      calls.push({ turn: p.turn, signal: p.signal === preStepSignal && p.signal instanceof AbortSignal, logTail: trace(agent).at(-1)! })
      await tick(2) // awaited: input staged after this wait still extends the turn
      if (calls.length === 1) agent.inject('staged after a wait')
    })
    agent.followup('go')
    await agent.whenIdle()

    expect(calls).toEqual([
      { turn: 1, signal: true, logTail: 'step/end{1,1}' },
      { turn: 1, signal: true, logTail: 'step/end{1,2}' },
    ])
    expect(trace(agent).filter((t) => t.startsWith('turn/') || t.startsWith('step/'))).toEqual([
      'turn/start{1}',
      'step/start{1,1}',
      'step/end{1,1}',
      'step/start{1,2}',
      'step/end{1,2}',
      'turn/end{1,completed}',
    ])
    expect(model.requests).toHaveLength(2)
    expect(trace(agent)).toContain('user/message(staged after a wait)')
  })

  it('TU-10: when next-step is already non-empty at the end of a terminal step, turn-stopping is skipped', async () => {
    const { agent, model } = scriptedAgent([
      () => {
        agent.steer('steered while streaming')
        return textResponse('one')
      },
      textResponse('two'),
    ])
    const stopping: string[] = []
    agent.on('agent/turn-stopping', () => void stopping.push(trace(agent).at(-1)!))
    agent.followup('go')
    await agent.whenIdle()

    expect(stopping).toEqual(['step/end{1,2}'])
    expect(model.requests).toHaveLength(2)
    expect(trace(agent).filter((t) => t.startsWith('turn/'))).toEqual(['turn/start{1}', 'turn/end{1,completed}'])
  })

  it('TU-11: turn-stopping runs after every terminal step, so steering until k steps ran gives exactly k requests', async () => {
    const k = 3
    const { agent, model } = scriptedAgent([textResponse('1'), textResponse('2'), textResponse('3'), textResponse('extra')])
    let stopping = 0
    agent.on('agent/turn-stopping', () => {
      stopping++
      const steps = agent.session.events.filter((e) => e.type === 'step/start').length
      if (steps < k) agent.steer(`again ${steps}`)
    })
    agent.followup('go')
    await agent.whenIdle()

    expect(model.requests).toHaveLength(k)
    expect(stopping).toBe(k)
    expect(agent.session.events.filter((e) => e.type === 'turn/start')).toHaveLength(1)
    expect(turnEnds(agent)).toEqual([{ kind: 'completed' }])
  })

  it('TU-12: max-tokens is sticky within a turn and does not carry into the next turn', async () => {
    const { agent } = scriptedAgent([maxTokensResponse('cut'), textResponse('fine'), textResponse('next turn')])
    let steered = false
    agent.on('agent/turn-stopping', (p) => {
      if (p.turn === 1 && !steered) agent.steer('continue')
      steered = true
    })
    agent.followup('one')
    agent.followup('two')
    await agent.whenIdle()

    expect(trace(agent).filter((t) => t.startsWith('turn/') || t.startsWith('step/start'))).toEqual([
      'turn/start{1}',
      'step/start{1,1}',
      'step/start{1,2}',
      'turn/end{1,max-tokens}',
      'turn/start{2}',
      'step/start{2,1}',
      'turn/end{2,completed}',
    ])
  })

  it('TU-12 (Decision 4): a tool step after max-tokens is still followed by another step; the turn ends max-tokens', async () => {
    const { agent, model } = scriptedAgent(
      [maxTokensResponse('cut'), toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]), textResponse('used the tool')],
      { tools: [lookup] },
    )
    let stopping = 0
    agent.on('agent/turn-stopping', () => {
      if (stopping++ === 0) agent.steer('go on')
    })
    agent.followup('go')
    await agent.whenIdle()

    expect(model.requests).toHaveLength(3)
    expect(model.requests[2].messages.at(-1)!.content).toEqual([{ type: 'tool-result', toolCallId: 'c1', content: 'found it', isError: false }])
    expect(stopping).toBe(2)
    expect(trace(agent).filter((t) => t.startsWith('step/start') || t.startsWith('turn/end'))).toEqual([
      'step/start{1,1}',
      'step/start{1,2}',
      'step/start{1,3}',
      'turn/end{1,max-tokens}',
    ])
  })

  it('TU-13: turn/end{error} carries the facts of a harness LLM error verbatim', async () => {
    const facts = { message: 'slow down', code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 1500, requestId: 'req-7' }
    const { agent } = scriptedAgent([errorResponse(facts)], { retry: false })
    agent.followup('go')
    await agent.whenIdle()
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error: facts }])

    const thrown = scriptedAgent([]).agent
    thrown.on('agent/pre-step', () => {
      throw new LlmError(facts)
    })
    thrown.followup('go')
    await thrown.whenIdle()
    expect(turnEnds(thrown)).toEqual([{ kind: 'error', error: facts }])
  })

  it.each([
    { name: 'an Error with a cause chain', thrown: new Error('outer', { cause: new Error('inner', { cause: 'root' }) }), message: 'outer: inner: root' },
    { name: 'a non-Error with a string message', thrown: { message: 'plain facts' }, message: 'plain facts' },
    { name: 'a plain object without message', thrown: { reason: 'x' }, message: '[object Object]' },
    { name: 'a string', thrown: 'just a string', message: 'just a string' },
  ])('TU-13: any other throw ($name) becomes {message, code:UNKNOWN}', async ({ thrown, message }) => {
    const { agent } = scriptedAgent([])
    agent.on('agent/pre-step', () => {
      throw thrown
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(turnEnds(agent)).toEqual([{ kind: 'error', error: { message, code: 'UNKNOWN' } }])
  })

  const boom = () => new Error('boom')
  it.each([
    {
      name: 'a throwing agent/pre-step listener',
      script: [],
      setup: (a: Agent) => a.on('agent/pre-step', () => Promise.reject(boom())),
      stepped: false,
    },
    {
      name: 'a throwing agent/request listener',
      script: [],
      setup: (a: Agent) =>
        a.on('agent/request', () => {
          throw boom()
        }),
      stepped: true,
    },
    {
      name: 'a throwing agent/turn-stopping listener',
      script: [textResponse('fine')],
      setup: (a: Agent) =>
        a.on('agent/turn-stopping', () => {
          throw boom()
        }),
      stepped: true,
    },
    {
      name: 'a throwing agent/request-error listener',
      script: [errorResponse({ message: 'down', code: 'SERVER' })],
      setup: (a: Agent) =>
        a.on('agent/request-error', () => {
          throw boom()
        }),
      stepped: true,
    },
    {
      name: 'a missing route',
      script: [textResponse('never')],
      setup: (a: Agent) => a.on('agent/request', async (_p, next) => ({ ...(await next()), provider: '' })),
      stepped: true,
    },
    { name: 'a terminal model failure', script: [errorResponse({ message: 'down', code: 'SERVER' })], setup: () => {}, stepped: true },
    { name: 'a failed step/start append', script: [textResponse('never')], setup: (a: Agent) => refuseAppends(a, 'step/start'), stepped: false },
    {
      name: 'a tool-scheduler failure (a refused tool/call append)',
      script: [toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]), textResponse('never')],
      setup: (a: Agent) => refuseAppends(a, 'tool/call'),
      stepped: true,
      tools: [lookup],
    },
  ])('TU-14: $name after turn/start ends the turn error', async ({ script, setup, stepped, tools }) => {
    const { agent } = scriptedAgent(script, { tools: tools ?? [] })
    const timeline: string[] = []
    agent.on('agent/error', (p) => void timeline.push(`agent/error{${p.turn},${p.step}}`))
    agent.on('session/event', ({ event }) => {
      if (event.type === 'turn/end' || event.type === 'step/end') timeline.push(event.type)
    })
    setup(agent)
    agent.followup('go')
    await agent.whenIdle()

    const ends = turnEnds(agent)
    expect(ends).toHaveLength(1)
    expect(ends[0].kind).toBe('error')
    expect(agent.status).toBe('idle')
    expect(agent.session.events.some((e) => e.type === 'step/start')).toBe(stepped)
    // agent/error (Decision 7: the proposed or open step, 1 here) comes before turn/end
    expect(timeline).toEqual(stepped ? ['step/end', 'agent/error{1,1}', 'turn/end'] : ['agent/error{1,1}', 'turn/end'])
  })

  it('TU-14 (Decision 7): a pre-step failure at a later proposal reports the proposed step to agent/error', async () => {
    const { agent, model } = scriptedAgent([textResponse('one')])
    const errors: string[] = []
    agent.on('agent/error', (p) => void errors.push(`${p.turn}.${p.step}`))
    agent.on('agent/turn-stopping', () => {
      if (errors.length === 0 && agent.session.events.filter((e) => e.type === 'step/start').length === 1) agent.steer('more')
    })
    agent.on('agent/pre-step', (p, next) => {
      if (p.step === 2) throw new Error('second proposal failed')
      return next()
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(errors).toEqual(['1.2'])
    expect(model.requests).toHaveLength(1)
    expect(trace(agent).slice(-4)).toEqual(['step/end{1,1}', 'spliced(next-step +1)', 'spliced(next-step -1)', 'turn/end{1,error}'])
  })

  it.each([
    { name: 'success', script: [textResponse('ok')], act: () => {}, end: 'completed' },
    { name: 'block', script: [], act: (a: Agent) => a.on('agent/pre-step', () => ({ kind: 'reject' })), end: 'blocked' },
    { name: 'error', script: [errorResponse({ message: 'down', code: 'SERVER' })], act: () => {}, end: 'error' },
    {
      name: 'cancellation',
      script: [hang],
      act: (a: Agent) =>
        a.on('session/event', ({ event }) => {
          if (event.type === 'request/context') queueMicrotask(() => a.cancel())
        }),
      end: 'aborted',
    },
    {
      name: 'disposal',
      script: [hang],
      act: (a: Agent) =>
        a.on('session/event', ({ event }) => {
          if (event.type === 'request/context') queueMicrotask(() => void a.dispose())
        }),
      end: 'aborted',
    },
  ])('TU-15: every turn/start gets one turn/end and every step/start a step/end before it ($name)', async ({ script, act, end }) => {
    const { agent } = scriptedAgent(script)
    act(agent)
    agent.followup('go')
    await agent.whenIdle()
    const bounds = trace(agent).filter((t) => /^(turn|step)\//.test(t))
    const opened = bounds.includes('step/start{1,1}')
    expect(bounds).toEqual(['turn/start{1}', ...(opened ? ['step/start{1,1}', 'step/end{1,1}'] : []), `turn/end{1,${end}}`])
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('TU-15: a refused turn/end goes to agent/error, is not retried, and the driver still goes idle', async () => {
    const model = scriptedModel([textResponse('ok')])
    // not tracked: this log legitimately ends inside turn 1
    const agent = createAgent({ model, logger: { error: () => {} } })
    const failure = new Error('disk full')
    const errors: Array<{ turn: number; step: number; error: unknown }> = []
    agent.on('agent/error', ({ turn, step, error }) => void errors.push({ turn, step, error }))
    const statuses = record(agent, ['agent/status'])
    const store = refuseAppends(agent, 'turn/end', failure)
    agent.followup('go')
    await agent.whenIdle()
    await tick(5)

    expect(store.refused).toEqual(['turn/end'])
    expect(errors).toEqual([{ turn: 1, step: 1, error: failure }])
    expect(agent.status).toBe('idle')
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
    expect(trace(agent).slice(-2)).toEqual(['assistant/message', 'step/end{1,1}'])
    expect(checkSessionInvariants(agent.session.events).map((v) => v.rule)).toEqual(['balanced'])
    await agent.dispose()
  })
})

describe('TU-16 — the step limit (maxSteps, Decision 9)', () => {
  const calls = (n: number) => Array.from({ length: n }, (_, i) => toolCallResponse([{ id: `c${i + 1}`, name: 'lookup', arguments: '{}' }]))
  const steps = (agent: Agent) => trace(agent).filter((t) => t.startsWith('turn/') || t.startsWith('step/'))

  it('TU-16: the step that reaches maxSteps closes with its tool results; the turn then ends max-steps naming the limit', async () => {
    const { agent, model } = scriptedAgent([...calls(5), textResponse('never asked')], { tools: [lookup], maxSteps: 3 })
    agent.followup('go')
    await agent.whenIdle()
    expect(steps(agent)).toEqual([
      'turn/start{1}',
      'step/start{1,1}',
      'step/end{1,1}',
      'step/start{1,2}',
      'step/end{1,2}',
      'step/start{1,3}',
      'step/end{1,3}',
      'turn/end{1,max-steps}',
    ])
    expect(turnEnds(agent)).toEqual([{ kind: 'max-steps', limit: 3 }])
    expect(model.requests).toHaveLength(3)
    // the last step's call ran and its result is logged before step/end
    expect(trace(agent).slice(-4)).toEqual(['tool/call(c3)', 'tool/result(c3)', 'step/end{1,3}', 'turn/end{1,max-steps}'])
    expect(agent.status).toBe('idle')
  })

  it('TU-16: a turn that finishes within the limit is unaffected, also when its last allowed step ends it', async () => {
    const { agent } = scriptedAgent([...calls(1), textResponse('done')], { tools: [lookup], maxSteps: 2 })
    agent.followup('go')
    await agent.whenIdle()
    expect(turnEnds(agent)).toEqual([{ kind: 'completed' }])
  })

  it('TU-16: input staged by turn-stopping after the last allowed step does not open another step; the next turn takes it', async () => {
    const { agent, model } = scriptedAgent([textResponse('one'), textResponse('two')], { maxSteps: 1 })
    let once = true
    agent.on('agent/turn-stopping', () => {
      if (once) agent.steer('more please')
      once = false
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(steps(agent)).toEqual([
      'turn/start{1}',
      'step/start{1,1}',
      'step/end{1,1}',
      'turn/end{1,max-steps}',
      'turn/start{2}',
      'step/start{2,1}',
      'step/end{2,1}',
      'turn/end{2,completed}',
    ])
    expect(turnEnds(agent)[0]).toEqual({ kind: 'max-steps', limit: 1 })
    expect(model.requests).toHaveLength(2)
    expect(trace(agent)).toContain('user/message(more please)')
  })

  it('TU-16: the limit counts per turn; the next turn starts from step 1 again', async () => {
    const { agent } = scriptedAgent([...calls(2), ...calls(1), textResponse('done')], { tools: [lookup], maxSteps: 2 })
    agent.followup('first')
    agent.followup('second')
    await agent.whenIdle()
    expect(turnEnds(agent)).toEqual([{ kind: 'max-steps', limit: 2 }, { kind: 'completed' }])
  })

  it.each([
    ['zero', 0],
    ['a negative number', -1],
    ['a fraction', 2.5],
    ['NaN', Number.NaN],
    ['-Infinity', -Infinity],
    ['a string', '10'],
  ])('TU-16: maxSteps %s is refused with a typed error naming the option', (_name, value) => {
    let thrown: unknown
    try {
      createAgent({ model: scriptedModel([]), maxSteps: value as number })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toMatchObject({ name: 'ConfigError', code: 'INVALID_CONFIG', path: 'maxSteps' })
    expect((thrown as Error).message).toMatch(/maxSteps must be a positive safe integer or Infinity/)
  })

  it('TU-16: maxSteps Infinity means no limit, and the default is DEFAULT_MAX_STEPS (100)', async () => {
    expect(DEFAULT_MAX_STEPS).toBe(100)
    const { agent } = scriptedAgent([...calls(3), textResponse('done')], { tools: [lookup], maxSteps: Infinity })
    agent.followup('go')
    await agent.whenIdle()
    expect(turnEnds(agent)).toEqual([{ kind: 'completed' }])
  })
})

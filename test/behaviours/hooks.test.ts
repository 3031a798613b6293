// HK — extension points and failure containment: waterfalls, serial
// turn-stopping, contained notifications, and which listener failures end a
// turn `error` and which never do. Only the public API is used.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createSession,
  defineTool,
  LlmError,
  userMessage,
  type Agent,
  type ModelAdapter,
  type SessionEvent,
  type StreamChunk,
  type TurnEndReason,
} from '../../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, record, scriptedAgent, tick, trace } from '../helpers.js'

// ---- local plumbing -----------------------------------------------------------

const ends = (agent: Agent): TurnEndReason[] =>
  agent.session.events.filter((e): e is Extract<SessionEvent, { type: 'turn/end' }> => e.type === 'turn/end').map((e) => e.data.reason)

/** A logger that keeps what the agent contained. */
function logger() {
  const messages: string[] = []
  const errors: unknown[] = []
  return { messages, errors, error: (message: string, error: unknown) => void (messages.push(message), errors.push(error)) }
}

/** Record agent/error notifications as {turn, step, error}. */
function agentErrors(agent: Agent) {
  const seen: Array<{ turn: number; step: number; error: unknown }> = []
  agent.on('agent/error', ({ turn, step, error }) => void seen.push({ turn, step, error }))
  return seen
}

/** Texts of the messages a model request carried. */
const texts = (messages: readonly { content: readonly { type: string; text?: string }[] }[]) =>
  messages.map((m) => m.content.map((b) => b.text ?? b.type).join(''))

// ---- HK-1: waterfalls ------------------------------------------------------------

describe('HK-1: waterfall listeners', () => {
  it('HK-1: a pre-step listener that returns without next() short-circuits the rest, and its decision is authoritative', async () => {
    const { agent, model } = scriptedAgent([textResponse('ok')])
    const later: string[] = []
    agent.on('agent/pre-step', ({ messages }) => {
      const prompt = messages.find((m) => m.id === 'prompt')!
      return {
        kind: 'enter',
        messages: [
          { ...prompt, content: [{ type: 'text', text: 'rewritten prompt' }] },
          userMessage('added by a plugin', { id: 'added', source: { kind: 'plugin', plugin: 'test' } }),
        ],
      }
    })
    agent.on('agent/pre-step', (_p, next) => {
      later.push('second listener')
      return next()
    })
    agent.inject(userMessage('dropped context', { id: 'ctx' }))
    agent.followup(userMessage('original prompt', { id: 'prompt' }))
    await agent.whenIdle()
    expect(later).toEqual([])
    const entered = ofType(agent, 'user/message').map((e) => e.data)
    expect(entered.map((m) => m.id)).toEqual(['prompt', 'added'])
    expect(entered[0].content).toEqual([{ type: 'text', text: 'rewritten prompt' }])
    expect(entered[1].source).toEqual({ kind: 'plugin', plugin: 'test' })
    expect(texts(model.requests[0].messages)).toEqual(['rewritten prompt', 'added by a plugin'])
    expect(agent.inbox.hasPending).toBe(false)
  })

  it('HK-1: next() yields what the rest of the chain decides, down to the default (the claimed batch)', async () => {
    const { agent, model } = scriptedAgent([textResponse('ok')])
    const seen: unknown[] = []
    agent.on('agent/pre-step', async (p, next) => {
      const decision = await next()
      seen.push(decision)
      return decision.kind === 'reject' ? { kind: 'enter', messages: p.messages } : decision
    })
    agent.on('agent/pre-step', async (_p, next) => {
      seen.push(await next())
      return { kind: 'reject' }
    })
    agent.followup(userMessage('hi', { id: 'hi' }))
    await agent.whenIdle()
    expect(seen).toHaveLength(2)
    expect(seen[0]).toMatchObject({ kind: 'enter', messages: [{ id: 'hi' }] })
    expect(seen[1]).toEqual({ kind: 'reject' })
    // the first listener's value is authoritative: the step ran
    expect(ends(agent)).toEqual([{ kind: 'completed' }])
    expect(model.requests).toHaveLength(1)
  })

  it('HK-1: an agent/request listener replaces the config; listeners after it never run', async () => {
    const { agent, model } = scriptedAgent([textResponse('ok')])
    const later: string[] = []
    agent.on('agent/request', ({ turn, step }) => ({ provider: 'scripted', model: `switched-${turn}-${step}`, temperature: 0.25 }))
    agent.on('agent/request', (_p, next) => {
      later.push('second listener')
      return next()
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(later).toEqual([])
    const config = { provider: 'scripted', model: 'switched-1-1', temperature: 0.25 }
    expect(model.requests[0].config).toEqual(config)
    expect(ofType(agent, 'request/header')[0].data.header.config).toEqual(config)
    expect(ofType(agent, 'request/context')[0].data).toMatchObject({ provider: 'scripted', model: 'switched-1-1' })
  })
})

// ---- HK-2: turn-stopping is serial ------------------------------------------------

describe('HK-2: agent/turn-stopping listeners', () => {
  it('HK-2: are awaited one after another and their return values are ignored', async () => {
    const { agent } = scriptedAgent([textResponse('ok')])
    const order: string[] = []
    agent.on('agent/turn-stopping', async () => {
      order.push('first start')
      await tick(5)
      order.push('first end')
      return { kind: 'reject' } as never
    })
    agent.on('agent/turn-stopping', () => {
      order.push('second')
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(order).toEqual(['first start', 'first end', 'second'])
    expect(ends(agent)).toEqual([{ kind: 'completed' }])
  })

  it('HK-2: they act only through data, so their order cannot change the outcome', async () => {
    const run = async (steerFirst: boolean) => {
      const { agent, model } = scriptedAgent([textResponse('one'), textResponse('two')])
      let steered = false
      const steer = () => {
        if (steered) return
        steered = true
        agent.steer('keep going')
      }
      const idle = async () => {
        await tick()
      }
      if (steerFirst) {
        agent.on('agent/turn-stopping', steer)
        agent.on('agent/turn-stopping', idle)
      } else {
        agent.on('agent/turn-stopping', idle)
        agent.on('agent/turn-stopping', steer)
      }
      agent.followup('hi')
      await agent.whenIdle()
      return { log: trace(agent), requests: model.requests.length }
    }
    const a = await run(true)
    const b = await run(false)
    expect(a).toEqual(b)
    expect(a.requests).toBe(2)
    expect(a.log.filter((e) => e.startsWith('turn/'))).toEqual(['turn/start{1}', 'turn/end{1,completed}'])
  })
})

// ---- HK-3: notifications are contained ---------------------------------------------

describe('HK-3: notification listeners', () => {
  it('HK-3: every listener runs; throws and rejections are logged, contained, and veto nothing', async () => {
    const log = logger()
    const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({}), execute: () => 'echoed' })
    const { agent, model } = scriptedAgent([toolCallResponse([{ id: 'e1', name: 'echo', arguments: '{}' }]), textResponse('done')], {
      tools: [echo],
      logger: log,
    })
    const names = [
      'agent/session-start',
      'agent/status',
      'agent/inbox/inserted',
      'agent/inbox/claimed',
      'agent/inbox/discarded',
      'agent/error',
      'session/event',
      'tools/result',
    ] as const
    const reached = new Map<string, number>()
    for (const name of names) {
      agent.on(name, (() => {
        throw new Error(`${name} threw`)
      }) as never)
      agent.on(name, (async () => {
        throw new Error(`${name} rejected`)
      }) as never)
      agent.on(name, (() => void reached.set(name, (reached.get(name) ?? 0) + 1)) as never)
    }
    agent.inject(userMessage('withdrawn', { id: 'w' }))
    expect(agent.inbox.remove('w')).toBe(true)
    agent.followup('hi')
    await agent.whenIdle()
    // a second turn fails (the script is exhausted) so agent/error fires
    agent.followup('again')
    await agent.whenIdle()
    await tick()
    for (const name of names) expect(reached.get(name), name).toBeGreaterThan(0)
    for (const name of names) {
      expect(log.messages.filter((m) => m.includes(name) && m.includes('threw')).length, `${name} threw`).toBeGreaterThan(0)
      expect(log.messages.filter((m) => m.includes(name) && m.includes('rejected')).length, `${name} rejected`).toBeGreaterThan(0)
    }
    // nothing was vetoed: inserts, claims and the tool result all happened
    expect(trace(agent)).toEqual([
      'spliced(next-step +1)',
      'spliced(next-step -1 canceled)',
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(hi)',
      'request/header',
      'request/context',
      'assistant/message',
      'tool/call(e1)',
      'tool/result(e1)',
      'step/end{1,1}',
      'step/start{1,2}',
      'assistant/message',
      'step/end{1,2}',
      'turn/end{1,completed}',
      'spliced(next-turn +1)',
      'turn/start{2}',
      'spliced(next-turn -1)',
      'step/start{2,1}',
      'user/message(again)',
      'step/end{2,1}',
      'turn/end{2,error}',
    ])
    expect(ofType(agent, 'tool/result')[0].data.message.content[0]).toMatchObject({ content: 'echoed', isError: false })
    expect(model.requests).toHaveLength(3)
  })
})

// ---- HK-4 .. HK-6: failures that end a turn `error` ----------------------------------

describe('HK-4: a throwing agent/pre-step listener', () => {
  it('HK-4: ends the turn error with no step or model call, fires agent/error, loses the batch, parks the rest', async () => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    const seen = agentErrors(agent)
    const statuses = record(agent, ['agent/status'])
    const thrown = new Error('pre-step exploded')
    agent.on('agent/pre-step', async () => {
      await tick()
      agent.inject(userMessage('meanwhile', { id: 'meanwhile' }))
      throw thrown
    })
    agent.followup(userMessage('a', { id: 'a' }))
    agent.followup(userMessage('b', { id: 'b' }))
    await agent.whenIdle()
    await tick(5)
    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'spliced(next-turn +1)',
      'spliced(next-step +1)',
      'turn/end{1,error}',
    ])
    expect(ends(agent)).toEqual([{ kind: 'error', error: { message: 'pre-step exploded', code: 'UNKNOWN' } }])
    expect(seen).toEqual([{ turn: 1, step: 1, error: thrown }])
    expect(model.requests).toEqual([])
    expect(ofType(agent, 'user/message')).toEqual([])
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual(['b'])
    expect(agent.inbox.nextStep.map((m) => m.id)).toEqual(['meanwhile'])
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
  })
})

describe('HK-5: throwing agent/request or agent/turn-stopping listeners', () => {
  it('HK-5: agent/request: step/end then turn/end{error}, never offered to request recovery; a harness code is kept', async () => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    const seen = agentErrors(agent)
    const recovery: unknown[] = []
    agent.on('agent/request-error', (p) => void recovery.push(p.failure))
    const thrown = new LlmError({ message: 'quota gone', code: 'QUOTA', status: 429, requestId: 'r-1' })
    agent.on('agent/request', () => {
      throw thrown
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(trace(agent).slice(-4)).toEqual(['step/start{1,1}', 'user/message(hi)', 'step/end{1,1}', 'turn/end{1,error}'])
    expect(ends(agent)).toEqual([{ kind: 'error', error: { message: 'quota gone', code: 'QUOTA', status: 429, requestId: 'r-1' } }])
    expect(recovery).toEqual([])
    expect(seen).toEqual([{ turn: 1, step: 1, error: thrown }])
    expect(model.requests).toEqual([])
  })

  it('HK-5: agent/request: any other throw becomes UNKNOWN', async () => {
    const { agent } = scriptedAgent([textResponse('never')])
    agent.on('agent/request', async () => {
      throw new TypeError('bad listener')
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(ends(agent)).toEqual([{ kind: 'error', error: { message: 'bad listener', code: 'UNKNOWN' } }])
  })

  it('HK-5: agent/turn-stopping: the turn ends error after its step closed, without request recovery', async () => {
    const { agent, model } = scriptedAgent([textResponse('answer')])
    const seen = agentErrors(agent)
    const recovery: unknown[] = []
    agent.on('agent/request-error', (p) => void recovery.push(p.failure))
    agent.on('agent/turn-stopping', () => {
      throw new Error('stopping failed')
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(trace(agent).slice(-3)).toEqual(['assistant/message', 'step/end{1,1}', 'turn/end{1,error}'])
    expect(ends(agent)).toEqual([{ kind: 'error', error: { message: 'stopping failed', code: 'UNKNOWN' } }])
    expect(recovery).toEqual([])
    expect(seen).toHaveLength(1)
    expect(model.requests).toHaveLength(1)
  })
})

describe('HK-6: adapter throws versus refused chunks', () => {
  it('HK-6: a throw inside the adapter becomes a terminal failure finish and goes through request recovery', async () => {
    const throwing: ModelAdapter = {
      provider: 'broken',
      model: 'broken-1',
      stream: () => {
        throw new LlmError({ message: 'connection reset', code: 'TRANSPORT' })
      },
    }
    const iterThrows: ModelAdapter = {
      provider: 'broken',
      model: 'broken-2',
      stream: () =>
        (async function* (): AsyncGenerator<StreamChunk> {
          yield { type: 'block-start', index: 0, blockType: 'text' }
          throw new Error('socket closed')
        })(),
    }
    const expected = [
      { message: 'connection reset', code: 'TRANSPORT' },
      { message: 'socket closed', code: 'UNKNOWN' },
    ]
    for (const [k, model] of [throwing, iterThrows].entries()) {
      const { agent } = scriptedAgent([], { model })
      const recovery: unknown[] = []
      agent.on('agent/request-error', (p) => {
        recovery.push(p.failure)
        return undefined
      })
      agent.followup('hi')
      await agent.whenIdle()
      expect(recovery).toEqual([expected[k]])
      expect(ends(agent)).toEqual([{ kind: 'error', error: expected[k] }])
      expect(ofType(agent, 'assistant/message')).toEqual([])
    }
  })

  it('HK-6: a chunk the log refuses ends the turn error directly, without request recovery', async () => {
    // the store refuses the first chunk (a malformed chunk is the adapter's failure instead: it goes to recovery, ST-6)
    const { agent } = scriptedAgent([textResponse('never')])
    agent.session.failNextAppend('assistant/chunk')
    const seen = agentErrors(agent)
    const recovery: unknown[] = []
    agent.on('agent/request-error', (p) => void recovery.push(p.failure))
    agent.followup('hi')
    await agent.whenIdle()
    expect(recovery).toEqual([])
    expect(ofType(agent, 'assistant/chunk')).toEqual([])
    expect(trace(agent).slice(-3)).toEqual(['request/context', 'step/end{1,1}', 'turn/end{1,error}'])
    expect(seen).toHaveLength(1)
  })
})

// ---- HK-7 .. HK-11: failures that never end a turn, and the loop surviving them ------

describe('HK-7: throwing session/event observers on boundaries', () => {
  it('HK-7: change nothing: the turn proceeds balanced, keeps its outcome, and no agent/error fires', async () => {
    const log = logger()
    const { agent } = scriptedAgent([textResponse('ok')], { logger: log })
    const seen = agentErrors(agent)
    const boundaries = new Set(['turn/start', 'step/start', 'step/end', 'turn/end'])
    agent.on('session/event', ({ event }) => {
      if (boundaries.has(event.type)) throw new Error(`observer failed on ${event.type}`)
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(hi)',
      'request/header',
      'request/context',
      'assistant/message',
      'step/end{1,1}',
      'turn/end{1,completed}',
    ])
    expect(seen).toEqual([])
    expect(log.errors.map((e) => (e as Error).message)).toEqual([
      'observer failed on turn/start',
      'observer failed on step/start',
      'observer failed on step/end',
      'observer failed on turn/end',
    ])
  })
})

describe('HK-8: throwing agent/status and agent/error listeners', () => {
  it('HK-8: do not stop the turn from closing balanced, nor block disposal, nor leak registrations', async () => {
    const { agent } = scriptedAgent([textResponse('never')])
    const statuses = record(agent, ['agent/status'])
    agent.on('agent/status', () => {
      throw new Error('status listener')
    })
    agent.on('agent/error', () => {
      throw new Error('error listener')
    })
    let observed = 0
    agent.on('session/event', () => void observed++)
    agent.on('agent/pre-step', () => {
      throw new Error('pre-step')
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'turn/start{1}', 'spliced(next-turn -1)', 'turn/end{1,error}'])
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
    await agent.dispose()
    expect(agent.actor.getSnapshot().value).toBe('disposed')
    // the agent's observer is gone from the session it owned
    const before = observed
    agent.session.append('turn/start', { turn: 2 })
    agent.session.append('turn/end', { turn: 2, reason: { kind: 'completed' } })
    expect(observed).toBe(before)
  })

  it('HK-8: disposal during a turn with throwing status listeners still ends it aborted and balanced', async () => {
    const { agent, model } = scriptedAgent(['hang'])
    const statuses = record(agent, ['agent/status'])
    agent.on('agent/status', () => {
      throw new Error('status listener')
    })
    agent.followup('hi')
    while (model.requests.length === 0) await tick()
    await agent.dispose()
    expect(trace(agent).slice(-2)).toEqual(['step/end{1,1}', 'turn/end{1,aborted}'])
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
  })
})

describe('HK-9: tool pipeline listener failures', () => {
  it('HK-9: a throwing pre- or post-execute listener becomes that call’s error result; the turn continues', async () => {
    const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({}), execute: () => 'echoed' })
    const calls = [
      { id: 'pre', name: 'echo', arguments: '{}' },
      { id: 'post', name: 'echo', arguments: '{}' },
    ]
    const { agent, model } = scriptedAgent([toolCallResponse(calls), textResponse('done')], { tools: [echo] })
    const seen = agentErrors(agent)
    agent.on('tools/pre-execute', ({ callId }, next) => {
      if (callId === 'pre') throw new Error('pre-execute listener failed')
      return next()
    })
    agent.on('tools/post-execute', async ({ callId }, next) => {
      if (callId === 'post') throw new Error('post-execute listener failed')
      return next()
    })
    agent.followup('hi')
    await agent.whenIdle()
    const results = ofType(agent, 'tool/result').map((e) => e.data.message.content[0])
    expect(results).toEqual([
      { type: 'tool-result', toolCallId: 'pre', content: 'Error: pre-execute listener failed', isError: true },
      { type: 'tool-result', toolCallId: 'post', content: 'Error: post-execute listener failed', isError: true },
    ])
    expect(ends(agent)).toEqual([{ kind: 'completed' }])
    expect(seen).toEqual([])
    expect(model.requests).toHaveLength(2)
  })
})

describe('HK-10: the loop survives contained failures', () => {
  it('HK-10: after a turn that ended error, and after one that ended blocked, the next waking send runs normally', async () => {
    const { agent, model } = scriptedAgent([textResponse('after error'), textResponse('after blocked')])
    let call = 0
    agent.on('agent/pre-step', (_p, next) => {
      call++
      if (call === 1) throw new Error('once')
      if (call === 3) return { kind: 'reject' }
      return next()
    })
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    agent.followup('three')
    await agent.whenIdle()
    agent.followup('four')
    await agent.whenIdle()
    expect(ends(agent).map((r) => r.kind)).toEqual(['error', 'completed', 'blocked', 'completed'])
    expect(texts(model.requests[1].messages).slice(-1)).toEqual(['four'])
    expect(agent.status).toBe('idle')
  })
})

describe('HK-11: agent/session-start', () => {
  it('HK-11: fires once with startup, after the agent is published and before any turn', async () => {
    const { agent } = scriptedAgent([textResponse('ok'), textResponse('ok')])
    const fired: Array<{ source: string; same: boolean; logLength: number }> = []
    agent.on('agent/session-start', (p) => void fired.push({ source: p.source, same: p.agent === agent, logLength: agent.session.length }))
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    expect(fired).toEqual([{ source: 'startup', same: true, logLength: 0 }])
  })

  it('HK-11: a throwing listener cannot veto creation, and context injected from it is in the first request', async () => {
    const { agent, model } = scriptedAgent([textResponse('ok')])
    agent.on('agent/session-start', () => {
      throw new Error('cannot veto')
    })
    agent.on('agent/session-start', ({ agent: a }) => a.inject(userMessage('startup context', { id: 'ctx' })))
    agent.followup(userMessage('prompt', { id: 'prompt' }))
    await agent.whenIdle()
    expect(texts(model.requests[0].messages)).toEqual(['startup context', 'prompt'])
    expect(ends(agent)).toEqual([{ kind: 'completed' }])
  })

  it('HK-11: fires with startup when nothing is sent, once the agent exists', async () => {
    const { agent } = scriptedAgent([])
    const fired: string[] = []
    agent.on('agent/session-start', (p) => void fired.push(p.source))
    expect(fired).toEqual([])
    await tick()
    expect(fired).toEqual(['startup'])
    expect(agent.session.events).toEqual([])
  })

  it('HK-11: an agent over a stored log fires resume, once', async () => {
    const first = scriptedAgent([textResponse('first life')]).agent
    first.followup('hi')
    await first.whenIdle()
    const session = createSession({ id: first.id, seed: first.session.events })
    const model = scriptedModel([textResponse('second life')])
    const { agent } = scriptedAgent([], { model, session })
    const fired: string[] = []
    agent.on('agent/session-start', (p) => void fired.push(p.source))
    agent.on('agent/session-start', ({ agent: a }) => a.inject(userMessage('resumed context', { id: 'resumed' })))
    await tick()
    agent.followup('again')
    await agent.whenIdle()
    expect(fired).toEqual(['resume'])
    expect(texts(model.requests[0].messages).slice(-2)).toEqual(['resumed context', 'again'])
    expect(ofType(agent, 'turn/start').map((e) => e.data.turn)).toEqual([1, 2])
  })
})

// Issue #8: every value a tool, hook, listener, adapter or stored log hands
// the agent is foreign. Each test below reproduces one way such a value used
// to wedge an agent (stuck running, log left open, cancel/dispose never
// settling) or corrupt its log, and asserts the rule instead: the agent comes
// back to idle, the log is sound, and the next turn runs.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { map } from 'rxjs'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, createSession, defineTool, userMessage, type Agent, type AgentOptions, type ModelAdapter, type StreamChunk } from '../../src/index.js'
import { checkSessionInvariants, hang, scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { ofType, tick, turnEnds } from '../helpers.js'

// ---- plumbing -------------------------------------------------------------------

const quiet = { error: () => {} }

/** Unhandled rejections and uncaught exceptions seen while a test runs. */
let escaped: unknown[] = []
const onEscape = (error: unknown) => void escaped.push(error)
beforeEach(() => {
  escaped = []
  process.on('unhandledRejection', onEscape)
})
afterEach(() => {
  process.off('unhandledRejection', onEscape)
})

/** Resolves true when the agent is idle (whenIdle settled) within `ms`, false when it is wedged. */
async function settles(agent: Agent, ms = 1500): Promise<boolean> {
  const idle = await Promise.race([agent.whenIdle().then(() => true), tick(ms).then(() => false)])
  return idle && agent.status === 'idle'
}

/** The agent recovered: idle, a sound log, nothing escaped, and a plain followup still completes. */
async function expectRecovered(agent: Agent, model: { remaining: number } | null = null) {
  expect(await settles(agent), 'the agent came back to idle').toBe(true)
  expect(checkSessionInvariants(agent.session.events)).toEqual([])
  expect(escaped).toEqual([])
  if (model && model.remaining > 0) {
    agent.followup('still there?')
    expect(await settles(agent), 'a later turn runs').toBe(true)
    expect(turnEnds(agent).at(-1)).toEqual({ kind: 'completed' })
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  }
}

/** A revoked proxy: every property read throws. */
function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  return proxy
}

/** An object whose message/name/code getters throw. */
const throwingGetters = () =>
  Object.defineProperties(
    {},
    {
      message: {
        get: () => {
          throw new Error('message getter')
        },
        enumerable: true,
      },
      name: {
        get: () => {
          throw new Error('name getter')
        },
        enumerable: true,
      },
      code: {
        get: () => {
          throw new Error('code getter')
        },
        enumerable: true,
      },
    },
  )

const cyclic = () => {
  const o: Record<string, unknown> = { a: 1 }
  o.self = o
  return o
}

/** A value String() cannot convert. */
const unstringifiable = () => ({
  toString: () => {
    throw new Error('no string for you')
  },
  [Symbol.toPrimitive]: () => {
    throw new Error('no primitive')
  },
})

function toolAgent(body: () => unknown, extra: ScriptEntry[] = []) {
  const tool = defineTool({ name: 't', description: 'hostile', input: z.object({}).loose(), execute: body as never })
  const model = scriptedModel([
    toolCallResponse([{ id: 'c1', name: 't', arguments: '{}' }]),
    textResponse('after the tool'),
    ...extra,
    textResponse('next turn'),
  ])
  const agent = createAgent({ model, tools: [tool], logger: quiet })
  return { agent, model }
}

const resultOf = (agent: Agent, callId: string) => ofType(agent, 'tool/result').find((e) => e.data.message.source.callId === callId)

// ---- 1. hostile thrown values ------------------------------------------------------

describe('#8.1 a tool that throws a hostile value ends as an error result', () => {
  const cases: Array<[string, () => unknown]> = [
    ['a null-prototype object', () => Object.create(null)],
    ['an object whose message/name/code getters throw', throwingGetters],
    ['a revoked proxy', revoked],
    ['a cyclic object', cyclic],
    ['a BigInt', () => 10n],
    ['a symbol', () => Symbol('boom')],
  ]
  for (const [label, make] of cases) {
    it(`TL-9: ${label}`, async () => {
      const { agent, model } = toolAgent(() => {
        throw make()
      })
      agent.followup('go')
      await expectRecovered(agent, model)
      const result = resultOf(agent, 'c1')!
      expect(result.data.message.content[0].isError).toBe(true)
      expect(turnEnds(agent)[0]).toEqual({ kind: 'completed' })
    })
  }

  it('TL-9: a tool that resolves a hostile value (not a string or {content}) ends as an error result', async () => {
    const { agent, model } = toolAgent(() => revoked())
    agent.followup('go')
    await expectRecovered(agent, model)
    expect(resultOf(agent, 'c1')!.data.message.content[0].isError).toBe(true)
  })

  it('TL-9: a body whose isError or concludesTurn is not a boolean ends as an error result that names the field', async () => {
    for (const [key, value] of [
      ['isError', 'yes'],
      ['concludesTurn', 1],
    ] as const) {
      const { agent, model } = toolAgent(() => ({ content: 'done', [key]: value }))
      agent.followup('go')
      await expectRecovered(agent, model)
      const block = resultOf(agent, 'c1')!.data.message.content[0]
      expect(block).toMatchObject({ isError: true, content: expect.stringContaining(`tool t returned ${key} ${JSON.stringify(value)}, not a boolean`) })
    }
  })

  it('TL-10: a tools/execute listener that passes on an error that is not { name, code } ends as an error result naming it; one read once is logged as read', async () => {
    const { agent, model } = toolAgent(
      () => 'fine',
      [textResponse('again'), toolCallResponse([{ id: 'c2', name: 't', arguments: '{}' }]), textResponse('after')],
    )
    let reads = 0
    const shifty = {
      get name() {
        return ++reads === 1 ? 'Refused' : ''
      },
      code: 'NOPE',
    }
    const errors = [{ name: '', code: 'X' }, shifty]
    agent.on('tools/execute', async (_execution, next) => ({ ...(await next()), isError: true, content: 'no', error: errors.shift() }))
    agent.followup('go')
    await expectRecovered(agent, model)
    const first = resultOf(agent, 'c1')!.data
    expect(first.message.content[0]).toMatchObject({
      isError: true,
      content: expect.stringMatching(/tools\/execute for t answered an error that is not \{ name, code \} at error\.name/),
    })
    expect(first.error).toBeUndefined()
    agent.followup('once more')
    await expectRecovered(agent)
    expect(resultOf(agent, 'c2')!.data.error).toEqual({ name: 'Refused', code: 'NOPE' })
    expect(() => createSession({ seed: agent.session.events })).not.toThrow()
  })
})

// ---- 2. hook results that cannot be serialised --------------------------------------

describe('#8.2 a hook result that cannot be serialised never stops the machine', () => {
  const post: Array<[string, () => unknown]> = [
    ['accept with a BigInt value', () => ({ kind: 'accept', value: 10n })],
    ['accept with a cyclic value', () => ({ kind: 'accept', value: cyclic() })],
    ['block with unstringifiable feedback', () => ({ kind: 'block', feedback: unstringifiable() })],
    ['a revoked proxy', revoked],
    [
      'an object whose kind getter throws',
      () =>
        Object.defineProperty({}, 'kind', {
          get: () => {
            throw new Error('kind getter')
          },
        }),
    ],
  ]
  for (const [label, make] of post) {
    it(`HK-9: tools/post-execute returns ${label}: the call ends as an error result`, async () => {
      const { agent, model } = toolAgent(() => 'fine')
      agent.on('tools/post-execute', () => make() as never)
      agent.followup('go')
      await expectRecovered(agent, model)
      expect(resultOf(agent, 'c1')!.data.message.content[0].isError).toBe(true)
    })
  }

  it('HK-9: tools/pre-execute denies with an unstringifiable reason: the call ends as an error result', async () => {
    const { agent, model } = toolAgent(() => 'fine')
    agent.on('tools/pre-execute', () => ({ kind: 'deny', reason: unstringifiable() }) as never)
    agent.followup('go')
    await expectRecovered(agent, model)
    expect(resultOf(agent, 'c1')!.data.message.content[0].isError).toBe(true)
  })

  it('RQ-13: an agent/request-error result whose kind getter throws ends the turn error', async () => {
    const model = scriptedModel([[{ type: 'finish', reason: { kind: 'error', failure: { message: 'down', code: 'SERVER' } } }], textResponse('next')])
    const agent = createAgent({ model, logger: quiet, retry: false } as AgentOptions)
    agent.on(
      'agent/request-error',
      () =>
        Object.defineProperty({}, 'kind', {
          get: () => {
            throw new Error('kind getter')
          },
        }) as never,
    )
    agent.followup('go')
    await expectRecovered(agent, model)
    expect(turnEnds(agent)[0].kind).toBe('error')
  })

  it('HK-4: agent/pre-step returns a revoked proxy: the turn ends error', async () => {
    const model = scriptedModel([textResponse('next')])
    const agent = createAgent({ model, logger: quiet })
    let first = true
    agent.on('agent/pre-step', (p, next) => {
      if (!first) return next()
      first = false
      return revoked() as never
    })
    agent.followup('go')
    await expectRecovered(agent, model)
    expect(turnEnds(agent)[0].kind).toBe('error')
  })
})

// ---- 3. and 4. malformed chunks ----------------------------------------------------------

/** A model whose first response is the given raw chunks (unchecked), then plain text. */
function rawModel(chunks: unknown[]): ModelAdapter & { remaining: number } {
  return scriptedModel([chunks as StreamChunk[], textResponse('next turn')])
}

describe('#8.3/#8.4 chunks are validated in full before they are logged', () => {
  const bad: Array<[string, unknown[]]> = [
    [
      'a block-end tool-call with no name',
      [
        { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c1', arguments: '{}' } },
        { type: 'finish', reason: { kind: 'tool-calls' } },
      ],
    ],
    [
      'a block-end tool-call with no arguments',
      [
        { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c1', name: 't' } },
        { type: 'finish', reason: { kind: 'tool-calls' } },
      ],
    ],
    [
      'a block-end tool-call with numeric arguments',
      [
        { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c1', name: 't', arguments: 42 } },
        { type: 'finish', reason: { kind: 'tool-calls' } },
      ],
    ],
    [
      'a text-delta without text',
      [
        { type: 'text-delta', index: 0 },
        { type: 'finish', reason: { kind: 'stop' } },
      ],
    ],
    ['a finish with no reason', [{ type: 'text-delta', index: 0, text: 'hi' }, { type: 'finish' }]],
    [
      'a finish with an unknown kind',
      [
        { type: 'text-delta', index: 0, text: 'hi' },
        { type: 'finish', reason: { kind: 'done' } },
      ],
    ],
    [
      'a chunk with extra keys',
      [
        { type: 'text-delta', index: 0, text: 'hi', extra: true },
        { type: 'finish', reason: { kind: 'stop' } },
      ],
    ],
    [
      'a negative index',
      [
        { type: 'text-delta', index: -1, text: 'hi' },
        { type: 'finish', reason: { kind: 'stop' } },
      ],
    ],
    [
      'a tool-call-delta without argumentsDelta',
      [
        { type: 'tool-call-delta', index: 0, id: 'c1', name: 't' },
        { type: 'finish', reason: { kind: 'tool-calls' } },
      ],
    ],
    ['a chunk that is not an object', ['hello', { type: 'finish', reason: { kind: 'stop' } }]],
  ]
  for (const [label, chunks] of bad) {
    it(`ST-6: ${label} ends the attempt MALFORMED_RESPONSE and every logged chunk is well-formed`, async () => {
      const model = rawModel(chunks)
      const agent = createAgent({ model, logger: quiet, retry: false } as AgentOptions)
      agent.followup('go')
      await expectRecovered(agent, model)
      const end = turnEnds(agent)[0]
      expect(end.kind).toBe('error')
      expect((end as { error: { code: string } }).error.code).toMatch(/^(MALFORMED_RESPONSE|INVALID_RESPONSE)$/)
      expect(ofType(agent, 'tool/call')).toEqual([])
    })
  }
})

// ---- 5. an invalid failure inside a finish ---------------------------------------------------

describe('#8.5 a finish{error} with an invalid failure still closes the turn', () => {
  it('TU-15: message "" is normalised and turn/end is written', async () => {
    const model = rawModel([{ type: 'finish', reason: { kind: 'error', failure: { message: '', code: '' } } }])
    const agent = createAgent({ model, logger: quiet, retry: false } as AgentOptions)
    agent.followup('go')
    await expectRecovered(agent, model)
    expect(turnEnds(agent)).toHaveLength(2)
    expect(turnEnds(agent)[0].kind).toBe('error')
  })
})

// ---- 6. duplicate call ids ------------------------------------------------------------------------

describe('#8.6 duplicate tool-call ids in one step', () => {
  it('TL-8: each call runs once and each result answers its own call; the next request has distinct ids', async () => {
    const runs: string[] = []
    const tool = defineTool({
      name: 't',
      description: 'records',
      input: z.object({ n: z.number() }),
      executionMode: 'parallel',
      execute: ({ n }) => {
        runs.push(String(n))
        return `ran ${n}`
      },
    })
    const model = scriptedModel([
      toolCallResponse([
        { id: 'dup', name: 't', arguments: '{"n":1}' },
        { id: 'dup', name: 't', arguments: '{"n":2}' },
      ]),
      textResponse('done'),
    ])
    const agent = createAgent({ model, tools: [tool], logger: quiet })
    agent.followup('go')
    await expectRecovered(agent)
    expect(runs.sort()).toEqual(['1', '2'])
    const calls = ofType(agent, 'tool/call').map((e) => e.data.callId)
    expect(new Set(calls).size).toBe(2)
    const results = ofType(agent, 'tool/result').map((e) => e.data.message.source.callId)
    expect(results).toEqual(calls)
    const second = model.requests[1].messages
    const ids = second.flatMap((m) => m.content.flatMap((b) => (b.type === 'tool-call' ? [b.id] : b.type === 'tool-result' ? [b.toolCallId] : [])))
    expect(new Set(ids).size).toBe(2)
  })
})

// ---- 7. whenIdle and turns started by listeners ----------------------------------------------------

describe('#8.7 whenIdle() resolves only when no turn is open', () => {
  it('PH-7: a followup sent from a turn/end listener after a cancel is waited for', async () => {
    const model = scriptedModel([hang, textResponse('second')])
    const agent = createAgent({ model, logger: quiet })
    let once = true
    agent.on('session/event', ({ event }) => {
      if (event.type === 'turn/end' && once) {
        once = false
        queueMicrotask(() => agent.followup('from the listener'))
      }
    })
    agent.followup('first')
    await tick()
    agent.cancel()
    await agent.whenIdle()
    expect(agent.status).toBe('idle')
    const starts = ofType(agent, 'turn/start').length
    expect(ofType(agent, 'turn/end').length).toBe(starts)
  })

  it('PH-7: a followup sent from an agent/status idle listener after a cancel is waited for', async () => {
    const model = scriptedModel([hang, textResponse('second')])
    const agent = createAgent({ model, logger: quiet })
    let once = true
    agent.on('agent/status', ({ status }) => {
      if (status === 'idle' && once) {
        once = false
        agent.followup('from the listener')
      }
    })
    agent.followup('first')
    await tick()
    agent.cancel()
    await agent.whenIdle()
    expect(agent.status).toBe('idle')
    expect(ofType(agent, 'turn/end').length).toBe(ofType(agent, 'turn/start').length)
  })
})

// ---- 8. runaway models -----------------------------------------------------------------------------

describe('#8.8 a model that always calls a synchronous tool', () => {
  const forever = (): ModelAdapter => {
    let n = 0
    return scriptedModel(Array.from({ length: 1000 }, () => () => toolCallResponse([{ id: `k${++n}`, name: 'sync', arguments: '{}' }])))
  }
  const sync = defineTool({ name: 'sync', description: 'instant', input: z.object({}).loose(), execute: () => 'ok' })

  it('CX-16: a timer-driven cancel still fires: the turn yields to the event loop between steps', async () => {
    const agent = createAgent({ model: forever(), tools: [sync], logger: quiet, maxSteps: Infinity } as AgentOptions)
    setTimeout(() => agent.cancel(), 50)
    agent.followup('go')
    expect(await settles(agent, 3000)).toBe(true)
    expect(turnEnds(agent)[0]).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('TU-16: maxSteps (default 100) ends the turn with its own reason', async () => {
    const agent = createAgent({ model: forever(), tools: [sync], logger: quiet })
    agent.followup('go')
    expect(await settles(agent, 10_000)).toBe(true)
    expect(ofType(agent, 'step/start')).toHaveLength(100)
    expect(turnEnds(agent)[0]).toEqual({ kind: 'max-steps', limit: 100 })
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })
})

// ---- 9. tools that never settle -------------------------------------------------------------------

describe('#8.9 an escape from a tool that never settles', () => {
  it('TL-15: a per-tool timeoutMs settles the call as an error result', async () => {
    const stuck = defineTool({
      name: 'stuck',
      description: 'never returns',
      input: z.object({}).loose(),
      timeoutMs: 30,
      execute: () => new Promise<string>(() => {}),
    } as never)
    const model = scriptedModel([toolCallResponse([{ id: 'c1', name: 'stuck', arguments: '{}' }]), textResponse('gave up on it')])
    const agent = createAgent({ model, tools: [stuck], logger: quiet })
    agent.followup('go')
    await expectRecovered(agent)
    const result = resultOf(agent, 'c1')!
    expect(result.data.message.content[0].isError).toBe(true)
    expect(turnEnds(agent)[0]).toEqual({ kind: 'completed' })
  })

  it('CX-17: dispose({ force: true }) abandons a body that ignores its signal and closes the log', async () => {
    const stuck = defineTool({ name: 'stuck', description: 'ignores its signal', input: z.object({}).loose(), execute: () => new Promise<string>(() => {}) })
    const model = scriptedModel([toolCallResponse([{ id: 'c1', name: 'stuck', arguments: '{}' }])])
    const agent = createAgent({ model, tools: [stuck], logger: quiet })
    agent.followup('go')
    await tick(20)
    const disposed = await Promise.race([(agent.dispose as (o: unknown) => Promise<void>)({ force: true }).then(() => true), tick(3000).then(() => false)])
    expect(disposed).toBe(true)
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
    expect(turnEnds(agent)[0]).toEqual({ kind: 'aborted', reason: { kind: 'disposed' } })
    expect(resultOf(agent, 'c1')!.data.message.content[0].isError).toBe(true)
  })
})

// ---- 10. events$ through operators ----------------------------------------------------------------

describe('#8.10 observers are contained whether they subscribe directly or through operators', () => {
  it('SS-11: a throwing events$.pipe(map(...)) subscriber never reaches the process', async () => {
    const uncaught: unknown[] = []
    const onUncaught = (error: unknown) => void uncaught.push(error)
    // vitest reports uncaught exceptions as errors of the run; listen first so this test can assert on them
    process.prependListener('uncaughtException', onUncaught)
    try {
      const model = scriptedModel([textResponse('hi'), textResponse('again')])
      const agent = createAgent({ model, logger: quiet })
      agent.session.events$
        .pipe(
          map((e) => {
            if (e.type === 'turn/start') throw new Error('operator threw')
            return e
          }),
        )
        .subscribe()
      agent.followup('go')
      await agent.whenIdle()
      await tick(10)
      expect(uncaught).toEqual([])
      await expectRecovered(agent, model)
    } finally {
      process.off('uncaughtException', onUncaught)
    }
  })
})

// ---- 12. secrets and validation messages ------------------------------------------------------------

describe('#8.12 secrets never reach the log; validation errors read as a sentence', () => {
  it('TU-13: an Authorization value echoed by a provider is redacted from turn/end', async () => {
    const model: ModelAdapter = {
      provider: 'p',
      model: 'm',
      async *stream() {
        throw Object.assign(
          new Error('401 Unauthorized: header was "Authorization: Bearer sk-proj-abcdef1234567890abcdef" and api_key=sk-live-0123456789abcdef0123'),
          { status: 401 },
        )
      },
    }
    const agent = createAgent({ model, logger: quiet, retry: false } as AgentOptions)
    agent.followup('go')
    await agent.whenIdle()
    const logged = JSON.stringify(agent.session.events)
    expect(logged).not.toMatch(/sk-proj-abcdef1234567890abcdef/)
    expect(logged).not.toMatch(/sk-live-0123456789abcdef0123/)
    expect(logged).toMatch(/redacted/i)
  })

  it('TU-13: the password of a URL echoed by a transport is redacted from turn/end', async () => {
    const model: ModelAdapter = {
      provider: 'p',
      model: 'm',
      async *stream() {
        throw new Error('GET https://user:hunter2@api.example.com/v1/chat failed with 401')
      },
    }
    const agent = createAgent({ model, logger: quiet, retry: false } as AgentOptions)
    agent.followup('go')
    await agent.whenIdle()
    const logged = JSON.stringify(agent.session.events)
    expect(logged).not.toMatch(/hunter2/)
    expect(logged).toContain('https://user:[redacted]@api.example.com/v1/chat')
  })

  it('TL-1: INVALID_ARGS reads as one sentence naming the path, not a JSON dump', async () => {
    const tool = defineTool({ name: 'add', description: 'adds', input: z.object({ a: z.number(), b: z.object({ c: z.string() }) }), execute: () => 'x' })
    const model = scriptedModel([toolCallResponse([{ id: 'c1', name: 'add', arguments: '{"a":"one","b":{"c":2}}' }]), textResponse('ok')])
    const agent = createAgent({ model, tools: [tool], logger: quiet })
    agent.followup('go')
    await expectRecovered(agent)
    const content = resultOf(agent, 'c1')!.data.message.content[0].content as string
    expect(content).not.toMatch(/[[{]\s*"/)
    expect(content).toMatch(/\ba\b/)
    expect(content).toMatch(/b\.c/)
    expect(content.split('\n')).toHaveLength(1)
  })
})

// ---- 13. agents never disposed ------------------------------------------------------------------------

describe('#8.13 agents that are never disposed', () => {
  it('RS-7: a dropped idle agent does not keep its session id registered forever', async () => {
    // collection needs --expose-gc: always measured in a child process that has it, never skipped
    const child = fileURLToPath(new URL('./registry-child.ts', import.meta.url))
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', child], { timeout: 60_000 })
    const { before, whileHeld, after } = JSON.parse(stdout) as { before: number; whileHeld: number; after: number }
    expect(whileHeld - before, 'held agents are registered').toBe(200)
    expect(after - before, 'dropped agents leave the registry').toBeLessThan(20)
  })
})

describe('#8.14 a value with getters is read once where it enters: what is checked is what is logged', () => {
  /** An object whose `key` reads `first`, then `later` on every read after. */
  const shifting = <T extends object>(base: T, key: string, first: unknown, later: unknown) => {
    let reads = 0
    return Object.defineProperty({ ...base }, key, { enumerable: true, get: () => (++reads === 1 ? first : later) })
  }

  it('IN-8: an inbox message whose content getter changes is logged as it was checked; the sender cannot change it after', async () => {
    const model = scriptedModel([textResponse('ok'), textResponse('again')])
    const agent = createAgent({ model, logger: quiet })
    const message = shifting({ id: 'm1', role: 'user', source: { kind: 'user' } }, 'content', [{ type: 'text', text: 'checked' }], 42)
    agent.followup(message as never)
    await expectRecovered(agent, model)
    const logged = ofType(agent, 'user/message').find((e) => e.data.id === 'm1')!.data
    expect(logged.content).toEqual([{ type: 'text', text: 'checked' }])
    expect(() => ((message as { id: string }).id = 'changed')).toThrow(TypeError)
    expect(() => createSession({ seed: agent.session.events })).not.toThrow()
  })

  it('RQ-2: an agent/request config whose field getter changes is logged and sent as it was checked', async () => {
    const model = scriptedModel([textResponse('ok'), textResponse('again')])
    const agent = createAgent({ model, logger: quiet })
    agent.on('agent/request', async (_context, next) => shifting(await next(), 'temperature', 0.5, 'hot'))
    agent.followup('go')
    await expectRecovered(agent, model)
    expect(ofType(agent, 'request/header')[0].data.header.config.temperature).toBe(0.5)
    expect(model.requests[0].config.temperature).toBe(0.5)
    expect(() => createSession({ seed: agent.session.events })).not.toThrow()
  })
  it('SS-11: an inbox edit from a session/event observer is refused like a send, so remove() never says true for a message that is then sent', async () => {
    const agent = createAgent({ model: scriptedModel([textResponse('x')]), logger: quiet })
    const refusals: unknown[] = []
    agent.on('session/event', ({ event }) => {
      if (event.type !== 'agent/inbox/spliced' || (event.data as { removedCount?: number }).removedCount !== 1) return
      for (const edit of [() => agent.inbox.remove('p'), () => agent.inbox.clear(), () => agent.inbox.splice('next-turn', 0, 1)]) {
        try {
          edit()
          refusals.push('accepted')
        } catch (error) {
          refusals.push((error as { code?: string }).code)
        }
      }
    })
    agent.followup(userMessage('the prompt', { id: 'p' }))
    await agent.whenIdle()
    expect(refusals).toEqual(['SESSION_APPEND_REFUSED', 'SESSION_APPEND_REFUSED', 'SESSION_APPEND_REFUSED'])
    // the claimed prompt went to the model, and nothing of the refused edits was logged
    expect(ofType(agent, 'agent/inbox/spliced')).toHaveLength(2)
    expect(turnEnds(agent)).toEqual([{ kind: 'completed' }])
    await agent.dispose()
  })
})

void userMessage

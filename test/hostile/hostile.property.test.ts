// Issue #8 item 10: hostile values at every extension point. fast-check picks a
// value (null prototypes, throwing getters, revoked proxies, BigInts, cycles,
// symbols, unstringifiable objects, malformed chunks) and a place to hand it to
// the agent (a tool body's result or throw, every hook's result or throw, the
// notification listeners, the adapter's chunks and throws, a seed), and each
// run must end with the agent idle, a log that keeps its rules, nothing
// escaping the process and no user message lost. Deep runs scale with
// AGENTCHART_PROPERTY_RUNS.
import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, createSession, defineTool, type Agent, type AgentOptions, type ModelAdapter, type StreamChunk } from '../../src/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { propertyRuns, tick } from '../helpers.js'

const quiet = { error: () => {} }

let escaped: unknown[] = []
const onEscape = (error: unknown) => void escaped.push(error)
beforeEach(() => {
  escaped = []
  process.on('unhandledRejection', onEscape)
})
afterEach(() => {
  process.off('unhandledRejection', onEscape)
})

// ---- hostile values ---------------------------------------------------------------

const thrower = (what: string) => () => {
  throw new Error(what)
}

/** Makers, not values: a revoked proxy or a cycle is built fresh for each use. */
const hostileMakers: Array<[string, () => unknown]> = [
  ['undefined', () => undefined],
  ['null', () => null],
  ['a null-prototype object', () => Object.create(null)],
  ['a BigInt', () => 10n],
  ['a symbol', () => Symbol('hostile')],
  ['a function', () => () => 'fn'],
  ['NaN', () => NaN],
  [
    'throwing getters',
    () =>
      Object.defineProperties(
        {},
        Object.fromEntries(['message', 'name', 'code', 'kind', 'content', 'type', 'then'].map((k) => [k, { get: thrower(`${k} getter`), enumerable: true }])),
      ),
  ],
  [
    'a revoked proxy',
    () => {
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      return proxy
    },
  ],
  [
    'a cycle',
    () => {
      const o: Record<string, unknown> = { kind: 'accept' }
      o.value = o
      return o
    },
  ],
  ['unstringifiable', () => ({ toString: thrower('toString'), [Symbol.toPrimitive]: thrower('toPrimitive') })],
  ['accept with a BigInt value', () => ({ kind: 'accept', value: 10n })],
  ['block with an object feedback', () => ({ kind: 'block', feedback: { toString: thrower('toString') } })],
  ['deny with a symbol reason', () => ({ kind: 'deny', reason: Symbol('no') })],
  ['enter with bad messages', () => ({ kind: 'enter', messages: [{ role: 'user', content: 42 }] })],
  ['retry with a NaN delay', () => ({ kind: 'retry', delayMs: NaN })],
  ['a string', () => 'just a string'],
  ['a content with a BigInt meta', () => ({ content: 'x', meta: { n: 10n } })],
  ['a text-delta without text', () => ({ type: 'text-delta', index: 0 })],
  ['a finish with an unknown kind', () => ({ type: 'finish', reason: { kind: 'done' } })],
  ['a finish{error} with an empty failure', () => ({ type: 'finish', reason: { kind: 'error', failure: { message: '', code: '' } } })],
  ['a block-end tool call with numeric arguments', () => ({ type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c', name: 't', arguments: 1 } })],
  ['a proxy whose traps throw', () => new Proxy({}, { get: thrower('get trap'), ownKeys: thrower('ownKeys trap'), getPrototypeOf: thrower('proto trap') })],
]

/** Where a hostile value enters. */
const PLACES = [
  'tool returns',
  'tool throws',
  'tool rejects',
  'pre-execute returns',
  'pre-execute throws',
  'post-execute returns',
  'post-execute throws',
  'pre-step returns',
  'pre-step throws',
  'request returns',
  'request-error returns',
  'turn-stopping throws',
  'status listener throws',
  'session/event listener throws',
  'events$ subscriber throws',
  'adapter yields',
  'adapter throws',
  'adapter finish carries',
] as const
type Place = (typeof PLACES)[number]

// ---- one run ------------------------------------------------------------------------

/** The model: a tool call then text, or for adapter places a stream that hands over the value. */
function modelFor(place: Place, make: () => unknown): ModelAdapter {
  const after = [textResponse('after'), textResponse('next turn'), textResponse('spare'), textResponse('spare')]
  if (place === 'adapter yields' || place === 'adapter throws' || place === 'adapter finish carries') {
    const hostile: ModelAdapter = {
      provider: 'hostile',
      model: 'm',
      async *stream() {
        if (place === 'adapter throws') throw make()
        if (place === 'adapter finish carries') {
          yield { type: 'finish', reason: { kind: 'error', failure: make() } } as unknown as StreamChunk
          return
        }
        yield make() as StreamChunk
        yield { type: 'finish', reason: { kind: 'stop' } }
      },
    }
    let first = true
    const rest = scriptedModel(after)
    return {
      provider: 'hostile',
      model: 'm',
      stream: (request) => {
        if (!first) return rest.stream(request)
        first = false
        return hostile.stream(request)
      },
    }
  }
  return scriptedModel([toolCallResponse([{ id: 'c1', name: 't', arguments: '{}' }]), ...after])
}

function agentFor(place: Place, make: () => unknown): Agent {
  const tool = defineTool({
    name: 't',
    description: 'hostile',
    input: z.object({}).loose(),
    execute: (() => {
      if (place === 'tool returns') return make()
      if (place === 'tool throws') throw make()
      if (place === 'tool rejects') return Promise.reject(make())
      return 'fine'
    }) as never,
  })
  const agent = createAgent({ model: modelFor(place, make), tools: [tool], logger: quiet, retry: false } as AgentOptions)
  const once = <T>(f: () => T) => {
    let used = false
    return (fallback: () => T) => {
      if (used) return fallback()
      used = true
      return f()
    }
  }
  const hostileOnce = once(make)
  const throwOnce = once(() => {
    throw make()
  })
  switch (place) {
    case 'pre-execute returns':
      agent.on('tools/pre-execute', (_p, next) => hostileOnce(next as never) as never)
      break
    case 'pre-execute throws':
      agent.on('tools/pre-execute', (_p, next) => throwOnce(next as never) as never)
      break
    case 'post-execute returns':
      agent.on('tools/post-execute', (_p, next) => hostileOnce(next as never) as never)
      break
    case 'post-execute throws':
      agent.on('tools/post-execute', (_p, next) => throwOnce(next as never) as never)
      break
    case 'pre-step returns':
      agent.on('agent/pre-step', (_p, next) => hostileOnce(next as never) as never)
      break
    case 'pre-step throws':
      agent.on('agent/pre-step', (_p, next) => throwOnce(next as never) as never)
      break
    case 'request returns':
      agent.on('agent/request', (_p, next) => hostileOnce(next as never) as never)
      break
    case 'request-error returns':
      agent.on('agent/request-error', () => make() as never)
      break
    case 'turn-stopping throws':
      agent.on('agent/turn-stopping', () => {
        throw make()
      })
      break
    case 'status listener throws':
      agent.on('agent/status', () => {
        throw make()
      })
      break
    case 'session/event listener throws':
      agent.on('session/event', () => {
        throw make()
      })
      break
    case 'events$ subscriber throws':
      agent.session.events$.subscribe(() => {
        throw make()
      })
      break
    default:
      break
  }
  return agent
}

/** Idle within a bounded number of event-loop turns (timers of 0 ms, never wall-clock budgets on the result). */
async function settles(agent: Agent): Promise<boolean> {
  let idle = false
  void agent.whenIdle().then(() => (idle = true))
  for (let i = 0; i < 2000 && !idle; i++) await tick()
  return idle && agent.status === 'idle'
}

describe('#8.10 hostile values at every extension point', () => {
  it(
    'TU-15: the agent reaches idle, the log keeps its rules, nothing escapes and no user message is lost',
    async () => {
      const consoleError = console.error
      console.error = () => {} // contained observers report here; the property checks what reaches the process
      try {
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...PLACES), fc.integer({ min: 0, max: hostileMakers.length - 1 }), fc.boolean(), async (place, which, second) => {
            escaped = []
            const make = hostileMakers[which][1]
            const agent = agentFor(place, make)
            const sent = second ? ['first hostile-run message', 'second hostile-run message'] : ['first hostile-run message']
            for (const text of sent) agent.followup(text)
            expect(await settles(agent), `${place}: ${hostileMakers[which][0]}: idle`).toBe(true)
            expect(checkSessionInvariants(agent.session.events), `${place}: ${hostileMakers[which][0]}`).toEqual([])
            const ends = agent.session.events.filter((e) => e.type === 'turn/end').length
            expect(agent.session.events.filter((e) => e.type === 'turn/start').length).toBe(ends)
            // no message lost: each followup is in the log (entered, or claimed by an inbox splice) or still pending
            const logged = JSON.stringify(agent.session.events)
            const pending = JSON.stringify([...agent.inbox.nextTurn, ...agent.inbox.nextStep])
            for (const text of sent) expect(logged.includes(text) || pending.includes(text), `${text} is kept`).toBe(true)
            // the agent still serves: a plain followup after the hostile one runs to an end
            agent.followup('again')
            expect(await settles(agent), `${place}: ${hostileMakers[which][0]}: a later turn`).toBe(true)
            expect(checkSessionInvariants(agent.session.events)).toEqual([])
            await agent.dispose({ force: true, graceMs: 0 })
            await tick()
            expect(escaped, `${place}: ${hostileMakers[which][0]}: escaped`).toEqual([])
          }),
          { numRuns: propertyRuns(60) },
        )
      } finally {
        console.error = consoleError
      }
    },
    Math.max(20_000, propertyRuns(60) * 100),
  )

  it('SS-10: a seed built from hostile values is refused or accepted, never half-used', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: hostileMakers.length - 1 }), fc.integer({ min: 0, max: 3 }), (which, where) => {
        const events: unknown[] = [
          { seq: 0, type: 'turn/start', data: { turn: 1 }, time: 1 },
          { seq: 1, type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } }, time: 2 },
        ]
        const value = hostileMakers[which][1]()
        if (where === 0) events.push(value)
        else if (where === 1) (events[0] as { data: unknown }).data = value
        else if (where === 2) (events[1] as { type: unknown }).type = value
        else events[0] = value
        let session
        try {
          session = createSession({ seed: events as never })
        } catch (error) {
          // refused with a typed, readable error
          expect(error).toBeInstanceOf(Error)
          expect(typeof (error as Error).message).toBe('string')
          return
        }
        expect(checkSessionInvariants(session.events)).toEqual([])
      }),
      { numRuns: propertyRuns(60) },
    )
  })
})

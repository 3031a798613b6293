// SS-7, SS-8, SS-13 over whole agents: the history the session keeps step by
// step equals a from-scratch derivation of its log after every operation
// (turns, tool calls, rewritten results, cancels, compactions, forks,
// resumes), and every request the model received still reads the history it
// was dispatched with once the session has gone on.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  COMPACTION_INSTRUCTIONS,
  createAgent,
  createSession,
  defineTool,
  INTERRUPTED_NOTE,
  type Agent,
  type Message,
  type ModelRequest,
  type Session,
  type SessionEvent,
  type StreamChunk,
} from '../../src/index.js'
import { deriveMessagesFrom } from './fixtures.js'
import { surfaceNodes } from '../../src/session/session.js'
import { frozenArrayOf } from '../../src/values/array-view.js'
import { PersistentList } from '../../src/values/persistent-list.js'
import { Surface, nodeMessage, surfaceNodeOf } from '../../src/session/surface.js'
import { scriptedModel, textResponse, toolCallResponse, type ScriptResult } from '../../src/testing/index.js'
import { propertyRuns, track } from '../helpers.js'

type Op =
  | { kind: 'text' }
  | { kind: 'empty' }
  | { kind: 'tool'; calls: number }
  | { kind: 'cancel' }
  | { kind: 'rewrite'; pick: number }
  | { kind: 'compact' }
  | { kind: 'fork'; pick: number }
  | { kind: 'resume' }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'text' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'empty' as const }) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 }).map((calls) => ({ kind: 'tool' as const, calls })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'cancel' as const }) },
  { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: 'rewrite' as const, pick })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'compact' as const }) },
  { weight: 1, arbitrary: fc.nat().map((pick) => ({ kind: 'fork' as const, pick })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resume' as const }) },
)

const look = defineTool({ name: 'look', description: 'look', input: z.object({}), execute: () => 'seen '.repeat(8) })

/** A request and what its messages must read forever: the log's from-scratch history at dispatch, notes included. */
interface Dispatched {
  request: ModelRequest
  expected: Message[]
}

/** The request history the log prescribes (SS-13): the derived history with a note after each interrupted answer. */
function requestHistoryOf(events: readonly SessionEvent[]): Message[] {
  const interrupted = new Set<Message>()
  for (const e of events) if (e.type === 'assistant/message' && e.data.interrupted === true) interrupted.add(e.data.message)
  return deriveMessagesFrom(events).flatMap((m) =>
    interrupted.has(m)
      ? [
          m,
          {
            id: `${m.id}-interrupted`,
            role: 'user',
            content: [{ type: 'text', text: INTERRUPTED_NOTE }],
            source: { kind: 'plugin', plugin: 'agentchart', form: 'interrupted' },
          },
        ]
      : [m],
  ) as Message[]
}

/** A partial answer, then a wait until the request aborts. */
function partialThenHang(request: ModelRequest): AsyncIterable<StreamChunk> {
  return {
    async *[Symbol.asyncIterator]() {
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'text-delta', index: 0, text: 'half an' }
      yield { type: 'block-end', index: 0, block: { type: 'text', text: 'half an' } }
      await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve(), { once: true }))
    },
  }
}

/** One scripted model for every agent of a run: answers what the next operation planned and records each dispatch. */
function plannedModel(dispatched: Dispatched[], sessionOf: () => Session, contextWindow: number) {
  const planned: ((request: ModelRequest) => ScriptResult)[] = []
  let calls = 0
  const entry = (request: ModelRequest): ScriptResult => {
    if (request.system === COMPACTION_INSTRUCTIONS) return textResponse('summary: questions asked and answered')
    dispatched.push({ request, expected: requestHistoryOf(sessionOf().events) })
    return (planned.shift() ?? (() => textResponse('fallback')))(request)
  }
  const model = scriptedModel(
    Array.from({ length: 5000 }, () => entry),
    { contextWindow },
  )
  const plan = (...answers: ((request: ModelRequest) => ScriptResult)[]) => void planned.push(...answers)
  const toolCalls = (n: number) => () => toolCallResponse(Array.from({ length: n }, () => ({ id: `c${++calls}`, name: 'look', arguments: '{}' })))
  return { model, plan, toolCalls }
}

/** SS-7 and SS-8 at one point: the kept history equals the from-scratch one, as the identical logged values, and rebuilds from its nodes. */
function expectHistoryOf(session: Session): void {
  const history = session.deriveMessages()
  const reference = deriveMessagesFrom(session.events)
  expect(Array.isArray(history)).toBe(true)
  expect(history.length).toBe(reference.length)
  history.forEach((message, i) => expect(message).toBe(reference[i]))
  expect(JSON.parse(JSON.stringify(history))).toEqual(JSON.parse(JSON.stringify(reference)))
  // the checkpoint form: the surface's seqs and each node's message rebuild the same history and positions
  const seqs = session.surface()
  const restored = Surface.of(
    seqs,
    seqs.map((seq) => nodeMessage(session.at(seq)!)),
  )
  expect([...restored.messages()]).toEqual([...history])
  seqs.forEach((seq, at) => expect(restored.indexOf(seq)).toBe(at))
  // the compaction planner's nodes, read from the history alone, are the nodes the events make
  const fromEvents = seqs.map((seq) => surfaceNodeOf(session.at(seq)!))
  expect(surfaceNodes(session)).toEqual(fromEvents)
  expect(restored.nodes()).toEqual(fromEvents)
  // a shadowed node is found by neither
  const current = new Set(seqs)
  for (const e of session.events) if (e.surfaceOp !== undefined && !current.has(e.seq)) expect(restored.indexOf(e.seq)).toBeUndefined()
}

/** Every request still reads what it was dispatched with (SS-13), element by element. */
function expectRequestsHeld(dispatched: readonly Dispatched[]): void {
  for (const { request, expected } of dispatched) {
    expect(request.messages.length).toBe(expected.length)
    expect([...request.messages]).toEqual(expected)
    request.messages.forEach((message, i) => {
      if (expected[i].source.kind !== 'plugin' || !expected[i].id.endsWith('-interrupted')) expect(message).toBe(expected[i])
    })
  }
}

/**
 * Plays `ops` on one agent (or its forks and resumes), checking the history and every held request after each. A
 * small `contextWindow` makes turns compact by themselves too; a large one only on `compact`.
 */
async function play(ops: readonly Op[], contextWindow = 100_000): Promise<{ dispatched: Dispatched[]; events: readonly SessionEvent[] }> {
  const dispatched: Dispatched[] = []
  /** Every log played, each agent's as it was left. */
  const events: SessionEvent[] = []
  let agent!: Agent
  const { model, plan, toolCalls } = plannedModel(dispatched, () => agent.session, contextWindow)
  let cancelOnBlockEnd = false
  const make = (session?: Session) => {
    const next = track(createAgent({ model, tools: [look], compaction: { keepRecent: 0.0001 }, logger: { error: () => {} }, ...(session ? { session } : {}) }))
    next.on('session/event', ({ event }) => {
      if (cancelOnBlockEnd && event.type === 'assistant/chunk' && event.data.chunk.type === 'block-end') {
        cancelOnBlockEnd = false
        next.cancel()
      }
    })
    return next
  }
  agent = make()
  let n = 0
  for (const o of ops) {
    const session = agent.session
    switch (o.kind) {
      case 'text':
        plan(() => textResponse(`answer ${n}`))
        await agent.run(`question ${n++}`)
        break
      case 'empty':
        plan(() => textResponse(''))
        await agent.run(`question ${n++}`)
        break
      case 'tool':
        plan(toolCalls(o.calls), () => textResponse(`done ${n}`))
        await agent.run(`question ${n++}`)
        break
      case 'cancel':
        plan(partialThenHang)
        cancelOnBlockEnd = true
        await agent.run(`question ${n++}`)
        cancelOnBlockEnd = false
        break
      case 'rewrite': {
        // a plugin shortens a logged result: one node replaced by one (SS-6)
        const results = session.surface().filter((seq) => session.at(seq)?.type === 'tool/result')
        if (results.length === 0) break
        const seq = results[o.pick % results.length]
        const old = session.at(seq)!
        if (old.type !== 'tool/result') break
        const content = [{ ...old.data.message.content[0], content: `short ${seq}` }] as typeof old.data.message.content
        session.append(
          'tool/result',
          { ...old.data, message: { ...old.data.message, content } },
          { surfaceOp: { op: 'replace', start: seq, end: seq }, sourceEventSeqs: [seq] },
        )
        break
      }
      case 'compact':
        await agent.compact()
        break
      case 'fork': {
        const ends = session.events.filter((e) => e.type === 'turn/end')
        if (ends.length === 0) break
        const fork = await agent.fork({ upTo: ends[o.pick % ends.length].seq })
        expectHistoryOf(fork)
        events.push(...session.events)
        await agent.dispose()
        agent = make(fork)
        break
      }
      case 'resume': {
        const log = session.events
        await agent.dispose()
        agent = make(createSession({ id: session.id, seed: log }))
        break
      }
    }
    expectHistoryOf(agent.session)
    expectRequestsHeld(dispatched)
  }
  events.push(...agent.session.events)
  await agent.dispose()
  return { dispatched, events }
}

describe('incremental history property', () => {
  it('SS-7, SS-8: after every turn, rewrite, cancel, compaction, fork and resume, the kept history equals deriveMessagesFrom(session.events)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), fc.constantFrom(300, 100_000), async (ops, window) => void (await play(ops, window))),
      { numRuns: propertyRuns(40) },
    )
  })

  it('SS-13: a request held after its session went on (appends, compactions, rewrites) still equals the history at its dispatch', async () => {
    // a fixed long mix, so a request is held across every kind of later change
    const { dispatched, events } = await play([
      { kind: 'text' },
      { kind: 'tool', calls: 2 },
      { kind: 'cancel' },
      { kind: 'rewrite', pick: 0 },
      { kind: 'text' },
      { kind: 'compact' },
      { kind: 'tool', calls: 1 },
      { kind: 'rewrite', pick: 1 },
      { kind: 'resume' },
      { kind: 'cancel' },
      { kind: 'text' },
      { kind: 'fork', pick: 1 },
      { kind: 'empty' },
      { kind: 'compact' },
      { kind: 'text' },
    ])
    // the mix did what it says (over all its logs): compactions, rewrites and interrupted answers all happened under held requests
    expect(events.filter((e) => e.type === 'compaction/completed').length).toBeGreaterThanOrEqual(1)
    expect(events.some((e) => e.type === 'tool/result' && e.surfaceOp !== 'append')).toBe(true)
    expect(dispatched.some(({ expected }) => expected.some((m) => m.id.endsWith('-interrupted')))).toBe(true)
    expect(dispatched.length).toBeGreaterThan(8)
  })

  it('SS-13: requests held across compactions the turns make themselves (a small window) still equal their dispatch history', async () => {
    const turns: Op[] = Array.from({ length: 12 }, (_, i) => (i % 3 === 1 ? { kind: 'tool', calls: 1 } : { kind: 'text' }))
    const { dispatched, events } = await play([...turns, { kind: 'cancel' }, ...turns], 300)
    expect(events.filter((e) => e.type === 'compaction/completed' && e.data.reason === 'auto').length).toBeGreaterThanOrEqual(2)
    expect(dispatched.length).toBeGreaterThan(24)
  })

  it('SS-8: the persistent list under the history matches a plain array through pushes, sets and splices, every version kept', () => {
    type ListOp =
      { kind: 'push' } | { kind: 'set'; at: number } | { kind: 'splice'; at: number; count: number; insert: boolean } | { kind: 'branch'; from: number }
    const listOp: fc.Arbitrary<ListOp> = fc.oneof(
      { weight: 12, arbitrary: fc.constant({ kind: 'push' as const }) },
      { weight: 3, arbitrary: fc.nat().map((at) => ({ kind: 'set' as const, at })) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('splice' as const), at: fc.nat(), count: fc.nat(), insert: fc.boolean() }) },
      { weight: 1, arbitrary: fc.nat().map((from) => ({ kind: 'branch' as const, from })) },
    )
    fc.assert(
      fc.property(fc.array(listOp, { minLength: 300, maxLength: 2500 }), (ops) => {
        let list = PersistentList.empty<number>()
        let plain: number[] = []
        const versions: [PersistentList<number>, number[]][] = [[list, plain]]
        ops.forEach((o, n) => {
          if (o.kind === 'push' || plain.length === 0) {
            list = list.push(n)
            plain = [...plain, n]
          } else if (o.kind === 'set') {
            const at = o.at % plain.length
            list = list.set(at, -n)
            plain = plain.with(at, -n)
          } else if (o.kind === 'splice') {
            const at = o.at % plain.length
            const count = o.count % (plain.length - at + 1)
            list = list.splice(at, count, o.insert ? [n] : [])
            plain = plain.toSpliced(at, count, ...(o.insert ? [n] : []))
          } else {
            ;[list, plain] = versions[o.from % versions.length]
          }
          versions.push([list, plain])
        })
        for (const [version, items] of versions) {
          expect(version.length).toBe(items.length)
          expect(version.toArray()).toEqual(items)
          expect([...frozenArrayOf(version)]).toEqual(items)
        }
      }),
      { numRuns: propertyRuns(30) },
    )
  })

  it('SS-8: a history of thousands of messages reads as a frozen array the same as its from-scratch copy', () => {
    const session = createSession()
    session.append('turn/start', { turn: 1 })
    session.append('step/start', { turn: 1, step: 1 })
    const held: { history: readonly Message[]; copy: Message[] }[] = []
    for (let i = 0; i < 3000; i++) {
      session.append(
        'user/message',
        { id: `u${i}`, role: 'user', content: [{ type: 'text', text: `m${i}` }], source: { kind: 'user' } },
        { surfaceOp: 'append' },
      )
      if (i % 500 === 0) held.push({ history: session.deriveMessages(), copy: deriveMessagesFrom(session.events) })
    }
    const surface = session.surface()
    session.append(
      'user/message',
      { id: 'summary', role: 'user', content: [{ type: 'text', text: 'summary' }], source: { kind: 'user' } },
      {
        surfaceOp: { op: 'replace', start: surface[0], end: surface[2989] },
        sourceEventSeqs: surface.slice(0, 2990),
      },
    )
    held.push({ history: session.deriveMessages(), copy: deriveMessagesFrom(session.events) })
    for (const { history, copy } of held) {
      expect(history).toEqual(copy)
      expect(Object.isFrozen(history)).toBe(true)
      expect(() => (history as Message[]).push(copy[0])).toThrow(TypeError)
    }
    expect(session.deriveMessages().map((m) => m.id)).toEqual(['summary', ...Array.from({ length: 10 }, (_, i) => `u${2990 + i}`)])
  })
})

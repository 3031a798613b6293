import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ConfigError, LosslessJsonError, SessionAppendError } from '../../src/errors.js'
import { EventDataSchemas, type SessionEvent, type ToolResultBlock } from '../../src/session/schemas.js'
import { createSession, Session } from '../../src/session/session.js'
import { assistant, assistantData, deriveMessagesFrom, naiveDerive, toolResultData, user } from './fixtures.js'

/** A clock that ticks by 10 ms per reading, starting at 1000. */
const ticking = (): (() => number) => {
  let t = 1000
  return () => (t += 10)
}

let errors: ReturnType<typeof vi.spyOn>
beforeEach(() => {
  errors = vi.spyOn(console, 'error').mockImplementation(() => {})
})
afterEach(() => {
  errors.mockRestore()
})

/** Captures the error `fn` throws. */
function thrown(fn: () => unknown): Error {
  try {
    fn()
  } catch (err) {
    return err as Error
  }
  throw new Error('expected a throw')
}

/** A log with one full turn: prompt, chunks, an assistant message calling a tool, the result, a reply. */
function sampleTurn(session: Session): void {
  session.append('turn/start', { turn: 1 })
  session.append('step/start', { turn: 1, step: 1 })
  session.append('user/message', user('u1'), { surfaceOp: 'append' })
  session.append('request/header', { header: { config: { provider: 'fake', model: 'fake-1' } }, reason: 'initial' })
  const c1 = session.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'tool-call' } })
  session.append(
    'assistant/message',
    {
      turn: 1,
      step: 1,
      message: {
        ...assistant('a1'),
        content: [{ type: 'tool-call', id: 'c1', name: 'read', arguments: '{}' }],
      },
    },
    { surfaceOp: 'append', sourceEventSeqs: [c1.seq] },
  )
  const call = session.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'read', arguments: '{}' })
  session.append('tool/result', toolResultData('c1', 'file body'), { surfaceOp: 'append', sourceEventSeqs: [call.seq] })
  session.append('step/end', { turn: 1, step: 1 })
  session.append('step/start', { turn: 1, step: 2 })
  session.append('assistant/message', assistantData('a2', 'done', 1, 2), { surfaceOp: 'append', sourceEventSeqs: [] })
  session.append('step/end', { turn: 1, step: 2 })
  session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
}

describe('createSession', () => {
  it('SS-1: defaults the id to a UUID and accepts a given one', () => {
    expect(createSession().id).toMatch(/^[0-9a-f-]{36}$/)
    expect(createSession({ id: 's-1' }).id).toBe('s-1')
    expect(createSession().id).not.toBe(createSession().id)
  })

  it('SS-1: refuses a bad id or clock with ConfigError', () => {
    expect(() => createSession({ id: '' })).toThrow(ConfigError)
    expect(() => createSession({ now: 5 as unknown as () => number })).toThrow(ConfigError)
  })
})

describe('SS-1 append-only log', () => {
  it('SS-1: seq is the current length, time comes from now(), and the event is deep-frozen', () => {
    const session = createSession({ now: ticking() })
    const a = session.append('turn/start', { turn: 1 })
    const b = session.append('user/message', user('u1'), { surfaceOp: 'append' })
    expect([a.seq, b.seq]).toEqual([0, 1])
    expect([a.time, b.time]).toEqual([1010, 1020])
    expect(session.length).toBe(2)
    expect(Object.isFrozen(b)).toBe(true)
    expect(Object.isFrozen(b.data)).toBe(true)
    expect(Object.isFrozen(b.data.content[0])).toBe(true)
    expect(() => {
      ;(b as { seq: number }).seq = 9
    }).toThrow(TypeError)
    expect(b).toEqual({ seq: 1, time: 1020, type: 'user/message', data: user('u1'), surfaceOp: 'append' })
  })

  it('SS-1: a held events snapshot never grows, and is reused while nothing changes', () => {
    const session = createSession()
    session.append('turn/start', { turn: 1 })
    const held = session.events
    expect(session.events).toBe(held)
    expect(Object.isFrozen(held)).toBe(true)
    session.append('step/start', { turn: 1, step: 1 })
    expect(held).toHaveLength(1)
    expect(session.events).toHaveLength(2)
    expect(session.events).not.toBe(held)
    expect(session.events[0]).toBe(held[0])
  })

  it('SS-1: at() and last() read events by seq without negative indexing', () => {
    const session = createSession()
    expect(session.last()).toBeUndefined()
    const e0 = session.append('turn/start', { turn: 1 })
    const e1 = session.append('step/start', { turn: 1, step: 1 })
    expect(session.at(0)).toBe(e0)
    expect(session.at(1)).toBe(e1)
    expect(session.at(-1)).toBeUndefined()
    expect(session.at(2)).toBeUndefined()
    expect(session.at(0.5)).toBeUndefined()
    expect(session.last()).toBe(e1)
  })

  it('SS-1: seqs stay contiguous across a mixed log', () => {
    const session = createSession()
    sampleTurn(session)
    expect(session.events.map((e) => e.seq)).toEqual(session.events.map((_, i) => i))
  })

  it('SS-1: a refused time from the clock is refused before anything is logged', () => {
    const session = createSession({ now: () => NaN })
    expect(() => session.append('turn/start', { turn: 1 })).toThrow(SessionAppendError)
    expect(session.length).toBe(0)
  })

  it('SS-1: a clock reading of -0 is logged as 0, so the log reopens as a seed exactly as written', () => {
    const session = createSession({ now: () => -0 })
    session.append('turn/start', { turn: 1 })
    expect(Object.is(session.at(0)!.time, 0)).toBe(true)
    expect(createSession({ seed: session.events }).events.slice(0, 1)).toEqual(session.events)
  })
})

describe('SS-2 lossless data', () => {
  it('SS-2: refuses a Map inside data, naming the path, and logs nothing', () => {
    const session = createSession()
    session.append('user/message', user('u1'), { surfaceOp: 'append' })
    const seen: SessionEvent[] = []
    session.observe((e) => void seen.push(e))
    session.events$.subscribe((e) => seen.push(e))
    const before = session.events
    const history = session.deriveMessages()
    const bad = { ...user('u2'), content: [{ type: 'text', text: new Map() }] } as never
    const err = thrown(() => session.append('user/message', bad, { surfaceOp: 'append' }))
    expect(err).toBeInstanceOf(LosslessJsonError)
    expect((err as LosslessJsonError).path).toBe('data.content[0].text')
    expect(err.message).toMatch(/Map/)
    expect(session.length).toBe(1)
    expect(session.events).toBe(before)
    expect(session.deriveMessages()).toEqual(history)
    expect(session.surface()).toEqual([0])
    expect(seen).toEqual([])
  })

  it('SS-2: refuses undefined, BigInt, -0 and a Date at the call site', () => {
    const session = createSession()
    expect(() => session.append('turn/start', { turn: undefined } as never)).toThrow(/data\.turn: undefined/)
    expect(() => session.append('turn/start', { turn: 1n } as never)).toThrow(/data\.turn: BigInt/)
    expect(() => session.append('todo/write', { todos: [{ content: 'x', status: -0 }] } as never)).toThrow(/data\.todos\[0\]\.status/)
    expect(() => session.append('request/context', { provider: 'p', model: 'm', at: new Date() } as never)).toThrow(LosslessJsonError)
    expect(session.length).toBe(0)
  })

  it('SS-2: data is copied at append, so later caller mutation has no effect', () => {
    const session = createSession()
    const message = user('u1', 'before')
    const event = session.append('user/message', message, { surfaceOp: 'append' })
    ;(message.content[0] as { text: string }).text = 'after'
    message.content.push({ type: 'text', text: 'more' })
    expect(event.data).not.toBe(message)
    expect(event.data.content).toEqual([{ type: 'text', text: 'before' }])
    expect(session.deriveMessages()[0].content).toEqual([{ type: 'text', text: 'before' }])
  })

  it('SS-2: stores the frozen copy, not the schema output', () => {
    const session = createSession()
    const event = session.append('assistant/message', assistantData('a1'), { surfaceOp: 'append' })
    expect(Object.isFrozen(event.data.message.source)).toBe(true)
  })

  it('SS-2: surfaceOp and sourceEventSeqs are copied and frozen too', () => {
    const session = createSession()
    session.append('user/message', user('u1'), { surfaceOp: 'append' })
    const sources = [0]
    const op = { op: 'replace' as const, start: 0, end: 0 }
    const event = session.append('user/message', user('u2'), { surfaceOp: op, sourceEventSeqs: sources })
    sources.push(7)
    op.start = 5
    expect(event.sourceEventSeqs).toEqual([0])
    expect(event.surfaceOp).toEqual({ op: 'replace', start: 0, end: 0 })
    expect(Object.isFrozen(event.sourceEventSeqs)).toBe(true)
    expect(Object.isFrozen(event.surfaceOp)).toBe(true)
  })
})

describe('event types and data schemas', () => {
  it('SS-2: an unknown type is refused unless marked ignorable', () => {
    const session = createSession()
    const loose = session as unknown as { append(t: string, d: unknown, i?: object): SessionEvent }
    expect(() => loose.append('compaction/start', { retry: 1 })).toThrow(/unknown event type "compaction\/start"/)
    expect(() => loose.append('compaction/start', { retry: 1 }, { ignorable: false })).toThrow(SessionAppendError)
    const event = session.append('compaction/start', { retry: 1, nested: { anything: ['goes'] } }, { ignorable: true })
    expect(event).toEqual({ seq: 0, time: event.time, type: 'compaction/start', data: { retry: 1, nested: { anything: ['goes'] } }, ignorable: true })
    expect(() => session.append('compaction/start', { when: new Date() }, { ignorable: true })).toThrow(LosslessJsonError)
    expect(session.length).toBe(1)
  })

  it('SS-2: a known type may be marked ignorable and is still validated', () => {
    const session = createSession()
    expect(session.append('turn/start', { turn: 1 }, { ignorable: true }).ignorable).toBe(true)
    expect(() => session.append('turn/start', { turn: 0 }, { ignorable: true })).toThrow(SessionAppendError)
  })

  it('SS-2: zod failures name the event type and the issue path', () => {
    const session = createSession()
    const bad = { ...user('u1'), content: [{ type: 'video', text: 'x' }] } as never
    const err = thrown(() => session.append('user/message', bad, { surfaceOp: 'append' }))
    expect(err).toBeInstanceOf(SessionAppendError)
    expect(err.message).toMatch(/^user\/message: data\.content\[0\]\.type: /)
    expect((err as SessionAppendError).path).toBe('data.content[0].type')
    expect(() => session.append('turn/end', { turn: 1, reason: { kind: 'nope' } } as never)).toThrow(/turn\/end: data\.reason/)
    expect(() => session.append('step/start', { turn: 1, step: 1, extra: 1 } as never)).toThrow(/step\/start: /)
    expect(session.length).toBe(0)
  })

  it('SS-2: a tool/result message must answer the call named by its source', () => {
    const session = createSession()
    const data = toolResultData('c1', 'x')
    const wrong = { ...data, message: { ...data.message, source: { kind: 'tool', callId: 'c2' } } } as never
    expect(() => session.append('tool/result', wrong, { surfaceOp: 'append' })).toThrow(/data\.message\.content\[0\]\.toolCallId/)
  })

  it('SS-2: assistant/chunk is held to its schema in full, chunk included', () => {
    const session = createSession()
    const cases: unknown[] = [
      { turn: 1, step: 1, chunk: { type: 'text-delta', index: -1, text: 'x' } },
      { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0 } },
      { turn: 1, step: 1, chunk: { type: 'block-end', index: 0, block: { type: 'text' } } },
      { turn: 1, step: 1, chunk: { type: 'usage', usage: { inputTokens: 1 } } },
    ]
    for (const data of cases) {
      const schema = EventDataSchemas['assistant/chunk'].safeParse(data)
      expect(schema.success).toBe(false)
      expect(() => session.append('assistant/chunk', data as never)).toThrow(/^assistant\/chunk: data\.chunk/)
    }
    expect(session.length).toBe(0)
  })

  it('SS-2: assistant/chunk refuses bad turn/step, unknown chunk types, and extra keys', () => {
    const session = createSession()
    const chunk = { type: 'text-delta', index: 0, text: 'x' }
    const cases: [unknown, RegExp][] = [
      [{ turn: 0, step: 1, chunk }, /assistant\/chunk: data\.turn/],
      [{ turn: 1, step: 1.5, chunk }, /assistant\/chunk: data\.step/],
      [{ turn: '1', step: 1, chunk }, /data\.turn/],
      [{ turn: 1, step: 1, chunk: 'text' }, /data\.chunk: /],
      [{ turn: 1, step: 1, chunk: [] }, /data\.chunk: /],
      [{ turn: 1, step: 1, chunk: { type: 'nope' } }, /data\.chunk\.type: /],
      [{ turn: 1, step: 1, chunk: {} }, /data\.chunk\.type/],
      [{ turn: 1, step: 1, chunk, extra: true }, /data: .*extra/],
      [null, /assistant\/chunk: data: /],
    ]
    for (const [data, message] of cases) {
      expect(() => session.append('assistant/chunk', data as never)).toThrow(message)
    }
    expect(session.length).toBe(0)
  })

  it('SS-9: session/end-seed is written only by the constructor', () => {
    const session = createSession()
    expect(() => session.append('session/end-seed', {})).toThrow(/only by the session constructor/)
  })

  it('SS-2: refuses a type that is not a non-empty string', () => {
    const loose = createSession() as unknown as { append(t: unknown, d: unknown, i?: object): unknown }
    expect(() => loose.append('', {}, { ignorable: true })).toThrow(/event type must be a non-empty string/)
    expect(() => loose.append(7, {}, { ignorable: true })).toThrow(/got 7/)
  })

  it('SS-3: refuses unknown intent keys', () => {
    const session = createSession()
    expect(() => session.append('turn/start', { turn: 1 }, { surface: 'append' } as never)).toThrow(/unknown intent key "surface"/)
  })
})

describe('SS-3..SS-6 surface metadata', () => {
  it('SS-3: non-surface events may not carry surfaceOp or sourceEventSeqs', () => {
    const session = createSession()
    session.append('turn/start', { turn: 1 })
    expect(() => session.append('step/start', { turn: 1, step: 1 }, { surfaceOp: 'append' })).toThrow(/only user\/message, assistant\/message, tool\/result/)
    expect(() => session.append('step/start', { turn: 1, step: 1 }, { sourceEventSeqs: [0] })).toThrow(SessionAppendError)
    expect(() => session.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: '' } }, { sourceEventSeqs: [0] })).toThrow(
      SessionAppendError,
    )
    expect(session.length).toBe(1)
  })

  it('SS-3: surface events must carry a valid surfaceOp', () => {
    const session = createSession()
    expect(() => session.append('user/message', user('u1'))).toThrow(/must carry a surfaceOp/)
    expect(() => session.append('assistant/message', assistantData('a1'), { sourceEventSeqs: [] })).toThrow(/must carry a surfaceOp/)
    expect(() => session.append('user/message', user('u1'), { surfaceOp: 'prepend' as never })).toThrow(/surfaceOp must be/)
    expect(() => session.append('user/message', user('u1'), { surfaceOp: { op: 'replace', start: -1, end: 0 } })).toThrow(/surfaceOp must be/)
    expect(session.length).toBe(0)
  })

  it('SS-4: sourceEventSeqs may only cite earlier seqs, without duplicates', () => {
    const session = createSession()
    session.append('turn/start', { turn: 1 })
    session.append('step/start', { turn: 1, step: 1 })
    const next = session.length
    expect(() => session.append('user/message', user('u1'), { surfaceOp: 'append', sourceEventSeqs: [next] })).toThrow(/not an earlier seq/)
    expect(() => session.append('user/message', user('u1'), { surfaceOp: 'append', sourceEventSeqs: [next + 5] })).toThrow(/sourceEventSeqs\[0\]/)
    expect(() => session.append('user/message', user('u1'), { surfaceOp: 'append', sourceEventSeqs: [0, 1, 0] })).toThrow(
      /sourceEventSeqs\[2\] = 0 is a duplicate/,
    )
    expect(() => session.append('user/message', user('u1'), { surfaceOp: 'append', sourceEventSeqs: [-1] })).toThrow(/must be a seq/)
    expect(() => session.append('user/message', user('u1'), { surfaceOp: 'append', sourceEventSeqs: [0.5] })).toThrow(/must be a seq/)
    expect(session.length).toBe(2)
    expect(session.append('user/message', user('u1'), { surfaceOp: 'append', sourceEventSeqs: [1, 0] }).sourceEventSeqs).toEqual([1, 0])
  })

  it('SS-4: sourceEventSeqs must be non-empty except on assistant/message, where [] and absence differ', () => {
    const session = createSession()
    expect(() => session.append('user/message', user('u1'), { surfaceOp: 'append', sourceEventSeqs: [] })).toThrow(/must not be empty/)
    expect(() => session.append('tool/result', toolResultData('c1', 'x'), { surfaceOp: 'append', sourceEventSeqs: [] })).toThrow(/must not be empty/)
    const known = session.append('assistant/message', assistantData('a1'), { surfaceOp: 'append', sourceEventSeqs: [] })
    const unknown = session.append('assistant/message', assistantData('a2'), { surfaceOp: 'append' })
    expect(known.sourceEventSeqs).toEqual([])
    expect('sourceEventSeqs' in unknown).toBe(false)
    expect(session.append('tool/result', toolResultData('c1', 'x'), { surfaceOp: 'append' }).sourceEventSeqs).toBeUndefined()
  })

  it('SS-5: append adds at the surface tail; replace swaps the whole range and bumps the generation', () => {
    const session = createSession()
    const u1 = session.append('user/message', user('u1'), { surfaceOp: 'append' })
    session.append('turn/start', { turn: 1 })
    const a1 = session.append('assistant/message', assistantData('a1'), { surfaceOp: 'append' })
    const u2 = session.append('user/message', user('u2'), { surfaceOp: 'append' })
    const u3 = session.append('user/message', user('u3'), { surfaceOp: 'append' })
    expect(session.surface()).toEqual([u1.seq, a1.seq, u2.seq, u3.seq])
    expect(session.replaceGeneration).toBe(0)
    const summary = session.append('user/message', user('summary'), {
      surfaceOp: { op: 'replace', start: a1.seq, end: u2.seq },
      sourceEventSeqs: [a1.seq, u2.seq],
    })
    expect(session.surface()).toEqual([u1.seq, summary.seq, u3.seq])
    expect(session.replaceGeneration).toBe(1)
    expect(session.deriveMessages().map((m) => m.id)).toEqual(['u1', 'summary', 'u3'])
    // The replacement is itself a surface node and can be replaced again.
    const again = session.append('assistant/message', assistantData('a9'), {
      surfaceOp: { op: 'replace', start: u1.seq, end: summary.seq },
      sourceEventSeqs: [summary.seq, u1.seq, 1],
    })
    expect(session.surface()).toEqual([again.seq, u3.seq])
    expect(session.replaceGeneration).toBe(2)
  })

  it('SS-5: replace bounds must be current surface nodes, in surface order', () => {
    const session = createSession()
    const u1 = session.append('user/message', user('u1'), { surfaceOp: 'append' })
    const t = session.append('turn/start', { turn: 1 })
    const u2 = session.append('user/message', user('u2'), { surfaceOp: 'append' })
    const r = session.append('user/message', user('r'), { surfaceOp: { op: 'replace', start: u2.seq, end: u2.seq }, sourceEventSeqs: [u2.seq] })
    const replace = (start: number, end: number, sources: number[]) => () =>
      session.append('user/message', user('x'), { surfaceOp: { op: 'replace', start, end }, sourceEventSeqs: sources })
    expect(replace(t.seq, t.seq, [t.seq])).toThrow(/start 1 is not a current surface node/)
    expect(replace(u1.seq, u2.seq, [u1.seq, u2.seq])).toThrow(/end 2 is not a current surface node/) // shadowed
    expect(replace(99, 99, [0])).toThrow(/not a current surface node/)
    expect(replace(r.seq, u1.seq, [u1.seq, r.seq])).toThrow(/comes after end/)
    expect(replace(u1.seq, r.seq, [u1.seq])).toThrow(/3 is missing/)
    expect(() => session.append('user/message', user('x'), { surfaceOp: { op: 'replace', start: u1.seq, end: u1.seq } })).toThrow(
      /must include every shadowed node/,
    )
    expect(session.length).toBe(4)
    expect(session.replaceGeneration).toBe(1)
  })

  it('SS-6: a tool/result replacement may change only the result content', () => {
    const session = createSession()
    const call = session.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'read', arguments: '{}' })
    const first = session.append('tool/result', toolResultData('c1', 'a very long output'), { surfaceOp: 'append', sourceEventSeqs: [call.seq] })
    const data = toolResultData('c1', 'x')
    const shorter = {
      ...data,
      message: { ...data.message, content: [{ type: 'tool-result' as const, toolCallId: 'c1', content: [{ type: 'text' as const, text: '[truncated]' }] }] },
    }
    const second = session.append('tool/result', shorter as never, {
      surfaceOp: { op: 'replace', start: first.seq, end: first.seq },
      sourceEventSeqs: [first.seq],
    })
    expect(session.surface()).toEqual([second.seq])
    expect(session.deriveMessages()).toEqual([second.data.message])
  })

  it('SS-6: a tool/result replacement must shadow exactly one current tool/result node', () => {
    const session = createSession()
    const u = session.append('user/message', user('u1'), { surfaceOp: 'append' })
    const r1 = session.append('tool/result', toolResultData('c1', 'one'), { surfaceOp: 'append' })
    const r2 = session.append('tool/result', toolResultData('c2', 'two'), { surfaceOp: 'append' })
    const op = (start: number, end: number) => ({ op: 'replace' as const, start, end })
    expect(() => session.append('tool/result', toolResultData('c1', 'x'), { surfaceOp: op(r1.seq, r2.seq), sourceEventSeqs: [r1.seq, r2.seq] })).toThrow(
      /exactly one tool\/result node/,
    )
    expect(() => session.append('tool/result', toolResultData('c1', 'x'), { surfaceOp: op(u.seq, u.seq), sourceEventSeqs: [u.seq] })).toThrow(
      /exactly one tool\/result node/,
    )
    expect(session.length).toBe(3)
  })

  it('SS-6: a tool/result replacement may not change turn, step, ids, isError, error or meta', () => {
    const session = createSession()
    const base = toolResultData('c1', 'one')
    const r1 = session.append('tool/result', { ...base, meta: { bytes: 3 } }, { surfaceOp: 'append' })
    const intent = { surfaceOp: { op: 'replace' as const, start: r1.seq, end: r1.seq }, sourceEventSeqs: [r1.seq] }
    const variants: unknown[] = [
      { ...base, meta: { bytes: 3 }, step: 2 },
      { ...base, meta: { bytes: 3 }, message: { ...base.message, id: 'other' } },
      { ...base, meta: { bytes: 4 } },
      { ...base },
      { ...base, meta: { bytes: 3 }, error: { name: 'E', code: 'E' } },
      { ...base, meta: { bytes: 3 }, message: { ...base.message, content: [{ ...base.message.content[0], isError: true }] } },
    ]
    for (const v of variants) expect(() => session.append('tool/result', v as never, intent)).toThrow(/only in message\.content\[0\]\.content/)
    const ok = { ...base, meta: { bytes: 3 }, message: { ...base.message, content: [{ ...base.message.content[0], content: 'short' }] as [ToolResultBlock] } }
    expect(session.append('tool/result', ok, intent).seq).toBe(1)
  })
})

describe('SS-7/SS-8 derived history', () => {
  it('SS-7: only current surface messages, identical frozen values, no empty assistant messages', () => {
    const session = createSession()
    sampleTurn(session)
    session.append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [user('queued')] })
    session.append('todo/write', { todos: [] })
    session.append('plugin/note', { x: 1 }, { ignorable: true })
    session.append('assistant/message', assistantData('empty', ''), { surfaceOp: 'append', sourceEventSeqs: [] })
    const history = session.deriveMessages()
    expect(history.map((m) => m.id)).toEqual(['u1', 'a1', 'result-c1', 'a2'])
    const byId = new Map(history.map((m) => [m.id, m]))
    for (const e of session.events) {
      if (e.type === 'user/message') expect(byId.get(e.data.id)).toBe(e.data)
      if (e.type === 'assistant/message' && e.data.message.id !== 'empty') expect(byId.get(e.data.message.id)).toBe(e.data.message)
      if (e.type === 'tool/result') expect(byId.get(e.data.message.id)).toBe(e.data.message)
    }
    expect(history.every((m) => Object.isFrozen(m))).toBe(true)
  })

  it('SS-7: an empty assistant message still occupies a surface node and can be replaced', () => {
    const session = createSession()
    const empty = session.append('assistant/message', assistantData('e', ''), { surfaceOp: 'append', sourceEventSeqs: [] })
    expect(session.surface()).toEqual([empty.seq])
    expect(session.deriveMessages()).toEqual([])
    session.append('user/message', user('u'), { surfaceOp: { op: 'replace', start: empty.seq, end: empty.seq }, sourceEventSeqs: [empty.seq] })
    expect(session.deriveMessages().map((m) => m.id)).toEqual(['u'])
  })

  it('SS-8: each derivation is a fresh frozen array that later appends never grow', () => {
    const session = createSession()
    session.append('user/message', user('u1'), { surfaceOp: 'append' })
    const first = session.deriveMessages()
    const second = session.deriveMessages()
    expect(first).not.toBe(second)
    expect(first).toEqual(second)
    expect(Object.isFrozen(first)).toBe(true)
    session.append('user/message', user('u2'), { surfaceOp: 'append' })
    expect(first).toHaveLength(1)
    expect(session.deriveMessages()).toHaveLength(2)
  })

  it('SS-8: equals a from-scratch derivation, including after replacements', () => {
    const session = createSession()
    sampleTurn(session)
    const resultSeq = session.events.find((e) => e.type === 'tool/result')!.seq
    const data = toolResultData('c1', '[elided]')
    session.append('tool/result', data, { surfaceOp: { op: 'replace', start: resultSeq, end: resultSeq }, sourceEventSeqs: [resultSeq] })
    const [u1, , , a2] = session.surface()
    session.append('user/message', user('summary'), { surfaceOp: { op: 'replace', start: u1, end: u1 }, sourceEventSeqs: [u1] })
    expect(session.deriveMessages()).toEqual(naiveDerive(session.events))
    expect(session.deriveMessages()).toEqual(deriveMessagesFrom(session.events))
    expect(session.deriveMessages().at(-1)).toBe((session.at(a2) as SessionEvent & { type: 'assistant/message' }).data.message)
    expect(session.deriveMessages().map((m) => m.id)).toEqual(['summary', 'a1', 'result-c1', 'a2'])
  })
})

describe('SS-9/SS-10 seeds', () => {
  it('SS-9: replaying a log as a seed yields the same prefix and history, then appends session/end-seed', () => {
    const original = createSession({ now: ticking() })
    sampleTurn(original)
    const replay = createSession({ seed: original.events, now: () => 5 })
    expect(replay.events.slice(0, original.length)).toEqual(original.events)
    expect(replay.deriveMessages()).toEqual(original.deriveMessages())
    expect(replay.last()).toEqual({ seq: original.length, time: 5, type: 'session/end-seed', data: {} })
    expect(replay.seedLength).toBe(original.length + 1)
    expect(replay.length).toBe(original.length + 1)
    expect(replay.surface()).toEqual(original.surface())
    expect(replay.append('turn/start', { turn: 2 }).seq).toBe(original.length + 1)
  })

  it('SS-9: seed events keep their own time and are frozen copies', () => {
    const original = createSession({ now: ticking() })
    sampleTurn(original)
    const seed = JSON.parse(JSON.stringify(original.events)) as unknown[]
    const replay = createSession({ seed, now: () => 1 })
    expect(replay.events.slice(0, seed.length).map((e) => e.time)).toEqual(original.events.map((e) => e.time))
    expect(replay.at(0)).not.toBe(seed[0])
    expect(Object.isFrozen(replay.at(1)!.data)).toBe(true)
  })

  it('SS-9: a seed that already ends with session/end-seed gets no second one', () => {
    const original = createSession()
    sampleTurn(original)
    const first = createSession({ seed: original.events })
    const second = createSession({ seed: first.events })
    expect(second.events).toEqual(first.events)
    expect(second.seedLength).toBe(first.length)
    expect(second.events.filter((e) => e.type === 'session/end-seed')).toHaveLength(1)
  })

  it('SS-9: a seeded session with live events replays with its inner end-seed kept', () => {
    const first = createSession({ seed: [{ seq: 0, time: 1, type: 'turn/start', data: { turn: 1 } }] })
    first.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    const second = createSession({ seed: first.events })
    expect(second.events.map((e) => e.type)).toEqual(['turn/start', 'session/end-seed', 'turn/end', 'session/end-seed'])
    expect(second.seedLength).toBe(4)
  })

  it('SS-9: an unseeded session (or an empty seed) has no end-seed and seedLength 0', () => {
    expect(createSession().seedLength).toBe(0)
    expect(createSession().length).toBe(0)
    const empty = createSession({ seed: [] })
    expect(empty.length).toBe(0)
    expect(empty.seedLength).toBe(0)
  })

  it('SS-9: replaying a log with replacements and ignorable events gives the identical history', () => {
    const original = createSession()
    sampleTurn(original)
    original.append('plugin/mark', { n: 1 }, { ignorable: true })
    const [u1, a1] = original.surface()
    original.append('user/message', user('sum'), { surfaceOp: { op: 'replace', start: u1, end: a1 }, sourceEventSeqs: [u1, a1] })
    const replay = createSession({ seed: original.events })
    expect(replay.deriveMessages()).toEqual(original.deriveMessages())
    expect(replay.replaceGeneration).toBe(1)
    expect(replay.events.slice(0, original.length)).toEqual(original.events)
  })

  it('SS-9: seed events are not published to observers or events$', () => {
    // Observers can only be registered after construction, so the only way to
    // see seed events is the events snapshot; a first live append is seq seedLength.
    const s = createSession({ seed: [{ seq: 0, time: 1, type: 'turn/start', data: { turn: 1 } }] })
    const seen: number[] = []
    s.events$.subscribe((e) => seen.push(e.seq))
    s.append('step/start', { turn: 1, step: 1 })
    expect(seen).toEqual([2])
  })

  const validSeed = (): Record<string, unknown>[] => {
    const s = createSession({ now: () => 7 })
    sampleTurn(s)
    return JSON.parse(JSON.stringify(s.events)) as Record<string, unknown>[]
  }
  const seedError = (seed: unknown): Error => thrown(() => createSession({ seed: seed as unknown[] }))

  it('SS-10: seqs must be contiguous from 0', () => {
    const seed = validSeed()
    seed[2].seq = 3
    const err = seedError(seed)
    expect(err).toBeInstanceOf(SessionAppendError)
    expect(err.message).toMatch(/seed\[2\]\.seq: expected 2/)
    expect(seedError([{ ...validSeed()[0], seq: 1 }]).message).toMatch(/seed\[0\]\.seq/)
  })

  it('SS-10: only the known envelope keys are allowed', () => {
    const seed = validSeed()
    seed[1].extra = true
    expect(seedError(seed).message).toMatch(/seed\[1\]: unknown envelope key "extra"/)
    expect(seedError([{ seq: 0, time: 1, type: 'turn/start' }]).message).toMatch(/seed\[0\]\.data: missing/)
    expect(seedError([{ seq: 0, type: 'turn/start', data: { turn: 1 } }]).message).toMatch(/seed\[0\].*time must be a finite number/)
    expect(seedError([{ seq: 0, time: 1, type: 'turn/start', data: { turn: 1 }, ignorable: false }]).message).toMatch(/seed\[0\].*ignorable/)
    expect(seedError([5]).message).toMatch(/seed\[0\]: a seed event must be an object/)
    expect(seedError([{ seq: 0, time: 1, type: 3, data: {} }]).message).toMatch(/^seed\[0\]: event type must be a non-empty string, got 3/)
    expect(seedError({ length: 0 }).message).toMatch(/seed must be an array/)
  })

  it('SS-10: seed data must be lossless JSON, naming seq and path', () => {
    const seed: unknown[] = validSeed()
    ;(seed[2] as { data: { content: { text: unknown }[] } }).data.content[0].text = new Date()
    const err = seedError(seed)
    expect(err).toBeInstanceOf(LosslessJsonError)
    expect((err as LosslessJsonError).path).toBe('seed[2].data.content[0].text')
    const nan = validSeed()
    nan[0].time = NaN
    expect((seedError(nan) as LosslessJsonError).path).toBe('seed[0].time')
  })

  it('SS-10: assistant messages need a model source with provider and model', () => {
    const seed = validSeed()
    const i = seed.findIndex((e) => e.type === 'assistant/message')
    ;(seed[i].data as { message: { source: Record<string, unknown> } }).message.source = { kind: 'model', provider: '', model: 'm' }
    const err = seedError(seed)
    expect(err.message).toContain(`seed[${i}].data.message.source.provider: `)
    expect((err as SessionAppendError).path).toBe(`seed[${i}].data.message.source.provider`)
    const wrongRole = validSeed()
    ;(wrongRole[i].data as { message: { role: string } }).message.role = 'user'
    expect(seedError(wrongRole).message).toContain(`seed[${i}].data.message.role`)
  })

  it('SS-10: user messages need an id, the user role and a user-side source', () => {
    const seed = validSeed()
    ;(seed[2].data as Record<string, unknown>).id = ''
    expect(seedError(seed).message).toContain('seed[2].data.id')
    const modelSourced = validSeed()
    ;(modelSourced[2].data as Record<string, unknown>).source = { kind: 'model', provider: 'p', model: 'm' }
    expect(seedError(modelSourced).message).toContain('seed[2].data.source')
  })

  it('SS-10: request headers need provider and model', () => {
    const seed = validSeed()
    const i = seed.findIndex((e) => e.type === 'request/header')
    ;(seed[i].data as { header: { config: Record<string, unknown> } }).header.config = { provider: 'fake' }
    expect(seedError(seed).message).toContain(`seed[${i}].data.header.config.model`)
  })

  it('SS-10: surface metadata is validated like live appends', () => {
    const onTurnStart = validSeed()
    onTurnStart[0].surfaceOp = 'append'
    expect(seedError(onTurnStart).message).toMatch(/^seed\[0\]: turn\/start: only user\/message/)
    const missingOp = validSeed()
    delete missingOp[2].surfaceOp
    expect(seedError(missingOp).message).toMatch(/seed\[2\].*must carry a surfaceOp/)
    const future = validSeed()
    const r = future.findIndex((e) => e.type === 'tool/result')
    future[r].sourceEventSeqs = [r + 1]
    expect(seedError(future).message).toMatch(new RegExp(`seed\\[${r}\\].*not an earlier seq`))
    expect((seedError(future) as SessionAppendError).path).toBe(`seed[${r}].sourceEventSeqs[0]`)
    const badReplace = validSeed()
    badReplace.push({
      seq: badReplace.length,
      time: 1,
      type: 'user/message',
      data: user('x'),
      surfaceOp: { op: 'replace', start: 0, end: 0 },
      sourceEventSeqs: [0],
    })
    expect(seedError(badReplace).message).toMatch(/start 0 is not a current surface node/)
  })

  it('SS-10: unknown types need ignorable: true', () => {
    const seed = [{ seq: 0, time: 1, type: 'plugin/x', data: { a: 1 } }]
    expect(seedError(seed).message).toMatch(/^seed\[0\]: unknown event type "plugin\/x"/)
    const ok = createSession({ seed: [{ ...seed[0], ignorable: true }] })
    expect(ok.at(0)).toEqual({ ...seed[0], ignorable: true })
  })
})

describe('SS-11 observers and events$', () => {
  it('SS-11: observers run after commit and see the updated state', () => {
    const session = createSession()
    const seen: unknown[] = []
    session.observe((event, s) => {
      seen.push([event.seq, s.length, s.at(event.seq) === event, s.last() === event, s.deriveMessages().length, s.publishing, s === session])
    })
    session.append('user/message', user('u1'), { surfaceOp: 'append' })
    expect(seen).toEqual([[0, 1, true, true, 1, true, true]])
    expect(session.publishing).toBe(false)
  })

  it('SS-11: a throwing observer is logged and contained; later observers still run', () => {
    const session = createSession()
    const order: string[] = []
    session.observe(() => {
      order.push('first')
      throw new Error('boom')
    })
    session.observe(() => void order.push('second'))
    const event = session.append('turn/start', { turn: 1 })
    expect(event.seq).toBe(0)
    expect(order).toEqual(['first', 'second'])
    expect(errors).toHaveBeenCalledTimes(1)
    expect(String(errors.mock.calls[0][0])).toMatch(/observer failed on seq 0 \(turn\/start\)/)
    expect(session.length).toBe(1)
    expect(session.publishing).toBe(false)
    expect(session.append('turn/end', { turn: 1, reason: { kind: 'completed' } }).seq).toBe(1)
  })

  it('SS-11: a rejecting async observer is logged and contained', async () => {
    const session = createSession()
    session.observe(async () => {
      throw new Error('async boom')
    })
    expect(session.append('turn/start', { turn: 1 }).seq).toBe(0)
    await new Promise((r) => setTimeout(r, 0))
    expect(errors).toHaveBeenCalledTimes(1)
    expect((errors.mock.calls[0][1] as Error).message).toBe('async boom')
  })

  it('SS-11: an append from inside an observer is refused (and being contained, nothing is logged)', () => {
    const session = createSession()
    let inner: unknown
    session.observe((event, s) => {
      if (event.type !== 'turn/start') return
      expect(s.publishing).toBe(true)
      try {
        s.append('user/message', user('followup'), { surfaceOp: 'append' })
      } catch (err) {
        inner = err
        throw err
      }
    })
    session.append('turn/start', { turn: 1 })
    expect(inner).toBeInstanceOf(SessionAppendError)
    expect((inner as Error).message).toBe('cannot append while session/event observers are running')
    expect(session.length).toBe(1)
    expect(errors).toHaveBeenCalledTimes(1)
  })

  it('SS-11: an async observer may append after publication ended', async () => {
    const session = createSession()
    session.observe(async (event, s) => {
      await Promise.resolve()
      if (event.type === 'turn/start') s.append('step/start', { turn: 1, step: 1 })
    })
    session.append('turn/start', { turn: 1 })
    await new Promise((r) => setTimeout(r, 0))
    expect(session.events.map((e) => e.type)).toEqual(['turn/start', 'step/start'])
  })

  it('SS-11: unsubscribing stops an observer, even mid-publication', () => {
    const session = createSession()
    const calls: string[] = []
    let offB = (): void => {}
    const offA = session.observe(() => {
      calls.push('a')
      offB()
    })
    offB = session.observe(() => void calls.push('b'))
    session.append('turn/start', { turn: 1 })
    expect(calls).toEqual(['a'])
    offA()
    offA()
    session.append('step/start', { turn: 1, step: 1 })
    expect(calls).toEqual(['a'])
  })

  it('SS-11: events$ emits synchronously, after the observers, in seq order', () => {
    const session = createSession()
    const order: string[] = []
    session.observe((e) => void order.push(`observer ${e.seq}`))
    const sub = session.events$.subscribe((e) => order.push(`events$ ${e.seq}`))
    session.append('turn/start', { turn: 1 })
    expect(order).toEqual(['observer 0', 'events$ 0'])
    sub.unsubscribe()
    session.append('step/start', { turn: 1, step: 1 })
    expect(order).toHaveLength(3)
  })

  it('SS-11: a throwing events$ subscriber does not break append and is reported', () => {
    const session = createSession()
    const got: number[] = []
    session.events$.subscribe(() => {
      throw new Error('rx boom')
    })
    session.events$.subscribe({ next: (e) => void got.push(e.seq) })
    expect(session.append('turn/start', { turn: 1 }).seq).toBe(0)
    expect(got).toEqual([0])
    expect(errors).toHaveBeenCalledTimes(1)
    expect((errors.mock.calls[0][1] as Error).message).toBe('rx boom')
  })

  it('SS-11: events$ works through operators', async () => {
    const { filter, map, firstValueFrom, take, toArray } = await import('rxjs')
    const session = createSession()
    const types = firstValueFrom(
      session.events$.pipe(
        filter((e) => e.type !== 'turn/start'),
        map((e) => e.type),
        take(2),
        toArray(),
      ),
    )
    session.append('turn/start', { turn: 1 })
    session.append('step/start', { turn: 1, step: 1 })
    session.append('step/end', { turn: 1, step: 1 })
    expect(await types).toEqual(['step/start', 'step/end'])
  })

  it('SS-11: an append made by an events$ subscriber reaches every subscriber in seq order', () => {
    const session = createSession()
    const a: number[] = []
    const b: number[] = []
    session.events$.subscribe((e) => {
      a.push(e.seq)
      if (e.type === 'turn/start') session.append('step/start', { turn: 1, step: 1 })
    })
    session.events$.subscribe((e) => void b.push(e.seq))
    session.append('turn/start', { turn: 1 })
    expect(a).toEqual([0, 1])
    expect(b).toEqual([0, 1])
  })
})

describe('SS-13 rebuildable', () => {
  it('SS-13: the history seen after every append equals a from-scratch derivation of that log prefix', () => {
    const session = createSession()
    const seen: unknown[][] = []
    session.observe((_e, s) => void seen.push(s.deriveMessages()))
    sampleTurn(session)
    const [u1] = session.surface()
    session.append('user/message', user('compact'), { surfaceOp: { op: 'replace', start: u1, end: u1 }, sourceEventSeqs: [u1] })
    seen.forEach((history, seq) => {
      expect(history).toEqual(naiveDerive(session.events.slice(0, seq + 1)))
      expect(history).toEqual(deriveMessagesFrom(session.events.slice(0, seq + 1)))
    })
  })

  it('SS-13: without replacements each history extends the previous one', () => {
    const session = createSession()
    const seen: { id: string }[][] = []
    session.observe((_e, s) => void seen.push(s.deriveMessages()))
    sampleTurn(session)
    for (let i = 1; i < seen.length; i++) expect(seen[i].slice(0, seen[i - 1].length)).toEqual(seen[i - 1])
  })
})

describe('failNextAppend: an injected store failure', () => {
  it('refuses the next append of that type with the given error, logs nothing, and fires once', () => {
    const session = createSession({ now: ticking() })
    const seen: string[] = []
    session.observe((e) => void seen.push(e.type))
    const error = new Error('disk full')
    session.failNextAppend('step/start', error)
    session.append('turn/start', { turn: 1 })
    expect(thrown(() => session.append('step/start', { turn: 1, step: 1 }))).toBe(error)
    expect(session.events.map((e) => e.type)).toEqual(['turn/start'])
    session.append('step/start', { turn: 1, step: 1 })
    expect(session.events.map((e) => e.type)).toEqual(['turn/start', 'step/start'])
    expect(seen).toEqual(['turn/start', 'step/start'])
  })

  it('queues failures of the same type, defaults to a SessionAppendError, and leaves an invalid event to fail on its own', () => {
    const session = createSession()
    session.failNextAppend('turn/start')
    session.failNextAppend('turn/start', new Error('second'))
    // an invalid event is refused by validation and does not use up the fault
    expect(thrown(() => session.append('turn/start', { turn: 0 }))).toBeInstanceOf(SessionAppendError)
    const first = thrown(() => session.append('turn/start', { turn: 1 }))
    expect(first).toBeInstanceOf(SessionAppendError)
    expect(first.message).toBe('injected failure of the next turn/start append')
    expect(thrown(() => session.append('turn/start', { turn: 1 })).message).toBe('second')
    session.append('turn/start', { turn: 1 })
    expect(session.length).toBe(1)
  })

  it('never touches seed events, and rejects a missing type or a non-Error', () => {
    const source = createSession()
    source.append('turn/start', { turn: 1 })
    const seeded = createSession({ seed: source.events })
    seeded.failNextAppend('turn/end')
    expect(seeded.events.map((e) => e.type)).toEqual(['turn/start', 'session/end-seed'])
    expect(thrown(() => seeded.failNextAppend(''))).toBeInstanceOf(ConfigError)
    expect(thrown(() => seeded.failNextAppend('turn/end', 'nope' as never))).toBeInstanceOf(ConfigError)
  })
})

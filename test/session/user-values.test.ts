// SS-2 beside the one trusted path (events the stock machine built skip the schema pass): whatever came from user
// code must still be checked, and copied unless it is already immutable lossless JSON (then keeping it is as good as a
// copy). These tests fail if a tool's, an adapter's or a caller's value reached the log unchecked or still changeable.
import { describe, expect, it } from 'vitest'
import { z } from 'zod/v4'
import { createAgent, defineTool, userMessage, type ModelAdapter, type SessionEventOf, type StreamChunk, type UserMessage } from '../../src/index.js'
import { LosslessJsonError } from '../../src/errors.js'
import { MAX_JSON_DEPTH, toFrozenJson } from '../../src/session/lossless.js'
import { createSession } from '../../src/session/session.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, track } from '../helpers.js'

const quiet = { error: () => {} }

/** Every object and array of `value`, frozen or not. */
function containers(value: unknown, out: object[] = []): object[] {
  if (typeof value === 'object' && value !== null) {
    out.push(value)
    for (const key of Object.keys(value)) containers((value as Record<string, unknown>)[key], out)
  }
  return out
}

/** True when every container of `value` is frozen and holds only enumerable data properties: nothing in it can change. */
function isImmutable(value: unknown): boolean {
  return containers(value).every(
    (c) =>
      Object.isFrozen(c) &&
      Reflect.ownKeys(c).every((key) => {
        const d = Object.getOwnPropertyDescriptor(c, key)!
        return 'value' in d && (d.enumerable || (Array.isArray(c) && key === 'length'))
      }),
  )
}

/** True when `value` is immutable, reads back from JSON as it is, and shares no container of `foreign` that could change. */
function isOwnFrozenCopy(value: unknown, foreign: unknown): boolean {
  const changeable = new Set(containers(foreign).filter((c) => !isImmutable(c)))
  return isImmutable(value) && containers(value).every((c) => !changeable.has(c)) && isDeepStrictEqualJson(value)
}

function isDeepStrictEqualJson(value: unknown): boolean {
  try {
    expect(JSON.parse(JSON.stringify(value))).toStrictEqual(value)
    return true
  } catch {
    return false
  }
}

describe('SS-2: user values in machine-built events are still checked, and copied unless immutable', () => {
  it('SS-2: a tool that mutates its result meta after returning it does not change the logged tool/result', async () => {
    const meta = { hits: [1, 2], source: { name: 'index' } }
    const tool = defineTool({
      name: 'lookup',
      description: 'looks up',
      input: z.object({}),
      execute: () => {
        // mutated once the runtime has taken the result
        setTimeout(() => {
          meta.hits.push(3)
          meta.source.name = 'changed'
        })
        return { content: 'found', meta }
      },
    })
    const agent = track(
      createAgent({ model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]), textResponse('done')]), tools: [tool] }),
    )
    agent.followup('go')
    await agent.whenIdle()
    await new Promise((resolve) => setTimeout(resolve, 5))
    const [result] = ofType(agent, 'tool/result')
    expect(result.data.meta).toEqual({ hits: [1, 2], source: { name: 'index' } })
    expect(isOwnFrozenCopy(result.data, meta)).toBe(true)
    await agent.dispose()
  })

  it('SS-2: a tool whose result meta holds an exotic value ends its call with an error result, and the log holds none of it', async () => {
    const tool = defineTool({ name: 'lookup', description: 'looks up', input: z.object({}), execute: () => ({ content: 'found', meta: { at: new Date(0) } }) })
    const agent = track(
      createAgent({
        model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]), textResponse('done')]),
        tools: [tool],
        logger: quiet,
      }),
    )
    agent.followup('go')
    await agent.whenIdle()
    const [result] = ofType(agent, 'tool/result')
    expect(result.data.message.content[0].isError).toBe(true)
    expect(result.data.message.content[0].content).toMatch(/meta\.at.*exotic object \(Date\)/)
    expect(result.data.meta).toBeUndefined()
    await agent.dispose()
  })

  it('SS-2: blocks an adapter mutates after yielding them are logged, in the chunk and in the assistant message, as they were yielded', async () => {
    const block = { type: 'tool-call', id: 'c1', name: 'lookup', arguments: '{}' }
    const usage = { inputTokens: 3, outputTokens: 4 }
    let calls = 0
    const model: ModelAdapter = {
      provider: 'p',
      model: 'm',
      async *stream() {
        if (calls++ > 0) {
          yield* textResponse('done')
          return
        }
        yield { type: 'block-start', index: 0, blockType: 'tool-call' }
        yield { type: 'block-end', index: 0, block } as StreamChunk
        block.name = 'other'
        block.arguments = '{"x":1}'
        yield { type: 'usage', usage }
        usage.outputTokens = 99
        yield { type: 'finish', reason: { kind: 'tool-calls' } }
      },
    }
    const tool = defineTool({ name: 'lookup', description: 'looks up', input: z.object({}), execute: () => 'ok' })
    const agent = track(createAgent({ model, tools: [tool] }))
    agent.followup('go')
    await agent.whenIdle()
    const [anchor] = ofType(agent, 'assistant/message')
    expect(anchor.data.message.content).toEqual([{ type: 'tool-call', id: 'c1', name: 'lookup', arguments: '{}' }])
    expect(anchor.data.usage).toEqual({ inputTokens: 3, outputTokens: 4 })
    expect(isOwnFrozenCopy(anchor.data, [block, usage])).toBe(true)
    const chunks = ofType(agent, 'assistant/chunk').map((e) => e.data.chunk)
    expect(chunks).toContainEqual({ type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c1', name: 'lookup', arguments: '{}' } })
    expect(chunks).toContainEqual({ type: 'usage', usage: { inputTokens: 3, outputTokens: 4 } })
    for (const chunk of chunks) expect(isOwnFrozenCopy(chunk, [block, usage])).toBe(true)
    await agent.dispose()
  })

  it("SS-2: a caller's own frozen message with a getter is logged as plain data, not as the caller's object", async () => {
    let reads = 0
    const message = Object.freeze({
      id: 'u1',
      role: 'user' as const,
      content: Object.freeze([
        Object.freeze({
          type: 'text' as const,
          get text() {
            return `read ${++reads}`
          },
        }),
      ]),
      source: Object.freeze({ kind: 'user' as const }),
    })
    const agent = track(createAgent({ model: scriptedModel([textResponse('hi')]) }))
    agent.followup(message as UserMessage)
    await agent.whenIdle()
    const logged = [...ofType(agent, 'user/message').map((e) => e.data), ...ofType(agent, 'agent/inbox/spliced').flatMap((e) => e.data.inserted)]
    expect(logged.length).toBeGreaterThan(0)
    for (const data of logged) {
      expect(isOwnFrozenCopy(data, message)).toBe(true)
      expect(Object.getOwnPropertyDescriptor(data.content[0], 'text')).toMatchObject({ writable: false, value: expect.stringMatching(/^read \d+$/) })
    }
    await agent.dispose()
  })

  it('SS-2: a deep-frozen value is not trusted for being frozen: appended, it is checked, and kept only when nothing in it can change', () => {
    const session = createSession()
    const exotic = Object.freeze({
      id: 'u1',
      role: 'user',
      content: Object.freeze([Object.freeze({ type: 'text', text: new String('x') })]),
      source: Object.freeze({ kind: 'user' }),
    })
    expect(() => session.append('user/message', exotic as never, { surfaceOp: 'append' })).toThrow(LosslessJsonError)
    const plain = Object.freeze({
      id: 'u2',
      role: 'user' as const,
      content: Object.freeze([Object.freeze({ type: 'text' as const, text: 'x' })]),
      source: Object.freeze({ kind: 'user' as const }),
    })
    const event = session.append('user/message', plain as UserMessage, { surfaceOp: 'append' })
    expect(event.data).toEqual(plain)
    // immutable lossless JSON already: the log holds it as it is
    expect(event.data).toBe(plain)
  })

  it('SS-2: frozen values that are not lossless JSON are refused as before, whatever else in the value is frozen', () => {
    const frozenPlain = Object.freeze({ kind: 'user' as const })
    const refusedAt: [unknown, string][] = [
      [Object.freeze({ at: Object.freeze(new Date(0)) }), 'data.x.at'],
      [Object.freeze({ at: undefined }), 'data.x.at'],
      [Object.freeze({ at: -0 }), 'data.x.at'],
      [Object.freeze({ at: NaN }), 'data.x.at'],
      [Object.freeze({ at: 1n }), 'data.x.at'],
      [Object.freeze({ at: Object.freeze(new Map()) }), 'data.x.at'],
      [Object.freeze(Object.assign(Object.create(null), { at: Object.freeze(Object.assign(new Array<number>(3), { 0: 1, 2: 2 })) })), 'data.x.at[1]'],
      [Object.freeze({ [Symbol('s')]: 1 }), 'data.x'],
      [Object.freeze(Object.assign([1], { extra: 2 })), 'data.x'],
    ]
    for (const [x, path] of refusedAt) {
      const session = createSession()
      let error: unknown
      try {
        session.append('x/frozen', Object.freeze({ ok: frozenPlain, x }), { ignorable: true })
      } catch (err) {
        error = err
      }
      expect(error, path).toBeInstanceOf(LosslessJsonError)
      expect((error as LosslessJsonError).path).toBe(path)
      expect(session.length).toBe(0)
    }
  })

  it('SS-2: a frozen value that could still change or that JSON would not give back is logged as a plain copy', () => {
    let reads = 0
    const getter = Object.freeze({
      get n() {
        return ++reads
      },
    })
    const hidden = Object.freeze(Object.defineProperty({ shown: 1 }, 'hidden', { value: 2, enumerable: false }))
    const bare = Object.freeze(Object.assign(Object.create(null) as object, { a: 1 }))
    const proxy = new Proxy(Object.freeze({ a: 1 }), {})
    const elementGetter = Object.freeze(Object.defineProperty([0], 0, { get: () => ++reads, enumerable: true }))
    const logged = [getter, hidden, bare, proxy, elementGetter].map(
      (value) => (createSession().append('x/frozen', { value }, { ignorable: true }).data as { value: unknown }).value,
    )
    // each getter ran once, as the copy read it
    expect(reads).toBe(2)
    for (const [k, value] of [getter, hidden, bare, proxy, elementGetter].entries()) {
      expect(logged[k] !== value).toBe(true)
      expect(isImmutable(logged[k])).toBe(true)
      expect(Object.getPrototypeOf(logged[k])).toBe(Array.isArray(logged[k]) ? Array.prototype : Object.prototype)
      expect(JSON.parse(JSON.stringify(logged[k]))).toStrictEqual(logged[k])
    }
  })

  it('SS-2: a tool whose result meta is a frozen value holding a Date ends its call with an error result, and the log holds none of it', async () => {
    const meta = Object.freeze({ list: Object.freeze([1]), at: Object.freeze(new Date(0)) })
    const tool = defineTool({ name: 'lookup', description: 'looks up', input: z.object({}), execute: () => Object.freeze({ content: 'found', meta }) })
    const agent = track(
      createAgent({
        model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]), textResponse('done')]),
        tools: [tool],
        logger: quiet,
      }),
    )
    agent.followup('go')
    await agent.whenIdle()
    const [result] = ofType(agent, 'tool/result')
    expect(result.data.message.content[0].isError).toBe(true)
    expect(result.data.message.content[0].content).toMatch(/meta\.at.*exotic object \(Date\)/)
    expect(result.data.meta).toBeUndefined()
    for (const event of agent.session.events) expect(isOwnFrozenCopy(event, meta)).toBe(true)
    await agent.dispose()
  })

  it('SS-2: a tool whose frozen result meta has a getter is logged as the plain data it read once', async () => {
    let reads = 0
    const meta = Object.freeze({
      fixed: Object.freeze({ a: 1 }),
      get live() {
        return ++reads
      },
    })
    const tool = defineTool({ name: 'lookup', description: 'looks up', input: z.object({}), execute: () => ({ content: 'found', meta }) })
    const agent = track(
      createAgent({ model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]), textResponse('done')]), tools: [tool] }),
    )
    agent.followup('go')
    await agent.whenIdle()
    const [result] = ofType(agent, 'tool/result')
    expect(result.data.message.content[0].isError).toBe(false)
    const logged = result.data.meta as { live: number; fixed: unknown }
    expect(logged).not.toBe(meta)
    expect(Object.getOwnPropertyDescriptor(logged, 'live')).toMatchObject({ value: expect.any(Number), writable: false })
    expect(isOwnFrozenCopy(result.data, meta)).toBe(true)
    await agent.dispose()
  })
})

describe('SS-2, SS-7: a value the log already holds is held once', () => {
  it('SS-2: the anchor holds the very blocks and usage of its chunks, and user/message the very message its inbox splice logged', async () => {
    const agent = track(
      createAgent({
        model: scriptedModel([toolCallResponse([{ id: 'c1', name: 't', arguments: '{}' }], 'calling'), textResponse('done')]),
        tools: [defineTool({ name: 't', description: 't', input: z.object({}), execute: () => 'ok' })],
      }),
    )
    agent.followup('go')
    await agent.whenIdle()
    const anchors = ofType(agent, 'assistant/message')
    expect(anchors.length).toBe(2)
    for (const anchor of anchors) {
      const chunks = (anchor.sourceEventSeqs ?? []).map((seq) => (agent.session.at(seq) as SessionEventOf<'assistant/chunk'>).data.chunk)
      const blocks = chunks.flatMap((c) => (c.type === 'block-end' ? [c.block] : []))
      expect(anchor.data.message.content.length).toBe(blocks.length)
      anchor.data.message.content.forEach((block, k) => expect(block).toBe(blocks[k]))
      const usage = chunks.find((c) => c.type === 'usage')
      if (usage?.type === 'usage') expect(anchor.data.usage).toBe(usage.usage)
    }
    const [inserted] = ofType(agent, 'agent/inbox/spliced').flatMap((e) => e.data.inserted)
    const [user] = ofType(agent, 'user/message')
    expect(user.data).toBe(inserted)
    for (const event of agent.session.events) expect(isImmutable(event)).toBe(true)
    await agent.dispose()
  })
})

describe('SS-2: a sealed part decides nothing its plain copy would not', () => {
  /** `value` inside `levels` arrays. */
  const wrapped = (value: unknown, levels: number): unknown => {
    let out = value
    for (let i = 0; i < levels; i++) out = [out]
    return out
  }

  it('SS-2: at the MAX_JSON_DEPTH boundary a userMessage is accepted or refused exactly as its plain copy is', () => {
    // a text message is three levels of containers: the message, its content, the block
    for (const levels of [MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH - 2]) {
      const outcome = (message: unknown) => {
        try {
          createSession().append('x/wrapped', wrapped(message, levels), { ignorable: true })
          return 'logged'
        } catch (error) {
          return error instanceof LosslessJsonError ? `refused: ${error.message}` : `threw ${String(error)}`
        }
      }
      const built = userMessage('hello')
      expect(outcome(built)).toBe(outcome(JSON.parse(JSON.stringify(built))))
    }
  })

  it('SS-2: toFrozenJson still hands back a copy of a built message', () => {
    const built = userMessage('hello')
    const copy = toFrozenJson(built)
    expect(copy).toEqual(built)
    expect(copy).not.toBe(built)
    expect(copy.content).not.toBe(built.content)
  })

  it('SS-2: an assistant message is logged equal to its chunks however the chunks were shared', async () => {
    const agent = track(
      createAgent({
        model: scriptedModel([toolCallResponse([{ id: 'c1', name: 't', arguments: '{}' }], 'calling'), textResponse('done')]),
        tools: [defineTool({ name: 't', description: 't', input: z.object({}), execute: () => 'ok' })],
      }),
    )
    agent.followup('go')
    await agent.whenIdle()
    for (const anchor of ofType(agent, 'assistant/message')) {
      const chunks = (anchor.sourceEventSeqs ?? []).map((seq) => agent.session.at(seq) as SessionEventOf<'assistant/chunk'>)
      const blocks = chunks.flatMap((e) => (e.data.chunk.type === 'block-end' ? [e.data.chunk.block] : []))
      expect(anchor.data.message.content).toEqual(blocks)
      expect(JSON.parse(JSON.stringify(anchor.data))).toEqual(anchor.data)
    }
    await agent.dispose()
  })
})

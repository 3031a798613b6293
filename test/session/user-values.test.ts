// SS-2 beside the one trusted path (events the stock machine built skip the schema pass; a chunk admitChunk parsed
// is kept as it is): whatever came from user code must still be checked and copied. These tests fail if a tool's,
// an adapter's or a caller's value reached the log uncopied or unchecked.
import { describe, expect, it } from 'vitest'
import { z } from 'zod/v4'
import { createAgent, defineTool, userMessage, type ModelAdapter, type SessionEventOf, type StreamChunk, type UserMessage } from '../../src/index.js'
import { LosslessJsonError } from '../../src/errors.js'
import { MAX_JSON_DEPTH, createSession, toFrozenJson } from '../../src/session/index.js'
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

/** True when `value` is deep-frozen and shares no container with `foreign`. */
function isOwnFrozenCopy(value: unknown, foreign: unknown): boolean {
  const theirs = new Set(containers(foreign))
  return containers(value).every((c) => Object.isFrozen(c) && !theirs.has(c))
}

describe('SS-2: user values in machine-built events are still checked and copied', () => {
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

  it('SS-2: a deep-frozen value is not trusted for being frozen: appended, it is checked and copied', () => {
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
    expect(isOwnFrozenCopy(event.data, plain)).toBe(true)
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

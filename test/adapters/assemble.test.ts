import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { admitChunk, normalizeStream, StreamAssembler } from '../../src/adapters/assemble.js'
import { LlmError } from '../../src/adapters/failure.js'
import type { ModelAdapter, ModelRequest } from '../../src/adapters/types.js'
import type { StreamChunk } from '../../src/session/schemas.js'
import { maxTokensResponse, reasoningResponse, textResponse, toolCallResponse } from '../../src/testing/responses.js'

function assemble(chunks: readonly StreamChunk[]): StreamAssembler {
  const assembler = new StreamAssembler()
  for (const chunk of chunks) assembler.push(chunk)
  return assembler
}

describe('StreamAssembler', () => {
  it('assembles a realistic text stream', () => {
    const usage = { inputTokens: 10, outputTokens: 3 }
    const result = assemble(textResponse('hello world', { usage })).result()
    expect(result).toEqual({ content: [{ type: 'text', text: 'hello world' }], finish: { kind: 'stop' }, usage, toolCalls: [] })
  })

  it('a stream with no finish counts as stop and has no usage key', () => {
    const assembler = assemble([{ type: 'text-delta', index: 0, text: 'hi' }])
    expect(assembler.finished).toBe(false)
    const result = assembler.result()
    expect(result.finish).toEqual({ kind: 'stop' })
    expect('usage' in result).toBe(false)
    expect('replayState' in result).toBe(false)
  })

  it('block-end is authoritative over deltas', () => {
    const result = assemble([
      { type: 'text-delta', index: 0, text: 'draft' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'final' } },
    ]).result()
    expect(result.content).toEqual([{ type: 'text', text: 'final' }])
  })

  it('the first close wins; later deltas and re-closes for that index are ignored', () => {
    const result = assemble([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'one' } },
      { type: 'text-delta', index: 0, text: 'late' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'two' } },
    ]).result()
    expect(result.content).toEqual([{ type: 'text', text: 'one' }])
  })

  it('delta-only text and reasoning assemble from their deltas', () => {
    const result = assemble([
      { type: 'reasoning-delta', index: 0, text: 'think' },
      { type: 'text-delta', index: 1, text: 'ans' },
      { type: 'reasoning-delta', index: 0, text: 'ing' },
      { type: 'text-delta', index: 1, text: 'wer' },
    ]).result()
    expect(result.content).toEqual([
      { type: 'reasoning', text: 'thinking' },
      { type: 'text', text: 'answer' },
    ])
  })

  it('an unclosed tool call assembles from deltas: missing id is call-<index>, missing name is empty', () => {
    const result = assemble([
      { type: 'tool-call-delta', index: 3, argumentsDelta: '{"a":' },
      { type: 'tool-call-delta', index: 3, argumentsDelta: '1}' },
      { type: 'tool-call-delta', index: 4, id: 'c9', name: 'read', argumentsDelta: '' },
      { type: 'finish', reason: { kind: 'tool-calls' } },
    ]).result()
    expect(result.content).toEqual([
      { type: 'tool-call', id: 'call-3', name: '', arguments: '{"a":1}' },
      { type: 'tool-call', id: 'c9', name: 'read', arguments: '' },
    ])
    expect(result.toolCalls).toEqual(result.content)
  })

  it('a tool call keeps the first id and name its deltas carry', () => {
    const result = assemble([
      { type: 'tool-call-delta', index: 0, id: 'a', name: 'n1', argumentsDelta: 'x' },
      { type: 'tool-call-delta', index: 0, id: 'b', name: 'n2', argumentsDelta: 'y' },
    ]).result()
    expect(result.toolCalls).toEqual([{ type: 'tool-call', id: 'a', name: 'n1', arguments: 'xy' }])
  })

  it('tool arguments stay raw strings, even when not JSON', () => {
    const result = assemble(toolCallResponse([{ id: 'c1', name: 'bash', arguments: 'not json {' }])).result()
    expect(result.toolCalls[0].arguments).toBe('not json {')
    expect(result.finish).toEqual({ kind: 'tool-calls' })
  })

  it('the last usage wins', () => {
    const result = assemble([
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
      { type: 'usage', usage: { inputTokens: 5, outputTokens: 7, reasoningTokens: 2 } },
      { type: 'finish', reason: { kind: 'stop' } },
    ]).result()
    expect(result.usage).toEqual({ inputTokens: 5, outputTokens: 7, reasoningTokens: 2 })
  })

  it('nothing after finish is assembled', () => {
    const assembler = assemble([
      { type: 'text-delta', index: 0, text: 'a' },
      { type: 'finish', reason: { kind: 'stop' } },
      { type: 'text-delta', index: 0, text: 'b' },
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
      { type: 'finish', reason: { kind: 'max-tokens' } },
    ])
    expect(assembler.finished).toBe(true)
    expect(assembler.result()).toEqual({ content: [{ type: 'text', text: 'a' }], finish: { kind: 'stop' }, toolCalls: [] })
  })

  it('keeps empty text blocks (decision: positions stay aligned with replayState.blocks)', () => {
    const result = assemble([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'block-end', index: 1, block: { type: 'text', text: '' } },
    ]).result()
    expect(result.content).toEqual([
      { type: 'text', text: '' },
      { type: 'text', text: '' },
    ])
  })

  it('an open image block cannot be assembled and is dropped; a closed one is kept', () => {
    const image = { type: 'image' as const, attachment: { mediaType: 'image/png', data: 'AAAA' } }
    const result = assemble([
      { type: 'block-start', index: 0, blockType: 'image' },
      { type: 'block-start', index: 1, blockType: 'image' },
      { type: 'block-end', index: 1, block: image },
    ]).result()
    expect(result.content).toEqual([image])
  })

  it('a delta of another kind than its index is ignored', () => {
    const result = assemble([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'reasoning-delta', index: 0, text: 'wrong' },
      { type: 'text-delta', index: 0, text: 'right' },
    ]).result()
    expect(result.content).toEqual([{ type: 'text', text: 'right' }])
  })

  describe('ST-9 max-tokens', () => {
    const chunks: StreamChunk[] = [
      { type: 'text-delta', index: 0, text: 'partial' },
      { type: 'tool-call-delta', index: 1, id: 'c1', name: 'x', argumentsDelta: '{"tru' },
      { type: 'block-end', index: 2, block: { type: 'tool-call', id: 'c2', name: 'y', arguments: '{}' } },
      { type: 'reasoning-delta', index: 3, text: 'r' },
    ]

    it('drops every tool-call block and prunes aligned replay blocks', () => {
      const result = assemble([
        ...chunks,
        { type: 'finish', reason: { kind: 'max-tokens' }, replayState: { response: { id: 'resp' }, blocks: ['t', 'c1', 'c2', 'r'] } },
      ]).result()
      expect(result.content).toEqual([
        { type: 'text', text: 'partial' },
        { type: 'reasoning', text: 'r' },
      ])
      expect(result.toolCalls).toEqual([])
      expect(result.replayState).toEqual({ response: { id: 'resp' }, blocks: ['t', 'r'] })
    })

    it('discards a replay envelope that is not aligned', () => {
      for (const replayState of [{ response: 1, blocks: ['a'] }, { response: 1 }]) {
        const result = assemble([...chunks, { type: 'finish', reason: { kind: 'max-tokens' }, replayState }]).result()
        expect('replayState' in result).toBe(false)
      }
    })

    it('keeps the replay envelope when there was no tool call to drop', () => {
      const replayState = { response: 'r' }
      const result = assemble([...maxTokensResponse('cut').slice(0, -1), { type: 'finish', reason: { kind: 'max-tokens' }, replayState }]).result()
      expect(result.replayState).toEqual(replayState)
    })

    it('other finishes keep tool calls and replay state untouched', () => {
      const replayState = { response: 'r', blocks: [1, 2, 3, 4] }
      const result = assemble([...chunks, { type: 'finish', reason: { kind: 'tool-calls' }, replayState }]).result()
      expect(result.toolCalls.map((c) => c.id)).toEqual(['c1', 'c2'])
      expect(result.replayState).toBe(replayState)
    })
  })

  describe('CX-7 interruptedContent', () => {
    it('keeps closed and open text/reasoning, drops tool calls', () => {
      const assembler = assemble([
        ...reasoningResponse('why', 'done').filter((c) => c.type !== 'finish'),
        { type: 'tool-call-delta', index: 2, id: 'c', name: 'n', argumentsDelta: '{' },
        { type: 'text-delta', index: 3, text: 'and more' },
      ])
      expect(assembler.interruptedContent()).toEqual([
        { type: 'reasoning', text: 'why' },
        { type: 'text', text: 'done' },
        { type: 'text', text: 'and more' },
      ])
    })

    it('CX-8 is null when nothing visible streamed', () => {
      expect(new StreamAssembler().interruptedContent()).toBeNull()
      expect(assemble([{ type: 'tool-call-delta', index: 0, id: 'c', argumentsDelta: '{"a"' }]).interruptedContent()).toBeNull()
      expect(assemble([{ type: 'text-delta', index: 0, text: '  \n\t' }]).interruptedContent()).toBeNull()
    })
  })

  it('property: a text split into random deltas assembles to the same text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.array(fc.nat()), (text, cuts) => {
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
        const parts: string[] = []
        let from = 0
        for (const p of [...points, text.length]) {
          parts.push(text.slice(from, p))
          from = p
        }
        const assembler = assemble(parts.map((t): StreamChunk => ({ type: 'text-delta', index: 0, text: t })))
        expect(assembler.result().content).toEqual([{ type: 'text', text }])
      }),
    )
  })

  it('property: interleaved indexes keep first-seen order and each block its own text', () => {
    const stream = fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.string({ maxLength: 4 })), { maxLength: 40 })
    fc.assert(
      fc.property(stream, (deltas) => {
        const order: number[] = []
        const texts = new Map<number, string>()
        for (const [index, text] of deltas) {
          if (!texts.has(index)) order.push(index)
          texts.set(index, (texts.get(index) ?? '') + text)
        }
        const assembler = assemble(deltas.map(([index, text]): StreamChunk => ({ type: 'text-delta', index, text })))
        expect(assembler.result().content).toEqual(order.map((index) => ({ type: 'text', text: texts.get(index) })))
      }),
    )
  })
})

// ---- normalizeStream --------------------------------------------------------

function request(signal: AbortSignal = new AbortController().signal): ModelRequest {
  return { sessionId: 's', config: { provider: 'p', model: 'm' }, messages: [], signal }
}

function adapter(stream: (request: ModelRequest) => AsyncIterable<StreamChunk>): ModelAdapter {
  return { provider: 'p', model: 'm', stream }
}

async function collect(iterable: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of iterable) out.push(chunk)
  return out
}

/** Every object and array of `value`. */
function containers(value: unknown, out: object[] = []): object[] {
  if (typeof value === 'object' && value !== null) {
    out.push(value)
    for (const key of Object.keys(value)) containers((value as Record<string, unknown>)[key], out)
  }
  return out
}

describe('admitChunk', () => {
  it('ST-6: hands on a deep-frozen copy of what the adapter yielded, sharing none of its objects', () => {
    const yielded: unknown[] = [
      { type: 'text-delta', index: 0, text: 'hi' },
      { type: 'block-end', index: 1, block: { type: 'tool-call', id: 'c1', name: 'n', arguments: '{}' } },
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 2 } },
      { type: 'finish', reason: { kind: 'stop' }, replayState: { response: { id: 'r1', items: [1, 2] }, blocks: [{ sig: 'x' }] } },
    ]
    for (const raw of yielded) {
      const admitted = admitChunk(raw)
      expect(admitted.ok).toBe(true)
      if (!admitted.ok) continue
      expect(admitted.chunk).toEqual(raw)
      const theirs = new Set(containers(raw))
      for (const c of containers(admitted.chunk)) {
        expect(Object.isFrozen(c)).toBe(true)
        expect(theirs.has(c)).toBe(false)
      }
    }
  })

  it('ST-6: a chunk JSON would not give back (a present undefined, a -0) is MALFORMED_RESPONSE naming the field', () => {
    const undefinedId = admitChunk({ type: 'tool-call-delta', index: 0, id: undefined, argumentsDelta: '' })
    expect(!undefinedId.ok && undefinedId.failure).toMatchObject({ code: 'MALFORMED_RESPONSE', message: expect.stringContaining('chunk.id') })
    const minusZero = admitChunk({ type: 'usage', usage: { inputTokens: -0, outputTokens: 1 } })
    expect(!minusZero.ok && minusZero.failure.code).toBe('MALFORMED_RESPONSE')
  })
})

describe('normalizeStream', () => {
  it('passes chunks through and stops after finish', async () => {
    let closed = false
    const chunks = await collect(
      normalizeStream(
        adapter(async function* () {
          try {
            yield* textResponse('hi')
            yield { type: 'text-delta', index: 9, text: 'after finish' }
          } finally {
            closed = true
          }
        }),
        request(),
      ),
    )
    expect(chunks).toEqual(textResponse('hi'))
    expect(closed).toBe(true)
  })

  it('a stream that just ends is passed through as is', async () => {
    const chunks = await collect(
      normalizeStream(
        adapter(async function* () {
          yield { type: 'text-delta', index: 0, text: 'x' }
        }),
        request(),
      ),
    )
    expect(chunks).toEqual([{ type: 'text-delta', index: 0, text: 'x' }])
  })

  it('HK-6 a synchronous throw in stream() becomes finish{error}', async () => {
    const chunks = await collect(
      normalizeStream(
        adapter(() => {
          throw new Error('boom')
        }),
        request(),
      ),
    )
    expect(chunks).toEqual([{ type: 'finish', reason: { kind: 'error', failure: { message: 'boom', code: 'UNKNOWN' } } }])
  })

  it('HK-6 a non-iterable return value becomes finish{error}', async () => {
    const chunks = await collect(
      normalizeStream(
        adapter(() => ({}) as AsyncIterable<StreamChunk>),
        request(),
      ),
    )
    expect(chunks).toHaveLength(1)
    expect(chunks[0]).toMatchObject({ type: 'finish', reason: { kind: 'error', failure: { code: 'UNKNOWN' } } })
  })

  it('HK-6 a throw during iteration keeps earlier chunks and keeps coded facts', async () => {
    const chunks = await collect(
      normalizeStream(
        adapter(async function* () {
          yield { type: 'text-delta', index: 0, text: 'par' }
          throw new LlmError({ message: 'slow down', code: 'RATE_LIMIT', status: 429 })
        }),
        request(),
      ),
    )
    expect(chunks).toEqual([
      { type: 'text-delta', index: 0, text: 'par' },
      { type: 'finish', reason: { kind: 'error', failure: { message: 'slow down', code: 'RATE_LIMIT', status: 429 } } },
    ])
  })

  it('RQ-8 a throw while the signal is aborted becomes finish{aborted} with code ABORTED', async () => {
    const controller = new AbortController()
    const chunks = await collect(
      normalizeStream(
        adapter(async function* () {
          controller.abort({ kind: 'user' })
          throw new Error('fetch aborted')
        }),
        request(controller.signal),
      ),
    )
    expect(chunks).toEqual([{ type: 'finish', reason: { kind: 'aborted', failure: { message: 'fetch aborted', code: 'ABORTED' } } }])
  })

  it('RQ-8 an ABORTED failure becomes finish{aborted} even with a live signal', async () => {
    const chunks = await collect(
      normalizeStream(
        adapter(async function* () {
          throw new LlmError({ message: 'upstream aborted', code: 'ABORTED' })
        }),
        request(),
      ),
    )
    expect(chunks).toEqual([{ type: 'finish', reason: { kind: 'aborted', failure: { message: 'upstream aborted', code: 'ABORTED' } } }])
  })

  it('a consumer that stops early closes the adapter', async () => {
    let closed = false
    const stream = normalizeStream(
      adapter(async function* () {
        try {
          for (;;) yield { type: 'text-delta', index: 0, text: '.' }
        } finally {
          closed = true
        }
      }),
      request(),
    )
    for await (const chunk of stream) {
      expect(chunk.type).toBe('text-delta')
      break
    }
    expect(closed).toBe(true)
  })

  it('a failure thrown into the stream by the consumer stays thrown', async () => {
    const stream = normalizeStream(
      adapter(async function* () {
        yield* textResponse('abc')
      }),
      request(),
    )
    await stream.next()
    await expect(stream.throw(new Error('consumer failed'))).rejects.toThrow('consumer failed')
  })
})

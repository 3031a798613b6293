import { describe, expect, it } from 'vitest'
import { normalizeStream } from '../../src/adapters/assemble.js'
import { LlmError } from '../../src/adapters/failure.js'
import type { ModelRequest } from '../../src/adapters/types.js'
import { ConfigError } from '../../src/errors.js'
import { StreamChunkSchema, type StreamChunk } from '../../src/session/schemas.js'
import { errorResponse, hang, maxTokensResponse, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { reasoningResponse } from '../../src/testing/responses.js'

function request(signal: AbortSignal = new AbortController().signal, sessionId = 's'): ModelRequest {
  return { sessionId, config: { provider: 'scripted', model: 'scripted-1' }, messages: [], signal }
}

async function collect(iterable: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of iterable) out.push(chunk)
  return out
}

describe('scriptedModel', () => {
  it('defaults its names and takes options', () => {
    const a = scriptedModel([])
    expect([a.provider, a.model, 'contextWindow' in a]).toEqual(['scripted', 'scripted-1', false])
    const b = scriptedModel([], { provider: 'deepseek', model: 'v3', contextWindow: 64_000 })
    expect([b.provider, b.model, b.contextWindow]).toEqual(['deepseek', 'v3', 64_000])
  })

  it('refuses a malformed script or names', () => {
    expect(() => scriptedModel([42 as unknown as 'hang'])).toThrow(ConfigError)
    expect(() => scriptedModel('nope' as unknown as [])).toThrow(ConfigError)
    expect(() => scriptedModel([], { model: '' })).toThrow(ConfigError)
  })

  it('replays one entry per request, records requests, counts what remains', async () => {
    const model = scriptedModel([textResponse('one'), textResponse('two')])
    expect(model.remaining).toBe(2)
    const first = request(undefined, 'a')
    expect(await collect(model.stream(first))).toEqual(textResponse('one'))
    expect(model.remaining).toBe(1)
    expect(await collect(model.stream(request(undefined, 'b')))).toEqual(textResponse('two'))
    expect(model.remaining).toBe(0)
    expect(model.requests.map((r) => r.sessionId)).toEqual(['a', 'b'])
    expect(model.requests[0]).toBe(first)
  })

  it('yields asynchronously', async () => {
    const model = scriptedModel([textResponse('x')])
    const iterator = model.stream(request())[Symbol.asyncIterator]()
    let settled = false
    const next = iterator.next().then((r) => {
      settled = true
      return r
    })
    expect(settled).toBe(false)
    expect((await next).value).toEqual({ type: 'block-start', index: 0, blockType: 'text' })
  })

  it('a function entry gets the request and may return arrays, promises, async iterables or hang', async () => {
    const seen: ModelRequest[] = []
    const model = scriptedModel([
      (r) => {
        seen.push(r)
        return textResponse(`for ${r.sessionId}`)
      },
      async () => textResponse('later'),
      () =>
        (async function* () {
          yield* textResponse('generated')
        })(),
    ])
    const r1 = request(undefined, 'r1')
    expect(await collect(model.stream(r1))).toEqual(textResponse('for r1'))
    expect(seen).toEqual([r1])
    expect(await collect(model.stream(request()))).toEqual(textResponse('later'))
    expect(await collect(model.stream(request()))).toEqual(textResponse('generated'))
  })

  it('a throwing function entry fails the request (as an adapter throw)', async () => {
    const model = scriptedModel([
      () => {
        throw new LlmError({ message: 'down', code: 'SERVER', status: 503 })
      },
    ])
    expect(await collect(normalizeStream(model, request()))).toEqual([
      { type: 'finish', reason: { kind: 'error', failure: { message: 'down', code: 'SERVER', status: 503 } } },
    ])
  })

  it('an exhausted script fails the request with SCRIPT_EXHAUSTED and still records it', async () => {
    const model = scriptedModel([textResponse('only')])
    await collect(model.stream(request()))
    const error = await collect(model.stream(request())).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LlmError)
    expect((error as LlmError).failure).toEqual({ message: 'scripted model has no response left for request 2', code: 'SCRIPT_EXHAUSTED' })
    expect(model.requests).toHaveLength(2)
    expect(model.remaining).toBe(0)
    expect(await collect(normalizeStream(model, request()))).toEqual([
      { type: 'finish', reason: { kind: 'error', failure: { message: 'scripted model has no response left for request 3', code: 'SCRIPT_EXHAUSTED' } } },
    ])
  })

  it("'hang' waits for the signal, then throws an AbortError with code ABORTED", async () => {
    const controller = new AbortController()
    const model = scriptedModel([hang])
    const pending = collect(model.stream(request(controller.signal))).catch((e: unknown) => e)
    await new Promise((resolve) => setTimeout(resolve, 5))
    controller.abort({ kind: 'user' })
    const error = (await pending) as LlmError
    expect(error).toBeInstanceOf(LlmError)
    expect(error.name).toBe('AbortError')
    expect(error.failure.code).toBe('ABORTED')
    expect(error.cause).toEqual({ kind: 'user' })
  })

  it("'hang' through normalizeStream becomes finish{aborted}", async () => {
    const controller = new AbortController()
    const model = scriptedModel([() => 'hang'])
    const pending = collect(normalizeStream(model, request(controller.signal)))
    setTimeout(() => controller.abort(), 1)
    const chunks = await pending
    expect(chunks).toHaveLength(1)
    expect(chunks[0]).toMatchObject({ type: 'finish', reason: { kind: 'aborted', failure: { code: 'ABORTED' } } })
  })

  it('stops yielding once the signal aborts', async () => {
    const controller = new AbortController()
    const model = scriptedModel([textResponse('a long answer')])
    const seen: StreamChunk[] = []
    const error = await (async () => {
      for await (const chunk of model.stream(request(controller.signal))) {
        seen.push(chunk)
        if (seen.length === 2) controller.abort()
      }
    })().catch((e: unknown) => e)
    expect(seen).toHaveLength(2)
    expect((error as Error).name).toBe('AbortError')
  })
})

describe('response helpers', () => {
  const all = {
    text: textResponse('hello there', { usage: { inputTokens: 3, outputTokens: 2 } }),
    tools: toolCallResponse(
      [
        { id: 'c1', name: 'read', arguments: '{"path":"a.txt"}' },
        { id: 'c2', name: 'list', arguments: '' },
      ],
      'let me look',
    ),
    maxTokens: maxTokensResponse('cut off'),
    reasoning: reasoningResponse('hmm', 'ok'),
    error: errorResponse({ message: 'nope', code: 'AUTH', status: 401 }),
  }

  it('every helper produces schema-valid chunks ending in one finish', () => {
    for (const chunks of Object.values(all)) {
      for (const chunk of chunks) expect(StreamChunkSchema.safeParse(chunk).success).toBe(true)
      expect(chunks.filter((c) => c.type === 'finish')).toHaveLength(1)
      expect(chunks[chunks.length - 1].type).toBe('finish')
    }
  })

  it('textResponse streams block-start, deltas, block-end, usage, finish{stop}', () => {
    expect(all.text.map((c) => c.type)).toEqual(['block-start', 'text-delta', 'text-delta', 'text-delta', 'block-end', 'usage', 'finish'])
    expect(
      all.text
        .filter((c) => c.type === 'text-delta')
        .map((c) => (c as { text: string }).text)
        .join(''),
    ).toBe('hello there')
    expect(textResponse('')).toEqual([{ type: 'finish', reason: { kind: 'stop' } }])
  })

  it('toolCallResponse puts text first, then one block per call, finish{tool-calls}', () => {
    const ends = all.tools.filter((c) => c.type === 'block-end')
    expect(ends.map((c) => (c as { index: number }).index)).toEqual([0, 1, 2])
    expect(ends.map((c) => (c as { block: unknown }).block)).toEqual([
      { type: 'text', text: 'let me look' },
      { type: 'tool-call', id: 'c1', name: 'read', arguments: '{"path":"a.txt"}' },
      { type: 'tool-call', id: 'c2', name: 'list', arguments: '' },
    ])
    expect(all.tools[all.tools.length - 1]).toEqual({ type: 'finish', reason: { kind: 'tool-calls' } })
    expect(toolCallResponse([{ id: 'x', name: 'n', arguments: '{}' }])[0]).toEqual({ type: 'block-start', index: 0, blockType: 'tool-call' })
  })

  it('maxTokensResponse and errorResponse finish as named', () => {
    expect(all.maxTokens[all.maxTokens.length - 1]).toEqual({ type: 'finish', reason: { kind: 'max-tokens' } })
    expect(all.error).toEqual([{ type: 'finish', reason: { kind: 'error', failure: { message: 'nope', code: 'AUTH', status: 401 } } }])
  })

  it('deltas never split a surrogate pair', () => {
    const chunks = textResponse('😀😀😀😀')
    for (const c of chunks) if (c.type === 'text-delta') expect(c.text).toBe('😀'.repeat(c.text.length / 2))
  })
})

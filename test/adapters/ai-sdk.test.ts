// aiSdkModel against the AI SDK's own mock model (MockLanguageModelV3 from
// ai/test) and a hand-built LanguageModelV4 object: stream parts as
// StreamChunks (BEHAVIOURS 1.4), the request as call options, provider
// metadata replayed, finish reasons, failures as codes (1.5), and abort.
import { APICallError, LoadAPIKeyError } from '@ai-sdk/provider'
import { MockLanguageModelV3, convertArrayToReadableStream } from 'ai/test'
import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { normalizeStream, StreamAssembler } from '../../src/adapters/assemble.js'
import { aiSdkModel, type AiSdkLanguageModel } from '../../src/adapters/ai-sdk.js'
import type { ModelAdapter, ModelRequest } from '../../src/adapters/types.js'
import { ConfigError } from '../../src/errors.js'
import { createAgent, defineTool, userMessage } from '../../src/index.js'
import { StreamChunkSchema, type AssistantMessage, type LlmFailure, type Message, type StreamChunk } from '../../src/session/schemas.js'
import { checkSessionInvariants } from '../../src/testing/index.js'

// ---- helpers ----------------------------------------------------------------

const usage = (input: number, output: number, extra: { cacheRead?: number; cacheWrite?: number; reasoning?: number } = {}) => ({
  inputTokens: {
    total: input + (extra.cacheRead ?? 0) + (extra.cacheWrite ?? 0),
    noCache: input,
    cacheRead: extra.cacheRead,
    cacheWrite: extra.cacheWrite,
  },
  outputTokens: { total: output + (extra.reasoning ?? 0), text: output, reasoning: extra.reasoning },
})
const finish = (unified: string, u = usage(1, 1), providerMetadata?: Record<string, Record<string, unknown>>) => ({
  type: 'finish',
  finishReason: { unified, raw: unified },
  usage: u,
  ...(providerMetadata ? { providerMetadata } : {}),
})
const textParts = (id: string, text: string) => [
  { type: 'text-start', id },
  { type: 'text-delta', id, delta: text },
  { type: 'text-end', id },
]

/** A mock model answering each doStream call with the next list of parts. */
function mock(...answers: unknown[][]): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    provider: 'mock.provider',
    modelId: 'mock-1',
    doStream: answers.map((parts) => ({ stream: convertArrayToReadableStream(parts as never[]) })),
  })
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    sessionId: 's',
    config: { provider: 'mock.provider', model: 'mock-1' },
    messages: [userMessage('hi')],
    signal: new AbortController().signal,
    ...overrides,
  }
}

/** The stream as the runtime sees it (through normalizeStream); every chunk is schema-valid. */
async function run(adapter: ModelAdapter, req: ModelRequest = request()): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of normalizeStream(adapter, req)) {
    expect(StreamChunkSchema.safeParse(chunk).success, JSON.stringify(chunk)).toBe(true)
    out.push(chunk)
  }
  return out
}

function assemble(chunks: readonly StreamChunk[]) {
  const assembler = new StreamAssembler()
  for (const chunk of chunks) assembler.push(chunk)
  return assembler.result()
}

function failureOf(chunks: readonly StreamChunk[]): LlmFailure & { kind: string } {
  const last = chunks.at(-1)
  if (last?.type !== 'finish' || (last.reason.kind !== 'error' && last.reason.kind !== 'aborted')) throw new Error(`no failure finish: ${JSON.stringify(last)}`)
  return { kind: last.reason.kind, ...last.reason.failure }
}

/** A model whose doStream throws `error`. */
function throwing(error: unknown): AiSdkLanguageModel {
  return new MockLanguageModelV3({
    provider: 'mock.provider',
    doStream: async () => {
      throw error
    },
  })
}

const apiError = (statusCode: number | undefined, message: string, headers: Record<string, string> = {}, body = '') =>
  new APICallError({ message, url: 'http://127.0.0.1/v1/x', requestBodyValues: {}, statusCode, responseHeaders: headers, responseBody: body })

const assistant = (content: AssistantMessage['content'], provider: string, blocks?: unknown[]): AssistantMessage => ({
  id: 'a1',
  role: 'assistant',
  content,
  source: { kind: 'model', provider, model: 'mock-1', ...(blocks ? { replayState: { response: {}, blocks } } : {}) },
})

// ---- stream ------------------------------------------------------------------

describe('aiSdkModel (MockLanguageModelV3): the stream', () => {
  it('text, reasoning and a streamed tool call become blocks; usage keeps cache and reasoning tokens; metadata is logged per block', async () => {
    const model = mock([
      { type: 'stream-start', warnings: [] },
      { type: 'response-metadata', id: 'resp-1', modelId: 'mock-1-2025', timestamp: new Date(0) },
      { type: 'reasoning-start', id: 'r', providerMetadata: { mock: { signature: 'abc' } } },
      { type: 'reasoning-delta', id: 'r', delta: 'Think' },
      { type: 'reasoning-delta', id: 'r', delta: 'ing.' },
      { type: 'reasoning-end', id: 'r', providerMetadata: { mock: { done: true } } },
      ...textParts('t', 'Calling.'),
      { type: 'tool-input-start', id: 'call-1', toolName: 'add' },
      { type: 'tool-input-delta', id: 'call-1', delta: '{"a":1,' },
      { type: 'tool-input-delta', id: 'call-1', delta: '"b":2}' },
      { type: 'tool-input-end', id: 'call-1' },
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'add', input: '{"a":1,"b":2}', providerMetadata: { mock: { item: 'i-1' } } },
      { type: 'raw', rawValue: { anything: true } },
      finish('tool-calls', usage(10, 4, { cacheRead: 30, cacheWrite: 2, reasoning: 6 }), { mock: { cost: 3 } }),
    ])
    const chunks = await run(aiSdkModel(model))
    expect(chunks.slice(0, 4)).toEqual([
      { type: 'block-start', index: 0, blockType: 'reasoning' },
      { type: 'reasoning-delta', index: 0, text: 'Think' },
      { type: 'reasoning-delta', index: 0, text: 'ing.' },
      { type: 'block-end', index: 0, block: { type: 'reasoning', text: 'Thinking.' } },
    ])
    expect(chunks.filter((c) => c.type === 'tool-call-delta')).toEqual([
      { type: 'tool-call-delta', index: 2, id: 'call-1', name: 'add', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 2, id: 'call-1', argumentsDelta: '{"a":1,' },
      { type: 'tool-call-delta', index: 2, id: 'call-1', argumentsDelta: '"b":2}' },
    ])
    const result = assemble(chunks)
    expect(result.content).toEqual([
      { type: 'reasoning', text: 'Thinking.' },
      { type: 'text', text: 'Calling.' },
      { type: 'tool-call', id: 'call-1', name: 'add', arguments: '{"a":1,"b":2}' },
    ])
    expect(result.finish).toEqual({ kind: 'tool-calls' })
    expect(result.usage).toEqual({ inputTokens: 10, outputTokens: 4, cacheReadTokens: 30, cacheWriteTokens: 2, reasoningTokens: 6 })
    expect(result.replayState).toEqual({
      response: { id: 'resp-1', modelId: 'mock-1-2025', timestamp: '1970-01-01T00:00:00.000Z', providerMetadata: { mock: { cost: 3 } } },
      blocks: [{ mock: { signature: 'abc', done: true } }, null, { mock: { item: 'i-1' } }],
    })
  })

  it('tool calls without streamed input; two calls sharing an id get unique ids (Decision 8)', async () => {
    const model = mock([
      { type: 'tool-call', toolCallId: 'same', toolName: 'a', input: '{}' },
      { type: 'tool-call', toolCallId: 'same', toolName: 'b', input: '{"x":1}' },
      // not the spec's JSON text but the value itself: encoded
      { type: 'tool-call', toolCallId: 'obj', toolName: 'c', input: { y: [1, 2] } },
      finish('tool-calls'),
    ])
    const result = assemble(await run(aiSdkModel(model)))
    expect(result.toolCalls).toEqual([
      { type: 'tool-call', id: 'same', name: 'a', arguments: '{}' },
      { type: 'tool-call', id: 'same#2', name: 'b', arguments: '{"x":1}' },
      { type: 'tool-call', id: 'obj', name: 'c', arguments: '{"y":[1,2]}' },
    ])
  })

  it('a tool-call naming another id than the ended input it follows completes that input: one call, late input parts open none', async () => {
    const input = (id: string, text: string) => [
      { type: 'tool-input-start', id, toolName: 'echo' },
      { type: 'tool-input-delta', id, delta: `{"text":"${text}"}` },
      { type: 'tool-input-end', id },
    ]
    const model = mock([
      ...input('input-1', 'a'),
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'echo', input: '{"text":"a"}' },
      { type: 'tool-input-delta', id: 'input-1', delta: 'late' },
      { type: 'tool-input-end', id: 'call-1' },
      // parallel calls: each tool-call takes the earliest ended input of its tool
      ...input('input-2', 'b'),
      ...input('input-3', 'c'),
      { type: 'tool-call', toolCallId: 'call-2', toolName: 'echo', input: '{"text":"b"}' },
      { type: 'tool-call', toolCallId: 'call-3', toolName: 'echo', input: '{"text":"c"}' },
      finish('tool-calls'),
    ])
    const chunks = await run(aiSdkModel(model))
    expect(chunks.filter((c) => c.type === 'block-start')).toHaveLength(3)
    expect(assemble(chunks).toolCalls).toEqual([
      { type: 'tool-call', id: 'input-1', name: 'echo', arguments: '{"text":"a"}' },
      { type: 'tool-call', id: 'input-2', name: 'echo', arguments: '{"text":"b"}' },
      { type: 'tool-call', id: 'input-3', name: 'echo', arguments: '{"text":"c"}' },
    ])

    // a call of another tool, or one whose input has not ended, does not take that input
    const other = mock([
      { type: 'tool-input-start', id: 'in-1', toolName: 'search' },
      { type: 'tool-input-end', id: 'in-1' },
      { type: 'tool-input-start', id: 'in-2', toolName: 'echo' },
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'echo', input: '{}' },
      { type: 'tool-input-delta', id: 'in-2', delta: '{}' },
      finish('tool-calls'),
    ])
    expect(assemble(await run(aiSdkModel(other))).toolCalls.map((c) => [c.id, c.name])).toEqual([
      ['in-1', 'search'],
      ['in-2', 'echo'],
      ['call-1', 'echo'],
    ])
  })

  it('provider-executed tool calls and their results are not content the loop runs', async () => {
    const model = mock([
      { type: 'tool-input-start', id: 'ws', toolName: 'web_search', providerExecuted: true },
      { type: 'tool-input-delta', id: 'ws', delta: '{}' },
      { type: 'tool-call', toolCallId: 'ws', toolName: 'web_search', input: '{}', providerExecuted: true },
      { type: 'tool-result', toolCallId: 'ws', toolName: 'web_search', result: { hits: 1 } },
      ...textParts('t', 'Found it.'),
      finish('stop'),
    ])
    const result = assemble(await run(aiSdkModel(model)))
    expect(result.content).toEqual([{ type: 'text', text: 'Found it.' }])
    expect(result.finish).toEqual({ kind: 'stop' })
  })

  it('finish reasons: length → max-tokens, content-filter → CONTENT_FILTERED, error → SERVER, nothing at all → EMPTY_RESPONSE', async () => {
    const adapter = aiSdkModel(
      mock(
        [...textParts('t', 'cut'), finish('length')],
        [...textParts('t', 'no'), finish('content-filter')],
        [...textParts('t', 'x'), finish('error')],
        [finish('stop')],
      ),
    )
    expect(assemble(await run(adapter)).finish).toEqual({ kind: 'max-tokens' })
    expect(failureOf(await run(adapter))).toMatchObject({ kind: 'error', code: 'CONTENT_FILTERED' })
    expect(failureOf(await run(adapter))).toMatchObject({ kind: 'error', code: 'SERVER' })
    expect(failureOf(await run(adapter))).toMatchObject({ kind: 'error', code: 'EMPTY_RESPONSE' })
  })

  it('a stream that ends without a finish part fails with STREAM_CLOSED', async () => {
    expect(failureOf(await run(aiSdkModel(mock(textParts('t', 'half')))))).toMatchObject({ kind: 'error', code: 'STREAM_CLOSED' })
  })

  it('an error part ends the attempt: its type names the code (rate limit, overload)', async () => {
    const adapter = aiSdkModel(
      mock(
        [...textParts('t', 'a'), { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }, finish('error')],
        [{ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
      ),
    )
    expect(failureOf(await run(adapter))).toMatchObject({ kind: 'error', code: 'RATE_LIMIT', message: 'mock.provider: slow down' })
    expect(failureOf(await run(adapter))).toMatchObject({ kind: 'error', code: 'SERVER', message: 'mock.provider: Overloaded' })
  })
})

// ---- failures -------------------------------------------------------------------

describe('aiSdkModel: failures as codes', () => {
  it('APICallError by status: 429 RATE_LIMIT with retry-after, 401, 403, 404, 400 (context or not), 5xx', async () => {
    const cases: Array<[APICallError, Partial<LlmFailure>]> = [
      [
        apiError(429, 'Too many requests', { 'retry-after': '2', 'request-id': 'req-9' }),
        { code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 2000, requestId: 'req-9' },
      ],
      [apiError(429, 'You exceeded your current quota', {}, '{"error":{"code":"insufficient_quota"}}'), { code: 'QUOTA' }],
      [apiError(401, 'invalid api key'), { code: 'INVALID_CREDENTIAL', status: 401 }],
      [apiError(403, 'forbidden'), { code: 'AUTH', status: 403 }],
      [apiError(404, 'model not found'), { code: 'UNKNOWN_MODEL' }],
      [apiError(400, 'prompt is too long: 300000 tokens > 200000 maximum'), { code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 }],
      [apiError(400, 'bad field'), { code: 'INVALID_REQUEST', status: 400 }],
      [apiError(503, 'unavailable', { 'x-request-id': 'req-503' }), { code: 'SERVER', status: 503, requestId: 'req-503' }],
      [apiError(undefined, 'Cannot connect to API: connect ECONNREFUSED'), { code: 'TRANSPORT' }],
    ]
    for (const [error, expected] of cases) {
      expect(failureOf(await run(aiSdkModel(throwing(error)))), error.message).toMatchObject({ kind: 'error', ...expected })
    }
  })

  it("the SDK's named errors: a missing key is MISSING_CREDENTIAL; an unknown value is UNKNOWN with its message", async () => {
    expect(failureOf(await run(aiSdkModel(throwing(new LoadAPIKeyError({ message: 'Anthropic API key is missing.' })))))).toMatchObject({
      code: 'MISSING_CREDENTIAL',
      message: 'mock.provider: Anthropic API key is missing.',
    })
    expect(failureOf(await run(aiSdkModel(throwing(new Error('boom')))))).toMatchObject({ code: 'UNKNOWN', message: 'mock.provider: boom' })
  })

  it('secrets given in the options are cut out of failure messages', async () => {
    const adapter = aiSdkModel(throwing(apiError(401, 'key tok_9f8e7d6c5b is not valid')), { secrets: ['tok_9f8e7d6c5b'] })
    expect(failureOf(await run(adapter)).message).toBe('mock.provider: key [redacted] is not valid')
  })

  it('an abort while doStream is still answering ends the attempt ABORTED even when the model ignores the signal', async () => {
    let answer!: () => void
    const answered = new Promise<void>((resolve) => (answer = resolve))
    const late = new MockLanguageModelV3({
      doStream: async () => {
        await answered
        return { stream: new ReadableStream() } // and never a part
      },
    })
    const controller = new AbortController()
    const pending = run(aiSdkModel(late), request({ signal: controller.signal }))
    await new Promise((resolve) => setTimeout(resolve, 5))
    controller.abort({ kind: 'user' })
    answer()
    expect(failureOf(await pending)).toMatchObject({ kind: 'aborted', code: 'ABORTED' })
  })

  it('requests sharing one signal leave no listeners behind on it', async () => {
    const shared = new AbortController()
    const adapter = aiSdkModel(mock(...Array.from({ length: 8 }, () => [...textParts('t', 'x'), finish('stop')])))
    for (let k = 0; k < 8; k++) await run(adapter, request({ signal: shared.signal }))
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0)
  })

  it('abort: the signal reaches doStream, and a model that ignores it still stops at once with ABORTED', async () => {
    let seen: AbortSignal | undefined
    const stuck = new MockLanguageModelV3({
      doStream: async (options) => {
        seen = options.abortSignal
        return {
          stream: new ReadableStream({
            start(controller) {
              controller.enqueue({ type: 'text-start', id: 't' })
              controller.enqueue({ type: 'text-delta', id: 't', delta: 'Hal' })
              // and never another part
            },
          }),
        }
      },
    })
    const controller = new AbortController()
    const chunks: StreamChunk[] = []
    for await (const chunk of normalizeStream(aiSdkModel(stuck), request({ signal: controller.signal }))) {
      chunks.push(chunk)
      if (chunk.type === 'text-delta') controller.abort({ kind: 'user' })
    }
    expect(seen).toBeInstanceOf(AbortSignal)
    expect(seen?.aborted).toBe(true)
    expect(failureOf(chunks)).toMatchObject({ kind: 'aborted', code: 'ABORTED', message: 'request aborted: user' })
  })
})

// ---- request ------------------------------------------------------------------

describe('aiSdkModel: the request as call options', () => {
  it('maps system, user images, assistant tool calls, tool results (text, error, images; one tool message), tools, choice, limits, format and provider options', async () => {
    const model = mock([...textParts('t', 'ok'), finish('stop')])
    const messages: Message[] = [
      userMessage([
        { type: 'text', text: 'look' },
        { type: 'image', attachment: { mediaType: 'image/png', data: 'iVBORw0=' } },
        { type: 'image', attachment: { mediaType: 'image/jpeg', url: 'https://example.test/cat.jpg' } },
      ]),
      assistant(
        [
          { type: 'text', text: '' },
          { type: 'tool-call', id: 'c1', name: 'add', arguments: '{"a":1}' },
          { type: 'tool-call', id: 'c2', name: 'shot', arguments: '' },
          { type: 'tool-call', id: 'c3', name: 'add', arguments: 'not json' },
        ],
        'mock.provider',
      ),
      { id: 'r1', role: 'user', content: [{ type: 'tool-result', toolCallId: 'c1', content: '1' }], source: { kind: 'tool', callId: 'c1' } },
      {
        id: 'r2',
        role: 'user',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c2',
            content: [
              { type: 'text', text: 'here' },
              { type: 'image', attachment: { mediaType: 'image/png', data: 'AAAA' } },
            ],
          },
        ],
        source: { kind: 'tool', callId: 'c2' },
      },
      {
        id: 'r3',
        role: 'user',
        content: [{ type: 'tool-result', toolCallId: 'c3', content: 'invalid', isError: true }],
        source: { kind: 'tool', callId: 'c3' },
      },
    ]
    await run(
      aiSdkModel(model),
      request({
        system: 'Be brief.',
        messages,
        tools: [{ name: 'add', description: 'adds', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } }],
        maxTokens: 99,
        config: {
          provider: 'mock.provider',
          model: 'mock-1',
          temperature: 0.2,
          stop: ['END'],
          toolChoice: { type: 'tool', name: 'add' },
          responseFormat: { type: 'json', schema: { type: 'object' }, name: 'answer', description: 'the answer', strict: true },
          providerOptions: { mock: { thinking: { budget: 5 } }, other: { x: 1 } },
        },
      }),
    )
    const [call] = model.doStreamCalls
    expect(call.abortSignal).toBeInstanceOf(AbortSignal)
    expect(call).toMatchObject({
      maxOutputTokens: 99,
      temperature: 0.2,
      stopSequences: ['END'],
      toolChoice: { type: 'tool', toolName: 'add' },
      responseFormat: { type: 'json', schema: { type: 'object' }, name: 'answer', description: 'the answer' },
      providerOptions: { mock: { thinking: { budget: 5 } }, other: { x: 1 } },
      tools: [{ type: 'function', name: 'add', description: 'adds', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } }],
    })
    expect(call.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'file', data: 'iVBORw0=', mediaType: 'image/png' },
          { type: 'file', data: new URL('https://example.test/cat.jpg'), mediaType: 'image/jpeg' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: { a: 1 } },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'shot', input: {} },
          { type: 'tool-call', toolCallId: 'c3', toolName: 'add', input: 'not json' },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'c1', toolName: 'add', output: { type: 'text', value: '1' } },
          {
            type: 'tool-result',
            toolCallId: 'c2',
            toolName: 'shot',
            output: {
              type: 'content',
              value: [
                { type: 'text', text: 'here' },
                { type: 'image-data', data: 'AAAA', mediaType: 'image/png' },
              ],
            },
          },
          { type: 'tool-result', toolCallId: 'c3', toolName: 'add', output: { type: 'error-text', value: 'invalid' } },
        ],
      },
    ])
  })

  it('logged block metadata goes back as the parts’ providerOptions, only to the provider that made it', async () => {
    const content: AssistantMessage['content'] = [
      { type: 'reasoning', text: 'hmm' },
      { type: 'reasoning', text: '' },
      { type: 'text', text: 'hi' },
    ]
    const blocks = [{ mock: { signature: 's1' } }, { mock: { redactedData: 'r' } }, null]
    const same = mock([...textParts('t', 'ok'), finish('stop')])
    await run(aiSdkModel(same), request({ messages: [userMessage('q'), assistant(content, 'mock.provider', blocks), userMessage('again')] }))
    expect(same.doStreamCalls[0].prompt[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'hmm', providerOptions: { mock: { signature: 's1' } } },
        { type: 'reasoning', text: '', providerOptions: { mock: { redactedData: 'r' } } },
        { type: 'text', text: 'hi' },
      ],
    })
    const other = mock([...textParts('t', 'ok'), finish('stop')])
    await run(aiSdkModel(other), request({ messages: [userMessage('q'), assistant(content, 'another.provider', blocks), userMessage('again')] }))
    expect(other.doStreamCalls[0].prompt[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'hmm' },
        { type: 'text', text: 'hi' },
      ],
    })
  })

  it('reasoningEffort has no v3 option: the request fails UNSUPPORTED_OPTION instead of dropping it', async () => {
    const model = mock([finish('stop')])
    const chunks = await run(aiSdkModel(model), request({ config: { provider: 'mock.provider', model: 'mock-1', reasoningEffort: 'high' } }))
    expect(failureOf(chunks)).toMatchObject({ kind: 'error', code: 'UNSUPPORTED_OPTION' })
    expect(model.doStreamCalls).toHaveLength(0)
  })

  it('refuses what is not an AI SDK model of spec v3 or v4, naming it', () => {
    expect(() => aiSdkModel('openai/gpt-5' as never)).toThrow(ConfigError)
    expect(() => aiSdkModel('openai/gpt-5' as never)).toThrow(/pass a model object/)
    expect(() => aiSdkModel({ specificationVersion: 'v2', provider: 'p', modelId: 'm', doStream: () => {} } as never)).toThrow(/specification "v2"/)
    expect(() => aiSdkModel({ specificationVersion: 'v3', provider: 'p', modelId: 'm' } as never)).toThrow(/doStream must be a function/)
    expect(() => aiSdkModel(mock(), { contextWindow: -1 })).toThrow(/contextWindow/)
    expect(() => aiSdkModel(mock(), { secrets: 'x' as never })).toThrow(/secrets/)
  })

  it('names itself after the model unless told otherwise', () => {
    expect(aiSdkModel(mock())).toMatchObject({ provider: 'mock.provider', model: 'mock-1' })
    expect(aiSdkModel(mock(), { provider: 'mine', model: 'm2', contextWindow: 1000 })).toMatchObject({ provider: 'mine', model: 'm2', contextWindow: 1000 })
  })
})

// ---- end to end -----------------------------------------------------------------

describe('aiSdkModel: an agent over the mock model', () => {
  it('runs a two-step tool turn; the second call carries the first call’s reasoning metadata, tool call and result', async () => {
    const model = mock(
      [
        { type: 'reasoning-start', id: 'r', providerMetadata: { mock: { signature: 'sig' } } },
        { type: 'reasoning-delta', id: 'r', delta: 'Add.' },
        { type: 'reasoning-end', id: 'r' },
        { type: 'tool-call', toolCallId: 't1', toolName: 'add', input: '{"a":2,"b":3}' },
        finish('tool-calls', usage(5, 5)),
      ],
      [...textParts('x', '5'), finish('stop', usage(9, 1))],
    )
    const add = defineTool({ name: 'add', description: 'adds', input: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => String(a + b) })
    const agent = createAgent({ model: aiSdkModel(model), tools: [add], logger: { error: () => {} } })
    try {
      const result = await agent.run('2 + 3?')
      expect(result.text).toBe('5')
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      expect(model.doStreamCalls[1].prompt.slice(1)).toEqual([
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'Add.', providerOptions: { mock: { signature: 'sig' } } },
            { type: 'tool-call', toolCallId: 't1', toolName: 'add', input: { a: 2, b: 3 } },
          ],
        },
        { role: 'tool', content: [{ type: 'tool-result', toolCallId: 't1', toolName: 'add', output: { type: 'text', value: '5' } }] },
      ])
    } finally {
      await agent.dispose()
    }
  })

  it('a streamed tool call whose tool-call part names another id runs once', async () => {
    const model = mock(
      [
        { type: 'tool-input-start', id: 'input-1', toolName: 'echo' },
        { type: 'tool-input-delta', id: 'input-1', delta: '{"text":"charge card"}' },
        { type: 'tool-input-end', id: 'input-1' },
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'echo', input: '{"text":"charge card"}' },
        finish('tool-calls'),
      ],
      [...textParts('t', 'done'), finish('stop')],
    )
    const ran: string[] = []
    const echo = defineTool({ name: 'echo', description: 'echoes', input: z.object({ text: z.string() }), execute: ({ text }) => (ran.push(text), text) })
    const agent = createAgent({ model: aiSdkModel(model), tools: [echo], logger: { error: () => {} } })
    try {
      expect((await agent.run('go')).text).toBe('done')
      expect(ran).toEqual(['charge card'])
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
    } finally {
      await agent.dispose()
    }
  })
})

// ---- LanguageModelV4 ------------------------------------------------------------

/** A hand-built LanguageModelV4 (ai 7): same doStream contract, tagged file data, a `reasoning` option, more part types. */
function v4Model(parts: unknown[][]): AiSdkLanguageModel & { calls: Record<string, unknown>[] } {
  const calls: Record<string, unknown>[] = []
  return {
    specificationVersion: 'v4',
    provider: 'v4.provider',
    modelId: 'v4-model',
    calls,
    async doStream(options) {
      calls.push(options)
      const next = parts.shift() ?? []
      return { stream: new ReadableStream({ start: (c) => (next.forEach((p) => c.enqueue(p)), c.close()) }) }
    },
  }
}

describe('aiSdkModel (LanguageModelV4)', () => {
  it('reads v4 parts (ping, custom, reasoning-file, citations, tagged file data) and writes v4 prompt shapes and reasoning', async () => {
    const model = v4Model([
      [
        { type: 'stream-start', warnings: [] },
        { type: 'ping' },
        { type: 'reasoning-start', id: 'r' },
        { type: 'reasoning-delta', id: 'r', delta: 'v4 thoughts' },
        { type: 'reasoning-end', id: 'r', providerMetadata: { v4: { signature: 'v4sig' } } },
        { type: 'reasoning-file', mediaType: 'image/png', data: { type: 'data', data: 'QUJD' } },
        { type: 'custom', kind: 'v4.thing' },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'See image.' },
        { type: 'text-end', id: 't', citations: [] },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: 'iVBOR' } },
        finish('stop', usage(3, 2)),
      ],
    ])
    const chunks = await run(
      aiSdkModel(model),
      request({
        config: { provider: 'v4.provider', model: 'v4-model', reasoningEffort: 'high' },
        messages: [
          userMessage([
            { type: 'text', text: 'draw' },
            { type: 'image', attachment: { mediaType: 'image/png', data: 'AAA' } },
            { type: 'image', attachment: { mediaType: 'image/png', url: 'https://example.test/a.png' } },
          ]),
          assistant([{ type: 'tool-call', id: 'c', name: 'shot', arguments: '{}' }], 'v4.provider'),
          {
            id: 'r',
            role: 'user',
            content: [{ type: 'tool-result', toolCallId: 'c', content: [{ type: 'image', attachment: { mediaType: 'image/png', data: 'BBB' } }] }],
            source: { kind: 'tool', callId: 'c' },
          },
        ],
      }),
    )
    const result = assemble(chunks)
    expect(result.content).toEqual([
      { type: 'reasoning', text: 'v4 thoughts' },
      { type: 'text', text: 'See image.' },
      { type: 'image', attachment: { mediaType: 'image/png', data: 'iVBOR' } },
    ])
    expect(result.finish).toEqual({ kind: 'stop' })
    expect(result.replayState?.blocks).toEqual([{ v4: { signature: 'v4sig' } }, null, null])
    const [call] = model.calls
    expect(call.reasoning).toBe('high')
    expect(call.prompt).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'draw' },
          { type: 'file', data: { type: 'data', data: 'AAA' }, mediaType: 'image/png' },
          { type: 'file', data: { type: 'url', url: new URL('https://example.test/a.png') }, mediaType: 'image/png' },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 'shot', input: {} }] },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c',
            toolName: 'shot',
            output: { type: 'content', value: [{ type: 'file', data: { type: 'data', data: 'BBB' }, mediaType: 'image/png' }] },
          },
        ],
      },
    ])
  })

  it("v4's `interrupted` finish is STREAM_CLOSED; a reasoning effort outside v4's levels is UNSUPPORTED_OPTION", async () => {
    const model = v4Model([[...textParts('t', 'par'), finish('interrupted')]])
    expect(failureOf(await run(aiSdkModel(model), request({ config: { provider: 'v4.provider', model: 'v4-model' } })))).toMatchObject({
      code: 'STREAM_CLOSED',
    })
    const chunks = await run(aiSdkModel(v4Model([])), request({ config: { provider: 'v4.provider', model: 'v4-model', reasoningEffort: 'ultra' } }))
    expect(failureOf(chunks)).toMatchObject({ code: 'UNSUPPORTED_OPTION', message: expect.stringMatching(/'ultra' is not one of LanguageModelV4's levels/) })
  })

  it('an agent turn over a v4 model', async () => {
    const agent = createAgent({ model: aiSdkModel(v4Model([[...textParts('t', 'hello from v4'), finish('stop', usage(4, 3))]])), logger: { error: () => {} } })
    try {
      const result = await agent.run('hi')
      expect(result.text).toBe('hello from v4')
      expect(agent.session.events.find((e) => e.type === 'assistant/message')?.data).toMatchObject({
        message: { source: { provider: 'v4.provider', model: 'v4-model' } },
        usage: { inputTokens: 4, outputTokens: 3 },
      })
    } finally {
      await agent.dispose()
    }
  })
})

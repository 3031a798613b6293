// openaiModel against a local OpenAI-compatible server: request mapping, stream
// normalization (BEHAVIOURS 1.4), failure codes (1.5), abort, and one agent turn.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { getEventListeners } from 'node:events'
import type { AddressInfo } from 'node:net'
import OpenAI from 'openai'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { normalizeStream, StreamAssembler } from '../../src/adapters/assemble.js'
import { LlmError } from '../../src/adapters/failure.js'
import { deepseekModel, openaiModel } from '../../src/adapters/openai.js'
import type { ModelAdapter, ModelRequest } from '../../src/adapters/types.js'
import { ConfigError } from '../../src/errors.js'
import { createAgent, defineTool, userMessage } from '../../src/index.js'
import { StreamChunkSchema, type LlmFailure, type Message, type StreamChunk } from '../../src/session/schemas.js'
import { checkSessionInvariants } from '../../src/testing/index.js'

// ---- the local server -------------------------------------------------------

/** How the server answers one request. */
type Reply =
  // `hang` keeps the response open after the events, `hold` after the events and `[DONE]`
  | { kind: 'sse'; events: readonly unknown[]; done?: boolean; hang?: boolean; hold?: boolean; headers?: Record<string, string> }
  | { kind: 'status'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'stall' } // never sends headers (until the client leaves or the cap ends it)

interface Received {
  path: string
  headers: IncomingHttpHeaders
  body: Record<string, any>
}

/** No response is held open longer than this, whatever a test does. */
const HOLD_CAP_MS = 4_000
const MAX_REQUESTS = 200

let server: Server
let baseURL = ''
const replies: Reply[] = []
const received: Received[] = []
const closed: string[] = [] // paths of requests whose client went away before the response ended
const open = new Set<ServerResponse>()

function reply(...next: Reply[]): void {
  replies.push(...next)
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  open.add(res)
  res.on('close', () => {
    open.delete(res)
    if (!res.writableEnded) closed.push(req.url ?? '')
  })
  const parts: Buffer[] = []
  req.on('data', (part: Buffer) => parts.push(part))
  req.on('end', () => {
    if (received.length >= MAX_REQUESTS) {
      res.writeHead(500).end()
      return
    }
    const text = Buffer.concat(parts).toString('utf8')
    received.push({ path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : {} })
    const next = replies.shift() ?? { kind: 'status', status: 500, body: { error: { message: 'no reply scripted' } } }
    const cap = setTimeout(() => res.destroy(), HOLD_CAP_MS)
    res.on('close', () => clearTimeout(cap))
    switch (next.kind) {
      case 'stall':
        return
      case 'status':
        res.writeHead(next.status, { 'content-type': 'application/json', 'x-request-id': 'req-err', ...next.headers })
        res.end(JSON.stringify(next.body))
        return
      case 'sse':
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'req-1', ...next.headers })
        for (const event of next.events) res.write(`data: ${JSON.stringify(event)}\n\n`)
        if (next.hang) return
        if (next.done !== false) res.write('data: [DONE]\n\n')
        if (next.hold) return
        res.end()
    }
  })
}

beforeAll(async () => {
  server = createServer(handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
})

afterEach(() => {
  replies.length = 0
  received.length = 0
  closed.length = 0
})

afterAll(async () => {
  for (const res of open) res.destroy()
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

// ---- helpers ----------------------------------------------------------------

const meta = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' }
const delta = (d: Record<string, unknown>, finish_reason: string | null = null) => ({
  ...meta,
  choices: [{ index: 0, delta: d, finish_reason }],
})
const finishChunk = (reason: string) => delta({}, reason)
const usageChunk = (usage: Record<string, unknown>) => ({ ...meta, choices: [], usage })
const sse = (...events: unknown[]): Reply => ({ kind: 'sse', events })

function model(extra: Partial<Parameters<typeof openaiModel>[0]> = {}): ModelAdapter {
  return openaiModel({ baseURL, apiKey: 'k', model: 'm', ...extra })
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    sessionId: 's',
    config: { provider: 'openai', model: 'm' },
    messages: [userMessage('hi')],
    signal: new AbortController().signal,
    ...overrides,
  }
}

function hasUndefined(x: unknown): boolean {
  if (x === undefined) return true
  if (typeof x !== 'object' || x === null) return false
  return Object.values(x).some(hasUndefined)
}

/** The stream as the runtime sees it (through normalizeStream); every chunk is schema-valid and free of `undefined`. */
async function run(adapter: ModelAdapter, req: ModelRequest = request()): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of normalizeStream(adapter, req)) {
    expect(StreamChunkSchema.safeParse(chunk).success, JSON.stringify(chunk)).toBe(true)
    expect(hasUndefined(chunk), JSON.stringify(chunk)).toBe(false)
    out.push(chunk)
  }
  return out
}

function assemble(chunks: readonly StreamChunk[]) {
  const assembler = new StreamAssembler()
  for (const chunk of chunks) assembler.push(chunk)
  return assembler.result()
}

/** The failure of a stream's terminal `finish{error|aborted}`. */
function failureOf(chunks: readonly StreamChunk[]): LlmFailure & { kind: string } {
  const last = chunks.at(-1)
  if (last?.type !== 'finish' || (last.reason.kind !== 'error' && last.reason.kind !== 'aborted')) {
    throw new Error(`no failure finish: ${JSON.stringify(last)}`)
  }
  return { kind: last.reason.kind, ...last.reason.failure }
}

/** What the adapter itself throws (without normalizeStream). */
async function thrownBy(adapter: ModelAdapter, req: ModelRequest = request()): Promise<LlmError> {
  try {
    for await (const _ of adapter.stream(req)) {
      // drain
    }
  } catch (error) {
    expect(error).toBeInstanceOf(LlmError)
    return error as LlmError
  }
  throw new Error('the stream did not throw')
}

// ---- tests ------------------------------------------------------------------

describe('openaiModel: options', () => {
  it('names the provider from the base URL and keeps contextWindow', () => {
    const a = openaiModel({ model: 'gpt-x', apiKey: 'k' })
    expect([a.provider, a.model, 'contextWindow' in a]).toEqual(['openai', 'gpt-x', false])
    const b = openaiModel({ model: 'deepseek-chat', apiKey: 'k', baseURL: 'https://api.deepseek.com', contextWindow: 64_000 })
    expect([b.provider, b.model, b.contextWindow]).toEqual(['deepseek', 'deepseek-chat', 64_000])
    expect(openaiModel({ model: 'm', provider: 'proxy', baseURL: 'https://deepseek.example' }).provider).toBe('proxy')
  })

  it('refuses bad options', () => {
    expect(() => openaiModel({ model: '' })).toThrow(ConfigError)
    expect(() => openaiModel({ model: 'm', contextWindow: 0 })).toThrow(ConfigError)
    expect(() => openaiModel({ model: 'm', maxRetries: -1 })).toThrow(ConfigError)
    expect(() => openaiModel({ model: 'm', apiKey: '' })).toThrow(ConfigError)
    expect(() => openaiModel({ model: 'm', client: {} as OpenAI })).toThrow(ConfigError)
  })
})

describe('openaiModel: request body', () => {
  it('maps system, user, assistant tool calls, tool results, tools and limits', async () => {
    reply(sse(delta({ content: 'ok' }), finishChunk('stop')))
    const modelSource = { kind: 'model', provider: 'openai', model: 'm' } as const
    const messages: Message[] = [
      userMessage([
        { type: 'text', text: 'first' },
        { type: 'text', text: 'second' },
      ]),
      userMessage([
        { type: 'text', text: 'look' },
        { type: 'image', attachment: { mediaType: 'image/png', data: 'AAAA' } },
        { type: 'image', attachment: { mediaType: 'image/png', url: 'https://x/y.png' } },
      ]),
      {
        id: 'a1',
        role: 'assistant',
        source: modelSource,
        content: [
          { type: 'reasoning', text: 'thinking' },
          { type: 'text', text: 'calling' },
          { type: 'tool-call', id: 'c1', name: 'add', arguments: '{"a":1}' },
          { type: 'tool-call', id: 'c2', name: 'now', arguments: '' },
        ],
      },
      { id: 't1', role: 'user', source: { kind: 'tool', callId: 'c1' }, content: [{ type: 'tool-result', toolCallId: 'c1', content: '2' }] },
      {
        id: 't2',
        role: 'user',
        source: { kind: 'tool', callId: 'c2' },
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c2',
            isError: true,
            content: [
              { type: 'text', text: 'no' },
              { type: 'text', text: 'clock' },
            ],
          },
        ],
      },
      { id: 'a2', role: 'assistant', source: modelSource, content: [{ type: 'reasoning', text: 'only thoughts' }] },
      { id: 'a3', role: 'assistant', source: modelSource, content: [{ type: 'tool-call', id: 'c3', name: 'now', arguments: '{}' }] },
    ]
    const chunks = await run(
      model(),
      request({
        config: { provider: 'openai', model: 'gpt-routed', temperature: 0.2, stop: ['END'], maxTokens: 100 },
        system: 'be brief',
        messages,
        tools: [
          { name: 'add', description: 'adds', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } },
          { name: 'now', inputSchema: { type: 'object' } },
        ],
        maxTokens: 50,
      }),
    )
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: { kind: 'stop' } })
    expect(received).toHaveLength(1)
    const [{ path, headers, body }] = received
    expect(path).toBe('/v1/chat/completions')
    expect(headers.authorization).toBe('Bearer k')
    expect(body).toEqual({
      model: 'gpt-routed',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 50,
      temperature: 0.2,
      stop: ['END'],
      tools: [
        { type: 'function', function: { name: 'add', description: 'adds', parameters: { type: 'object', properties: { a: { type: 'number' } } } } },
        { type: 'function', function: { name: 'now', parameters: { type: 'object' } } },
      ],
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'first\nsecond' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'image_url', image_url: { url: 'https://x/y.png' } },
          ],
        },
        {
          role: 'assistant',
          content: 'calling',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":1}' } },
            { id: 'c2', type: 'function', function: { name: 'now', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: '2' },
        { role: 'tool', tool_call_id: 'c2', content: 'no\nclock' },
        // a2 (reasoning only) is skipped
        { role: 'assistant', content: null, tool_calls: [{ id: 'c3', type: 'function', function: { name: 'now', arguments: '{}' } }] },
      ],
    })
  })

  it('leaves out tools, limits and system when the request has none; config.maxTokens is the fallback', async () => {
    reply(sse(delta({ content: 'a' }), finishChunk('stop')), sse(delta({ content: 'b' }), finishChunk('stop')))
    await run(model())
    await run(model(), request({ config: { provider: 'openai', model: 'm', maxTokens: 7 } }))
    expect(received[0].body).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    })
    expect(received[1].body.max_tokens).toBe(7)
  })
})

describe('openaiModel: request options on the wire', () => {
  const tools = [{ name: 'add', inputSchema: { type: 'object' } }]
  const schema = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }

  it("toolChoice, responseFormat and the provider's own providerOptions map to the body", async () => {
    reply(...Array.from({ length: 4 }, () => sse(delta({ content: '{}' }), finishChunk('stop'))))
    const config = (extra: Record<string, unknown>) => ({ provider: 'openai', model: 'm', ...extra })
    await run(
      model(),
      request({
        tools,
        config: config({
          toolChoice: { type: 'tool', name: 'add' },
          responseFormat: { type: 'json', schema, name: 'reading', strict: true },
          providerOptions: { openai: { seed: 7, top_p: 0.5, max_tokens: 3 }, deepseek: { thinking: { type: 'enabled' } } },
        }),
      }),
    )
    await run(model(), request({ tools, config: config({ toolChoice: 'required', responseFormat: { type: 'json' } }) }))
    await run(model(), request({ config: config({ toolChoice: 'none', responseFormat: { type: 'text' } }) }))
    await run(model({ provider: 'proxy' }), request({ config: config({ providerOptions: { proxy: { top_k: 5 }, openai: { seed: 1 } } }) }))
    const [first, second, third, fourth] = received.map((r) => r.body)
    expect(first).toMatchObject({
      tool_choice: { type: 'function', function: { name: 'add' } },
      response_format: { type: 'json_schema', json_schema: { name: 'reading', schema, strict: true } },
      seed: 7,
      top_p: 0.5,
      max_tokens: 3, // provider fields are laid over the mapped ones
    })
    expect('thinking' in first).toBe(false) // another provider's options stay out
    expect(second).toMatchObject({ tool_choice: 'required', response_format: { type: 'json_object' } })
    expect('tool_choice' in third).toBe(false) // no tools, no tool_choice (the API refuses it)
    expect(third.response_format).toEqual({ type: 'text' })
    expect(fourth).toMatchObject({ top_k: 5 })
    expect('seed' in fourth).toBe(false)
  })

  it('provider options may not replace the fields the adapter owns', async () => {
    const failure = failureOf(await run(model(), request({ config: { provider: 'openai', model: 'm', providerOptions: { openai: { messages: [] } } } })))
    expect(failure).toMatchObject({ kind: 'error', code: 'UNSUPPORTED_OPTION' })
    expect(failure.message).toMatch(/providerOptions\.openai\.messages/)
    expect(received).toHaveLength(0)
  })

  it('DeepSeek JSON output: json_object, and the schema described after the system prompt (the prompt must say json)', async () => {
    reply(sse(delta({ content: '{"n":1}' }), finishChunk('stop')), sse(delta({ content: '{}' }), finishChunk('stop')))
    const deepseek = deepseekModel({ model: 'deepseek-v4-flash', baseURL, apiKey: 'k' })
    await run(
      deepseek,
      request({ system: 'Be exact.', config: { provider: 'deepseek', model: 'deepseek-v4-flash', responseFormat: { type: 'json', schema } } }),
    )
    await run(deepseek, request({ config: { provider: 'deepseek', model: 'deepseek-v4-flash', responseFormat: { type: 'json' } } }))
    expect(received[0].body.response_format).toEqual({ type: 'json_object' })
    expect(received[0].body.messages[0]).toEqual({
      role: 'system',
      content: `Be exact.\n\nAnswer with a single JSON object that matches this JSON Schema:\n${JSON.stringify(schema)}`,
    })
    expect(received[1].body.messages[0]).toEqual({ role: 'system', content: 'Answer with a single JSON object.' })
  })

  it('tool parameters go out without a $schema key', async () => {
    reply(sse(delta({ content: 'ok' }), finishChunk('stop')))
    const add = defineTool({ name: 'add', description: 'adds', input: z.object({ a: z.number() }), execute: () => '' })
    const agent = createAgent({ model: model(), tools: [add], logger: { error: () => {} } })
    try {
      await agent.run('hi')
      const parameters = received[0].body.tools[0].function.parameters
      expect(parameters).toEqual({ type: 'object', properties: { a: { type: 'number' } }, required: ['a'], additionalProperties: false })
    } finally {
      await agent.dispose()
    }
  })
})

describe('openaiModel: stream normalization', () => {
  it('a text stream: block-start, deltas, block-end, usage, finish', async () => {
    reply(
      sse(
        delta({ role: 'assistant', content: '' }),
        delta({ content: 'Hel' }),
        delta({ content: 'lo' }),
        finishChunk('stop'),
        usageChunk({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 }),
      ),
    )
    expect(await run(model())).toEqual([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'text-delta', index: 0, text: 'Hel' },
      { type: 'text-delta', index: 0, text: 'lo' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'Hello' } },
      { type: 'usage', usage: { inputTokens: 9, outputTokens: 2 } },
      { type: 'finish', reason: { kind: 'stop' } },
    ])
  })

  it('DeepSeek reasoning_content then content: a reasoning block, then a text block', async () => {
    reply(
      sse(
        delta({ role: 'assistant', content: null, reasoning_content: '' }),
        delta({ content: null, reasoning_content: 'Think' }),
        delta({ content: null, reasoning_content: 'ing.' }),
        delta({ content: 'Ans', reasoning_content: null }),
        delta({ content: 'wer', reasoning_content: null }),
        {
          ...finishChunk('stop'),
          usage: {
            prompt_tokens: 100,
            completion_tokens: 30,
            total_tokens: 130,
            prompt_cache_hit_tokens: 64,
            prompt_cache_miss_tokens: 36,
            completion_tokens_details: { reasoning_tokens: 20 },
          },
        },
      ),
    )
    const chunks = await run(model({ provider: 'deepseek' }))
    expect(chunks).toEqual([
      { type: 'block-start', index: 0, blockType: 'reasoning' },
      { type: 'reasoning-delta', index: 0, text: 'Think' },
      { type: 'reasoning-delta', index: 0, text: 'ing.' },
      { type: 'block-start', index: 1, blockType: 'text' },
      { type: 'text-delta', index: 1, text: 'Ans' },
      { type: 'text-delta', index: 1, text: 'wer' },
      { type: 'block-end', index: 0, block: { type: 'reasoning', text: 'Thinking.' } },
      { type: 'block-end', index: 1, block: { type: 'text', text: 'Answer' } },
      { type: 'usage', usage: { inputTokens: 36, outputTokens: 10, cacheReadTokens: 64, reasoningTokens: 20 } },
      { type: 'finish', reason: { kind: 'stop' } },
    ])
    expect(assemble(chunks).content).toEqual([
      { type: 'reasoning', text: 'Thinking.' },
      { type: 'text', text: 'Answer' },
    ])
  })

  it('interleaved parallel tool-call deltas keep their own blocks, in first-seen order', async () => {
    const call = (index: number, fn: Record<string, string>, id?: string) =>
      delta({ tool_calls: [{ index, ...(id ? { id, type: 'function' } : {}), function: fn }] })
    reply(
      sse(
        delta({ role: 'assistant', content: 'Let me check.' }),
        call(0, { name: 'weather', arguments: '' }, 'call_a'),
        call(1, { name: 'time', arguments: '{"tz"' }, 'call_b'),
        call(0, { arguments: '{"city":' }),
        call(1, { arguments: ':"UTC"}' }),
        call(0, { arguments: '"Oslo"}' }),
        finishChunk('tool_calls'),
      ),
    )
    const chunks = await run(model())
    expect(chunks).toEqual([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'text-delta', index: 0, text: 'Let me check.' },
      { type: 'block-start', index: 1, blockType: 'tool-call' },
      { type: 'tool-call-delta', index: 1, id: 'call_a', name: 'weather', argumentsDelta: '' },
      { type: 'block-start', index: 2, blockType: 'tool-call' },
      { type: 'tool-call-delta', index: 2, id: 'call_b', name: 'time', argumentsDelta: '{"tz"' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 2, argumentsDelta: ':"UTC"}' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '"Oslo"}' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'Let me check.' } },
      { type: 'block-end', index: 1, block: { type: 'tool-call', id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}' } },
      { type: 'block-end', index: 2, block: { type: 'tool-call', id: 'call_b', name: 'time', arguments: '{"tz":"UTC"}' } },
      { type: 'finish', reason: { kind: 'tool-calls' } },
    ])
    expect(assemble(chunks).toolCalls.map((c) => c.id)).toEqual(['call_a', 'call_b'])
  })

  it('maps usage to disjoint counts (OpenAI cached and reasoning tokens; zeros left out)', async () => {
    reply(
      sse(
        delta({ content: 'x' }),
        finishChunk('stop'),
        usageChunk({
          prompt_tokens: 1000,
          completion_tokens: 300,
          total_tokens: 1300,
          prompt_tokens_details: { cached_tokens: 800, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 256, audio_tokens: 0 },
        }),
      ),
      sse(
        delta({ content: 'y' }),
        finishChunk('stop'),
        usageChunk({
          prompt_tokens: 5,
          completion_tokens: 1,
          total_tokens: 6,
          prompt_tokens_details: { cached_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 0 },
        }),
      ),
    )
    expect((await run(model())).find((c) => c.type === 'usage')).toEqual({
      type: 'usage',
      usage: { inputTokens: 200, outputTokens: 44, cacheReadTokens: 800, reasoningTokens: 256 },
    })
    expect((await run(model())).find((c) => c.type === 'usage')).toEqual({ type: 'usage', usage: { inputTokens: 5, outputTokens: 1 } })
  })

  it('length → max-tokens (the assembler then drops the truncated tool call)', async () => {
    reply(
      sse(
        delta({ content: 'partial' }),
        delta({ tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":' } }] }),
        finishChunk('length'),
      ),
    )
    const chunks = await run(model())
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: { kind: 'max-tokens' } })
    expect(assemble(chunks).content).toEqual([{ type: 'text', text: 'partial' }])
  })

  it('a normal stop with no content at all → error EMPTY_RESPONSE', async () => {
    reply(sse(delta({ role: 'assistant', content: '' }), finishChunk('stop'), usageChunk({ prompt_tokens: 3, completion_tokens: 0 })))
    const chunks = await run(model())
    expect(chunks.map((c) => c.type)).toEqual(['usage', 'finish'])
    expect(failureOf(chunks)).toEqual({ kind: 'error', code: 'EMPTY_RESPONSE', message: 'the model returned no content', requestId: 'req-1' })
  })

  it('content_filter → CONTENT_FILTERED, insufficient_system_resource → SERVER, after the block-ends', async () => {
    reply(sse(delta({ content: 'bad' }), finishChunk('content_filter')), sse(delta({ content: 'half' }), finishChunk('insufficient_system_resource')))
    const filtered = await run(model())
    expect(filtered.map((c) => c.type)).toEqual(['block-start', 'text-delta', 'block-end', 'finish'])
    expect(failureOf(filtered)).toMatchObject({ kind: 'error', code: 'CONTENT_FILTERED' })
    expect(failureOf(await run(model()))).toMatchObject({ kind: 'error', code: 'SERVER' })
  })

  it('a stream that ends without a finish reason fails with STREAM_CLOSED', async () => {
    reply({ kind: 'sse', events: [delta({ content: 'cut' })], done: false })
    const chunks = await run(model())
    expect(chunks.map((c) => c.type)).toEqual(['block-start', 'text-delta', 'finish'])
    expect(failureOf(chunks)).toMatchObject({ kind: 'error', code: 'STREAM_CLOSED' })
  })

  it('an error event inside the stream → SERVER', async () => {
    reply(sse(delta({ content: 'a' }), { error: { message: 'overloaded', type: 'server_error' } }))
    expect(failureOf(await run(model()))).toMatchObject({ kind: 'error', code: 'SERVER', message: 'openai: overloaded' })
  })

  it('a server that keeps the connection open after [DONE]: the stream ends at [DONE] and lets the connection go', async () => {
    reply({ kind: 'sse', events: [delta({ content: 'hi' }, 'stop'), usageChunk({ prompt_tokens: 1, completion_tokens: 1 })], hold: true })
    const guard = new AbortController()
    const timer = setTimeout(() => guard.abort(), 2_000) // a hang fails the test as finish{aborted} instead of timing it out
    try {
      expect(await run(model(), request({ signal: guard.signal }))).toEqual([
        { type: 'block-start', index: 0, blockType: 'text' },
        { type: 'text-delta', index: 0, text: 'hi' },
        { type: 'block-end', index: 0, block: { type: 'text', text: 'hi' } },
        { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
        { type: 'finish', reason: { kind: 'stop' } },
      ])
    } finally {
      clearTimeout(timer)
    }
    await expect.poll(() => closed.length, { timeout: 2_000 }).toBe(1)
  })

  it('tool-call deltas without an index: a new id starts a new call, a delta without an id continues the last one', async () => {
    const call = (fields: Record<string, unknown>) => delta({ tool_calls: [fields] })
    reply(
      sse(
        call({ id: 'A', type: 'function', function: { name: 'f', arguments: '{"a":' } }),
        call({ function: { arguments: '1}' } }),
        call({ id: 'B', type: 'function', function: { name: 'g', arguments: '{"b":2}' } }),
        call({ id: 'A', function: { arguments: '' } }), // an id already seen names its call again
        finishChunk('tool_calls'),
      ),
    )
    const result = assemble(await run(model()))
    expect(result.toolCalls).toEqual([
      { type: 'tool-call', id: 'A', name: 'f', arguments: '{"a":1}' },
      { type: 'tool-call', id: 'B', name: 'g', arguments: '{"b":2}' },
    ])
  })

  it.each([
    ['a null chunk', null, 'a chunk is null'],
    ['a null choice', { ...meta, choices: [null] }, 'choices[0] is null'],
    ['a null tool call', delta({ tool_calls: [null] }), 'choices[0].delta.tool_calls[0] is null'],
    [
      'a tool call that is a number',
      delta({ tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{}' } }, 7] }),
      'choices[0].delta.tool_calls[1] is 7',
    ],
  ])('%s → MALFORMED_RESPONSE naming what was wrong', async (_label, chunk, what) => {
    reply(sse(chunk, delta({ content: 'hi' }, 'stop')))
    expect(failureOf(await run(model()))).toEqual({
      kind: 'error',
      code: 'MALFORMED_RESPONSE',
      message: `openai: malformed stream data: ${what}, not an object`,
      requestId: 'req-1',
    })
  })
})

describe('openaiModel: failures', () => {
  it('HTTP 500 → SERVER with status and request id; the SDK does not retry by default', async () => {
    reply({ kind: 'status', status: 500, body: { error: { message: 'boom', type: 'server_error' } } })
    const failure = failureOf(await run(model()))
    expect(failure).toEqual({ kind: 'error', code: 'SERVER', status: 500, requestId: 'req-err', message: 'openai: 500 boom' })
    expect(received).toHaveLength(1)
  })

  it('429 → RATE_LIMIT with providerRetryAfterMs from retry-after (seconds) or retry-after-ms', async () => {
    const limited = { error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } }
    reply(
      { kind: 'status', status: 429, body: limited, headers: { 'retry-after': '2' } },
      { kind: 'status', status: 429, body: limited, headers: { 'retry-after': '2', 'retry-after-ms': '1500' } },
      { kind: 'status', status: 429, body: { error: { message: 'quota', code: 'insufficient_quota' } } },
    )
    expect(failureOf(await run(model()))).toMatchObject({ code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 2000 })
    expect(failureOf(await run(model()))).toMatchObject({ code: 'RATE_LIMIT', providerRetryAfterMs: 1500 })
    const quota = failureOf(await run(model()))
    expect(quota.code).toBe('QUOTA')
    expect('providerRetryAfterMs' in quota).toBe(false)
    expect(received).toHaveLength(3)
  })

  it.each([
    [401, 'INVALID_CREDENTIAL', { error: { message: 'Incorrect API key' } }],
    [403, 'AUTH', { error: { message: 'forbidden' } }],
    [402, 'QUOTA', { error: { message: 'Insufficient Balance' } }],
    [404, 'UNKNOWN_MODEL', { error: { message: 'The model `nope` does not exist' } }],
    [400, 'CONTEXT_WINDOW_EXCEEDED', { error: { message: "This model's maximum context length is 65536 tokens." } }],
    [400, 'CONTEXT_WINDOW_EXCEEDED', { error: { message: 'too long', code: 'context_length_exceeded' } }],
    [400, 'INVALID_REQUEST', { error: { message: 'bad tool schema' } }],
    [422, 'INVALID_REQUEST', { error: { message: 'unprocessable' } }],
    [503, 'SERVER', { error: { message: 'overloaded' } }],
  ] as const)('HTTP %i → %s', async (status, code, body) => {
    reply({ kind: 'status', status, body })
    const error = await thrownBy(model())
    expect(error.failure).toMatchObject({ code, status, requestId: 'req-err' })
  })

  it('401 from a client whose key the adapter cannot see → AUTH', async () => {
    reply({ kind: 'status', status: 401, body: { error: { message: 'nope' } } })
    const client = new OpenAI({ apiKey: async () => 'rotating', baseURL, maxRetries: 0 })
    expect((await thrownBy(openaiModel({ model: 'm', client }))).failure).toMatchObject({ code: 'AUTH', status: 401 })
  })

  it('a refused connection → TRANSPORT', async () => {
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    const failure = failureOf(await run(openaiModel({ model: 'm', apiKey: 'k', baseURL: `http://127.0.0.1:${port}/v1` })))
    expect(failure.code).toBe('TRANSPORT')
  })

  it('no response headers within the client timeout → TIMEOUT', async () => {
    reply({ kind: 'stall' })
    const client = new OpenAI({ apiKey: 'k', baseURL, timeout: 150, maxRetries: 0 })
    const started = Date.now()
    expect(failureOf(await run(openaiModel({ model: 'm', client })))).toMatchObject({ kind: 'error', code: 'TIMEOUT' })
    expect(Date.now() - started).toBeLessThan(2_000)
  })

  it('a missing API key → MISSING_CREDENTIAL before any network call; DeepSeek reads DEEPSEEK_API_KEY', async () => {
    const saved = { openai: process.env.OPENAI_API_KEY, deepseek: process.env.DEEPSEEK_API_KEY }
    try {
      delete process.env.OPENAI_API_KEY
      delete process.env.DEEPSEEK_API_KEY
      const remote = 'https://api.example.invalid/v1'
      const adapter = openaiModel({ model: 'm', baseURL: remote })
      expect((await thrownBy(adapter)).failure).toMatchObject({ code: 'MISSING_CREDENTIAL' })
      expect(failureOf(await run(adapter))).toMatchObject({ kind: 'error', code: 'MISSING_CREDENTIAL' })
      expect(received).toHaveLength(0)

      process.env.OPENAI_API_KEY = 'openai-key' // not sent to DeepSeek
      expect((await thrownBy(openaiModel({ model: 'deepseek-chat', provider: 'deepseek', baseURL: remote }))).failure.message).toMatch(/DEEPSEEK_API_KEY/)
      expect((await thrownBy(deepseekModel({ model: 'deepseek-chat' }))).failure.message).toMatch(/deepseekModel\(\{ apiKey \}\) or set DEEPSEEK_API_KEY/)
      const deepseek = openaiModel({ model: 'deepseek-chat', provider: 'deepseek', baseURL })
      process.env.DEEPSEEK_API_KEY = 'ds-key'
      reply(sse(delta({ content: 'hi' }), finishChunk('stop')))
      expect((await run(deepseek)).at(-1)).toEqual({ type: 'finish', reason: { kind: 'stop' } })
      expect(received.map((r) => r.headers.authorization)).toEqual(['Bearer ds-key'])
    } finally {
      for (const [key, value] of [
        ['OPENAI_API_KEY', saved.openai],
        ['DEEPSEEK_API_KEY', saved.deepseek],
      ] as const) {
        if (value === undefined) delete process.env[key]
        else process.env[key] = value
      }
    }
  })
})

describe('openaiModel: local servers', () => {
  it('a loopback baseURL needs no API key, and no Authorization header is sent', async () => {
    const saved = process.env.OPENAI_API_KEY
    delete process.env.OPENAI_API_KEY
    try {
      reply(sse(delta({ content: 'local' }), finishChunk('stop')), sse(delta({ content: 'local' }), finishChunk('stop')))
      expect((await run(openaiModel({ model: 'llama', baseURL }))).at(-1)).toEqual({ type: 'finish', reason: { kind: 'stop' } })
      const localhost = baseURL.replace('127.0.0.1', 'localhost')
      expect((await run(openaiModel({ model: 'llama', baseURL: localhost }))).at(-1)).toEqual({ type: 'finish', reason: { kind: 'stop' } })
      expect(received.map((r) => r.headers.authorization)).toEqual([undefined, undefined])
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved
    }
  })

  it('a 401 from a local server without a key is AUTH (no key was known)', async () => {
    reply({ kind: 'status', status: 401, body: { error: { message: 'key required' } } })
    expect((await thrownBy(openaiModel({ model: 'llama', baseURL }))).failure).toMatchObject({ code: 'AUTH', status: 401 })
  })
})

describe('openaiModel: abort', () => {
  it('an abort mid-stream ends the stream promptly with ABORTED and closes the connection', async () => {
    reply({ kind: 'sse', events: [delta({ content: 'partial' })], hang: true })
    const controller = new AbortController()
    const stream = model().stream(request({ signal: controller.signal }))
    const iterator = stream[Symbol.asyncIterator]()
    expect((await iterator.next()).value).toEqual({ type: 'block-start', index: 0, blockType: 'text' })
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', index: 0, text: 'partial' })
    const pending = iterator.next()
    const started = Date.now()
    controller.abort({ kind: 'user' })
    const error = await pending.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(Date.now() - started).toBeLessThan(1_000)
    expect(error).toBeInstanceOf(LlmError)
    expect((error as LlmError).failure).toEqual({ message: 'request aborted: user', code: 'ABORTED' })
    await expect.poll(() => closed.length, { timeout: 2_000 }).toBe(1)
  })

  it('through normalizeStream an abort becomes finish{aborted}; an already aborted signal sends nothing', async () => {
    reply({ kind: 'sse', events: [delta({ content: 'partial' })], hang: true })
    const controller = new AbortController()
    const chunks: StreamChunk[] = []
    for await (const chunk of normalizeStream(model(), request({ signal: controller.signal }))) {
      chunks.push(chunk)
      if (chunk.type === 'text-delta') controller.abort()
    }
    expect(chunks.map((c) => c.type)).toEqual(['block-start', 'text-delta', 'finish'])
    expect(failureOf(chunks)).toMatchObject({ kind: 'aborted', code: 'ABORTED' })

    const before = received.length
    expect(failureOf(await run(model(), request({ signal: controller.signal })))).toMatchObject({ kind: 'aborted' })
    expect(received).toHaveLength(before)
  })

  it('an abort while the client is being set up sends nothing and ends ABORTED at once', async () => {
    const adapter = model()
    const abortedAtOnce = async (when: string) => {
      const before = received.length
      reply({ kind: 'stall' }) // what a request sent anyway would get
      const controller = new AbortController()
      const chunks = normalizeStream(adapter, request({ signal: controller.signal }))
      const first = chunks[Symbol.asyncIterator]().next()
      controller.abort() // the stream now awaits connect()
      const outcome = await Promise.race([first, new Promise((resolve) => setTimeout(() => resolve('still pending after 1 s'), 1_000))])
      expect(outcome, when).toMatchObject({ value: { type: 'finish', reason: { kind: 'aborted', failure: { code: 'ABORTED' } } } })
      expect(received, when).toHaveLength(before)
      replies.length = 0
    }
    await abortedAtOnce('the first request, while the client is built')
    reply(sse(delta({ content: 'warm' }, 'stop')))
    await run(adapter)
    await abortedAtOnce('a later request, with the client ready')
  })

  it('requests sharing one signal leave no listeners behind on it', async () => {
    const warnings: string[] = []
    const onWarning = (w: Error) => warnings.push(w.name)
    process.on('warning', onWarning)
    try {
      const shared = new AbortController()
      const adapter = model()
      for (let k = 0; k < 12; k++) {
        reply(sse(delta({ content: String(k) }), finishChunk('stop')))
        await run(adapter, request({ signal: shared.signal }))
      }
      expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0)
      expect(warnings).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })
})

describe('openaiModel: end to end', () => {
  it('createAgent runs a two-step tool turn against the local server', async () => {
    reply(
      sse(
        delta({ role: 'assistant', content: null, reasoning_content: 'Need the sum.' }),
        delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'add', arguments: '' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '{"a":2,' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '"b":3}' } }] }),
        finishChunk('tool_calls'),
        usageChunk({ prompt_tokens: 20, completion_tokens: 8 }),
      ),
      sse(delta({ content: '2 + 3 = 5' }), finishChunk('stop'), usageChunk({ prompt_tokens: 40, completion_tokens: 6 })),
    )
    const add = defineTool({
      name: 'add',
      description: 'Adds two numbers',
      input: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => String(a + b),
    })
    const agent = createAgent({
      model: openaiModel({ baseURL, apiKey: 'k', model: 'm', contextWindow: 8192 }),
      tools: [add],
      systemPrompt: 'You add.',
      maxTokens: 256,
      logger: { error: () => {} },
    })
    try {
      agent.followup(userMessage('what is 2 + 3?'))
      await agent.whenIdle()
      const events = agent.session.events
      expect(checkSessionInvariants(events)).toEqual([])
      expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data)).toEqual([{ turn: 1, reason: { kind: 'completed' } }])
      expect(events.filter((e) => e.type === 'step/start')).toHaveLength(2)
      expect(events.find((e) => e.type === 'request/context')?.data).toEqual({ provider: 'openai', model: 'm', contextWindow: 8192 })
      const results = events.flatMap((e) => (e.type === 'tool/result' ? [e.data.message.content[0]] : []))
      expect(results).toEqual([{ type: 'tool-result', toolCallId: 'call_1', content: '5', isError: false }])
      const anchors = events.flatMap((e) => (e.type === 'assistant/message' ? [e.data] : []))
      expect(anchors.map((a) => a.usage)).toEqual([
        { inputTokens: 20, outputTokens: 8 },
        { inputTokens: 40, outputTokens: 6 },
      ])
      expect(anchors[1].message.content).toEqual([{ type: 'text', text: '2 + 3 = 5' }])

      expect(received).toHaveLength(2)
      expect(received[0].body).toMatchObject({
        model: 'm',
        max_tokens: 256,
        messages: [
          { role: 'system', content: 'You add.' },
          { role: 'user', content: 'what is 2 + 3?' },
        ],
      })
      expect(received[0].body.tools).toEqual([
        { type: 'function', function: { name: 'add', description: 'Adds two numbers', parameters: expect.objectContaining({ type: 'object' }) } },
      ])
      expect(received[1].body.messages.slice(2)).toEqual([
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '5' },
      ])
    } finally {
      await agent.dispose()
    }
  })
})

// aiSdkModel over @ai-sdk/anthropic, pointed at a loopback server that speaks
// Anthropic's Messages SSE: thinking blocks with signatures replayed across
// steps and turns, tool calls with streamed input, cache usage, an abort
// mid-stream, a 429 with retry-after, a 500, and a key echoed in an error.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAnthropic } from '@ai-sdk/anthropic'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { aiSdkModel } from '../../src/adapters/ai-sdk.js'
import { createAgent, defineTool, type Agent, type SessionEvent, type SessionEventOf, type SessionEventType } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { startSseServer, type ScriptedReply, type SseServer } from './sse-server.js'

let server: SseServer
const API_KEY = 'plainkey-7f3a9c1e5b'

beforeAll(async () => {
  server = await startSseServer()
})
afterEach(() => {
  server.received.length = 0
  server.dropped.length = 0
})
afterAll(async () => {
  await server.close()
})

// ---- Anthropic's wire format -------------------------------------------------

type Block =
  | { kind: 'thinking'; thinking: string; signature: string }
  | { kind: 'redacted'; data: string }
  | { kind: 'text'; text: string }
  | { kind: 'tool'; id: string; name: string; json: readonly string[] }

/** One Messages stream: message_start, each block's start/deltas/stop, message_delta, message_stop. */
function messageStream(blocks: readonly Block[], stopReason: string, usage: { input: number; output: number; cacheRead?: number; cacheWrite?: number }) {
  const events: Record<string, unknown>[] = [
    {
      type: 'message_start',
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [],
        stop_reason: null,
        usage: {
          input_tokens: usage.input,
          cache_read_input_tokens: usage.cacheRead ?? 0,
          cache_creation_input_tokens: usage.cacheWrite ?? 0,
          output_tokens: 1,
        },
      },
    },
  ]
  blocks.forEach((block, index) => {
    if (block.kind === 'redacted') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'redacted_thinking', data: block.data } })
    } else if (block.kind === 'thinking') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '' } })
      events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: block.thinking } })
      events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } })
    } else if (block.kind === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } })
      events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } })
    } else {
      events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } })
      for (const part of block.json) events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } })
    }
    events.push({ type: 'content_block_stop', index })
  })
  events.push({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output } })
  events.push({ type: 'message_stop' })
  return events
}

const sse = (events: Record<string, unknown>[]): ScriptedReply => ({ kind: 'sse', events })
const anthropicError = (status: number, type: string, message: string, headers?: Record<string, string>): ScriptedReply => ({
  kind: 'status',
  status,
  body: { type: 'error', error: { type, message } },
  ...(headers ? { headers } : {}),
})

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => String(a + b),
})

function model() {
  return aiSdkModel(createAnthropic({ baseURL: server.baseURL, apiKey: API_KEY })('claude-sonnet-4-5'))
}

const THINKING = { providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } } }

function agentWith(options: Partial<Parameters<typeof createAgent>[0]> = {}): Agent {
  return createAgent({ model: model(), tools: [add], systemPrompt: 'You add.', maxTokens: 2048, request: THINKING, logger: { error: () => {} }, ...options })
}

const ofType = <T extends SessionEventType>(events: readonly SessionEvent[], type: T): SessionEventOf<T>['data'][] =>
  events.filter((e) => e.type === type).map((e) => e.data as SessionEventOf<T>['data'])

/** Waits (a bounded number of turns of the event loop) until `check` holds. */
async function until(check: () => boolean): Promise<void> {
  for (let k = 0; k < 400 && !check(); k++) await new Promise((resolve) => setTimeout(resolve, 5))
  expect(check()).toBe(true)
}

describe('aiSdkModel over @ai-sdk/anthropic (Messages SSE on loopback)', () => {
  it('a tool-using thinking conversation replays its signatures, tool call and result across steps and turns', async () => {
    server.reply(
      sse(
        messageStream(
          [
            { kind: 'thinking', thinking: 'I should add them.', signature: 'sig-step-1' },
            { kind: 'redacted', data: 'opaque-redacted-1' },
            { kind: 'tool', id: 'toolu_1', name: 'add', json: ['{"a":2,', '"b":3}'] },
          ],
          'tool_use',
          { input: 10, output: 30, cacheRead: 50, cacheWrite: 5 },
        ),
      ),
      sse(
        messageStream(
          [
            { kind: 'thinking', thinking: 'The tool said 5.', signature: 'sig-step-2' },
            { kind: 'text', text: '2 + 3 = 5' },
          ],
          'end_turn',
          { input: 80, output: 12 },
        ),
      ),
      sse(messageStream([{ kind: 'text', text: 'Times 2 is 10.' }], 'end_turn', { input: 120, output: 6 })),
    )
    const agent = agentWith()
    try {
      const first = await agent.run('what is 2 + 3?')
      expect(first.end).toEqual({ kind: 'completed' })
      expect(first.text).toBe('2 + 3 = 5')
      const second = await agent.run('and times 2?')
      expect(second.text).toBe('Times 2 is 10.')
      const events = agent.session.events
      expect(checkSessionInvariants(events)).toEqual([])

      // the log keeps each signature beside its reasoning block
      const anchors = ofType(events, 'assistant/message')
      expect(anchors[0].message.content).toEqual([
        { type: 'reasoning', text: 'I should add them.' },
        { type: 'reasoning', text: '' },
        { type: 'tool-call', id: 'toolu_1', name: 'add', arguments: '{"a":2,"b":3}' },
      ])
      expect(anchors[0].message.source).toMatchObject({
        provider: 'anthropic.messages',
        model: 'claude-sonnet-4-5',
        replayState: { blocks: [{ anthropic: { signature: 'sig-step-1' } }, { anthropic: { redactedData: 'opaque-redacted-1' } }, null] },
      })
      expect(anchors[0].usage).toEqual({ inputTokens: 10, outputTokens: 30, cacheReadTokens: 50, cacheWriteTokens: 5 })
      expect(ofType(events, 'tool/result').map((r) => r.message.content[0].content)).toEqual(['5'])

      // what went out: thinking switched on, the tool, then the history with signatures and the tool round trip
      expect(server.received).toHaveLength(3)
      const [one, two, three] = server.received.map((r) => r.body)
      expect(one).toMatchObject({ model: 'claude-sonnet-4-5', max_tokens: 2048 + 1024, stream: true, thinking: { type: 'enabled', budget_tokens: 1024 } })
      expect(one.system).toEqual([{ type: 'text', text: 'You add.' }])
      expect(one.tools).toEqual([
        expect.objectContaining({ name: 'add', description: 'Adds two numbers', input_schema: expect.objectContaining({ type: 'object' }) }),
      ])
      expect(one.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'what is 2 + 3?' }] }])
      const replayedStep1 = [
        { role: 'user', content: [{ type: 'text', text: 'what is 2 + 3?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'I should add them.', signature: 'sig-step-1' },
            { type: 'redacted_thinking', data: 'opaque-redacted-1' },
            { type: 'tool_use', id: 'toolu_1', name: 'add', input: { a: 2, b: 3 } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '5' }] },
      ]
      expect(two.messages).toMatchObject(replayedStep1)
      expect(three.messages).toMatchObject([
        ...replayedStep1,
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The tool said 5.', signature: 'sig-step-2' },
            { type: 'text', text: '2 + 3 = 5' },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'and times 2?' }] },
      ])
    } finally {
      await agent.dispose()
    }
  })

  it('signatures survive a SQLite store: an agent resumed on the stored session sends them back', async () => {
    server.reply(
      sse(
        messageStream(
          [
            { kind: 'thinking', thinking: 'Stored thought.', signature: 'sig-stored' },
            { kind: 'text', text: 'first answer' },
          ],
          'end_turn',
          { input: 4, output: 4 },
        ),
      ),
      sse(messageStream([{ kind: 'text', text: 'second answer' }], 'end_turn', { input: 8, output: 2 })),
    )
    const dir = mkdtempSync(join(tmpdir(), 'agentchart-ai-sdk-'))
    try {
      const path = join(dir, 'chat.db')
      const options = { model: model(), systemPrompt: 'You add.', maxTokens: 2048, request: THINKING, sessionId: 'chat', logger: { error: () => {} } }
      const first = await createAgent({ ...options, store: sqliteStore({ path }) })
      expect((await first.run('one')).text).toBe('first answer')
      await first.dispose()
      await first.store?.close()

      const store = sqliteStore({ path })
      const again = await createAgent({ ...options, model: model(), store })
      try {
        expect((await again.run('two')).text).toBe('second answer')
        expect(server.received[1].body.messages).toMatchObject([
          { role: 'user', content: [{ type: 'text', text: 'one' }] },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'Stored thought.', signature: 'sig-stored' },
              { type: 'text', text: 'first answer' },
            ],
          },
          { role: 'user', content: [{ type: 'text', text: 'two' }] },
        ])
      } finally {
        await again.dispose()
        await store.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('parallel tool calls: both results go back in one user message, in call order', async () => {
    server.reply(
      sse(
        messageStream(
          [
            { kind: 'tool', id: 'toolu_a', name: 'add', json: ['{"a":1,"b":2}'] },
            { kind: 'tool', id: 'toolu_b', name: 'add', json: ['{"a":3,"b":4}'] },
          ],
          'tool_use',
          { input: 5, output: 5 },
        ),
      ),
      sse(messageStream([{ kind: 'text', text: '3 and 7' }], 'end_turn', { input: 9, output: 3 })),
    )
    const agent = agentWith({ request: {} })
    try {
      expect((await agent.run('1+2 and 3+4?')).text).toBe('3 and 7')
      expect(server.received[1].body.messages.slice(1)).toMatchObject([
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'toolu_a', input: { a: 1, b: 2 } },
            { type: 'tool_use', id: 'toolu_b', input: { a: 3, b: 4 } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_a', content: '3' },
            { type: 'tool_result', tool_use_id: 'toolu_b', content: '7' },
          ],
        },
      ])
    } finally {
      await agent.dispose()
    }
  })

  it("structured output: the response format goes out as Anthropic's json tool, and its input comes back as the turn's object", async () => {
    server.reply(sse(messageStream([{ kind: 'tool', id: 'toolu_json', name: 'json', json: ['{"sum":', '5}'] }], 'tool_use', { input: 9, output: 4 })))
    const agent = agentWith({
      tools: [],
      request: { responseFormat: z.object({ sum: z.number() }), providerOptions: { anthropic: { structuredOutputMode: 'jsonTool' } } },
    })
    try {
      const result = await agent.run('2 + 3 as JSON')
      expect(result.end).toEqual({ kind: 'completed' })
      expect(result.object).toEqual({ sum: 5 })
      const [body] = server.received.map((r) => r.body)
      expect(body.tools).toEqual([
        expect.objectContaining({ name: 'json', input_schema: expect.objectContaining({ properties: { sum: { type: 'number' } } }) }),
      ])
      expect(body.tool_choice).toMatchObject({ type: 'any' })
    } finally {
      await agent.dispose()
    }
  })

  it('CX-7: an abort mid-stream ends the turn aborted, keeps the streamed prefix and closes the connection', async () => {
    const events = messageStream(
      [
        { kind: 'thinking', thinking: 'Thinking it over.', signature: 'sig-partial' },
        { kind: 'text', text: 'The answer is' },
      ],
      'end_turn',
      { input: 5, output: 5 },
    )
    // everything up to the text delta, then the connection stays open
    server.reply({
      kind: 'sse',
      events: events.slice(
        0,
        events.findIndex((e) => e.type === 'content_block_stop' && e.index === 1),
      ),
      hold: true,
    })
    const holding = server.whenHolding()
    const agent = agentWith()
    try {
      agent.followup('tell me')
      await holding
      await until(() => agent.session.events.some((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'text-delta'))
      agent.cancel()
      await agent.whenIdle()
      const log = agent.session.events
      expect(checkSessionInvariants(log)).toEqual([])
      expect(ofType(log, 'turn/end').map((e) => e.reason)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
      const [anchor] = ofType(log, 'assistant/message')
      expect(anchor.interrupted).toBe(true)
      expect(anchor.message.content).toEqual([
        { type: 'reasoning', text: 'Thinking it over.' },
        { type: 'text', text: 'The answer is' },
      ])
      await until(() => server.dropped.length === 1)
      expect(server.received).toHaveLength(1)
    } finally {
      await agent.dispose()
    }
  })

  it('RQ-14: a 429 with retry-after is RATE_LIMIT; the agent waits the delay the provider asked for, then succeeds', async () => {
    server.reply(
      anthropicError(429, 'rate_limit_error', 'Number of requests has exceeded your rate limit', { 'retry-after': '0.02' }),
      sse(messageStream([{ kind: 'text', text: 'done' }], 'end_turn', { input: 3, output: 1 })),
    )
    const waits: number[] = []
    const agent = agentWith({
      retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 1000 },
      sleep: async (ms) => void waits.push(ms),
    })
    try {
      const result = await agent.run('hi')
      expect(result.end).toEqual({ kind: 'completed' })
      expect(result.text).toBe('done')
      const [retry] = ofType(agent.session.events, 'llm/retry')
      expect(retry.failure).toMatchObject({ code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 20, requestId: 'req-1' })
      expect(retry.delayMs).toBe(20)
      expect(waits).toEqual([20])
      expect(server.received).toHaveLength(2)
    } finally {
      await agent.dispose()
    }
  })

  it('a 500 is SERVER (retried by default, then the turn ends error); a 529 overload is SERVER too', async () => {
    server.reply(
      anthropicError(500, 'api_error', 'Internal server error'),
      anthropicError(529, 'overloaded_error', 'Overloaded'),
      anthropicError(500, 'api_error', 'Internal server error'),
    )
    const agent = agentWith({ retry: { maxRetries: 2, baseDelayMs: 1 }, sleep: async () => {} })
    try {
      const result = await agent.run('hi')
      expect(result.end).toMatchObject({ kind: 'error', error: { code: 'SERVER', status: 500, requestId: 'req-3' } })
      expect(ofType(agent.session.events, 'llm/retry').map((r) => [r.failure.code, r.failure.status])).toEqual([
        ['SERVER', 500],
        ['SERVER', 529],
      ])
      expect(server.received).toHaveLength(3)
    } finally {
      await agent.dispose()
    }
  })

  it('an error event inside the stream is a failure of the attempt (overloaded_error → SERVER)', async () => {
    const events = messageStream([{ kind: 'text', text: 'partial' }], 'end_turn', { input: 1, output: 1 }).slice(0, 3)
    server.reply(sse([...events, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]))
    const agent = agentWith({ retry: false })
    try {
      const result = await agent.run('hi')
      expect(result.end).toMatchObject({ kind: 'error', error: { code: 'SERVER', message: 'anthropic.messages: Overloaded', requestId: 'req-1' } })
    } finally {
      await agent.dispose()
    }
  })

  it('a 401 is INVALID_CREDENTIAL, and the key the provider echoes back is cut out of what is reported', async () => {
    server.reply(anthropicError(401, 'authentication_error', `the key ${API_KEY} is not valid`))
    const agent = agentWith({ retry: false })
    try {
      const result = await agent.run('hi')
      expect(result.end).toMatchObject({ kind: 'error', error: { code: 'INVALID_CREDENTIAL', status: 401 } })
      expect(JSON.stringify(agent.session.events)).not.toContain(API_KEY)
      expect(JSON.stringify(result)).toContain('[redacted]')
      expect(server.received[0].headers['x-api-key']).toBe(API_KEY)
    } finally {
      await agent.dispose()
    }
  })
})

// aiSdkModel over @ai-sdk/openai's default model (the Responses API), pointed
// at a loopback server that speaks the Responses SSE events: reasoning items
// with encrypted content and function calls replayed across steps and turns,
// usage with cached and reasoning tokens, structured output and provider
// options passed through, an abort mid-stream, a 429 with retry-after and a 500.
import { createOpenAI } from '@ai-sdk/openai'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { aiSdkModel } from '../../src/adapters/ai-sdk.js'
import { createAgent, defineTool, type Agent, type SessionEvent, type SessionEventOf, type SessionEventType } from '../../src/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { startSseServer, type ScriptedReply, type SseServer } from './sse-server.js'

let server: SseServer

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

// ---- the Responses API's wire format ----------------------------------------

type Item =
  | { kind: 'reasoning'; id: string; summary: string; encrypted: string }
  | { kind: 'message'; id: string; text: string }
  | { kind: 'call'; id: string; callId: string; name: string; json: readonly string[] }

/** One Responses stream: response.created, each output item's added/deltas/done, response.completed with usage. */
function responseStream(items: readonly Item[], usage: { input: number; cached?: number; output: number; reasoning?: number }) {
  const events: Record<string, unknown>[] = [{ type: 'response.created', response: { id: 'resp_1', created_at: 1_700_000_000, model: 'gpt-5' } }]
  items.forEach((item, output_index) => {
    if (item.kind === 'reasoning') {
      events.push({ type: 'response.output_item.added', output_index, item: { type: 'reasoning', id: item.id, encrypted_content: item.encrypted } })
      events.push({ type: 'response.reasoning_summary_part.added', item_id: item.id, summary_index: 0 })
      events.push({ type: 'response.reasoning_summary_text.delta', item_id: item.id, summary_index: 0, delta: item.summary })
      events.push({ type: 'response.reasoning_summary_part.done', item_id: item.id, summary_index: 0 })
      events.push({ type: 'response.output_item.done', output_index, item: { type: 'reasoning', id: item.id, encrypted_content: item.encrypted } })
    } else if (item.kind === 'message') {
      events.push({ type: 'response.output_item.added', output_index, item: { type: 'message', id: item.id } })
      events.push({ type: 'response.output_text.delta', item_id: item.id, delta: item.text })
      events.push({ type: 'response.output_item.done', output_index, item: { type: 'message', id: item.id } })
    } else {
      const base = { type: 'function_call', id: item.id, call_id: item.callId, name: item.name }
      events.push({ type: 'response.output_item.added', output_index, item: { ...base, arguments: '' } })
      for (const delta of item.json) events.push({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index, delta })
      events.push({ type: 'response.output_item.done', output_index, item: { ...base, arguments: item.json.join(''), status: 'completed' } })
    }
  })
  events.push({
    type: 'response.completed',
    response: {
      usage: {
        input_tokens: usage.input,
        input_tokens_details: { cached_tokens: usage.cached ?? 0 },
        output_tokens: usage.output,
        output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
      },
    },
  })
  return events
}

const sse = (events: Record<string, unknown>[]): ScriptedReply => ({ kind: 'sse', events })
const openaiError = (status: number, message: string, headers?: Record<string, string>): ScriptedReply => ({
  kind: 'status',
  status,
  body: { error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null, param: null } },
  ...(headers ? { headers } : {}),
})

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => String(a + b),
})

/** Stateless replay: reasoning items go back whole, with their encrypted content. */
const STATELESS = { providerOptions: { openai: { store: false, include: ['reasoning.encrypted_content'] } } }

function agentWith(options: Partial<Parameters<typeof createAgent>[0]> = {}): Agent {
  return createAgent({
    model: aiSdkModel(createOpenAI({ baseURL: server.baseURL, apiKey: 'sk-test-0123456789abcdef' })('gpt-5'), { contextWindow: 400_000 }),
    tools: [add],
    systemPrompt: 'You add.',
    request: STATELESS,
    logger: { error: () => {} },
    ...options,
  })
}

const ofType = <T extends SessionEventType>(events: readonly SessionEvent[], type: T): SessionEventOf<T>['data'][] =>
  events.filter((e) => e.type === type).map((e) => e.data as SessionEventOf<T>['data'])

async function until(check: () => boolean): Promise<void> {
  for (let k = 0; k < 400 && !check(); k++) await new Promise((resolve) => setTimeout(resolve, 5))
  expect(check()).toBe(true)
}

describe('aiSdkModel over @ai-sdk/openai (Responses SSE on loopback)', () => {
  it('a tool-using reasoning conversation replays reasoning items, the function call and its output across steps and turns', async () => {
    server.reply(
      sse(
        responseStream(
          [
            { kind: 'reasoning', id: 'rs_1', summary: 'Adding two numbers.', encrypted: 'enc-1' },
            { kind: 'call', id: 'fc_1', callId: 'call_1', name: 'add', json: ['{"a":2,', '"b":3}'] },
          ],
          { input: 100, cached: 60, output: 40, reasoning: 25 },
        ),
      ),
      sse(responseStream([{ kind: 'message', id: 'msg_2', text: '2 + 3 = 5' }], { input: 150, output: 8 })),
      sse(responseStream([{ kind: 'message', id: 'msg_3', text: '10' }], { input: 170, output: 2 })),
    )
    const agent = agentWith()
    try {
      expect((await agent.run('what is 2 + 3?')).text).toBe('2 + 3 = 5')
      expect((await agent.run('times 2?')).text).toBe('10')
      const events = agent.session.events
      expect(checkSessionInvariants(events)).toEqual([])
      expect(ofType(events, 'request/context')[0]).toEqual({ provider: 'openai.responses', model: 'gpt-5', contextWindow: 400_000 })

      const [first] = ofType(events, 'assistant/message')
      expect(first.message.content).toEqual([
        { type: 'reasoning', text: 'Adding two numbers.' },
        { type: 'tool-call', id: 'call_1', name: 'add', arguments: '{"a":2,"b":3}' },
      ])
      expect(first.message.source.replayState?.blocks).toEqual([
        { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'enc-1' } },
        { openai: { itemId: 'fc_1' } },
      ])
      expect(first.usage).toEqual({ inputTokens: 40, outputTokens: 15, cacheReadTokens: 60, reasoningTokens: 25 })

      expect(server.received.map((r) => r.path)).toEqual(['/v1/responses', '/v1/responses', '/v1/responses'])
      const [one, two, three] = server.received.map((r) => r.body)
      expect(one).toMatchObject({ model: 'gpt-5', stream: true, store: false, include: ['reasoning.encrypted_content'] })
      expect(one.tools).toEqual([expect.objectContaining({ type: 'function', name: 'add', description: 'Adds two numbers' })])
      const step1 = [
        { role: 'developer', content: 'You add.' },
        { role: 'user', content: [{ type: 'input_text', text: 'what is 2 + 3?' }] },
        { type: 'reasoning', id: 'rs_1', encrypted_content: 'enc-1', summary: [{ type: 'summary_text', text: 'Adding two numbers.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a":2,"b":3}' },
        { type: 'function_call_output', call_id: 'call_1', output: '5' },
      ]
      expect(one.input).toEqual(step1.slice(0, 2))
      expect(two.input).toMatchObject(step1)
      expect(three.input).toMatchObject([
        ...step1,
        { role: 'assistant', content: [{ type: 'output_text', text: '2 + 3 = 5' }] },
        { role: 'user', content: [{ type: 'input_text', text: 'times 2?' }] },
      ])
    } finally {
      await agent.dispose()
    }
  })

  it("with OpenAI's default store, the replayed reasoning goes back as a reference to its stored item, the call as it was made", async () => {
    server.reply(
      sse(
        responseStream(
          [
            { kind: 'reasoning', id: 'rs_9', summary: 'Add.', encrypted: 'enc-9' },
            { kind: 'call', id: 'fc_9', callId: 'call_9', name: 'add', json: ['{"a":1,"b":1}'] },
          ],
          { input: 10, output: 10 },
        ),
      ),
      sse(responseStream([{ kind: 'message', id: 'msg_9', text: '2' }], { input: 20, output: 1 })),
    )
    const agent = agentWith({ request: {} })
    try {
      expect((await agent.run('1 + 1?')).text).toBe('2')
      const second = server.received[1].body
      expect(second.input.slice(2)).toMatchObject([
        { type: 'item_reference', id: 'rs_9' },
        { type: 'function_call', call_id: 'call_9', name: 'add', arguments: '{"a":1,"b":1}' },
        { type: 'function_call_output', call_id: 'call_9', output: '2' },
      ])
    } finally {
      await agent.dispose()
    }
  })

  it('structured output and provider options pass through to the Responses body', async () => {
    server.reply(sse(responseStream([{ kind: 'message', id: 'msg_1', text: '{"sum":5}' }], { input: 10, output: 5 })))
    const agent = agentWith({
      tools: [],
      request: {
        responseFormat: z.object({ sum: z.number() }),
        temperature: 0.5,
        providerOptions: { openai: { store: false, user: 'user-7', serviceTier: 'flex' } },
      },
    })
    try {
      const result = await agent.run('sum?')
      expect(result.end).toEqual({ kind: 'completed' })
      const [body] = server.received.map((r) => r.body)
      expect(body).toMatchObject({ store: false, user: 'user-7', service_tier: 'flex' })
      // gpt-5 takes no temperature: the provider's warning is kept in the log with the response
      expect(body).not.toHaveProperty('temperature')
      const [anchor] = ofType(agent.session.events, 'assistant/message')
      expect(anchor.message.source.replayState?.response).toMatchObject({
        id: 'resp_1',
        modelId: 'gpt-5',
        warnings: [expect.objectContaining({ type: 'unsupported', feature: 'temperature' })],
        providerMetadata: { openai: { responseId: 'resp_1' } },
      })
      expect(body.text.format).toMatchObject({
        type: 'json_schema',
        strict: true,
        schema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
      })
    } finally {
      await agent.dispose()
    }
  })

  it('CX-7: an abort mid-stream ends the turn aborted with the text streamed so far', async () => {
    const events = responseStream([{ kind: 'message', id: 'msg_1', text: 'Half an ans' }], { input: 1, output: 1 })
    server.reply({ kind: 'sse', events: events.slice(0, 3), hold: true })
    const holding = server.whenHolding()
    const agent = agentWith()
    try {
      agent.followup('go')
      await holding
      await until(() => agent.session.events.some((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'text-delta'))
      agent.cancel()
      await agent.whenIdle()
      const log = agent.session.events
      expect(ofType(log, 'turn/end').map((e) => e.reason)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
      expect(ofType(log, 'assistant/message').map((a) => [a.interrupted, a.message.content])).toEqual([[true, [{ type: 'text', text: 'Half an ans' }]]])
      await until(() => server.dropped.length === 1)
    } finally {
      await agent.dispose()
    }
  })

  it('RQ-14: a 429 with retry-after-ms is RATE_LIMIT and retried after that delay; a 500 is SERVER', async () => {
    server.reply(
      openaiError(429, 'Rate limit reached', { 'retry-after-ms': '15' }),
      openaiError(500, 'The server had an error'),
      sse(responseStream([{ kind: 'message', id: 'msg_1', text: 'ok' }], { input: 1, output: 1 })),
    )
    const waits: number[] = []
    const agent = agentWith({ retry: { maxRetries: 3, baseDelayMs: 1, random: () => 0.5 }, sleep: async (ms) => void waits.push(ms) })
    try {
      const result = await agent.run('hi')
      expect(result.text).toBe('ok')
      const retries = ofType(agent.session.events, 'llm/retry')
      expect(retries.map((r) => r.failure)).toEqual([
        expect.objectContaining({ code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 15, requestId: 'req-1' }),
        expect.objectContaining({ code: 'SERVER', status: 500, requestId: 'req-2' }),
      ])
      expect(waits[0]).toBe(15)
      expect(server.received).toHaveLength(3)
    } finally {
      await agent.dispose()
    }
  })

  it('a refused connection is TRANSPORT', async () => {
    const closed = await startSseServer()
    const baseURL = closed.baseURL
    await closed.close()
    const agent = createAgent({
      model: aiSdkModel(createOpenAI({ baseURL, apiKey: 'sk-test-0123456789abcdef' })('gpt-5')),
      retry: false,
      logger: { error: () => {} },
    })
    try {
      const result = await agent.run('hi')
      expect(result.end).toMatchObject({ kind: 'error', error: { code: 'TRANSPORT' } })
    } finally {
      await agent.dispose()
    }
  })
})

// deepseekModel against a loopback server that enforces DeepSeek's thinking-mode
// rule: every assistant message that made tool calls must come back with the
// exact reasoning_content it was produced with, or the request gets HTTP 400.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { deepseekModel, openaiModel } from '../../src/adapters/openai.js'
import { createAgent, defineTool, type Agent } from '../../src/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { delta, finishChunk, sse, startChatServer, usageChunk, type ChatServer, type Reply } from './chat-server.js'

/** One planned model answer: reasoning (possibly none), then tool calls or text. */
interface Planned {
  reasoning: string
  calls?: { id: string; name: string; arguments: string }[]
  text?: string
}

let server: ChatServer
let plan: Planned[] = []
/** The reasoning the fake model produced with each tool call id. */
const producedWith = new Map<string, string>()

const REFUSAL = { error: { message: 'The reasoning_content in the thinking mode must be passed back to the API.', type: 'invalid_request_error' } }

/** DeepSeek's rule (thinking mode is on unless the body switches it off), then the next planned answer. */
function fakeDeepSeek(body: Record<string, any>): Reply {
  const thinking = body.thinking?.type !== 'disabled'
  for (const message of body.messages as Record<string, any>[]) {
    if (message.role !== 'assistant' || !Array.isArray(message.tool_calls) || message.tool_calls.length === 0) continue
    if (thinking && typeof message.reasoning_content !== 'string') return { kind: 'status', status: 400, body: REFUSAL }
    if (thinking && message.reasoning_content !== producedWith.get(message.tool_calls[0].id)) {
      return { kind: 'status', status: 400, body: { error: { message: 'reasoning_content does not match', type: 'invalid_request_error' } } }
    }
  }
  const next = plan.shift()
  if (next === undefined) return { kind: 'status', status: 500, body: { error: { message: 'nothing planned' } } }
  const events: unknown[] = [delta({ role: 'assistant', content: null, reasoning_content: '' })]
  if (thinking && next.reasoning) events.push(delta({ content: null, reasoning_content: next.reasoning }))
  if (next.text) events.push(delta({ content: next.text, reasoning_content: null }))
  next.calls?.forEach((call, index) => {
    producedWith.set(call.id, thinking ? next.reasoning : '')
    events.push(delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] }))
  })
  events.push(
    finishChunk(next.calls ? 'tool_calls' : 'stop'),
    usageChunk({ prompt_tokens: 50, completion_tokens: 20, completion_tokens_details: { reasoning_tokens: 12 } }),
  )
  return sse(...events)
}

const weather = defineTool({
  name: 'weather',
  description: 'Current weather of a city',
  input: z.object({ city: z.string() }),
  execute: ({ city }) => (city === 'Oslo' ? '3°C, snow' : '11°C, rain'),
})
const today = defineTool({ name: 'today', description: "Today's date", input: z.object({}), execute: () => 'Monday' })

/** Three turns: two tool calls in two steps, then a tool call with empty reasoning, then plain text. */
const THREE_TURNS: Planned[] = [
  { reasoning: 'Oslo first.', calls: [{ id: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' }] },
  { reasoning: 'Now Paris.', calls: [{ id: 'c2', name: 'weather', arguments: '{"city":"Paris"}' }] },
  { reasoning: 'Both known.', text: 'Oslo: 3°C and snow. Paris: 11°C and rain.' },
  { reasoning: '', calls: [{ id: 'c3', name: 'today', arguments: '{}' }] },
  { reasoning: 'Got the date.', text: 'It is Monday.' },
  { reasoning: 'Easy.', text: 'You are welcome.' },
]

const agents: Agent[] = []
function agentOn(model: ReturnType<typeof deepseekModel>): Agent {
  const agent = createAgent({ model, tools: [weather, today], logger: { error: () => {} } })
  agents.push(agent)
  return agent
}

beforeAll(async () => {
  server = await startChatServer((body) => fakeDeepSeek(body))
})

beforeEach(async () => {
  for (const agent of agents.splice(0)) await agent.dispose()
  server.received.length = 0
  producedWith.clear()
  plan = []
})

afterAll(async () => {
  for (const agent of agents.splice(0)) await agent.dispose()
  await server.close()
})

describe('deepseekModel: thinking mode with tools', () => {
  it('a three-turn tool conversation is accepted request after request, and the log keeps the reasoning', async () => {
    plan = structuredClone(THREE_TURNS)
    const agent = agentOn(deepseekModel({ model: 'deepseek-v4-pro', baseURL: server.baseURL, apiKey: 'k', thinking: true, reasoningEffort: 'high' }))
    const first = await agent.run('Weather in Oslo and Paris?')
    const second = await agent.run('And what day is it?')
    const third = await agent.run('Thanks!')

    expect([first, second, third].map((r) => [r.end.kind, r.steps, r.text])).toEqual([
      ['completed', 3, 'Oslo: 3°C and snow. Paris: 11°C and rain.'],
      ['completed', 2, 'It is Monday.'],
      ['completed', 1, 'You are welcome.'],
    ])
    expect(server.received.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
    for (const { body } of server.received) {
      expect(body.thinking).toEqual({ type: 'enabled' })
      expect(body.reasoning_effort).toBe('high')
    }
    // the last request carries every tool-call message with its reasoning, and no other reasoning
    const assistants = server.received[5].body.messages.filter((m: { role: string }) => m.role === 'assistant')
    expect(assistants.map((m: Record<string, unknown>) => [m.tool_calls ? 'calls' : m.content, m.reasoning_content])).toEqual([
      ['calls', 'Oslo first.'],
      ['calls', 'Now Paris.'],
      ['Oslo: 3°C and snow. Paris: 11°C and rain.', undefined],
      ['calls', ''],
      ['It is Monday.', undefined],
    ])

    const events = agent.session.events
    expect(checkSessionInvariants(events)).toEqual([])
    const reasoning = events.flatMap((e) => (e.type === 'assistant/message' ? e.data.message.content.filter((b) => b.type === 'reasoning') : []))
    expect(reasoning.map((b) => (b as { text: string }).text)).toEqual(['Oslo first.', 'Now Paris.', 'Both known.', 'Got the date.', 'Easy.'])
    const header = events.find((e) => e.type === 'request/header')
    expect(header?.data.header.config).toMatchObject({
      provider: 'deepseek',
      reasoningEffort: 'high',
      providerOptions: { deepseek: { thinking: { type: 'enabled' } } },
    })
    expect(agent.usage).toMatchObject({ inputTokens: 300, outputTokens: 48, reasoningTokens: 72 })
  })

  it('the server enforces the rule: an adapter that drops reasoning gets HTTP 400 on its second request', async () => {
    plan = structuredClone(THREE_TURNS)
    const agent = agentOn(openaiModel({ model: 'deepseek-v4-pro', provider: 'plain', baseURL: server.baseURL, apiKey: 'k' }))
    const result = await agent.run('Weather in Oslo and Paris?')
    expect(server.received.map((r) => r.status)).toEqual([200, 400])
    expect(result.end).toMatchObject({ kind: 'error', error: { code: 'INVALID_REQUEST', status: 400 } })
    expect(result.end.kind === 'error' && result.end.error.message).toMatch(/reasoning_content in the thinking mode must be passed back/)
  })

  it('openaiModel pointed at DeepSeek follows the same rule', async () => {
    plan = structuredClone(THREE_TURNS.slice(0, 3))
    const agent = agentOn(openaiModel({ model: 'deepseek-v4-pro', provider: 'deepseek', baseURL: server.baseURL, apiKey: 'k' }))
    expect((await agent.run('Weather in Oslo and Paris?')).end).toEqual({ kind: 'completed' })
    expect(server.received.map((r) => r.status)).toEqual([200, 200, 200])
    expect('thinking' in server.received[0].body).toBe(false) // DeepSeek's own default applies
  })

  it('thinking off: sent as thinking{disabled}; tool-call messages without reasoning carry none', async () => {
    plan = structuredClone(THREE_TURNS.slice(0, 3))
    const agent = agentOn(deepseekModel({ model: 'deepseek-v4-flash', baseURL: server.baseURL, apiKey: 'k', thinking: false }))
    expect((await agent.run('Weather in Oslo and Paris?')).end).toEqual({ kind: 'completed' })
    const last = server.received[2].body
    expect(last.thinking).toEqual({ type: 'disabled' })
    expect('reasoning_effort' in last).toBe(false)
    expect(last.messages.filter((m: Record<string, unknown>) => 'reasoning_content' in m)).toEqual([])
  })

  it('an agent/request listener can switch thinking per request; the switch is logged as a header change', async () => {
    plan = structuredClone(THREE_TURNS.slice(0, 3))
    const agent = agentOn(deepseekModel({ model: 'deepseek-v4-pro', baseURL: server.baseURL, apiKey: 'k', thinking: true }))
    agent.on('agent/request', async ({ step }, next) => {
      const config = await next()
      return step < 3 ? config : { ...config, providerOptions: { deepseek: { thinking: { type: 'disabled' } } } }
    })
    expect((await agent.run('Weather in Oslo and Paris?')).end).toEqual({ kind: 'completed' })
    expect(server.received.map((r) => r.body.thinking.type)).toEqual(['enabled', 'enabled', 'disabled'])
    // with thinking off, messages that had reasoning still send it (harmless), so the history stays faithful
    expect(
      server.received[2].body.messages.filter((m: Record<string, unknown>) => m.tool_calls).map((m: Record<string, unknown>) => m.reasoning_content),
    ).toEqual(['Oslo first.', 'Now Paris.'])
    expect(agent.session.events.filter((e) => e.type === 'request/header').map((e) => e.data.reason)).toEqual(['initial', 'change'])
  })

  it('refuses bad options at creation', () => {
    expect(() => deepseekModel({ model: '' })).toThrow(/model must be a non-empty string/)
    expect(() => deepseekModel({ model: 'm', thinking: 'yes' as never })).toThrow(/thinking must be a boolean/)
    expect(() => deepseekModel({ model: 'm', reasoningEffort: '' as never })).toThrow(/reasoningEffort/)
    const model = deepseekModel({ model: 'deepseek-v4-pro', apiKey: 'k' })
    expect([model.provider, model.model, model.defaultConfig]).toEqual(['deepseek', 'deepseek-v4-pro', {}])
  })
})

// Request options: toolChoice, responseFormat (a schema becomes the logged JSON
// Schema, the answer comes back parsed and checked) and providerOptions, set at
// creation, by the model adapter, or by an agent/request listener.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, createAgent, type LlmCallConfig } from '../../src/index.js'
import { scriptedModel, textResponse } from '../../src/testing/index.js'
import { scriptedAgent, track } from '../helpers.js'

const Person = z.object({ name: z.string(), age: z.number().int().nonnegative() })
const personSchema = {
  type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
  required: ['name', 'age'],
  additionalProperties: false,
}

const headers = (agent: ReturnType<typeof createAgent>) => agent.session.events.flatMap((e) => (e.type === 'request/header' ? [e.data.header.config] : []))

describe('request options', () => {
  it('createAgent request options are the seed config: logged in the header and sent with the request', async () => {
    const { agent, model } = scriptedAgent([textResponse('ok')], {
      request: { toolChoice: 'required', temperature: 0.3, providerOptions: { openai: { seed: 7, top_p: 0.9 } } },
      maxTokens: 99,
    })
    await agent.run('hi')
    const expected: LlmCallConfig = {
      provider: 'scripted',
      model: 'scripted-1',
      toolChoice: 'required',
      temperature: 0.3,
      providerOptions: { openai: { seed: 7, top_p: 0.9 } },
      maxTokens: 99,
    }
    expect(headers(agent)).toEqual([expected])
    expect(model.requests[0].config).toEqual(expected)
  })

  it("the adapter's defaultConfig comes first; request options override it, provider options merge per provider", async () => {
    const model = Object.assign(scriptedModel([textResponse('ok')]), {
      defaultConfig: { reasoningEffort: 'high', providerOptions: { deepseek: { thinking: { type: 'enabled' as const }, top_p: 1 } } },
    })
    const agent = track(
      createAgent({
        model,
        logger: { error: () => {} },
        request: { reasoningEffort: 'max', providerOptions: { deepseek: { top_p: 0.95 }, openai: { seed: 1 } } },
      }),
    )
    await agent.run('hi')
    expect(headers(agent)[0]).toEqual({
      provider: 'scripted',
      model: 'scripted-1',
      reasoningEffort: 'max',
      providerOptions: { deepseek: { thinking: { type: 'enabled' }, top_p: 0.95 }, openai: { seed: 1 } },
    })
  })

  it('bad request options fail createAgent with a ConfigError naming the field', () => {
    const model = scriptedModel([])
    expect(() => createAgent({ model, request: { toolChoice: 'sometimes' as never } })).toThrow(ConfigError)
    expect(() => createAgent({ model, request: { toolChoice: 'sometimes' as never } })).toThrow(/request at toolChoice/)
    expect(() => createAgent({ model, request: { providerOptions: { openai: 5 as never } } })).toThrow(/providerOptions\.openai/)
    expect(() => createAgent({ model, request: { responseFormat: { type: 'xml' } as never } })).toThrow(/responseFormat/)
    expect(() => createAgent({ model, request: { model: 'other' } as never })).toThrow(/cannot set provider or model/)
    expect(() => createAgent({ model, request: { providerOptions: { openai: { when: new Date() } } } })).toThrow(/not lossless JSON/)
  })

  it('a listener may add provider fields, a tool choice and a schema response format (the "Unrecognized key" of old)', async () => {
    const { agent, model } = scriptedAgent([textResponse('{"name":"Ada","age":36}')])
    agent.on('agent/request', async (_p, next) => ({
      ...(await next()),
      toolChoice: { type: 'tool', name: 'lookup' },
      responseFormat: Person,
      providerOptions: { openai: { seed: 3 } },
    }))
    const result = await agent.run('Who wrote the first program?')
    const config = model.requests[0].config
    expect(config.toolChoice).toEqual({ type: 'tool', name: 'lookup' })
    expect(config.providerOptions).toEqual({ openai: { seed: 3 } })
    expect(config.responseFormat).toEqual({ type: 'json', schema: expect.objectContaining({ type: 'object', required: ['name', 'age'] }) })
    expect(JSON.stringify(config.responseFormat)).not.toContain('$schema')
    expect(headers(agent)[0]).toEqual(config)
    expect(result.object).toEqual({ name: 'Ada', age: 36 })
  })

  it('a listener returning an invalid config ends the turn error naming the field', async () => {
    const { agent } = scriptedAgent([textResponse('never')])
    agent.on('agent/request', async (_p, next) => ({ ...(await next()), toolChoice: 42 }) as never)
    const result = await agent.run('hi')
    expect(result.end.kind).toBe('error')
    expect(result.end.kind === 'error' && result.end.error.message).toMatch(/agent\/request result at toolChoice/)
  })
})

describe('structured output on the turn result', () => {
  it('a zod response format: the answer parsed and validated as the turn result object', async () => {
    const { agent } = scriptedAgent([textResponse('{"name":"Ada","age":36}')], { request: { responseFormat: Person } })
    const result = await agent.run('Who?')
    expect(result.object).toEqual({ name: 'Ada', age: 36 })
    expect(result.objectError).toBeUndefined()
    expect(headers(agent)[0].responseFormat).toEqual({ type: 'json', schema: expect.objectContaining({ properties: expect.any(Object) }) })
  })

  it('an answer that is not JSON, or does not match, gives objectError and no object', async () => {
    const { agent } = scriptedAgent([textResponse('Ada, 36'), textResponse('{"name":"Ada","age":-1}')], { request: { responseFormat: Person } })
    const notJson = await agent.run('Who?')
    expect(notJson.object).toBeUndefined()
    expect(notJson.objectError).toMatch(/^the answer is not JSON/)
    const wrong = await agent.run('Again?')
    expect(wrong.object).toBeUndefined()
    expect(wrong.objectError).toMatch(/^the answer does not match the response schema: age: /)
  })

  it('a JSON Schema with a validate function, and named json formats, work the same way', async () => {
    const validate = (v: unknown): v is { name: string; age: number } =>
      typeof v === 'object' && v !== null && typeof (v as { name?: unknown }).name === 'string' && Number.isInteger((v as { age?: unknown }).age)
    const { agent } = scriptedAgent([textResponse('{"name":"Ada","age":36}'), textResponse('{"name":"Ada"}')], {
      request: { responseFormat: { type: 'json', name: 'person', schema: { jsonSchema: personSchema, validate } } },
    })
    expect((await agent.run('Who?')).object).toEqual({ name: 'Ada', age: 36 })
    expect((await agent.run('Who?')).objectError).toMatch(/refused by validate/)
    expect(headers(agent)[0].responseFormat).toEqual({ type: 'json', name: 'person', schema: personSchema })
  })

  it('json without a schema parses any JSON; a text format gives no object', async () => {
    const json = scriptedAgent([textResponse('[1,2]')], { request: { responseFormat: { type: 'json' } } }).agent
    expect((await json.run('list')).object).toEqual([1, 2])
    const text = scriptedAgent([textResponse('[1,2]')], { request: { responseFormat: { type: 'text' } } }).agent
    const result = await text.run('list')
    expect('object' in result || 'objectError' in result).toBe(false)
  })
})

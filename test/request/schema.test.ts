// Schemas users already have: zod classic and zod/mini (recognised by shape,
// not instanceof), zod 3 refused with a pointer to zod/v4, and a plain JSON
// Schema with a validate function; all give the model the same JSON Schema.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import * as zm from 'zod/mini'
import { z as z3 } from 'zod/v3'
import { ConfigError, defineTool, toolSchemas } from '../../src/index.js'
import { toCheckedSchema } from '../../src/request/schema.js'
import { textResponse, toolCallResponse } from '../../src/testing/index.js'
import { scriptedAgent } from '../helpers.js'

const resultsOf = (agent: { session: { events: readonly { type: string; data: any }[] } }) =>
  agent.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data.message.content[0].content as string)

describe('tool input schemas', () => {
  it('zod/mini schemas define tools: same JSON Schema as classic zod, arguments checked and typed', async () => {
    const mini = defineTool({
      name: 'greet',
      description: 'greets',
      input: zm.object({ name: zm.string(), times: zm.optional(zm.number()) }),
      execute: ({ name, times }) => `hello ${name}`.repeat(times ?? 1),
    })
    const classic = defineTool({
      name: 'greet',
      description: 'greets',
      input: z.object({ name: z.string(), times: z.optional(z.number()) }),
      execute: () => '',
    })
    expect(toolSchemas([mini])).toEqual(toolSchemas([classic]))
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'a', name: 'greet', arguments: '{"name":"Ada"}' },
          { id: 'b', name: 'greet', arguments: '{"name":7}' },
        ]),
        textResponse('done'),
      ],
      { tools: [mini] },
    )
    await agent.run('hi')
    const [ok, bad] = resultsOf(agent)
    expect(ok).toBe('hello Ada')
    expect(bad).toMatch(/^Error: invalid arguments for tool greet: name: /)
  })

  it('a JSON Schema with a validate function (Ajv style: errors on the function) defines a tool', async () => {
    const jsonSchema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }
    const validate = Object.assign(
      (value: unknown): value is { n: number } => {
        const ok = typeof value === 'object' && value !== null && Number.isInteger((value as { n?: unknown }).n)
        validate.errors = ok ? null : [{ instancePath: '/n', message: 'must be integer' }]
        return ok
      },
      { errors: null as null | { instancePath: string; message: string }[] },
    )
    const double = defineTool({ name: 'double', description: 'doubles', input: { jsonSchema, validate }, execute: ({ n }) => String(n * 2) })
    expect(toolSchemas([double])[0].inputSchema).toEqual({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'a', name: 'double', arguments: '{"n":21}' },
          { id: 'b', name: 'double', arguments: '{"n":"x"}' },
        ]),
        textResponse('done'),
      ],
      { tools: [double] },
    )
    await agent.run('go')
    expect(resultsOf(agent)).toEqual(['42', 'Error: invalid arguments for tool double: /n: must be integer'])
  })

  it('a validate that throws refuses with its message; without validate any arguments pass', async () => {
    const strict = defineTool({
      name: 'strict',
      description: '',
      input: {
        jsonSchema: { type: 'object' },
        validate: () => {
          throw new Error('nope')
        },
      },
      execute: () => 'ran',
    })
    const loose = defineTool({ name: 'loose', description: '', input: { jsonSchema: { type: 'object' } }, execute: (args) => JSON.stringify(args) })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'a', name: 'strict', arguments: '{}' },
          { id: 'b', name: 'loose', arguments: '{"x":1}' },
        ]),
        textResponse('done'),
      ],
      { tools: [strict, loose] },
    )
    await agent.run('go')
    expect(resultsOf(agent)).toEqual(['Error: invalid arguments for tool strict: (root): nope', '{"x":1}'])
  })

  it('async refinements are awaited before the body runs', async () => {
    const checked = defineTool({
      name: 'checked',
      description: '',
      input: z.object({ id: z.string() }).refine(async (v) => v.id !== 'taken', { message: 'id is taken' }),
      execute: ({ id }) => `created ${id}`,
    })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([
          { id: 'a', name: 'checked', arguments: '{"id":"free"}' },
          { id: 'b', name: 'checked', arguments: '{"id":"taken"}' },
        ]),
        textResponse('done'),
      ],
      { tools: [checked] },
    )
    await agent.run('go')
    expect(resultsOf(agent)).toEqual(['created free', 'Error: invalid arguments for tool checked: (root): id is taken'])
  })

  it('a zod 3 schema, or anything else, is refused at definition with a ConfigError saying what to use', () => {
    const make = (input: unknown) => () => defineTool({ name: 't', description: '', input: input as never, execute: () => '' })
    expect(make(z3.object({ a: z3.string() }))).toThrow(ConfigError)
    expect(make(z3.object({ a: z3.string() }))).toThrow(/zod 3 schema; use zod 4 \(or import \{ z \} from 'zod\/v4' with zod 3\.25\)/)
    expect(make({ type: 'object' })).toThrow(/expected a zod v4 schema \(zod, zod\/mini, or zod\/v4\) or \{ jsonSchema, validate\? \}/)
    expect(make({ jsonSchema: { type: 'object' }, validate: 'yes' })).toThrow(ConfigError)
    expect(make(undefined)).toThrow(/tool t: input/)
  })

  it('classic zod keeps working, and no generated schema carries $schema', () => {
    const checked = toCheckedSchema(z.object({ a: z.string().describe('the a') }), 'x')
    expect(checked.jsonSchema).toEqual({
      type: 'object',
      properties: { a: { type: 'string', description: 'the a' } },
      required: ['a'],
      additionalProperties: false,
    })
    expect(Object.isFrozen(checked.jsonSchema)).toBe(true)
    expect(checked.check({ a: 'x' })).toEqual({ ok: true, value: { a: 'x' } })
    expect(checked.check({ a: 1 })).toMatchObject({ ok: false, issues: [{ path: 'a' }] })
  })

  it('RQ-6: agents of one tool list send and log the same frozen entry per tool, made once for the tool', async () => {
    const lookup = defineTool({ name: 'lookup', description: 'looks up', input: z.object({ key: z.string() }), execute: ({ key }) => key })
    const agents = [0, 1].map(() => scriptedAgent([textResponse('one')], { tools: [lookup] }))
    for (const { agent } of agents) await agent.run('go')
    const headers = agents.map(({ agent }) => agent.session.events.find((e) => e.type === 'request/header')!.data.header.tools![0])
    const sent = agents.map(({ model }) => model.requests[0].tools![0])
    expect(headers[0]).toEqual({ name: 'lookup', description: 'looks up', inputSchema: toolSchemas([lookup])[0].inputSchema })
    expect(headers[1]).toBe(headers[0])
    expect(sent[0]).toBe(headers[0])
    expect(sent[1]).toBe(headers[0])
    expect(Object.isFrozen(headers[0]) && Object.isFrozen(headers[0].inputSchema)).toBe(true)
    // a copy of the tool that is not frozen gets its own entry each time: nothing cached can go stale
    const loose = { ...lookup }
    expect(toolSchemas([loose])[0]).not.toBe(toolSchemas([loose])[0])
    expect(toolSchemas([loose])[0]).toEqual(headers[0])
  })

  it('a tool built by hand is held to what defineTool checks: name, body, execution mode and timeout, by its place in the list', () => {
    const byHand = { name: 'h', description: 'd', input: { jsonSchema: { type: 'object' } }, executionMode: 'exclusive', execute: () => '' }
    const refused = (change: Record<string, unknown>) => () => scriptedAgent([textResponse('x')], { tools: [{ ...byHand, ...change } as never] })
    expect(refused({ name: 'has space' })).toThrow(expect.objectContaining({ name: 'ConfigError', path: 'tools.0.name' }))
    expect(refused({ execute: 'run' })).toThrow(expect.objectContaining({ path: 'tools.0.execute', message: 'tool h: execute must be a function' }))
    expect(refused({ executionMode: 'sometimes' })).toThrow(expect.objectContaining({ path: 'tools.0.executionMode' }))
    expect(refused({ timeoutMs: 'soon' })).toThrow(/tool h: timeoutMs must be a positive number of milliseconds \(or Infinity\), got "soon"/)
    expect(refused({ input: 5 })).toThrow(ConfigError)
    // one without an execution mode runs exclusive, as defineTool's default
    expect(() => scriptedAgent([textResponse('x')], { tools: [{ ...byHand, executionMode: undefined } as never] })).not.toThrow()
  })

  it('a tool description that is not a string is refused by name, from defineTool or on a tool built by hand', async () => {
    const input = z.object({})
    expect(() => defineTool({ name: 't', description: 42 as never, input, execute: () => '' })).toThrow(
      /tool t at description: .*expected string, received number/,
    )
    const byHand = { name: 'h', description: ['x'], input, executionMode: 'exclusive', execute: () => '' }
    expect(() => toolSchemas([byHand as never])).toThrow(ConfigError)
    expect(() => toolSchemas([{ ...byHand, description: 'fine', name: '' } as never])).toThrow(/a tool at name: .*>=1 characters/)
    expect(() => scriptedAgent([textResponse('x')], { tools: [byHand as never] })).toThrow(/tool h at description: .*expected string, received array/)
  })
})

// ST-6 at the adapter boundary: whatever a model yields (odd values, other prototypes, proxies, keys in any order),
// the log must show what StreamChunkSchema decides: the chunk as the schema returns it (its keys in the schema's
// order), or the attempt ended MALFORMED_RESPONSE with the schema's first complaint.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createAgent, isLosslessJson, StreamChunkSchema, type ModelAdapter, type SessionEventOf } from '../../src/index.js'
import { propertyRuns, track } from '../helpers.js'

const odd = fc.constantFrom<unknown>(-0, -1, 1.5, Number.NaN, Infinity, 2 ** 53, 2 ** 53 - 1, null, undefined, true, '1', 'bogus', { nested: 1 })

/** A well-formed common chunk, then maybe one thing wrong with it, on some prototype, maybe behind a proxy. */
const chunkLike = fc
  .record({
    kind: fc.constantFrom('text-delta', 'reasoning-delta', 'block-start'),
    index: fc.nat({ max: 4 }),
    text: fc.string({ maxLength: 6 }),
    blockType: fc.constantFrom('text', 'reasoning', 'image', 'tool-call'),
    change: fc.oneof(
      { weight: 3, arbitrary: fc.constant({ what: 'none' as const }) },
      fc.record({ what: fc.constant('drop' as const), key: fc.constantFrom('type', 'index', 'text', 'blockType') }),
      fc.record({ what: fc.constant('set' as const), key: fc.constantFrom('type', 'index', 'text', 'blockType', 'extra'), value: odd }),
      fc.record({ what: fc.constant('retype' as const), type: fc.constantFrom('text-delta', 'reasoning-delta', 'block-start', 'tool-call-delta', 'usage') }),
    ),
    proto: fc.constantFrom('plain', 'plain', 'plain', 'null', 'inherited-extra', 'inherited-text'),
    reversed: fc.boolean(),
    proxy: fc.nat({ max: 4 }).map((n) => n === 0),
  })
  .map(({ kind, index, text, blockType, change, proto, reversed, proxy }) => {
    const fields: Record<string, unknown> = kind === 'block-start' ? { type: kind, index, blockType } : { type: kind, index, text }
    if (change.what === 'drop') delete fields[change.key]
    if (change.what === 'set') fields[change.key] = change.value
    if (change.what === 'retype') fields.type = change.type
    const base = proto === 'plain' ? Object.prototype : proto === 'null' ? null : proto === 'inherited-extra' ? { extra: 1 } : { text: 'inherited' }
    const chunk = Object.create(base) as Record<string, unknown>
    const keys = Object.keys(fields)
    for (const key of reversed ? keys.reverse() : keys) chunk[key] = fields[key]
    return proxy ? new Proxy(chunk, {}) : chunk
  })

/** A model that yields one chunk, then a plain stop. */
function oneChunkModel(chunk: unknown): ModelAdapter {
  return {
    provider: 'p',
    model: 'm',
    async *stream() {
      yield chunk as never
      yield { type: 'finish', reason: { kind: 'stop' } }
    },
  }
}

/** How the boundary words the schema's first complaint. */
function expectedMessage(issue: { path: readonly PropertyKey[]; message: string }): string {
  const at = issue.path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('')
  return `the model adapter sent a malformed stream chunk: ${at ? `${at}: ` : ''}${issue.message}`
}

/** Runs one chunk through an agent and checks the log against what the schema decides. */
async function expectSchemaDecision(chunk: unknown): Promise<void> {
  const parsed = StreamChunkSchema.safeParse(chunk)
  const agent = track(createAgent({ model: oneChunkModel(chunk), retry: false, logger: { error: () => {} } }))
  agent.followup('go')
  await agent.whenIdle()
  const chunks = agent.session.events.filter((e): e is SessionEventOf<'assistant/chunk'> => e.type === 'assistant/chunk')
  if (parsed.success) {
    const logged = chunks[0].data.chunk
    expect(logged).toEqual(parsed.data)
    expect(Object.keys(logged)).toEqual(Object.keys(parsed.data))
  } else {
    const finish = chunks[0].data.chunk as { type: string; reason: { kind: string; failure: { code: string; message: string } } }
    expect(finish.type).toBe('finish')
    expect(finish.reason.failure.code).toBe('MALFORMED_RESPONSE')
    expect(finish.reason.failure.message).toBe(expectedMessage(parsed.error.issues[0]))
  }
  await agent.dispose()
}

const withProto = (proto: object | null, fields: Record<string, unknown>) => Object.assign(Object.create(proto) as object, fields)

describe('ST-6: the common chunks', () => {
  const boundary: Array<[string, unknown]> = [
    ['a text delta', { type: 'text-delta', index: 2, text: 'hi' }],
    ['a reasoning delta, keys in another order', { text: 'hm', index: 0, type: 'reasoning-delta' }],
    ['a block start', { type: 'block-start', index: 1, blockType: 'tool-call' }],
    ['index -1', { type: 'text-delta', index: -1, text: 'hi' }],
    ['index -0', { type: 'text-delta', index: -0, text: 'hi' }],
    ['index 1.5', { type: 'text-delta', index: 1.5, text: 'hi' }],
    ['index NaN', { type: 'reasoning-delta', index: Number.NaN, text: 'hi' }],
    ['index 2^53', { type: 'text-delta', index: 2 ** 53, text: 'hi' }],
    ['index 2^53 - 1', { type: 'text-delta', index: 2 ** 53 - 1, text: 'hi' }],
    ['index as a string', { type: 'block-start', index: '0', blockType: 'text' }],
    ['text as a number', { type: 'text-delta', index: 0, text: 7 }],
    ['text missing', { type: 'text-delta', index: 0 }],
    ['an unknown block type', { type: 'block-start', index: 0, blockType: 'video' }],
    ['a block type on a delta', { type: 'text-delta', index: 0, blockType: 'text' }],
    ['an extra key', { type: 'text-delta', index: 0, text: 'hi', extra: true }],
    ['an extra key set to undefined', { type: 'block-start', index: 0, blockType: 'text', extra: undefined }],
    ['an inherited enumerable key', withProto({ extra: 1 }, { type: 'text-delta', index: 0, text: 'hi' })],
    ['an inherited text', withProto({ text: 'inherited' }, { type: 'text-delta', index: 0 })],
    ['a null prototype', withProto(null, { type: 'text-delta', index: 0, text: 'hi' })],
    ['a proxy', new Proxy({ type: 'text-delta', index: 0, text: 'hi' }, {})],
    ['a proxy with an extra key', new Proxy({ type: 'block-start', index: 0, blockType: 'text', extra: 1 }, {})],
  ]
  for (const [label, chunk] of boundary) {
    it(`ST-6: ${label} is logged or refused as StreamChunkSchema decides`, () => expectSchemaDecision(chunk))
  }

  it('ST-6: a yielded chunk is logged exactly as StreamChunkSchema returns it, or refused with its first complaint', async () => {
    await fc.assert(fc.asyncProperty(chunkLike, expectSchemaDecision), { numRuns: propertyRuns(40) })
  })
})

// -0 is a number JSON cannot keep (it reads back as 0), so the log's lossless rule would refuse the append and end
// the attempt as a refused append; the schema refuses it first, so it ends MALFORMED_RESPONSE like any bad chunk.
describe('ST-6: a -0 in any chunk is refused by the schema, naming the field', () => {
  const cases: Array<[string, unknown, string]> = [
    ['a text delta', { type: 'text-delta', index: -0, text: 'hi' }, 'index'],
    ['a reasoning delta', { type: 'reasoning-delta', index: -0, text: 'hm' }, 'index'],
    ['a block start', { type: 'block-start', index: -0, blockType: 'text' }, 'index'],
    ['a tool-call delta', { type: 'tool-call-delta', index: -0, id: 'c1', name: 't', argumentsDelta: '{}' }, 'index'],
    ['a block end', { type: 'block-end', index: -0, block: { type: 'text', text: 'hi' } }, 'index'],
    ['a usage count', { type: 'usage', usage: { inputTokens: -0, outputTokens: 3 } }, 'usage.inputTokens'],
    ['an optional usage count', { type: 'usage', usage: { inputTokens: 1, outputTokens: 3, reasoningTokens: -0 } }, 'usage.reasoningTokens'],
  ]
  for (const [label, chunk, path] of cases) {
    it(`ST-6: -0 in ${label} ends the attempt MALFORMED_RESPONSE at ${path}`, async () => {
      const parsed = StreamChunkSchema.safeParse(chunk)
      expect(parsed.success).toBe(false)
      const agent = track(createAgent({ model: oneChunkModel(chunk), retry: false, logger: { error: () => {} } }))
      agent.followup('go')
      await agent.whenIdle()
      const logged = agent.session.events.filter((e): e is SessionEventOf<'assistant/chunk'> => e.type === 'assistant/chunk')
      expect(logged.map((e) => e.data.chunk)).toEqual([
        {
          type: 'finish',
          reason: {
            kind: 'error',
            failure: {
              code: 'MALFORMED_RESPONSE',
              message: `the model adapter sent a malformed stream chunk: ${path}: -0 does not survive JSON (it reads back as 0)`,
            },
          },
        },
      ])
      const end = agent.session.events.find((e): e is SessionEventOf<'turn/end'> => e.type === 'turn/end')
      expect(end?.data.reason).toMatchObject({ kind: 'error', error: { code: 'MALFORMED_RESPONSE' } })
      // the agent keeps serving
      expect(agent.status).toBe('idle')
      await agent.dispose()
    })
  }
})

// The rest of the ordinary chunks are checked by hand too (tool-call deltas, block ends with a text, reasoning or
// tool-call block, usage, a finish with a stop, tool-calls or max-tokens reason), each nested object as well: the
// log must still show exactly what the schema decides, nested keys in the schema's order included.

/** A chunk of each type as a well-behaved adapter yields it; nested objects are the ones a change may hit. */
const wellFormed = fc.oneof(
  fc.record({
    type: fc.constant('tool-call-delta'),
    index: fc.nat({ max: 4 }),
    id: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
    name: fc.option(fc.constantFrom('lookup', ''), { nil: undefined }),
    argumentsDelta: fc.string({ maxLength: 6 }),
  }),
  fc.record({
    type: fc.constant('block-end'),
    index: fc.nat({ max: 4 }),
    block: fc.oneof(
      fc.record({ type: fc.constantFrom('text', 'reasoning'), text: fc.string({ maxLength: 6 }) }),
      fc.record({
        type: fc.constant('tool-call'),
        id: fc.string({ maxLength: 4 }),
        name: fc.string({ maxLength: 4 }),
        arguments: fc.constantFrom('{}', '{"a":1}', ''),
      }),
      fc.constant({ type: 'image', attachment: { mediaType: 'image/png', data: 'AAAA' } }),
      fc.constant({ type: 'tool-result', toolCallId: 'c1', content: 'done' }),
    ),
  }),
  fc.record({
    type: fc.constant('usage'),
    usage: fc.record(
      { inputTokens: fc.nat(), outputTokens: fc.nat(), cacheReadTokens: fc.nat(), cacheWriteTokens: fc.nat(), reasoningTokens: fc.nat() },
      { requiredKeys: ['inputTokens', 'outputTokens'] },
    ),
  }),
  fc.record(
    {
      type: fc.constant('finish'),
      reason: fc.record({ kind: fc.constantFrom('stop', 'tool-calls', 'max-tokens') }),
      replayState: fc.constant({ response: { id: 'r1' } }),
    },
    { requiredKeys: ['type', 'reason'] },
  ),
)

type Change =
  | { what: 'none' }
  | { what: 'drop'; nested: boolean; pick: number }
  | { what: 'set'; nested: boolean; pick: number; value: unknown }
  | { what: 'proto'; nested: boolean; proto: 'null' | 'inherited-extra' | 'inherited-field' }
  | { what: 'proxy'; nested: boolean }

const change: fc.Arbitrary<Change> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ what: 'none' as const }) },
  fc.record({ what: fc.constant('drop' as const), nested: fc.boolean(), pick: fc.nat() }),
  fc.record({ what: fc.constant('set' as const), nested: fc.boolean(), pick: fc.nat(), value: odd }),
  fc.record({
    what: fc.constant('proto' as const),
    nested: fc.boolean(),
    proto: fc.constantFrom('null' as const, 'inherited-extra' as const, 'inherited-field' as const),
  }),
  fc.record({ what: fc.constant('proxy' as const), nested: fc.boolean() }),
)

const NESTED = ['block', 'usage', 'reason'] as const

/** The chunk with one change applied to it or to its nested object. */
function changed(chunk: Record<string, unknown>, c: Change): unknown {
  const top: Record<string, unknown> = { ...chunk }
  for (const key of Object.keys(top)) if (top[key] === undefined) delete top[key]
  const nestedKey = NESTED.find((k) => k in top)
  const target = c.what !== 'none' && c.nested && nestedKey !== undefined ? { ...(top[nestedKey] as Record<string, unknown>) } : top
  const keys = [...Object.keys(target), 'extra']
  let result: object = target
  if (c.what === 'drop') delete target[keys[c.pick % (keys.length - 1)]]
  if (c.what === 'set') target[keys[c.pick % keys.length]] = c.value
  if (c.what === 'proto') {
    const field = Object.keys(target).find((k) => k !== 'type') ?? 'extra'
    const base = c.proto === 'null' ? null : c.proto === 'inherited-extra' ? { extra: 1 } : { [field]: target[field] }
    const made = Object.create(base) as Record<string, unknown>
    for (const key of Object.keys(target)) if (c.proto !== 'inherited-field' || key !== field) made[key] = target[key]
    result = made
  }
  if (c.what === 'proxy') result = new Proxy(target, {})
  if (target === top) return result
  top[nestedKey!] = result
  return top
}

/** What the boundary hands the schema: a finish is read through a copy of its own keys first. */
function schemaDecision(chunk: unknown) {
  const finish = (chunk as { type?: unknown }).type === 'finish'
  return StreamChunkSchema.safeParse(finish ? { ...(chunk as object) } : chunk)
}

/** Runs one chunk through an agent and checks the log against the schema's decision, nested key order included. */
async function expectDecision(chunk: unknown): Promise<void> {
  const parsed = schemaDecision(chunk)
  const agent = track(createAgent({ model: oneChunkModel(chunk), retry: false, logger: { error: () => {} } }))
  agent.followup('go')
  await agent.whenIdle()
  const chunks = agent.session.events.filter((e): e is SessionEventOf<'assistant/chunk'> => e.type === 'assistant/chunk')
  const end = agent.session.events.find((e): e is SessionEventOf<'turn/end'> => e.type === 'turn/end')
  const replayState = parsed.success ? (parsed.data as { replayState?: unknown }).replayState : undefined
  if (replayState !== undefined && !isLosslessJson(replayState)) {
    // the schema takes any envelope object; the boundary also holds it to lossless JSON, naming the value
    const finish = chunks[0].data.chunk as { type: string; reason: { kind: string; failure: { code: string; message: string } } }
    expect(finish.reason.failure.code).toBe('MALFORMED_RESPONSE')
    expect(finish.reason.failure.message).toMatch(/^the model adapter sent a malformed stream chunk: not lossless JSON at chunk\.replayState/)
  } else if (parsed.success && isLosslessJson(parsed.data)) {
    expect(JSON.stringify(chunks[0].data.chunk)).toBe(JSON.stringify(parsed.data))
    expect(chunks[0].data.chunk).toEqual(parsed.data)
  } else if (parsed.success) {
    // the schema keeps a present undefined, which JSON would drop: refused by path like any malformed chunk
    const finish = chunks[0].data.chunk as { type: string; reason: { kind: string; failure: { code: string; message: string } } }
    expect(finish.reason.failure).toMatchObject({
      code: 'MALFORMED_RESPONSE',
      message: expect.stringMatching(/not lossless JSON at chunk\.[\w.]+: undefined$/),
    })
    expect(end?.data.reason.kind).toBe('error')
  } else {
    const finish = chunks[0].data.chunk as { type: string; reason: { kind: string; failure: { code: string; message: string } } }
    expect(finish.reason.failure.code).toBe('MALFORMED_RESPONSE')
    expect(finish.reason.failure.message).toBe(expectedMessage(parsed.error.issues[0]))
  }
  await agent.dispose()
}

describe('ST-6: the other ordinary chunks', () => {
  const boundary: Array<[string, unknown]> = [
    ['a tool-call delta with id and name', { type: 'tool-call-delta', index: 1, id: 'c1', name: 'lookup', argumentsDelta: '{"k' }],
    ['a tool-call delta with neither', { type: 'tool-call-delta', index: 1, argumentsDelta: '"}' }],
    ['a tool-call delta with only a name, keys in another order', { argumentsDelta: '', name: 'lookup', index: 0, type: 'tool-call-delta' }],
    ['a tool-call delta with an undefined id', { type: 'tool-call-delta', index: 1, id: undefined, argumentsDelta: '' }],
    ['a tool-call delta with a numeric name', { type: 'tool-call-delta', index: 1, name: 7, argumentsDelta: '' }],
    ['a tool-call delta with an inherited id', withProto({ id: 'inherited' }, { type: 'tool-call-delta', index: 1, argumentsDelta: '' })],
    ['a text block end', { type: 'block-end', index: 0, block: { type: 'text', text: 'hello' } }],
    ['a tool-call block end, keys in another order', { block: { arguments: '{}', name: 'add', id: 'c2', type: 'tool-call' }, index: 2, type: 'block-end' }],
    ['a block end whose block has an extra key', { type: 'block-end', index: 0, block: { type: 'text', text: 'hi', extra: 1 } }],
    ['a block end whose block is a proxy', { type: 'block-end', index: 0, block: new Proxy({ type: 'text', text: 'hi' }, {}) }],
    ['a block end whose block is an array', { type: 'block-end', index: 0, block: [] }],
    ['a block end whose block has a null prototype', { type: 'block-end', index: 0, block: withProto(null, { type: 'reasoning', text: 'hm' }) }],
    ['a block end with an image block', { type: 'block-end', index: 0, block: { type: 'image', attachment: { mediaType: 'image/png', url: 'https://x' } } }],
    ['a tool-call block with numeric arguments', { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c', name: 't', arguments: 1 } }],
    ['usage with two counts', { type: 'usage', usage: { inputTokens: 10, outputTokens: 2 } }],
    [
      'usage with every count, in another order',
      { type: 'usage', usage: { reasoningTokens: 1, cacheWriteTokens: 2, cacheReadTokens: 3, outputTokens: 4, inputTokens: 5 } },
    ],
    ['usage with a fractional count', { type: 'usage', usage: { inputTokens: 1.5, outputTokens: 2 } }],
    ['usage with an undefined optional count', { type: 'usage', usage: { inputTokens: 1, outputTokens: 2, cacheReadTokens: undefined } }],
    ['usage with an extra key', { type: 'usage', usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } }],
    ['a stop finish', { type: 'finish', reason: { kind: 'stop' } }],
    ['a max-tokens finish', { type: 'finish', reason: { kind: 'max-tokens' } }],
    ['a finish with an inherited extra key', withProto({ extra: 1 }, { type: 'finish', reason: { kind: 'tool-calls' } })],
    ['a finish with an inherited reason', withProto({ reason: { kind: 'stop' } }, { type: 'finish' })],
    ['a finish whose reason has an extra key', { type: 'finish', reason: { kind: 'stop', why: 'done' } }],
    ['a finish with an undefined replay state', { type: 'finish', reason: { kind: 'stop' }, replayState: undefined }],
    ['a finish with a replay state', { type: 'finish', reason: { kind: 'stop' }, replayState: { response: { id: 'r' } } }],
    ['a finish with a replay state of -0', { type: 'finish', reason: { kind: 'stop' }, replayState: -0 }],
    ['a finish with a replay state holding -0', { type: 'finish', reason: { kind: 'stop' }, replayState: { response: -0 } }],
    ['a finish with a replay state holding NaN', { type: 'finish', reason: { kind: 'tool-calls' }, replayState: { response: { n: Number.NaN } } }],
  ]
  for (const [label, chunk] of boundary) {
    it(`ST-6: ${label} is logged or refused as StreamChunkSchema decides`, () => expectDecision(chunk))
  }

  it('ST-6: any ordinary chunk, nested objects changed or not, is logged exactly as the schema returns it, or refused with its first complaint', async () => {
    await fc.assert(
      fc.asyncProperty(wellFormed, change, (chunk, c) => expectDecision(changed(chunk as Record<string, unknown>, c))),
      { numRuns: propertyRuns(60) },
    )
  })
})

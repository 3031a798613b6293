// Whatever sequence of spec parts an AI SDK model streams (blocks interleaved,
// ids reused, ends missing, metadata anywhere), aiSdkModel yields only chunks
// the log accepts, ends with one finish, and its replayState.blocks line up
// with the assembled content, so each block's metadata goes back to that block.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { normalizeStream, StreamAssembler } from '../../src/adapters/assemble.js'
import { aiSdkModel, type AiSdkLanguageModel } from '../../src/adapters/ai-sdk.js'
import { StreamChunkSchema, userMessage } from '../../src/index.js'
import { propertyRuns } from '../helpers.js'

const id = fc.constantFrom('a', 'b', 'c')
/** Whether a part carries metadata; the metadata names the kind of block it belongs to, so alignment can be checked. */
const metadata = fc.boolean()
const withMetadata = (part: Record<string, unknown>, md: boolean, kind: string) => (md ? { ...part, providerMetadata: { p: { kind } } } : part)

/** One part of a v3 stream (before the finish). */
const part = fc.oneof(
  fc
    .record({
      kind: fc.constantFrom('text', 'reasoning'),
      step: fc.constantFrom('start', 'delta', 'end'),
      id,
      delta: fc.string({ maxLength: 4 }),
      md: metadata,
    })
    .map(({ kind, step, id, delta, md }) => withMetadata(step === 'delta' ? { type: `${kind}-delta`, id, delta } : { type: `${kind}-${step}`, id }, md, kind)),
  fc
    .record({ step: fc.constantFrom('start', 'delta', 'end', 'call'), id, delta: fc.constantFrom('{', '"x"', '}', ''), md: metadata })
    .map(({ step, id, delta, md }) => {
      if (step === 'start') return withMetadata({ type: 'tool-input-start', id, toolName: `t${id}` }, md, 'tool-call')
      if (step === 'delta') return { type: 'tool-input-delta', id, delta }
      if (step === 'end') return { type: 'tool-input-end', id }
      return withMetadata({ type: 'tool-call', toolCallId: id, toolName: `t${id}`, input: '{}' }, md, 'tool-call')
    }),
  fc.constantFrom({ type: 'raw', rawValue: 1 }, { type: 'stream-start', warnings: [] }, { type: 'response-metadata', id: 'r' }),
)

const finishPart = fc
  .record({ unified: fc.constantFrom('stop', 'tool-calls', 'length', 'other'), md: metadata })
  .map(({ unified, md }) =>
    withMetadata({ type: 'finish', finishReason: { unified, raw: unified }, usage: { inputTokens: { total: 3 }, outputTokens: { total: 2 } } }, md, 'response'),
  )

function model(parts: unknown[]): AiSdkLanguageModel {
  return {
    specificationVersion: 'v3',
    provider: 'p',
    modelId: 'm',
    doStream: async () => ({ stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) }),
  }
}

describe('aiSdkModel: any part sequence', () => {
  it('yields schema-valid chunks, one finish last, and replay blocks aligned with the assembled content', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(part, { maxLength: 14 }), finishPart, async (parts, finish) => {
        const request = { sessionId: 's', config: { provider: 'p', model: 'm' }, messages: [userMessage('hi')], signal: new AbortController().signal }
        const assembler = new StreamAssembler()
        const chunks = []
        for await (const chunk of normalizeStream(aiSdkModel(model([...parts, finish])), request)) {
          expect(StreamChunkSchema.safeParse(chunk).success, JSON.stringify(chunk)).toBe(true)
          chunks.push(chunk)
          assembler.push(chunk)
        }
        expect(chunks.filter((c) => c.type === 'finish')).toHaveLength(1)
        expect(chunks.at(-1)?.type).toBe('finish')
        const result = assembler.result()
        const blocks = result.replayState?.blocks
        if (blocks !== undefined) {
          // each entry stands beside the block whose parts carried it
          expect(blocks).toHaveLength(result.content.length)
          blocks.forEach((entry, k) => {
            if (entry !== null) expect((entry as { p: { kind: string } }).p.kind).toBe(result.content[k].type)
          })
        }
        const tagged = parts.some((p) => (p as { providerMetadata?: unknown }).providerMetadata !== undefined)
        if (!tagged) expect(blocks).toBeUndefined()
      }),
      { numRuns: propertyRuns(150) },
    )
  })
})

// AI SDK stream parts (text-*, reasoning-*, tool-input-*, tool-call, file,
// response-metadata, finish) as StreamChunks. Each text, reasoning or tool
// block gets an index in first-seen order; the provider metadata its parts
// carry is merged per block and logged in the finish's replayState, aligned
// with the assembled content, so the next request can hand it back.
import { isRecordLike, peek } from '../values/foreign.js'
import type { ContentBlock, FinishReason, StreamChunk, TokenUsage } from '../session/schemas.js'
import { uniqueCallId } from './assemble.js'
import { llmFailure, LlmError, type LlmFailureInit } from './failure.js'
import { jsonCopy, providerRecord } from './ai-sdk-prompt.js'
import type { ProviderRecord, SpecUsage } from './ai-sdk-spec.js'

type Kind = 'text' | 'reasoning' | 'tool-call' | 'image'

interface Block {
  readonly index: number
  readonly kind: Kind
  text: string
  /** The call id given out for a tool call (unique in the response). */
  callId: string | undefined
  name: string | undefined
  metadata: ProviderRecord | undefined
  closed: boolean
  /** A tool call's `tool-input-end` arrived: its input awaits the `tool-call` part. */
  inputEnded: boolean
}

/** Merges provider metadata one level deep: later fields win within each provider. */
function mergeMetadata(into: ProviderRecord | undefined, raw: unknown): ProviderRecord | undefined {
  const next = providerRecord(raw)
  if (next === undefined) return into
  if (into === undefined) return next
  const out: ProviderRecord = { ...into }
  for (const [provider, fields] of Object.entries(next)) out[provider] = { ...(into[provider] ?? {}), ...fields }
  return out
}

function text(x: unknown): string | undefined {
  return typeof x === 'string' ? x : undefined
}

/** The normalizer of one response: `accept` each part, then `finish` once the `finish` part arrived. */
export class PartNormalizer {
  readonly #blocks: Block[] = []
  /** Open blocks by kind and the part's own id (ids may be reused once a block ends). */
  readonly #open = new Map<string, Block>()
  readonly #callIds = new Set<string>()
  /** Keys of closed tool calls and of the ids their `tool-call` parts named: a late input part for one opens no second call. */
  readonly #called = new Set<string>()
  /** Tool inputs a provider executes itself: neither streamed nor run here. */
  readonly #providerExecuted = new Set<string>()
  readonly #response: Record<string, unknown> = {}
  #finish: { reason: unknown; usage: unknown; metadata: unknown } | undefined

  constructor(readonly provider: string) {}

  /** True once the `finish` part arrived. */
  get finished(): boolean {
    return this.#finish !== undefined
  }

  /** The chunks one part stands for (none for parts that carry nothing the log keeps). */
  accept(part: unknown): StreamChunk[] {
    const out: StreamChunk[] = []
    const type = peek(part, 'type')
    const id = text(peek(part, 'id')) ?? ''
    const metadata = peek(part, 'providerMetadata')
    switch (type) {
      case 'text-start':
      case 'reasoning-start': {
        const kind = type === 'text-start' ? 'text' : 'reasoning'
        const block = this.#block(kind, id, out, true)
        block.metadata = mergeMetadata(block.metadata, metadata)
        break
      }
      case 'text-delta':
      case 'reasoning-delta': {
        const kind = type === 'text-delta' ? 'text' : 'reasoning'
        const block = this.#block(kind, id, out)
        block.metadata = mergeMetadata(block.metadata, metadata)
        const delta = text(peek(part, 'delta')) ?? ''
        if (delta !== '') {
          block.text += delta
          out.push({ type: kind === 'text' ? 'text-delta' : 'reasoning-delta', index: block.index, text: delta })
        }
        break
      }
      case 'text-end':
      case 'reasoning-end': {
        const kind = type === 'text-end' ? 'text' : 'reasoning'
        const block = this.#block(kind, id, out)
        block.metadata = mergeMetadata(block.metadata, metadata)
        this.#close(block, out)
        break
      }
      case 'tool-input-start': {
        if (peek(part, 'providerExecuted') === true) {
          this.#providerExecuted.add(id)
          break
        }
        const block = this.#block('tool-call', id, out, true)
        block.metadata = mergeMetadata(block.metadata, metadata)
        const name = text(peek(part, 'toolName'))
        if (name !== undefined && block.name === undefined) block.name = name
        out.push({ type: 'tool-call-delta', index: block.index, id: block.callId!, ...(name !== undefined ? { name } : {}), argumentsDelta: '' })
        break
      }
      case 'tool-input-delta': {
        if (this.#providerExecuted.has(id) || this.#late(id)) break
        const block = this.#block('tool-call', id, out)
        const delta = text(peek(part, 'delta')) ?? ''
        block.text += delta
        if (delta !== '') out.push({ type: 'tool-call-delta', index: block.index, id: block.callId!, argumentsDelta: delta })
        break
      }
      case 'tool-input-end': {
        if (this.#providerExecuted.has(id) || this.#late(id)) break
        const block = this.#block('tool-call', id, out)
        block.metadata = mergeMetadata(block.metadata, metadata)
        block.inputEnded = true
        break
      }
      case 'tool-call': {
        const callId = text(peek(part, 'toolCallId')) ?? ''
        if (peek(part, 'providerExecuted') === true || this.#providerExecuted.has(callId)) break
        const name = text(peek(part, 'toolName'))
        // a call whose id no streamed input has completes the earliest ended input of its tool, keeping the id that input streamed
        const block = this.#open.get(`tool-call:${callId}`) ?? this.#endedInput(name) ?? this.#block('tool-call', callId, out)
        this.#called.add(`tool-call:${callId}`)
        block.metadata = mergeMetadata(block.metadata, metadata)
        if (name !== undefined) block.name = name
        const raw = peek(part, 'input')
        // the call's input is authoritative (streamed deltas may be text-encoded or missing); the spec makes it
        // JSON text, and a model that hands over the value itself gets it encoded
        const input = raw === undefined ? undefined : (text(raw) ?? JSON.stringify(jsonCopy(raw)) ?? '')
        if (input !== undefined) block.text = input
        this.#close(block, out)
        break
      }
      case 'file':
        this.#file(part, metadata, out)
        break
      case 'stream-start': {
        const warnings = jsonCopy(peek(part, 'warnings'))
        if (Array.isArray(warnings) && warnings.length > 0) this.#response.warnings = warnings
        break
      }
      case 'response-metadata': {
        const responseId = text(peek(part, 'id'))
        const modelId = text(peek(part, 'modelId'))
        const timestamp = peek(part, 'timestamp')
        if (responseId !== undefined) this.#response.id = responseId
        if (modelId !== undefined) this.#response.modelId = modelId
        if (timestamp instanceof Date && Number.isFinite(timestamp.getTime())) this.#response.timestamp = timestamp.toISOString()
        break
      }
      case 'finish':
        this.#finish = { reason: peek(part, 'finishReason'), usage: peek(part, 'usage'), metadata }
        break
      default:
        // tool-result and approval parts (provider-executed tools), sources, raw, ping, custom, reasoning-file
        break
    }
    return out
  }

  /** The closing chunks: a block-end for every block still open, the usage, then the finish with its replay state. */
  finish(requestId: string | undefined): StreamChunk[] {
    const finish = this.#finish
    if (finish === undefined) throw new LlmError({ message: `${this.provider}: the stream ended without a finish part`, code: 'STREAM_CLOSED', requestId })
    const out: StreamChunk[] = []
    for (const block of this.#blocks) this.#close(block, out)
    const usage = toTokenUsage(finish.usage)
    if (usage !== undefined) out.push({ type: 'usage', usage })
    const chunk: Extract<StreamChunk, { type: 'finish' }> = { type: 'finish', reason: this.#reason(finish.reason, requestId) }
    const replay = this.#replayState(finish.metadata)
    if (replay !== undefined) chunk.replayState = replay
    out.push(chunk)
    return out
  }

  #reason(raw: unknown, requestId: string | undefined): FinishReason {
    const error = (init: LlmFailureInit): FinishReason => ({ kind: 'error', failure: llmFailure({ ...init, requestId }) })
    const unified = typeof raw === 'string' ? raw : peek(raw, 'unified')
    const said = text(peek(raw, 'raw'))
    const tail = said !== undefined ? ` (${said})` : ''
    switch (unified) {
      case 'length':
        return { kind: 'max-tokens' }
      case 'content-filter':
        return error({ message: `${this.provider}: the response was stopped by the content filter${tail}`, code: 'CONTENT_FILTERED' })
      case 'error':
        return error({ message: `${this.provider}: the model stopped because of an error${tail}`, code: 'SERVER' })
      case 'interrupted':
        return error({ message: `${this.provider}: the provider's stream ended without a completion signal${tail}`, code: 'STREAM_CLOSED' })
      default: // stop, tool-calls, other
        if (this.#blocks.length === 0) return error({ message: `${this.provider}: the model returned no content`, code: 'EMPTY_RESPONSE' })
        return this.#blocks.some((b) => b.kind === 'tool-call') ? { kind: 'tool-calls' } : { kind: 'stop' }
    }
  }

  /** Per-block metadata (aligned with the content) and the response's facts; undefined when there is neither. */
  #replayState(finishMetadata: unknown): Extract<StreamChunk, { type: 'finish' }>['replayState'] {
    const response: Record<string, unknown> = { ...this.#response }
    const metadata = providerRecord(finishMetadata)
    if (metadata !== undefined) response.providerMetadata = metadata
    const hasBlocks = this.#blocks.some((b) => b.metadata !== undefined)
    if (!hasBlocks && Object.keys(response).length === 0) return undefined
    return { response, ...(hasBlocks ? { blocks: this.#blocks.map((b) => b.metadata ?? null) } : {}) }
  }

  /** Whether a tool input part comes after the `tool-call` that completed its call (and no new input reopened the id). */
  #late(id: string): boolean {
    const key = `tool-call:${id}`
    return !this.#open.has(key) && this.#called.has(key)
  }

  /** The earliest open tool call whose input ended, of the tool `name` (either name unknown matches). */
  #endedInput(name: string | undefined): Block | undefined {
    return this.#blocks.find((b) => b.kind === 'tool-call' && !b.closed && b.inputEnded && (name === undefined || b.name === undefined || b.name === name))
  }

  /** The open block of `kind` for a part id, opened (with block-start) when there is none or `fresh` asks for one. */
  #block(kind: Kind, id: string, out: StreamChunk[], fresh = false): Block {
    const key = `${kind}:${id}`
    const known = this.#open.get(key)
    if (known !== undefined && !fresh) return known
    if (known !== undefined) this.#close(known, out)
    const block: Block = {
      index: this.#blocks.length,
      kind,
      text: '',
      callId: undefined,
      name: undefined,
      metadata: undefined,
      closed: false,
      inputEnded: false,
    }
    if (kind === 'tool-call') {
      // Decision 8: a call whose id an earlier call of this response has gets the next free `<id>#<k>`
      block.callId = uniqueCallId(id !== '' ? id : `call-${block.index}`, this.#callIds)
      this.#callIds.add(block.callId)
    }
    this.#blocks.push(block)
    this.#open.set(key, block)
    out.push({ type: 'block-start', index: block.index, blockType: kind })
    return block
  }

  #close(block: Block, out: StreamChunk[]): void {
    if (block.closed) return
    block.closed = true
    for (const [key, open] of this.#open) {
      if (open !== block) continue
      this.#open.delete(key)
      if (block.kind === 'tool-call') this.#called.add(key)
    }
    let content: ContentBlock
    if (block.kind === 'tool-call') content = { type: 'tool-call', id: block.callId ?? `call-${block.index}`, name: block.name ?? '', arguments: block.text }
    else if (block.kind === 'image')
      return // closed when made (see #file)
    else content = { type: block.kind, text: block.text }
    out.push({ type: 'block-end', index: block.index, block: content })
  }

  /** A generated image becomes an image block; other files are not content the loop keeps. */
  #file(part: unknown, metadata: unknown, out: StreamChunk[]): void {
    const mediaType = text(peek(part, 'mediaType'))
    if (mediaType === undefined || !mediaType.startsWith('image/')) return
    const attachment = imageAttachment(peek(part, 'data'), mediaType)
    if (attachment === undefined) return
    const block: Block = {
      index: this.#blocks.length,
      kind: 'image',
      text: '',
      callId: undefined,
      name: undefined,
      metadata: mergeMetadata(undefined, metadata),
      closed: true,
      inputEnded: false,
    }
    this.#blocks.push(block)
    out.push({ type: 'block-start', index: block.index, blockType: 'image' })
    out.push({ type: 'block-end', index: block.index, block: { type: 'image', attachment } })
  }
}

/** A file's data as an attachment: v3's base64 text or bytes, v4's `{type:'data'}` or `{type:'url'}`. */
function imageAttachment(data: unknown, mediaType: string): { mediaType: string; data?: string; url?: string } | undefined {
  if (typeof data === 'string') return { mediaType, data }
  if (data instanceof Uint8Array) return { mediaType, data: Buffer.from(data).toString('base64') }
  if (isRecordLike(data) && data.type === 'data') return imageAttachment(data.data, mediaType)
  if (isRecordLike(data) && data.type === 'url') {
    const url = data.url
    if (url instanceof URL) return { mediaType, url: url.href }
    if (typeof url === 'string') return { mediaType, url }
  }
  return undefined
}

function count(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : undefined
}

/**
 * The spec's usage as disjoint TokenUsage counts: input without cache reads and writes
 * (`noCache`, else `total` less both), output without reasoning (`text`, else `total` less
 * reasoning); optional counts only when reported and non-zero. Undefined when nothing was counted.
 */
export function toTokenUsage(raw: unknown): TokenUsage | undefined {
  if (!isRecordLike(raw)) return undefined
  const usage = raw as SpecUsage
  const input = typeof usage.inputTokens === 'number' ? { total: usage.inputTokens } : isRecordLike(usage.inputTokens) ? usage.inputTokens : {}
  const output = typeof usage.outputTokens === 'number' ? { total: usage.outputTokens } : isRecordLike(usage.outputTokens) ? usage.outputTokens : {}
  const inputFields = input as { total?: unknown; noCache?: unknown; cacheRead?: unknown; cacheWrite?: unknown }
  const outputFields = output as { total?: unknown; text?: unknown; reasoning?: unknown }
  const inputTotal = count(inputFields.total)
  const noCache = count(inputFields.noCache)
  const cacheRead = count(inputFields.cacheRead)
  const cacheWrite = count(inputFields.cacheWrite)
  const outputTotal = count(outputFields.total)
  const textTokens = count(outputFields.text)
  const reasoning = count(outputFields.reasoning)
  if ([inputTotal, noCache, cacheRead, cacheWrite, outputTotal, textTokens, reasoning].every((n) => n === undefined)) return undefined
  const out: TokenUsage = {
    inputTokens: noCache ?? Math.max(0, (inputTotal ?? 0) - (cacheRead ?? 0) - (cacheWrite ?? 0)),
    outputTokens: textTokens ?? Math.max(0, (outputTotal ?? 0) - (reasoning ?? 0)),
  }
  if (cacheRead) out.cacheReadTokens = cacheRead
  if (cacheWrite) out.cacheWriteTokens = cacheWrite
  if (reasoning) out.reasoningTokens = reasoning
  return out
}

// Realistic scripted responses: block-start, a few deltas, the authoritative
// block-end, optional usage, then finish (BEHAVIOURS 1.4).
import { uniqueCallId } from '../adapters/assemble.js'
import { ConfigError } from '../errors.js'
import { describeValue, isArrayLike, isRecordLike } from '../values/foreign.js'
import { llmFailure, type LlmFailureInit } from '../adapters/failure.js'
import type { FinishReason, StreamChunk, TokenUsage } from '../session/schemas.js'

export interface ResponseOptions {
  /** Emitted as a `usage` chunk just before `finish`. */
  usage?: TokenUsage
}

/** One scripted tool call; `arguments` is the raw JSON text the model sent. */
export interface ScriptedToolCall {
  id: string
  name: string
  arguments: string
}

/** The script entry that waits until the request is aborted. */
export const hang = 'hang' as const

/** A text argument of a helper, checked here so a mistake fails at the call that made it, not later as a malformed chunk or a TypeError. */
function checkedText(helper: string, name: string, value: unknown): string {
  if (typeof value !== 'string') throw new ConfigError(`${helper}: ${name} must be a string, got ${describeValue(value)}`, { path: name })
  return value
}

/** The calls of toolCallResponse, checked: ids and names are strings, and `arguments` is the raw JSON text the model sent. */
function checkedCalls(calls: unknown): readonly ScriptedToolCall[] {
  const where = 'toolCallResponse'
  if (!isArrayLike(calls)) throw new ConfigError(`${where}: calls must be an array of { id, name, arguments }, got ${describeValue(calls)}`, { path: 'calls' })
  calls.forEach((call, k) => {
    if (!isRecordLike(call)) throw new ConfigError(`${where}: calls[${k}] must be { id, name, arguments }, got ${describeValue(call)}`, { path: `calls.${k}` })
    for (const key of ['id', 'name'] as const) checkedText(where, `calls[${k}].${key}`, call[key])
    if (typeof call.arguments !== 'string') {
      const hint = isRecordLike(call.arguments) ? ' (the raw JSON text the model sent: JSON.stringify it)' : ''
      throw new ConfigError(`${where}: calls[${k}].arguments must be a string${hint}, got ${describeValue(call.arguments)}`, { path: `calls.${k}.arguments` })
    }
  })
  return calls as readonly ScriptedToolCall[]
}

/** Splits text into up to three deltas without breaking a surrogate pair. */
function pieces(text: string): string[] {
  const chars = Array.from(text)
  const size = Math.max(1, Math.ceil(chars.length / 3))
  const out: string[] = []
  for (let k = 0; k < chars.length; k += size) out.push(chars.slice(k, k + size).join(''))
  return out
}

function textBlock(index: number, type: 'text' | 'reasoning', text: string): StreamChunk[] {
  const deltas: StreamChunk[] = pieces(text).map((piece) =>
    type === 'text' ? { type: 'text-delta', index, text: piece } : { type: 'reasoning-delta', index, text: piece },
  )
  return [{ type: 'block-start', index, blockType: type }, ...deltas, { type: 'block-end', index, block: { type, text } }]
}

function toolCallBlock(index: number, call: ScriptedToolCall): StreamChunk[] {
  const [first = '', ...rest] = pieces(call.arguments)
  return [
    { type: 'block-start', index, blockType: 'tool-call' },
    { type: 'tool-call-delta', index, id: call.id, name: call.name, argumentsDelta: first },
    ...rest.map((piece): StreamChunk => ({ type: 'tool-call-delta', index, argumentsDelta: piece })),
    { type: 'block-end', index, block: { type: 'tool-call', id: call.id, name: call.name, arguments: call.arguments } },
  ]
}

function ending(reason: FinishReason, options: ResponseOptions | undefined): StreamChunk[] {
  const usage: StreamChunk[] = options?.usage === undefined ? [] : [{ type: 'usage', usage: options.usage }]
  return [...usage, { type: 'finish', reason }]
}

/**
 * A plain text answer finishing `stop`.
 * Why: the common one-step turn. An empty text gives a finish-only stream
 * (an empty response), not an empty text block.
 */
export function textResponse(text: string, options?: ResponseOptions): StreamChunk[] {
  checkedText('textResponse', 'text', text)
  return [...(text === '' ? [] : textBlock(0, 'text', text)), ...ending({ kind: 'stop' }, options)]
}

/**
 * Reasoning then text, finishing `stop`.
 * Why: exercises multi-block assembly and reasoning in history.
 */
export function reasoningResponse(reasoning: string, text: string, options?: ResponseOptions): StreamChunk[] {
  checkedText('reasoningResponse', 'reasoning', reasoning)
  checkedText('reasoningResponse', 'text', text)
  const blocks = [...(reasoning === '' ? [] : textBlock(0, 'reasoning', reasoning))]
  if (text !== '') blocks.push(...textBlock(reasoning === '' ? 0 : 1, 'text', text))
  return [...blocks, ...ending({ kind: 'stop' }, options)]
}

/**
 * Optional leading text, then one tool-call block per call, finishing `tool-calls`.
 * Why: drives a tool step; arguments stream as raw text split over deltas.
 * Call ids are unique in the response, as an adapter must make them (Decision 8): a repeated
 * id is sent as `<id>#2`, `<id>#3`, …
 */
export function toolCallResponse(calls: readonly ScriptedToolCall[], text?: string, options?: ResponseOptions): StreamChunk[] {
  checkedCalls(calls)
  if (text !== undefined) checkedText('toolCallResponse', 'text', text)
  const out = text === undefined || text === '' ? [] : textBlock(0, 'text', text)
  const offset = out.length === 0 ? 0 : 1
  const used = new Set<string>()
  calls.forEach((call, k) => {
    const id = uniqueCallId(call.id, used)
    used.add(id)
    out.push(...toolCallBlock(offset + k, id === call.id ? call : { ...call, id }))
  })
  return [...out, ...ending({ kind: 'tool-calls' }, options)]
}

/**
 * Text cut off by the output cap, finishing `max-tokens`.
 * Why: drives the sticky max-tokens outcome (TU-12, ST-9).
 */
export function maxTokensResponse(text: string, options?: ResponseOptions): StreamChunk[] {
  checkedText('maxTokensResponse', 'text', text)
  return [...(text === '' ? [] : textBlock(0, 'text', text)), ...ending({ kind: 'max-tokens' }, options)]
}

/**
 * A single terminal `finish{error{failure}}`, as an adapter failure arrives.
 * Why: drives request recovery (RQ-9); the facts are normalized like an LlmError's.
 */
export function errorResponse(failure: LlmFailureInit): StreamChunk[] {
  return [{ type: 'finish', reason: { kind: 'error', failure: llmFailure(failure) } }]
}

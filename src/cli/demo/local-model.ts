// The demo's built-in model: a ModelAdapter that needs no network and no key.
// Each request is answered by the planner from the request's own messages,
// streamed the way a provider streams (text deltas, tool-call deltas, usage,
// finish), so the loop, the tree and cancellation behave as with a real model.
import { setTimeout as sleep } from 'node:timers/promises'
import { LlmError, type ModelAdapter, type ModelRequest, type StreamChunk } from '../../index.js'
import { decide, type Reply } from './planner.js'

export const LOCAL_PROVIDER = 'local'
export const LOCAL_MODEL = 'agentchart-local'

/** Pacing, so a person can watch the stream (and a test can interrupt it). */
export interface LocalModelOptions {
  /** Milliseconds before the first chunk (the spinner shows meanwhile); default 0. */
  thinkMs?: number
  /** Milliseconds between two chunks; default 0. */
  chunkMs?: number
}

/** Rough token count for usage: about four characters a token, as tokenizers average on English and code. */
const estimateTokens = (text: string) => Math.ceil(text.length / 4)

function abortError(signal: AbortSignal): LlmError {
  const error = new LlmError({ message: 'the request was aborted', code: 'ABORTED' }, signal.reason)
  error.name = 'AbortError'
  return error
}

/** The chunks of one reply: a text block streamed word by word, then each tool call in two deltas. */
export function replyChunks(reply: Reply, callIdPrefix: string, inputTokens: number): StreamChunk[] {
  const chunks: StreamChunk[] = [{ type: 'block-start', index: 0, blockType: 'text' }]
  for (const piece of reply.text.match(/\s*\S+/g) ?? []) chunks.push({ type: 'text-delta', index: 0, text: piece })
  chunks.push({ type: 'block-end', index: 0, block: { type: 'text', text: reply.text } })
  let output = reply.text
  if (reply.kind === 'tools') {
    reply.calls.forEach((call, i) => {
      const index = i + 1
      const id = `${callIdPrefix}-${index}`
      const args = JSON.stringify(call.args)
      const half = Math.ceil(args.length / 2)
      output += call.name + args
      chunks.push({ type: 'block-start', index, blockType: 'tool-call' })
      chunks.push({ type: 'tool-call-delta', index, id, name: call.name, argumentsDelta: args.slice(0, half) })
      chunks.push({ type: 'tool-call-delta', index, id, argumentsDelta: args.slice(half) })
      chunks.push({ type: 'block-end', index, block: { type: 'tool-call', id, name: call.name, arguments: args } })
    })
  }
  chunks.push({ type: 'usage', usage: { inputTokens, outputTokens: estimateTokens(output) } })
  chunks.push({ type: 'finish', reason: { kind: reply.kind === 'tools' ? 'tool-calls' : 'stop' } })
  return chunks
}

/**
 * The built-in offline model. Why: `agentchart demo` must run anywhere, with no key and no
 * network, and still show a real multi-step tool turn planned from what the tools return.
 * Deterministic: the same conversation always gets the same response (call ids included).
 */
export function localModel(options: LocalModelOptions = {}): ModelAdapter {
  const thinkMs = options.thinkMs ?? 0
  const chunkMs = options.chunkMs ?? 0
  return {
    provider: LOCAL_PROVIDER,
    model: LOCAL_MODEL,
    async *stream(request: ModelRequest): AsyncGenerator<StreamChunk> {
      const { signal } = request
      const wait = async (ms: number) => {
        if (ms > 0) await sleep(ms, undefined, { signal }).catch(() => {})
        if (signal.aborted) throw abortError(signal)
      }
      await wait(thinkMs)
      const reply = decide(request.messages)
      // ids are unique in the session: one prefix per assistant message so far
      const answered = request.messages.filter((m) => m.role === 'assistant').length
      const input = estimateTokens(JSON.stringify(request.messages) + (request.system ?? '') + JSON.stringify(request.tools ?? []))
      for (const chunk of replyChunks(reply, `local-${answered + 1}`, input)) {
        if (chunk.type === 'text-delta') await wait(chunkMs)
        else if (signal.aborted) throw abortError(signal)
        yield chunk
      }
    },
  }
}

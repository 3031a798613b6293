// Stream assembly (BEHAVIOURS 1.4): turns normalized StreamChunks into the
// content of one assistant message, and keeps adapter failures inside the stream.
import type { ContentBlock, FinishReason, ReasoningBlock, StreamChunk, TextBlock, TokenUsage, ToolCallBlock } from '../session/schemas.js'
import { toLlmFailure } from './failure.js'
import type { ModelAdapter, ModelRequest } from './types.js'

/** CX-7: the non-empty text and reasoning blocks of a cancelled stream, or null when none shows non-whitespace text. */
export function visiblePrefix(content: readonly ContentBlock[]): (TextBlock | ReasoningBlock)[] | null {
  const out = content.filter((b): b is TextBlock | ReasoningBlock => (b.type === 'text' || b.type === 'reasoning') && b.text !== '')
  return out.some((b) => /\S/.test(b.text)) ? out : null
}

/** The provider envelope a finish may carry for faithful replay. */
export type ReplayState = NonNullable<Extract<StreamChunk, { type: 'finish' }>['replayState']>

/** What one attempt's stream assembled into. Absent facts are absent keys (lossless JSON). */
export interface AssembledResponse {
  content: ContentBlock[]
  finish: FinishReason
  usage?: TokenUsage
  replayState?: ReplayState
  toolCalls: ToolCallBlock[]
}

/** One block being assembled, keyed by its stream index. */
interface Slot {
  readonly index: number
  /** Set by the first chunk that mentions the index; later chunks of another kind are ignored. */
  readonly kind: ContentBlock['type']
  /** Text/reasoning deltas, or tool-call argument deltas. */
  text: string
  id: string | undefined
  name: string | undefined
  /** The authoritative block from the first block-end. */
  closed: ContentBlock | undefined
}

const STOP: FinishReason = Object.freeze({ kind: 'stop' })

/**
 * Assembles one attempt's chunks into content blocks (BEHAVIOURS 1.4).
 * Why: the attempt logs every chunk and needs the anchor's content, finish,
 * usage and replay state from them, plus the visible prefix when cancelled (CX-7).
 *
 * Decisions where the catalogue is silent:
 * - empty text/reasoning blocks are kept (so positions stay aligned with
 *   `replayState.blocks`); a bare `block-start{text}` assembles to `text('')`;
 * - an open image block cannot be assembled from deltas and is dropped;
 * - a delta whose kind disagrees with the kind first seen at its index is ignored;
 * - a tool call keeps the first non-empty `id` and `name` its deltas carry.
 */
export class StreamAssembler {
  readonly #slots: Slot[] = []
  readonly #byIndex = new Map<number, Slot>()
  #finish: FinishReason | undefined
  #replayState: ReplayState | undefined
  #usage: TokenUsage | undefined
  #done = false

  /** Adds one chunk; anything after `finish` is ignored. */
  push(chunk: StreamChunk): void {
    if (this.#done) return
    switch (chunk.type) {
      case 'block-start':
        if (!this.#byIndex.has(chunk.index)) this.#create(chunk.index, chunk.blockType)
        return
      case 'text-delta':
      case 'reasoning-delta': {
        const slot = this.#open(chunk.index, chunk.type === 'text-delta' ? 'text' : 'reasoning')
        if (slot !== undefined) slot.text += chunk.text
        return
      }
      case 'tool-call-delta': {
        const slot = this.#open(chunk.index, 'tool-call')
        if (slot === undefined) return
        if (!slot.id && chunk.id) slot.id = chunk.id
        if (!slot.name && chunk.name) slot.name = chunk.name
        slot.text += chunk.argumentsDelta
        return
      }
      case 'block-end': {
        const slot = this.#byIndex.get(chunk.index) ?? this.#create(chunk.index, chunk.block.type)
        if (slot.closed === undefined) slot.closed = chunk.block
        return
      }
      case 'usage':
        this.#usage = chunk.usage
        return
      case 'finish':
        this.#finish = chunk.reason
        this.#replayState = chunk.replayState
        this.#done = true
        return
    }
  }

  /** True once a `finish` chunk arrived. */
  get finished(): boolean {
    return this.#done
  }

  /** The assembled response; a stream without `finish` counts as `stop`. */
  result(): AssembledResponse {
    const blocks: ContentBlock[] = []
    for (const slot of this.#slots) {
      const block = blockOf(slot)
      if (block !== undefined) blocks.push(block)
    }
    const finish = this.#finish ?? STOP
    let content = blocks
    let replayState = this.#replayState
    if (finish.kind === 'max-tokens' && blocks.some((b) => b.type === 'tool-call')) {
      // truncated tool calls must never run (ST-9); keep replay metadata only if it stays aligned
      content = blocks.filter((b) => b.type !== 'tool-call')
      if (replayState !== undefined) {
        const aligned = replayState.blocks
        replayState =
          aligned !== undefined && aligned.length === blocks.length
            ? { ...replayState, blocks: aligned.filter((_, k) => blocks[k].type !== 'tool-call') }
            : undefined
      }
    }
    const out: AssembledResponse = {
      content,
      finish,
      toolCalls: content.filter((b): b is ToolCallBlock => b.type === 'tool-call'),
    }
    if (this.#usage !== undefined) out.usage = this.#usage
    if (replayState !== undefined) out.replayState = replayState
    return out
  }

  /**
   * The visible prefix of a cancelled stream (CX-7): its non-empty text and
   * reasoning blocks, closed or open, in order; null when none holds
   * non-whitespace text. Tool-call and image blocks are dropped.
   */
  interruptedContent(): ContentBlock[] | null {
    return visiblePrefix(this.#slots.flatMap((slot) => blockOf(slot) ?? []))
  }

  #create(index: number, kind: ContentBlock['type']): Slot {
    const slot: Slot = { index, kind, text: '', id: undefined, name: undefined, closed: undefined }
    this.#slots.push(slot)
    this.#byIndex.set(index, slot)
    return slot
  }

  /** The slot a delta may extend: created on first sight, undefined once closed or of another kind. */
  #open(index: number, kind: 'text' | 'reasoning' | 'tool-call'): Slot | undefined {
    const slot = this.#byIndex.get(index)
    if (slot === undefined) return this.#create(index, kind)
    return slot.closed === undefined && slot.kind === kind ? slot : undefined
  }
}

function blockOf(slot: Slot): ContentBlock | undefined {
  if (slot.closed !== undefined) return slot.closed
  switch (slot.kind) {
    case 'text':
    case 'reasoning':
      return { type: slot.kind, text: slot.text }
    case 'tool-call':
      return { type: 'tool-call', id: slot.id || `call-${slot.index}`, name: slot.name ?? '', arguments: slot.text }
    default:
      return undefined
  }
}

/** The terminal finish an adapter failure becomes (BEHAVIOURS 1.4, RQ-8). */
function failureFinish(thrown: unknown, signal: AbortSignal | undefined): StreamChunk {
  const failure = toLlmFailure(thrown)
  if (failure.code === 'ABORTED') return { type: 'finish', reason: { kind: 'aborted', failure } }
  if (signal?.aborted === true) {
    return { type: 'finish', reason: { kind: 'aborted', failure: Object.freeze({ ...failure, code: 'ABORTED' }) } }
  }
  return { type: 'finish', reason: { kind: 'error', failure } }
}

/**
 * Runs an adapter so that its failures never throw across the stream boundary.
 * Why: a throw from `adapter.stream()` or from iteration is a request failure
 * to be offered to recovery, so it becomes a terminal `finish{error}` (or
 * `finish{aborted}` when the request's signal is aborted or the code is
 * ABORTED, keeping the thrown facts but with code ABORTED). Nothing is yielded
 * after a `finish`. A failure in the consumer (a `throw()` into this generator)
 * or in the adapter's cleanup (`return()`) stays thrown.
 */
export async function* normalizeStream(adapter: ModelAdapter, request: ModelRequest): AsyncGenerator<StreamChunk> {
  let iterator: AsyncIterator<StreamChunk>
  try {
    iterator = adapter.stream(request)[Symbol.asyncIterator]()
  } catch (thrown) {
    yield failureFinish(thrown, request.signal)
    return
  }
  let exhausted = false
  try {
    for (;;) {
      let step: IteratorResult<StreamChunk>
      try {
        step = await iterator.next()
      } catch (thrown) {
        exhausted = true // a throwing iterator is finished; do not call return() on it
        yield failureFinish(thrown, request.signal)
        return
      }
      if (step.done === true) {
        exhausted = true
        return
      }
      const chunk = step.value
      yield chunk
      // optional chaining: a garbage chunk is the consumer's to refuse, not a reason to throw here
      if ((chunk as StreamChunk | undefined)?.type === 'finish') return
    }
  } finally {
    // early exit by the consumer, or a finish that left the adapter mid-iteration: let it clean up
    if (!exhausted) await iterator.return?.()
  }
}

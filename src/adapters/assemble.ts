// Stream assembly (BEHAVIOURS 1.4): turns normalized StreamChunks into the
// content of one assistant message, and keeps adapter failures inside the stream.
import { describeThrown, describeValue, isRecordLike, peek } from '../values/foreign.js'
import { toFrozenJson, toLoggedJson } from '../session/lossless.js'
import { ConfigError, LosslessJsonError } from '../errors.js'
import {
  StreamChunkSchema,
  type ContentBlock,
  type FinishReason,
  type LlmFailure,
  type StreamChunk,
  type TokenUsage,
  type ToolCallBlock,
} from '../session/schemas.js'
import { visiblePrefix } from '../session/vocabulary.js'
import { llmFailure, toLlmFailure } from './failure.js'
import type { ModelAdapter, ModelRequest } from './types.js'

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
 * - a tool call keeps the first non-empty `id` and `name` its deltas carry;
 * - call ids are unique in the result (Decision 8): an empty id becomes
 *   `call-<index>`, and a later call whose id an earlier call of the same
 *   response already has gets the first free `<id>#<k>`, k = 2, 3, …
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
    const used = new Set<string>()
    for (const slot of this.#slots) {
      const block = blockOf(slot)
      if (block === undefined) continue
      blocks.push(block.type === 'tool-call' ? withUniqueId(block, slot.index, used) : block)
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
      // frozen, its blocks those of the logged block-end chunks, so the anchor can hold this very array (sized by slice)
      content: Object.freeze(content.slice()) as ContentBlock[],
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

/** The first id free in `used` for a call that asked for `id`: `id` itself, else `id#2`, `id#3`, … (Decision 8). */
export function uniqueCallId(id: string, used: ReadonlySet<string>): string {
  if (!used.has(id)) return id
  for (let k = 2; ; k++) if (!used.has(`${id}#${k}`)) return `${id}#${k}`
}

/** A tool-call block whose id is non-empty and not taken by an earlier call of the response (Decision 8); records it. */
function withUniqueId(block: ToolCallBlock, index: number, used: Set<string>): ToolCallBlock {
  const id = uniqueCallId(block.id !== '' ? block.id : `call-${index}`, used)
  used.add(id)
  return id === block.id ? block : { ...block, id }
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

/** What the adapter boundary made of one yielded chunk: the chunk as deep-frozen lossless plain data, or why it was refused. */
export type AdmittedChunk = { readonly ok: true; readonly chunk: StreamChunk } | { readonly ok: false; readonly failure: LlmFailure }

/**
 * Checks one chunk an adapter yielded against the schema the log uses (StreamChunkSchema), in full.
 * Why: a chunk is logged as it arrives and then assembled into the anchor, so a malformed one would
 * break the log's shape and the assembly; it ends the attempt with a MALFORMED_RESPONSE failure
 * instead. A failure a `finish{error|aborted}` carries is normalised like a thrown one
 * (placeholders for an empty message or code, bad optional facts dropped, secrets redacted), so
 * the `turn/end` that may carry it is always appendable. Never throws, whatever the value.
 */
export function admitChunk(raw: unknown): AdmittedChunk {
  try {
    const parsed = StreamChunkSchema.safeParse(peek(raw, 'type') === 'finish' ? finishWithFacts(raw) : raw)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      const at = formatIssuePath(issue.path)
      return { ok: false, failure: malformedChunk(`${at ? `${at}: ` : ''}${issue.message}`) }
    }
    // the log's own gate copies zod's parse literal-sized (replayState, frozen before the parse, is kept); a schema keeps
    // what JSON cannot hold (a present `undefined` of an optional field, -0), which it refuses by path
    return { ok: true, chunk: toLoggedJson(parsed.data, 'chunk') }
  } catch (error) {
    if (error instanceof LosslessJsonError) return { ok: false, failure: malformedChunk(error.message) }
    return { ok: false, failure: malformedChunk(`it could not be read: ${describeThrown(error)}`) }
  }
}

/**
 * The adapter's declared context window: absent, or a positive safe integer (the tokens one request may carry).
 * Why read through here: request/context logs it, and a log holding anything else could not be opened again.
 */
export function contextWindowOf(model: ModelAdapter): number | undefined {
  const { contextWindow } = model
  if (contextWindow === undefined || (Number.isSafeInteger(contextWindow) && contextWindow > 0)) return contextWindow
  throw new ConfigError(`model.contextWindow must be a positive safe integer (the tokens one request may carry), got ${describeValue(contextWindow)}`, {
    path: 'model.contextWindow',
  })
}

function malformedChunk(why: string): LlmFailure {
  return llmFailure({ message: `the model adapter sent a malformed stream chunk: ${why}`, code: 'MALFORMED_RESPONSE' })
}

/** `chunk.reason.failure` as a zod issue path reads it: `reason.failure.message`, `[0]` for indexes. */
function formatIssuePath(path: readonly PropertyKey[]): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('')
}

/** A finish chunk with its failure normalised (Failures) and its replay envelope copied as JSON; may throw. */
function finishWithFacts(raw: unknown): unknown {
  const chunk: Record<string, unknown> = { ...(raw as Record<string, unknown>) }
  const reason = chunk.reason
  if (isRecordLike(reason) && (reason.kind === 'error' || reason.kind === 'aborted') && isRecordLike(reason.failure)) {
    chunk.reason = { ...reason, failure: llmFailure(reason.failure as unknown as LlmFailure) }
  }
  // an envelope must be lossless JSON to be logged; anything but an object is left to the schema, which names it
  if (isRecordLike(chunk.replayState)) chunk.replayState = toFrozenJson(chunk.replayState, 'chunk.replayState')
  return chunk
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
      let done: unknown
      let chunk: StreamChunk
      try {
        const step = await iterator.next()
        // the iterator result is the adapter's too: read once, inside the catch
        done = (step as { done?: unknown }).done
        chunk = (step as { value: StreamChunk }).value
      } catch (thrown) {
        exhausted = true // a throwing iterator is finished; do not call return() on it
        yield failureFinish(thrown, request.signal)
        return
      }
      if (done === true) {
        exhausted = true
        return
      }
      yield chunk
      // a garbage chunk is the consumer's to refuse (admitChunk), not a reason to throw here
      if (peek(chunk, 'type') === 'finish') return
    }
  } finally {
    // early exit by the consumer, or a finish that left the adapter mid-iteration: let it clean up
    if (!exhausted) await iterator.return?.()
  }
}

// The hot path: one attempt's model stream. Each chunk is checked at the
// adapter boundary and appended to the session as it arrives; the machine
// hears only the outcome (DESIGN rule 1), with the chunk seqs the anchor cites.
import { StreamAssembler, admitChunk, normalizeStream, type AssembledResponse } from '../adapters/assemble.js'
import type { ModelAdapter, ModelRequest } from '../adapters/types.js'
import type { StreamChunk } from '../session/schemas.js'
import { describeValue } from '../values/foreign.js'
import { CHECKED, type Session } from '../session/session.js'

/** How many chunks a stream may deliver before the event loop gets to run once. */
const CHUNKS_PER_YIELD = 256

const ABORT = Symbol('abort')

/** What one stream came to: its chunks' seqs and assembly, and whether the turn's cancellation cut it. */
type StreamOutcome =
  | { ok: true; chunkSeqs: number[]; response: AssembledResponse; cancelled: boolean }
  /** An append was refused (RQ-7): the attempt ends without recovery. */
  | { ok: false; error: unknown }

/**
 * Streams `request` from `model` into `session` as chunks of `turn`/`step`. A malformed chunk is logged as the
 * failure finish it stands for (MALFORMED_RESPONSE); reading stops at the first finish, and each read races the
 * abort, so an adapter that never answers or never cleans up cannot hold the attempt open.
 */
export async function streamModel(
  session: Session,
  model: ModelAdapter,
  request: ModelRequest,
  turn: number,
  step: number,
  middleware?: () => Promise<unknown>,
): Promise<StreamOutcome> {
  const { signal } = request
  const chunkSeqs: number[] = []
  const assembler = new StreamAssembler()
  let cancelled = signal.aborted
  try {
    if (!cancelled) {
      // one promise per read that the abort can settle (a shared abort promise raced with every read would pile
      // up reactions for the whole stream); the abort answers a microtask later, so a cancel lands on the same tick
      let wake: ((next: typeof ABORT) => void) | undefined
      const onAbort = () => {
        const read = wake
        queueMicrotask(() => read?.(ABORT))
      }
      // llm/stream middleware answers with its own stream; what it yields is checked and logged as an adapter's
      const chunks = (middleware ? chunksOf(await middleware()) : normalizeStream(model, request)) as AsyncIterable<StreamChunk>
      signal.addEventListener('abort', onAbort, { once: true })
      const iterator = chunks[Symbol.asyncIterator]()
      let done = false
      try {
        for (let count = 1; ; count++) {
          const reading = iterator.next()
          const next = await new Promise<IteratorResult<StreamChunk> | typeof ABORT>((resolve, reject) => {
            wake = resolve
            reading.then(resolve, reject)
            if (signal.aborted) queueMicrotask(() => resolve(ABORT))
          })
          if (next === ABORT || signal.aborted) {
            cancelled = true
            break
          }
          if (next.done) {
            done = true
            break
          }
          const admitted = admitChunk(next.value)
          const chunk: StreamChunk = admitted.ok ? admitted.chunk : { type: 'finish', reason: { kind: 'error', failure: admitted.failure } }
          // an admitted chunk is deep-frozen lossless data: in a frozen wrap of the machine's numbers the session keeps it as it is
          const event = admitted.ok
            ? session.append('assistant/chunk', Object.freeze({ turn, step, chunk }), CHECKED)
            : session.append('assistant/chunk', { turn, step, chunk })
          chunkSeqs.push(event.seq)
          assembler.push(chunk)
          if (chunk.type === 'finish') break
          // a stream that never waits for I/O would keep timers (a cancel from a setTimeout) from running
          if (count % CHUNKS_PER_YIELD === 0) await new Promise((resolve) => setImmediate(resolve))
        }
      } finally {
        signal.removeEventListener('abort', onAbort)
        // stopped early (cancelled, a finish, a malformed chunk, a refused append): let the adapter close its stream
        if (!done) void iterator.return?.(undefined).catch(() => {})
      }
    }
  } catch (error) {
    if (!signal.aborted) return { ok: false, error }
    cancelled = true
  }
  return { ok: true, chunkSeqs, response: assembler.result(), cancelled }
}

/** The stream an llm/stream chain returned: any async or sync iterable of chunks; anything else is its failure (RQ-7). */
function chunksOf(value: unknown): AsyncIterable<unknown> {
  const iterable = value as { [Symbol.asyncIterator]?: unknown; [Symbol.iterator]?: unknown } | null
  if (iterable !== null && typeof iterable === 'object' && typeof iterable[Symbol.asyncIterator] === 'function') return value as AsyncIterable<unknown>
  if (iterable !== null && typeof iterable === 'object' && typeof iterable[Symbol.iterator] === 'function') {
    // a sync iterable (an array of recorded chunks, say) read one chunk per read, as a stream
    const iterator = (value as Iterable<unknown>)[Symbol.iterator]()
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.resolve(iterator.next()),
        return: () => Promise.resolve(iterator.return?.() ?? { done: true as const, value: undefined }),
      }),
    }
  }
  throw new TypeError(`llm/stream must return an async iterable of stream chunks, got ${describeValue(value)}`)
}

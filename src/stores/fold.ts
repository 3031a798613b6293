// Chunk retention: once a step's message is committed, the step's streamed
// chunks are rewritten as one stored row per run of consecutive seqs instead
// of one row per token. The row expands back to exactly the events the session
// logged, so readers (resume, forks, the viewer, replay) see the same log.
import { ConfigError, StoredLogError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'

/** What a store does with `assistant/chunk` rows once their step is finished: keep one row each, or fold them. */
export type ChunkRetention = 'keep' | 'fold'

/** The stores' default (docs/persistence.md, chunk retention, says why). */
const DEFAULT_CHUNK_RETENTION: ChunkRetention = 'fold'

/** One row to write: `replaces` marks the fold row that takes over its first chunk's individual row. */
interface PlannedRow {
  readonly seq: number
  readonly type: string
  readonly event: string
  readonly replaces: boolean
}

/** What one commit writes: rows to insert (or replace), and individual chunk rows a fold made redundant. */
export interface RowPlan {
  readonly rows: readonly PlannedRow[]
  readonly drop: readonly number[]
  /** Call once the commit succeeded: the folder then knows what the store holds. */
  commit(): void
}

/** The stored shape of a folded run: its first seq, the step, and each chunk with its time. */
interface FoldedRun {
  readonly seq: number
  readonly folded: 'assistant/chunk'
  readonly turn: number
  readonly step: number
  readonly chunks: ReadonlyArray<readonly [number, unknown]>
}

type ChunkEvent = Extract<SessionEvent, { type: 'assistant/chunk' }>

interface Pending {
  readonly event: ChunkEvent
  /** True once the chunk has its own row in the store. */
  readonly stored: boolean
}

export function checkChunkRetention(value: unknown): ChunkRetention {
  if (value === undefined) return DEFAULT_CHUNK_RETENTION
  if (value !== 'keep' && value !== 'fold')
    throw new ConfigError(`chunks must be 'keep' or 'fold', got ${JSON.stringify(value) ?? typeof value}`, { path: 'chunks' })
  return value
}

const stepKey = (turn: number, step: number) => `${turn}.${step}`

/** Only a chunk with exactly the session's own keys folds: its expansion must give back the same JSON text. */
function foldable(event: SessionEvent): event is ChunkEvent {
  if (event.type !== 'assistant/chunk') return false
  const keys = Object.keys(event)
  const dataKeys = Object.keys(event.data)
  return (
    keys.length === 4 &&
    keys[0] === 'seq' &&
    keys[1] === 'time' &&
    keys[2] === 'type' &&
    keys[3] === 'data' &&
    dataKeys.length === 3 &&
    dataKeys[0] === 'turn' &&
    dataKeys[1] === 'step' &&
    dataKeys[2] === 'chunk'
  )
}

/** The events that end a step's stream: after one of them its chunks can no longer grow. */
function endsStep(event: SessionEvent): { turn: number; step: number } | undefined {
  return event.type === 'assistant/message' || event.type === 'step/end' ? event.data : undefined
}

/**
 * Plans each commit of one opened session. It remembers the chunks of unfinished steps that already have
 * their own rows, so that when the step's message (or step/end) arrives their rows are folded with the rest.
 */
export class ChunkFolder {
  readonly #retention: ChunkRetention
  /** Chunks of steps not yet ended, by step. */
  #pending = new Map<string, Pending[]>()

  /** `stored`: the events the store handed back at open (chunks of a step not yet ended have their own rows). */
  constructor(retention: ChunkRetention, stored: readonly unknown[]) {
    this.#retention = retention
    if (retention === 'keep') return
    for (const value of stored) {
      const event = value as SessionEvent
      const ended = endsStep(event)
      if (ended) this.#pending.delete(stepKey(ended.turn, ended.step))
      else if (foldable(event)) this.#add(this.#pending, event, true)
    }
  }

  plan(batch: readonly SessionEvent[]): RowPlan {
    if (this.#retention === 'keep') return { rows: batch.map(plainRow), drop: [], commit: () => {} }
    const pending = new Map<string, Pending[]>()
    for (const [key, list] of this.#pending) pending.set(key, list.slice())
    const rows: PlannedRow[] = []
    const drop: number[] = []
    for (const event of batch) {
      if (foldable(event)) {
        this.#add(pending, event, false)
        continue
      }
      rows.push(plainRow(event))
      const ended = endsStep(event)
      if (ended === undefined) continue
      const key = stepKey(ended.turn, ended.step)
      const chunks = pending.get(key)
      if (chunks === undefined) continue
      pending.delete(key)
      for (const run of runs(chunks)) fold(run, rows, drop)
    }
    // chunks of steps still streaming get their own rows now, so a crash keeps them; they fold when the step ends
    for (const [key, list] of pending) {
      pending.set(
        key,
        list.map((chunk) => {
          if (chunk.stored) return chunk
          rows.push(plainRow(chunk.event))
          return { event: chunk.event, stored: true }
        }),
      )
    }
    rows.sort((a, b) => a.seq - b.seq)
    return { rows, drop, commit: () => (this.#pending = pending) }
  }

  #add(into: Map<string, Pending[]>, event: ChunkEvent, stored: boolean): void {
    const key = stepKey(event.data.turn, event.data.step)
    const list = into.get(key)
    if (list) list.push({ event, stored })
    else into.set(key, [{ event, stored }])
  }
}

function plainRow(event: SessionEvent): PlannedRow {
  return { seq: event.seq, type: event.type, event: JSON.stringify(event), replaces: false }
}

/** Splits a step's chunks into runs of consecutive seqs (another event between two chunks starts a new run). */
function runs(chunks: readonly Pending[]): Pending[][] {
  const out: Pending[][] = []
  for (const chunk of chunks) {
    const last = out[out.length - 1]
    if (last !== undefined && last[last.length - 1].event.seq + 1 === chunk.event.seq) last.push(chunk)
    else out.push([chunk])
  }
  return out
}

function fold(run: readonly Pending[], rows: PlannedRow[], drop: number[]): void {
  const [first] = run
  if (run.length === 1) {
    if (!first.stored) rows.push(plainRow(first.event))
    return
  }
  const folded: FoldedRun = {
    seq: first.event.seq,
    folded: 'assistant/chunk',
    turn: first.event.data.turn,
    step: first.event.data.step,
    chunks: run.map(({ event }) => [event.time, event.data.chunk] as const),
  }
  rows.push({ seq: first.event.seq, type: 'assistant/chunk', event: JSON.stringify(folded), replaces: first.stored })
  for (const chunk of run.slice(1)) if (chunk.stored) drop.push(chunk.event.seq)
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0

/**
 * The events of a stored value: one for a plain event, the run's chunks for a folded row (undefined when the
 * value is not a folded row). A folded row that does not describe a run at `seq` is refused by seq.
 */
export function expandFolded(sessionId: string, seq: number, value: object): unknown[] | undefined {
  if (!('folded' in value)) return undefined
  const run = value as Partial<FoldedRun>
  const bad = (detail: string) => new StoredLogError(sessionId, seq, `a folded chunk row ${detail}`)
  if (run.folded !== 'assistant/chunk') throw bad(`folds ${JSON.stringify(run.folded)}, not assistant/chunk`)
  if (run.seq !== seq) throw bad(`says seq ${JSON.stringify(run.seq)}`)
  if (!isCount(run.turn) || !isCount(run.step)) throw bad('lacks its turn and step numbers')
  if (!Array.isArray(run.chunks) || run.chunks.length < 2) throw bad('holds fewer than two chunks')
  const { turn, step } = run
  return run.chunks.map((entry: unknown, i) => {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== 'number') throw bad(`has a malformed chunk at position ${i}`)
    return { seq: seq + i, time: entry[0], type: 'assistant/chunk', data: { turn, step, chunk: entry[1] as unknown } }
  })
}

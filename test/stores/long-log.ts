// Long valid logs without driving every turn: one recorded cycle (a turn, then
// a compaction that folds the history into one summary) is repeated with its
// seqs, turn numbers and ids renumbered, and written through the store API.
import { createAgent, type SessionEvent } from '../../src/index.js'
import { memoryStore, type SessionStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse } from '../../src/testing/index.js'

export interface RecordedCycle {
  /** The log up to the repeated cycle. */
  readonly prefix: readonly SessionEvent[]
  /** One steady cycle: the send, the turn, the compaction that leaves one summary node. */
  readonly cycle: readonly SessionEvent[]
}

/** Records three cycles of an agent over a memory store and keeps the third as the template. */
export async function recordCycle(): Promise<RecordedCycle> {
  const store = memoryStore()
  const script = ['a', 'b', 'c'].map((text) => textResponse(text))
  const agent = await createAgent({
    model: scriptedModel(script),
    store,
    sessionId: 'template',
    logger: { error: () => {} },
    compaction: { contextWindow: 400, auto: false, keepRecent: 0, summarise: () => 'what was said so far' },
  })
  const starts: number[] = []
  for (const text of ['x', 'y', 'z']) {
    starts.push(agent.session.length)
    agent.followup(text)
    await agent.whenIdle()
    const done = await agent.compact()
    if (!done.compacted) throw new Error('the template cycle did not compact')
  }
  await agent.dispose()
  const events = agent.session.events
  return { prefix: events.slice(0, starts[2]), cycle: events.slice(starts[2]) }
}

const ID_KEYS = new Set(['id', 'messageId', 'compactionId'])

/** A copy of `value` with ids suffixed and turns moved on by `turns`. */
function renamed(value: unknown, suffix: string, turns: number): unknown {
  if (Array.isArray(value)) return value.map((v) => renamed(v, suffix, turns))
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) {
    if (ID_KEYS.has(key) && typeof v === 'string') out[key] = `${v}~${suffix}`
    else if (key === 'turn' && typeof v === 'number') out[key] = v + turns
    else out[key] = renamed(v, suffix, turns)
  }
  return out
}

/** The cycle's `k`-th repetition: every seq it names moved on by `k` cycles. */
export function repetition(recorded: RecordedCycle, k: number): SessionEvent[] {
  const { cycle } = recorded
  const delta = k * cycle.length
  return cycle.map((event) => {
    const out = { ...(event as unknown as Record<string, unknown>) }
    out.seq = event.seq + delta
    out.time = event.time + k
    out.data = renamed(event.data, String(k), k)
    if (event.type === 'compaction/completed') {
      const data = out.data as { start: number; end: number }
      out.data = { ...data, start: data.start + delta, end: data.end + delta }
    }
    if (event.sourceEventSeqs !== undefined) out.sourceEventSeqs = event.sourceEventSeqs.map((seq) => seq + delta)
    if (typeof event.surfaceOp === 'object') out.surfaceOp = { ...event.surfaceOp, start: event.surfaceOp.start + delta, end: event.surfaceOp.end + delta }
    return out as unknown as SessionEvent
  })
}

/** The events [0, n) of the long log: the prefix, then repetitions, cut at a cycle's end (n is rounded down to one). */
export function* longLog(recorded: RecordedCycle, n: number): Generator<SessionEvent[]> {
  yield [...recorded.prefix, ...recorded.cycle]
  const cycles = Math.max(0, Math.floor((n - recorded.prefix.length) / recorded.cycle.length) - 1)
  for (let k = 1; k <= cycles; k++) yield repetition(recorded, k)
}

/** Writes a long log of about `n` events under `sessionId` through the store API; returns its length. */
export async function seedLongSession(store: SessionStore, sessionId: string, recorded: RecordedCycle, n: number): Promise<number> {
  const handle = await store.open(sessionId)
  let batch: SessionEvent[] = []
  let length = 0
  for (const events of longLog(recorded, n)) {
    batch.push(...events)
    length += events.length
    if (batch.length >= 4096) {
      await handle.append(batch)
      batch = []
    }
  }
  if (batch.length > 0) await handle.append(batch)
  await handle.release()
  return length
}

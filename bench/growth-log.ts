// Long session logs for the growth measure, built without running every turn:
// one agent runs a few hundred turns live, the log's steady state (one period
// between two compactions, or one turn without compaction) is found by checking
// that the next periods are the same events shifted, and longer logs repeat it
// with seqs, turns, ids and prompt numbers shifted.
import type { ModelAdapter } from '../src/adapters/types.js'
import type { CompactionOptions, SessionEvent } from '../src/index.js'
import { lib, testing } from './peers/agentchart-lib.js'

/** With compaction the history the model sees stays bounded; without it every turn adds two messages to it. */
export interface GrowthShape {
  readonly compaction: boolean
}

/** The prompt of a turn: a fixed width, so every turn's tokens (and so the compaction period) are the same. */
export const promptText = (turn: number): string => `prompt ${String(turn).padStart(7, '0')}`
const PROMPT = /^prompt (\d{7})$/

/** Tokens per request of the compacting shape: about 170 turns between compactions, at most ~500 messages of history. */
export const GROWTH_CONTEXT_WINDOW = 4000

/** A zero-latency model that answers every request with the same text. */
export function growthModel(): ModelAdapter {
  const reply = testing.textResponse('hello there, this is a reply')
  return {
    provider: 'bench',
    model: 'growth',
    async *stream() {
      yield* reply
    },
  }
}

/** What every growth session's agent is made with (the same live, built and resumed). */
export function growthAgentOptions(shape: GrowthShape, model: ModelAdapter = growthModel()): { model: ModelAdapter; compaction: CompactionOptions | false } {
  const compaction: CompactionOptions | false = shape.compaction
    ? { contextWindow: GROWTH_CONTEXT_WINDOW, summarise: ({ messages }) => `the user sent ${messages.length} messages, each a numbered prompt` }
    : false
  return { model, compaction }
}

/** A live prefix and the period that repeats after it. */
export interface GrowthTemplate {
  readonly shape: GrowthShape
  readonly prefix: readonly SessionEvent[]
  readonly prefixTurns: number
  readonly period: readonly SessionEvent[]
  readonly periodTurns: number
}

const ID_KEYS = new Set(['id', 'messageId', 'compactionId', 'callId'])

/** A copy of `value` with turns, ids and prompt numbers moved on by `copy` periods. */
function shiftData(value: unknown, key: string, dt: number, copy: number): unknown {
  if (Array.isArray(value)) return value.map((v) => shiftData(v, key, dt, copy))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = shiftData(v, k, dt, copy)
    return out
  }
  if (key === 'turn' && typeof value === 'number') return value + dt
  if (ID_KEYS.has(key) && typeof value === 'string') return `${value}.${copy}`
  if (key === 'text' && typeof value === 'string') {
    const m = PROMPT.exec(value)
    if (m) return promptText(Number(m[1]) + dt)
  }
  return value
}

/** One event of the period as it is `copy` periods later. */
function shiftEvent(e: SessionEvent, t: { ds: number; dt: number; dtime: number; copy: number }): SessionEvent {
  const out: Record<string, unknown> = { seq: e.seq + t.ds, time: e.time + t.dtime, type: e.type }
  let data = shiftData(e.data, 'data', t.dt, t.copy) as Record<string, unknown>
  if (e.type === 'compaction/completed') data = { ...data, start: (data.start as number) + t.ds, end: (data.end as number) + t.ds }
  out.data = data
  const { surfaceOp, sourceEventSeqs, ignorable } = e as SessionEvent & { surfaceOp?: unknown; sourceEventSeqs?: readonly number[]; ignorable?: unknown }
  if (surfaceOp !== undefined) {
    out.surfaceOp =
      typeof surfaceOp === 'object' && surfaceOp !== null
        ? { ...surfaceOp, start: (surfaceOp as { start: number }).start + t.ds, end: (surfaceOp as { end: number }).end + t.ds }
        : surfaceOp
  }
  if (sourceEventSeqs !== undefined) out.sourceEventSeqs = sourceEventSeqs.map((s) => s + t.ds)
  if (ignorable !== undefined) out.ignorable = ignorable
  return out as unknown as SessionEvent
}

/** Ids replaced by their order of first appearance and times dropped: what two runs of the same turns share. */
export function normalised(events: readonly unknown[]): unknown[] {
  const ids = new Map<string, string>()
  const walk = (value: unknown, key: string): unknown => {
    if (Array.isArray(value)) return value.map((v) => walk(v, key))
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(value)) if (k !== 'time') out[k] = walk(v, k)
      return out
    }
    if (ID_KEYS.has(key) && typeof value === 'string') {
      if (!ids.has(value)) ids.set(value, `#${ids.size}`)
      return ids.get(value)
    }
    return value
  }
  return events.map((e) => walk(e, ''))
}

/** Index of each turn's first event (after the previous turn's end), by turn number. */
function turnStarts(events: readonly SessionEvent[]): Map<number, number> {
  const starts = new Map<number, number>()
  let next = 0
  for (const e of events) {
    if (e.type === 'turn/start') starts.set((e.data as { turn: number }).turn, next)
    if (e.type === 'turn/end') next = e.seq + 1
  }
  return starts
}

/** Runs turns 1…`turns` of the growth agent live and returns its log. */
export async function runLive(shape: GrowthShape, turns: number, model?: ModelAdapter): Promise<readonly SessionEvent[]> {
  const agent = lib.createAgent(growthAgentOptions(shape, model))
  for (let t = 1; t <= turns; t++) {
    agent.followup(lib.userMessage(promptText(t)))
    await agent.whenIdle()
  }
  const events = agent.session.events
  await agent.dispose()
  return events
}

/**
 * Records the growth agent live and finds its steady state: the first period whose next two periods are
 * exactly its events shifted. Throws when the recording has none (the builder would make logs the agent never writes).
 */
export async function recordTemplate(shape: GrowthShape): Promise<GrowthTemplate> {
  const live = await runLive(shape, shape.compaction ? 1200 : 8)
  const starts = turnStarts(live)
  const last = Math.max(...starts.keys())
  const compacting = new Set(live.filter((e) => e.type === 'compaction/completed').map((e) => turnOf(live, e.seq)))
  const candidates = [...starts.keys()].filter((t) => t >= 2 && t < last && (!shape.compaction || compacting.has(t)))
  for (let i = 0; i + 3 < candidates.length; i++) {
    const [a, b, c, d] = candidates.slice(i, i + 4)
    if (b - a !== c - b || c - b !== d - c) continue
    const period = live.slice(starts.get(a), starts.get(b))
    const template: GrowthTemplate = { shape, prefix: live.slice(0, starts.get(a)), prefixTurns: a - 1, period, periodTurns: b - a }
    const next = live.slice(starts.get(b), starts.get(d))
    const expected = buildLog(template, starts.get(d)!).slice(starts.get(b))
    if (JSON.stringify(normalised(next)) === JSON.stringify(normalised(expected))) return template
  }
  throw new Error(`the growth agent's log (${live.length} events, ${compacting.size} compactions) has no repeating period to build long logs from`)
}

/** The turn an event belongs to: the last turn/start at or before it. */
function turnOf(events: readonly SessionEvent[], seq: number): number {
  for (let i = seq; i >= 0; i--) if (events[i].type === 'turn/start') return (events[i].data as { turn: number }).turn
  return 0
}

/**
 * A log of about `length` events: the prefix, then the period repeated, ending at the first turn end at or
 * after `length` events. Fresh objects on every call.
 */
export function buildLog(template: GrowthTemplate, length: number): SessionEvent[] {
  const { prefix, period, periodTurns } = template
  const out: SessionEvent[] = prefix.map((e) => shiftEvent(e, { ds: 0, dt: 0, dtime: 0, copy: 0 }))
  const span = period[period.length - 1].time - period[0].time + 1
  for (let copy = 1; out.length < length; copy++) {
    const shift = { ds: (copy - 1) * period.length, dt: (copy - 1) * periodTurns, dtime: (copy - 1) * span, copy }
    for (const e of period) out.push(shiftEvent(e, shift))
  }
  let end = Math.min(length, out.length) - 1
  while (end < out.length - 1 && out[end].type !== 'turn/end') end++
  out.length = end + 1
  return out
}

/** The number of turns in a built (or live) log. */
export function turnsIn(events: readonly SessionEvent[]): number {
  for (let i = events.length - 1; i >= 0; i--) if (events[i].type === 'turn/end') return (events[i].data as { turn: number }).turn
  return 0
}

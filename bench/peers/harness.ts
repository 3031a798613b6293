// What one loop process measures: turn time at several C (fresh conversation
// per turn), and the heap one long conversation keeps per turn. Every batch
// checks its counters, so a loop that skipped work cannot report a number.
import { readFileSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { CPU_CLOCK, cpuUs, wallUs } from './clock.js'
import { CALLS_PER_TURN, counters, FIXED_TEXT, TOOL_RUNS_PER_TURN } from './workload.js'

/** One conversation of a loop: the unit a turn runs in. */
export interface Conversation {
  turn(text: string): Promise<void>
  /** Text chunks this conversation has streamed so far (seen by its consumer, or held by its log). */
  textChunks(): number
  close?(): Promise<void> | void
}

/** One library (or the floor) driven through the workload. */
export interface Loop {
  readonly name: string
  readonly label: string
  /** Package versions that matter for this loop. */
  readonly versions: Record<string, string>
  /** How the loop is set up, in a sentence, for the README. */
  readonly notes: string
  /** Set C for the turns that follow; fakes precompute their native chunks here. */
  setChunks(c: number): void
  /** A new conversation; its setup is timed apart from its turns. */
  conversation(): Conversation | Promise<Conversation>
}

export interface TimingOptions {
  chunks: readonly number[]
  reps: number
  /** CPU time one timed batch should take, ms; the batch size follows from it. */
  batchMs: number
  /** Turns per warm-up batch; warm-up batches repeat until `warmupMs` of CPU time has passed. */
  warmupTurns: number
  warmupMs: number
}

export interface TimingResult {
  /** What the µs are: see clock.ts. */
  clock: string
  /** C → median µs per turn over the repetitions. */
  turnUs: Record<string, number>
  /** C → every repetition's µs per turn, for the spread. */
  samples: Record<string, number[]>
  /** The same turns by wall clock. */
  wallTurnUs: Record<string, number>
  wallSamples: Record<string, number[]>
  batch: Record<string, number>
  /** µs to create one conversation: `setup.us` over `setup.conversations`. */
  setupUs: number
  setup: { us: number; conversations: number }
  fit: LineFit
  perChunkUs: number
  perStepUs: number
  /** Per step and per chunk by wall clock, for comparison on a quiet machine. */
  wall: { fit: LineFit; perChunkUs: number; perStepUs: number }
}

export interface HeapResult {
  turns: number
  chunks: number
  /** Slope of heapUsed (after full GCs) against turns. */
  keptBytesPerTurn: number
  /** (last sample − first sample) ÷ turns, for reference. */
  averageBytesPerTurn: number
  heapBefore: number
  heapAfter: number
  /** [turn, heapUsed] after full collections. */
  samples: [number, number][]
}

export interface LineFit {
  intercept: number
  slope: number
  r2: number
}

/** Least-squares line through the points: turn time against C. */
export function fitLine(points: readonly (readonly [number, number])[]): LineFit {
  if (points.length < 2) throw new RangeError('a line needs at least two points')
  const n = points.length
  const mx = points.reduce((s, [x]) => s + x, 0) / n
  const my = points.reduce((s, [, y]) => s + y, 0) / n
  let sxx = 0
  let sxy = 0
  let syy = 0
  for (const [x, y] of points) {
    sxx += (x - mx) ** 2
    sxy += (x - mx) * (y - my)
    syy += (y - my) ** 2
  }
  if (sxx === 0) throw new RangeError('the points need at least two distinct C')
  const slope = sxy / sxx
  const intercept = my - slope * mx
  return { intercept, slope, r2: syy === 0 ? 1 : (sxy * sxy) / (sxx * syy) }
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/**
 * Per chunk is the slope of turn time against C; per step is what the turn
 * costs without any text chunk (the intercept less the 8 fixed chunks), per
 * model call, its tool runs included.
 */
export function perStepAndChunk(fit: LineFit): { perChunkUs: number; perStepUs: number } {
  return { perChunkUs: fit.slope, perStepUs: (fit.intercept - 2 * FIXED_TEXT * fit.slope) / CALLS_PER_TURN }
}

/** A full collection: the --expose-gc global, or one obtained through V8's flags where the process was started without it. */
const gc: () => void =
  (globalThis as { gc?: () => void }).gc ??
  (() => {
    setFlagsFromString('--expose-gc')
    return runInNewContext('gc') as () => void
  })()

function collect(): void {
  gc()
  gc()
}

/** Throws unless the turns did exactly the workload's calls, tool runs and text chunks. */
function check(loop: Loop, turns: number, c: number, before: { modelCalls: number; toolRuns: number }, text: number): void {
  const calls = counters.modelCalls - before.modelCalls
  const runs = counters.toolRuns - before.toolRuns
  const want = { calls: CALLS_PER_TURN * turns, runs: TOOL_RUNS_PER_TURN * turns, text: (c + 2 * FIXED_TEXT) * turns }
  if (calls !== want.calls || runs !== want.runs || text !== want.text) {
    throw new Error(
      `${loop.name}: ${turns} turns at C=${c} made ${calls} model calls, ${runs} tool runs, ${text} text chunks; ` +
        `the workload needs ${want.calls}, ${want.runs}, ${want.text}`,
    )
  }
}

/** Run `turns` turns, each in a fresh conversation, after a full GC; µs per turn (main-thread CPU and wall) and µs per conversation setup. */
async function batch(loop: Loop, turns: number, c: number, fullGc = true): Promise<{ turnUs: number; wallUs: number; setupUs: number }> {
  const s0 = cpuUs()
  const conversations: Conversation[] = []
  for (let i = 0; i < turns; i++) conversations.push(await loop.conversation())
  const setupUs = (cpuUs() - s0) / turns
  if (fullGc) collect()
  const before = { ...counters }
  const w0 = wallUs()
  const c0 = cpuUs()
  for (let i = 0; i < turns; i++) await conversations[i].turn(`question ${i}`)
  const c1 = cpuUs()
  const w1 = wallUs()
  check(
    loop,
    turns,
    c,
    before,
    conversations.reduce((sum, conv) => sum + conv.textChunks(), 0),
  )
  for (const conv of conversations) await conv.close?.()
  return { turnUs: (c1 - c0) / turns, wallUs: (w1 - w0) / turns, setupUs }
}

/**
 * Turn time at each C: a warm-up (by time, so the JIT settles), then
 * repetitions interleaved across C so drift spreads over every point; the
 * median per C, then the line through them.
 */
export async function measureTiming(loop: Loop, options: TimingOptions): Promise<TimingResult> {
  const size: Record<string, number> = {}
  for (const [k, c] of options.chunks.entries()) {
    loop.setChunks(c)
    // the first C warms the JIT; the others only settle their batch size
    const until = cpuUs() + 1000 * (k === 0 ? options.warmupMs : options.warmupMs / 4)
    // warm-up batches skip the full GC, so the warm-up time goes to turns
    let last = await batch(loop, options.warmupTurns, c, false)
    while (cpuUs() < until) last = await batch(loop, options.warmupTurns, c, false)
    size[c] = Math.max(3, Math.min(2000, Math.round((options.batchMs * 1000) / last.turnUs)))
  }
  const samples: Record<string, number[]> = Object.fromEntries(options.chunks.map((c) => [c, []]))
  const wallSamples: Record<string, number[]> = Object.fromEntries(options.chunks.map((c) => [c, []]))
  // setup is short: summed over every batch, so the clock's tick-sized steps average out
  const setup = { us: 0, conversations: 0 }
  for (let r = 0; r < options.reps; r++) {
    for (const c of options.chunks) {
      loop.setChunks(c)
      const { turnUs, wallUs: wall, setupUs } = await batch(loop, size[c], c)
      samples[c].push(turnUs)
      wallSamples[c].push(wall)
      setup.us += setupUs * size[c]
      setup.conversations += size[c]
    }
  }
  return summariseTiming(options.chunks, samples, wallSamples, size, setup)
}

/** Medians per C, the line through them, and the wall-clock medians beside them. */
export function summariseTiming(
  chunks: readonly number[],
  samples: Record<string, number[]>,
  wallSamples: Record<string, number[]>,
  batchSize: Record<string, number>,
  setup: { us: number; conversations: number },
): TimingResult {
  const turnUs = Object.fromEntries(chunks.map((c) => [c, median(samples[c])]))
  const wallTurnUs = Object.fromEntries(chunks.map((c) => [c, median(wallSamples[c])]))
  const fit = fitLine(chunks.map((c) => [c, turnUs[c]] as const))
  const wallFit = fitLine(chunks.map((c) => [c, wallTurnUs[c]] as const))
  return {
    clock: CPU_CLOCK,
    turnUs,
    samples,
    wallTurnUs,
    wallSamples,
    batch: batchSize,
    setupUs: setup.us / setup.conversations,
    setup,
    fit,
    ...perStepAndChunk(fit),
    wall: { fit: wallFit, ...perStepAndChunk(wallFit) },
  }
}

/**
 * The heap one long-lived conversation keeps per turn: heapUsed after full
 * collections every `every` turns, and the least-squares slope through those
 * samples. A warm-up first, and a slope rather than end minus start, so
 * lazily built state and bounded caches that fill early are not counted as
 * per-turn cost.
 */
export async function measureHeap(loop: Loop, turns: number, c: number, options: { warmupTurns?: number; every?: number } = {}): Promise<HeapResult> {
  const every = options.every ?? 10
  loop.setChunks(c)
  const conv = await loop.conversation()
  for (let i = 0; i < (options.warmupTurns ?? 20); i++) await conv.turn(`warm-up ${i}`)
  const before = { ...counters }
  const textBefore = conv.textChunks()
  const samples: [number, number][] = []
  for (let i = 0; i <= turns; i++) {
    if (i % every === 0 || i === turns) {
      collect()
      samples.push([i, process.memoryUsage().heapUsed])
    }
    if (i < turns) await conv.turn(`question ${i}`)
  }
  check(loop, turns, c, before, conv.textChunks() - textBefore)
  // keep the conversation reachable until every sample is read
  await conv.close?.()
  const heapBefore = samples[0][1]
  const heapAfter = samples[samples.length - 1][1]
  return { turns, chunks: c, keptBytesPerTurn: fitLine(samples).slope, averageBytesPerTurn: (heapAfter - heapBefore) / turns, heapBefore, heapAfter, samples }
}

/** The version of a package installed in bench/peers (read from disk: not every package exports its package.json). */
export function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')) as { version: string }).version
}

// The side-by-side comparison: each loop in its own process (AsyncLocalStorage
// in two of the peers slows every other loop sharing a process), one after
// another, then the ratios against the targets of issue #13. bench/run.ts
// calls runPeers(); `node --import tsx bench/peers/run.ts` runs it alone.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Census } from './census.js'
import { median, summariseTiming, type HeapResult, type LineFit, type TimingResult } from './harness.js'
import type { LoopOutput } from './loop.js'
import type { ProfileSummary } from './profile.js'
import { CALLS_PER_TURN, FIXED_TEXT, TOOL_RUNS_PER_TURN } from './workload.js'
import { xstateFloorPerStep, type FloorResult } from './xstate-floor.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PEERS = ['ai-sdk', 'openai-agents', 'langgraph'] as const
const ALL = ['floor', 'agentchart', ...PEERS] as const
type Name = (typeof ALL)[number]

export interface PeerOptions {
  /** Fewer repetitions and turns: a look, not a result. */
  quick?: boolean
  /** Loops to run; all five by default. */
  loops?: readonly string[]
  log?: (line: string) => void
}

export interface LoopRow {
  label: string
  versions: Record<string, string>
  notes: string
  perStepUs: number
  perChunkUs: number
  keptBytesPerTurn: number
  /** µs per turn at each C, medians. */
  turnUs: Record<string, number>
  fit: LineFit
  /** µs to create one conversation (agentchart: createAgent), not in the turn times. */
  setupUs: number
  timing: TimingResult
  heap: HeapResult
}

export interface Ratio {
  label: string
  value: number | null
  target: string
  met: boolean | null
}

export interface PeerResults {
  workload: Record<string, unknown>
  method: Record<string, unknown>
  loops: Partial<Record<Name, LoopRow>>
  skipped: Partial<Record<Name, string>>
  ratios: Record<string, Ratio>
  agentchart: { census?: Census; profile?: ProfileSummary; xstateFloor?: FloorResult; reachable?: Record<string, number> }
}

/** Install bench/peers' own dependencies when they are missing (never part of the root install). */
export function ensurePeerDeps(log: (line: string) => void): string | null {
  const have = ['ai', '@openai/agents', '@langchain/langgraph'].every((p) => existsSync(`${ROOT}bench/peers/node_modules/${p}/package.json`))
  if (have) return null
  log('installing bench/peers dependencies (npm ci --prefix bench/peers) ...')
  const r = spawnSync('npm', ['ci', '--prefix', 'bench/peers', '--no-audit', '--no-fund'], { cwd: ROOT, stdio: 'inherit' })
  return r.status === 0 ? null : `npm ci --prefix bench/peers failed (exit ${r.status}); the peers are not measured`
}

/** Run one loop process and parse its one JSON line. */
function runProcess<T>(args: readonly string[], script = 'bench/peers/loop.ts'): T {
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', script, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  })
  if (r.status !== 0) throw new Error(`${script} ${args.slice(0, 2).join(' ')} exited with ${r.status}`)
  const line = r.stdout.trim().split('\n').pop() ?? ''
  return JSON.parse(line) as T
}

/** One result from several rounds' processes: every repetition pooled per C, then the medians and the line. */
function pool(rounds: readonly TimingResult[], chunks: readonly number[]): TimingResult {
  const samples = Object.fromEntries(chunks.map((c) => [c, rounds.flatMap((r) => r.samples[c])]))
  const wallSamples = Object.fromEntries(chunks.map((c) => [c, rounds.flatMap((r) => r.wallSamples[c])]))
  const batch = Object.fromEntries(chunks.map((c) => [c, median(rounds.map((r) => r.batch[c]))]))
  return summariseTiming(chunks, samples, wallSamples, batch, {
    us: rounds.reduce((sum, r) => sum + r.setup.us, 0),
    conversations: rounds.reduce((sum, r) => sum + r.setup.conversations, 0),
  })
}

function ratio(label: string, value: number | null, target: string, ok: (v: number) => boolean): Ratio {
  return { label, value, target, met: value === null ? null : ok(value) }
}

/** The five loops side by side, the agentchart census, profile and the XState floor. */
export function runPeers(options: PeerOptions = {}): PeerResults {
  const log = options.log ?? ((line: string) => console.log(line))
  const quick = options.quick ?? false
  const chunks = [16, 128, 512]
  // rounds interleave the loops' processes, so a slow minute on a shared machine lands on every loop, not on one
  const rounds = quick ? 1 : 3
  const timing = quick ? { chunks, reps: 3, batchMs: 60, warmupTurns: 3, warmupMs: 200 } : { chunks, reps: 4, batchMs: 150, warmupTurns: 5, warmupMs: 800 }
  // long enough that a peer's bounded caches have filled: over 100 turns OpenAI Agents JS kept 9.6 KB a turn, over 500 about 6.5 KB
  const heap = quick ? { turns: 40, chunks: 16, warmupTurns: 20, every: 10 } : { turns: 500, chunks: 16, warmupTurns: 50, every: 25 }
  const wanted = (options.loops ?? ALL).filter((n): n is Name => (ALL as readonly string[]).includes(n))
  const skipped: Partial<Record<Name, string>> = {}
  if (wanted.some((n) => (PEERS as readonly string[]).includes(n))) {
    const failure = ensurePeerDeps(log)
    if (failure) for (const n of PEERS) skipped[n] = failure
  }
  const runnable = wanted.filter((name) => !skipped[name])
  const timings = new Map<Name, TimingResult[]>()
  for (let round = 1; round <= rounds; round++) {
    for (const name of runnable) {
      log(`  ${name}: timing at C = ${chunks.join(', ')}${rounds > 1 ? ` (round ${round} of ${rounds})` : ''} ...`)
      const out = runProcess<LoopOutput>([name, 'timing', JSON.stringify(timing)])
      timings.set(name, [...(timings.get(name) ?? []), out.result as TimingResult])
    }
  }
  const loops: Partial<Record<Name, LoopRow>> = {}
  for (const name of runnable) {
    log(`  ${name}: kept heap over ${heap.turns} turns ...`)
    const h = runProcess<LoopOutput>([name, 'heap', JSON.stringify(heap)])
    const tr = pool(timings.get(name)!, chunks)
    const hr = h.result as HeapResult
    loops[name] = {
      label: h.label,
      versions: h.versions,
      notes: h.notes,
      perStepUs: tr.perStepUs,
      perChunkUs: tr.perChunkUs,
      keptBytesPerTurn: hr.keptBytesPerTurn,
      turnUs: tr.turnUs,
      fit: tr.fit,
      setupUs: tr.setupUs,
      timing: tr,
      heap: hr,
    }
  }

  const agentchart: PeerResults['agentchart'] = {}
  if (wanted.includes('agentchart')) {
    log('  agentchart: machine events per turn ...')
    agentchart.census = runProcess<LoopOutput>(['agentchart', 'census', JSON.stringify({ chunks: 16, turns: 20 })]).result as Census
    log('  agentchart: CPU profile of the turns ...')
    const out = `${ROOT}bench/profiles/agentchart.cpuprofile`
    agentchart.profile = runProcess<LoopOutput>(['agentchart', 'profile', JSON.stringify({ chunks: 16, turns: quick ? 100 : 600, out })])
      .result as ProfileSummary
    log('  XState alone: per-event cost on a machine of the same shape ...')
    agentchart.xstateFloor = runProcess<FloorResult>(quick ? ['5000', '3'] : ['10000', '9'], 'bench/peers/xstate-floor.ts')
    const { eventsPerTurn, microstepsPerTurn } = agentchart.census
    agentchart.reachable = {
      xstatePerStepUs: xstateFloorPerStep(agentchart.xstateFloor, eventsPerTurn, microstepsPerTurn, CALLS_PER_TURN),
      xstatePerStepOneMicrostepPerEventUs: xstateFloorPerStep(agentchart.xstateFloor, eventsPerTurn, eventsPerTurn, CALLS_PER_TURN),
    }
  }

  const a = loops.agentchart
  const div = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined ? null : x / y)
  const ratios: Record<string, Ratio> = {
    stepVsOpenAI: ratio('per step: OpenAI Agents JS ÷ agentchart', div(loops['openai-agents']?.perStepUs, a?.perStepUs), '≥ 5x', (v) => v >= 5),
    chunkVsFloor: ratio('per chunk: agentchart ÷ floor', div(a?.perChunkUs, loops.floor?.perChunkUs), '≤ 15x', (v) => v <= 15),
    chunkVsAiSdk: ratio('per chunk: Vercel AI SDK ÷ agentchart', div(loops['ai-sdk']?.perChunkUs, a?.perChunkUs), '≥ 10x', (v) => v >= 10),
    chunkVsLangGraph: ratio('per chunk: LangGraph ÷ agentchart', div(loops.langgraph?.perChunkUs, a?.perChunkUs), '≥ 10x', (v) => v >= 10),
    heapVsOpenAI: ratio(
      'kept heap per turn: agentchart ÷ OpenAI Agents JS',
      div(a?.keptBytesPerTurn, loops['openai-agents']?.keptBytesPerTurn),
      '≤ 1x',
      (v) => v <= 1,
    ),
  }
  return {
    workload: {
      perTurn: `${CALLS_PER_TURN} model calls, ${TOOL_RUNS_PER_TURN} tool runs, C + ${2 * FIXED_TEXT} text chunks`,
      calls: [
        `1: ${FIXED_TEXT} text chunks, then one tool call (lookup)`,
        `2: ${FIXED_TEXT} text chunks, then two tool calls (lookup, add)`,
        '3: C text chunks, then stop',
      ],
      chunks,
      heap,
    },
    method: {
      timing: { ...timing, rounds },
      perChunk: 'slope of the median turn time against C (least squares over the C values)',
      perStep: `(intercept − ${2 * FIXED_TEXT} × per chunk) ÷ ${CALLS_PER_TURN}: a model call with its tool runs and framing, without text chunks`,
      turns: 'each timed turn is the first turn of a fresh conversation, created before the timer starts',
      keptHeap: `slope of heapUsed (after full GCs, every ${heap.every} turns) over ${heap.turns} turns of one conversation at C = ${heap.chunks}, after ${heap.warmupTurns} warm-up turns`,
    },
    loops,
    skipped,
    ratios,
    agentchart,
  }
}

/** The side-by-side table, µs and KiB, as Markdown. */
export function markdownTable(results: PeerResults): string {
  const rows = ['| loop | per step | per chunk | kept heap per turn | turn at C=16 / 128 / 512 | conversation setup |', '|---|---:|---:|---:|---:|---:|']
  for (const name of ALL) {
    const row = results.loops[name]
    if (!row) {
      if (results.skipped[name]) rows.push(`| ${name} | — | — | — | not run: ${results.skipped[name]} | — |`)
      continue
    }
    const turns = Object.values(row.turnUs)
      .map((us) => fmt(us))
      .join(' / ')
    rows.push(
      `| ${row.label} | ${fmt(row.perStepUs)} µs | ${fmt(row.perChunkUs, 2)} µs | ${(row.keptBytesPerTurn / 1024).toFixed(1)} KiB | ${turns} µs | ${row.setupUs < 1 ? '< 1' : fmt(row.setupUs)} µs |`,
    )
  }
  return rows.join('\n')
}

export function ratioLines(results: PeerResults): string[] {
  return Object.values(results.ratios).map(
    (r) => `${r.label}: ${r.value === null ? 'n/a' : `${r.value.toFixed(2)}x`} (target ${r.target}${r.met === null ? '' : r.met ? ', met' : ', NOT met'})`,
  )
}

function fmt(x: number, digits?: number): string {
  const d = digits ?? (Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2)
  return x.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d })
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const results = runPeers({ quick: process.env.BENCH_QUICK === '1', loops: process.env.BENCH_LOOPS?.split(',') })
  console.log(`\n${markdownTable(results)}\n`)
  for (const line of ratioLines(results)) console.log(line)
}

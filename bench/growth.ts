// Long sessions (`npm run bench:growth`, and part of `npm run bench`): one
// session at 1k, 10k, 100k and 1M events, built from the growth agent's own
// steady state (bench/growth-log.ts), measured with no store, a memory store
// and SQLite: per-turn CPU time, kept heap, reopen time, and memory per idle
// stored session. Targets (issue #29): a turn at 1M at most 1.3x a turn at
// 1k; reopening 1M under 100 ms; an idle stored session under 64 KiB at any
// length. Reported, never asserted by the tests.
//   BENCH_QUICK=1                 shorter sessions (1k-30k) and fewer repetitions
//   BENCH_GROWTH_LENGTHS=a,b,...  the session lengths, in events (empty: only the idle sessions)
//   BENCH_GROWTH_SHAPE=compacted|plain  only that session shape (default both: compacted on every store,
//                                 never compacted with no store, where the history grows with the log)
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import type { Agent, SessionEvent } from '../src/index.js'
import type { SessionStore } from '../src/stores/index.js'
import type { GrowthShape, GrowthTemplate } from './growth-log.js'
import { writeBlock } from './readme-block.js'

const QUICK = process.env.BENCH_QUICK === '1'
const LENGTHS =
  process.env.BENCH_GROWTH_LENGTHS?.split(',').filter(Boolean).map(Number) ?? (QUICK ? [1_000, 3_000, 10_000, 30_000] : [1_000, 10_000, 100_000, 1_000_000])
const IDLE_LENGTHS = QUICK ? [1_000, 10_000] : [1_000, 100_000]
/** Turns per timed batch, unmeasured turns before it. */
const BATCH = 50
const WARM = 3
const repsAt = (length: number) => (QUICK ? 3 : length >= 1_000_000 ? 3 : 7)
/** A session seeded once per repetition while this many events in all would be written; above it, reopened. */
const FRESH_COPY_EVENTS = 2_000_000

export type GrowthStoreKind = 'none' | 'memory' | 'sqlite'

/** Which session a row measures: compacted (the history stays bounded) or never compacted (it grows with the log). */
export type GrowthShapeName = 'compacted' | 'plain'

export interface GrowthRow {
  readonly shape: GrowthShapeName
  readonly events: number
  readonly store: GrowthStoreKind
  /** Median over repetitions of a batch's main-thread CPU time per turn (bench/peers/clock.ts), µs. */
  readonly turnUs: number
  /** The same batches in process CPU time (process.cpuUsage: all threads, so GC helper threads too), µs. */
  readonly turnCpuUs: number
  /** Median heap kept by the open agent after its turns (after global.gc()), bytes. */
  readonly keptHeapBytes: number
  /** Median time to make the agent from the stored log: createAgent({ store, sessionId }), or createAgent({ session: createSession({ seed }) }) with no store. */
  readonly openWallMs: number
  readonly openCpuMs: number
  readonly reps: number
  /** Every repetition: [turn µs main thread, turn µs process CPU, kept heap bytes, open wall ms, open CPU ms]. */
  readonly samples: readonly (readonly number[])[]
}

export interface IdleRow {
  readonly events: number
  readonly sessions: number
  /** Heap delta per idle stored agent (SQLite), bytes. */
  readonly bytesPerSession: number
}

export interface GrowthResults {
  readonly generatedAt: string
  readonly quick: boolean
  readonly clock: string
  /** The compacted shape's steady state. */
  readonly compaction: { readonly contextWindow: number; readonly periodTurns: number; readonly periodEvents: number }
  readonly batchTurns: number
  readonly rows: readonly GrowthRow[]
  readonly idle: readonly IdleRow[]
  readonly load: string
}

const gc = (globalThis as { gc?: () => void }).gc
/** Heap in use after a timer tick (a disposed agent's last references go with it) and two full collections. */
const heap = async () => {
  await new Promise((resolve) => setTimeout(resolve, 20))
  gc?.()
  gc?.()
  return process.memoryUsage().heapUsed
}
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const cpuMicros = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** Runs the growth measure and returns its numbers (prints a table as it goes). */
export async function growthBench(): Promise<GrowthResults> {
  const { lib, stores } = await import('./peers/agentchart-lib.js')
  const { cpuUs, CPU_CLOCK } = await import('./peers/clock.js')
  const { recordTemplate, buildLog, turnsIn, growthAgentOptions, promptText, GROWTH_CONTEXT_WINDOW } = await import('./growth-log.js')
  if (!gc) console.log('growth: run with --expose-gc, or kept heap is not measured')
  const only = process.env.BENCH_GROWTH_SHAPE
  const shapes: { name: GrowthShapeName; shape: GrowthShape; kinds: readonly GrowthStoreKind[] }[] = [
    { name: 'compacted', shape: { compaction: true }, kinds: ['none', 'memory', 'sqlite'] },
    { name: 'plain', shape: { compaction: false }, kinds: ['none'] },
  ]
  const measured = shapes.filter((s) => only === undefined || only === s.name)
  const templates = new Map<GrowthShapeName, GrowthTemplate>()
  for (const { name, shape } of measured) templates.set(name, await recordTemplate(shape))
  const compacted = templates.get('compacted') ?? (await recordTemplate({ compaction: true }))
  console.log(
    `long sessions: one session at ${LENGTHS.map((n) => n.toLocaleString('en')).join(', ')} events; one-step text turns, ` +
      `compacted every ${compacted.periodTurns} turns (${compacted.period.length} events, context window ${GROWTH_CONTEXT_WINDOW} tokens) ` +
      `with every store, never compacted with no store; batches of ${BATCH} turns; load ${loadAverage()}`,
  )
  const dir = mkdtempSync(join(tmpdir(), 'agentchart-growth-'))
  const opened: SessionStore[] = []
  const sqlite = (name: string) => {
    const store = stores.sqliteStore({ path: join(dir, `${name}.db`) })
    opened.push(store)
    return store
  }
  /** Writes a built log into the store under `id` (a valid log, committed as the agent would). */
  const seed = async (store: SessionStore, id: string, events: readonly SessionEvent[]) => {
    const handle = await store.open(id)
    for (let i = 0; i < events.length; i += 10_000) await handle.append(events.slice(i, i + 10_000))
    await handle.release()
  }
  const turnsRun = new Map<string, number>()
  /** One batch of turns on an opened agent: main-thread and process CPU µs per turn. */
  const timedTurns = async (agent: Agent, key: string): Promise<[number, number]> => {
    let turn = turnsRun.get(key)!
    const run = async () => {
      agent.followup(lib.userMessage(promptText(++turn)))
      await agent.whenIdle()
    }
    for (let i = 0; i < WARM; i++) await run()
    const m0 = cpuUs()
    const c0 = cpuMicros()
    for (let i = 0; i < BATCH; i++) await run()
    const perTurn: [number, number] = [(cpuUs() - m0) / BATCH, (cpuMicros() - c0) / BATCH]
    turnsRun.set(key, turn)
    return perTurn
  }

  /**
   * Opens a seeded session once and runs one turn, unmeasured: a session that lived has what its agent stores at
   * its safe points (a store's checkpoint, say), which a log written straight into the store lacks.
   */
  const prime = async (shape: GrowthShape, store: SessionStore, id: string, key: string) => {
    const agent = await lib.createAgent({ ...growthAgentOptions(shape), store, sessionId: id })
    const turn = turnsRun.get(key)! + 1
    agent.followup(lib.userMessage(promptText(turn)))
    await agent.whenIdle()
    await agent.dispose()
    turnsRun.set(key, turn)
  }

  /**
   * One repetition: makes the agent from the log (timed), runs a batch of turns, weighs what it keeps, disposes
   * it. Its own function, so nothing of this agent stays reachable from the caller's frame into the next one.
   */
  const measureOpen = async (shape: GrowthShape, template: GrowthTemplate, store: SessionStore | undefined, id: string, key: string, length: number) => {
    const before = await heap()
    let agent: Agent
    let w0: number
    let c0: number
    if (store === undefined) {
      // without a store, resuming is replaying the log as a seed
      const seed = buildLog(template, length)
      w0 = performance.now()
      c0 = cpuMicros()
      agent = lib.createAgent({ ...growthAgentOptions(shape), session: lib.createSession({ seed }) })
    } else {
      w0 = performance.now()
      c0 = cpuMicros()
      agent = await lib.createAgent({ ...growthAgentOptions(shape), store, sessionId: id })
    }
    const wall = performance.now() - w0
    const cpu = (cpuMicros() - c0) / 1000
    const [mainUs, processUs] = await timedTurns(agent, key)
    const kept = (await heap()) - before
    await agent.dispose()
    return [mainUs, processUs, kept, wall, cpu]
  }

  const rows: GrowthRow[] = []
  const idle: IdleRow[] = []
  console.log(`\n${TABLE_HEAD}`)
  try {
    for (const { name, shape, kinds } of measured) {
      const template = templates.get(name)!
      for (const length of LENGTHS) {
        const reps = repsAt(length)
        const fresh = length * reps <= FRESH_COPY_EVENTS
        const memory = stores.memoryStore()
        const builtTurns = turnsIn(buildLog(template, length))
        for (const kind of kinds) {
          const store = kind === 'none' ? undefined : kind === 'memory' ? memory : sqlite(`growth-${name}-${length}`)
          const samples: number[][] = []
          for (let rep = 0; rep < reps; rep++) {
            const id = fresh ? `s-${rep}` : 's-0'
            const key = `${name}-${kind}-${length}-${id}`
            if (!turnsRun.has(key)) {
              turnsRun.set(key, builtTurns)
              if (store !== undefined) {
                await seed(store, id, buildLog(template, length))
                await prime(shape, store, id, key)
              }
            }
            samples.push(await measureOpen(shape, template, store, id, key, length))
          }
          const at = (i: number) => median(samples.map((s) => s[i]))
          const row: GrowthRow = {
            shape: name,
            events: length,
            store: kind,
            turnUs: at(0),
            turnCpuUs: at(1),
            keptHeapBytes: at(2),
            openWallMs: at(3),
            openCpuMs: at(4),
            reps,
            samples,
          }
          rows.push(row)
          console.log(rowLine(row))
        }
        await memory.close()
      }
    }

    // memory per idle stored session: many agents opened on SQLite and left idle
    for (const length of IDLE_LENGTHS) {
      const count = length <= 10_000 ? 50 : 8
      const store = sqlite(`idle-${length}`)
      const events = buildLog(compacted, length)
      for (let i = 0; i < count; i++) {
        await seed(store, `idle-${i}`, events)
        turnsRun.set(`idle-${length}-${i}`, turnsIn(events))
        await prime({ compaction: true }, store, `idle-${i}`, `idle-${length}-${i}`)
      }
      // one round opened and disposed unmeasured first (what the cold opens above left behind goes), then the median
      // of three rounds, each against a baseline taken well after the previous round's agents were disposed
      const rounds: number[] = []
      for (let round = 0; round < 4; round++) {
        await new Promise((resolve) => setTimeout(resolve, 250))
        const before = await heap()
        const agents: Agent[] = []
        for (let i = 0; i < count; i++) agents.push(await lib.createAgent({ ...growthAgentOptions({ compaction: true }), store, sessionId: `idle-${i}` }))
        if (round > 0) rounds.push(((await heap()) - before) / count)
        for (const agent of agents) await agent.dispose()
        // emptied, not just left: the async frame can keep the last round's array reachable into the next baseline
        agents.length = 0
      }
      const bytes = median(rounds)
      idle.push({ events: length, sessions: count, bytesPerSession: bytes })
    }
  } finally {
    for (const store of opened) await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
  console.log(`\n${IDLE_HEAD}`)
  for (const row of idle) console.log(idleLine(row))
  return {
    generatedAt: new Date().toISOString(),
    quick: QUICK,
    clock: CPU_CLOCK,
    compaction: { contextWindow: GROWTH_CONTEXT_WINDOW, periodTurns: compacted.periodTurns, periodEvents: compacted.period.length },
    batchTurns: BATCH,
    rows,
    idle,
    load: loadAverage(),
  }
}

function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  } catch {
    return 'unknown'
  }
}

const TABLE_HEAD = [
  '| session | events | store | turn µs (main thread) | turn µs (process CPU) | kept heap MiB | bytes/event | open ms (wall) | open ms (CPU) |',
  '|---|---:|---|---:|---:|---:|---:|---:|---:|',
].join('\n')
const IDLE_HEAD = ['| events | idle stored sessions (SQLite) | KiB per session |', '|---:|---:|---:|'].join('\n')

function rowLine(r: GrowthRow): string {
  return (
    `| ${r.shape} | ${r.events.toLocaleString('en')} | ${r.store} | ${r.turnUs.toFixed(0)} | ${r.turnCpuUs.toFixed(0)} | ` +
    `${(r.keptHeapBytes / 2 ** 20).toFixed(1)} | ${(r.keptHeapBytes / r.events).toFixed(0)} | ${r.openWallMs.toFixed(1)} | ${r.openCpuMs.toFixed(1)} |`
  )
}

const idleLine = (r: IdleRow) => `| ${r.events.toLocaleString('en')} | ${r.sessions} | ${(r.bytesPerSession / 1024).toFixed(1)} |`

/** The `growth` block of bench/README.md. */
export function growthSection(g: GrowthResults): string {
  const verdict = (ok: boolean) => (g.quick ? 'not judged: BENCH_QUICK' : ok ? 'met' : 'NOT met')
  const targets: string[] = []
  for (const shape of ['compacted', 'plain'] as const) {
    for (const store of ['none', 'memory', 'sqlite'] as const) {
      const of = g.rows.filter((r) => r.shape === shape && r.store === store)
      if (of.length < 2) continue
      const [first, last] = [of[0], of[of.length - 1]]
      const ratio = last.turnUs / first.turnUs
      targets.push(
        `- ${shape} session, ${store === 'none' ? 'no store' : store}: a turn at ${last.events.toLocaleString('en')} events ÷ at ${first.events.toLocaleString('en')}: ` +
          `${ratio.toFixed(2)}x main thread, ${(last.turnCpuUs / first.turnCpuUs).toFixed(2)}x process CPU (target ≤ 1.3x, ${verdict(ratio <= 1.3)})`,
      )
    }
  }
  const open = g.rows.filter((r) => r.shape === 'compacted' && r.store === 'sqlite').at(-1)
  if (open)
    targets.push(
      `- reopening ${open.events.toLocaleString('en')} events on SQLite: ${open.openWallMs.toFixed(0)} ms (target < 100 ms at 1,000,000, ${verdict(open.openWallMs < 100)})`,
    )
  if (g.idle.length > 0) {
    const worst = Math.max(...g.idle.map((r) => r.bytesPerSession))
    targets.push(`- memory per idle stored session: at most ${(worst / 1024).toFixed(1)} KiB (target < 64 KiB at any length, ${verdict(worst < 64 * 1024)})`)
  }
  return [
    `Run of ${g.generatedAt.slice(0, 16).replace('T', ' ')} UTC${g.quick ? ' (BENCH_QUICK: a look, not a result)' : ''}, load average ${g.load} at the end. ` +
      `One session of one-step text turns, *compacted* every ${g.compaction.periodTurns} turns (${g.compaction.periodEvents} events; ` +
      `context window ${g.compaction.contextWindow} tokens) or *plain* (never compacted). Turn: CPU time per turn over a batch of ${g.batchTurns}, ` +
      'median of the repetitions, on the main thread and for the whole process (GC helper threads included); kept heap: what the open ' +
      'agent holds after its turns (after `global.gc()`); open: making the agent from the log.',
    '',
    TABLE_HEAD,
    ...g.rows.map(rowLine),
    '',
    IDLE_HEAD,
    ...g.idle.map(idleLine),
    '',
    'Against the targets of issue #29:',
    '',
    ...targets,
  ].join('\n')
}

// alone: build (unless BENCH_SOURCE=src), measure, and update bench/results.json's `longSessions` and the README block
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.env.BENCH_SOURCE !== 'src') {
    console.log('building the package (npm run build) ...')
    if (spawnSync('npm', ['run', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] }).status !== 0) throw new Error('npm run build failed')
    process.env.BENCH_SOURCE = 'dist'
  }
  const results = await growthBench()
  const file = new URL('./results.json', import.meta.url)
  const stored = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
  writeFileSync(file, `${JSON.stringify({ ...stored, longSessions: results }, null, 2)}\n`)
  writeBlock('growth', growthSection(results))
  console.log('\nwrote longSessions in bench/results.json and the growth block of bench/README.md')
}

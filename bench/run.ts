// `npm run bench`: the loop's own cost in this process (growth over 10,000
// turns of one agent, chunk cost, idle memory, append throughput), then the
// side-by-side comparison with the peers, each loop in its own process
// (bench/peers/). Writes bench/results.json and the results section of
// bench/README.md. Nothing here is asserted by the tests.
//   BENCH_TURNS (10000)  turns of the growth run
//   BENCH_PEERS=0        skip the peer comparison
//   BENCH_GROWTH=0       skip the long-session measure (bench/growth.ts, 1k-1M events)
//   BENCH_QUICK=1        fewer repetitions: a look, not a result
//   BENCH_LOOPS=a,b      only these loops of the comparison
//   BENCH_SOURCE=src     measure the sources through tsx instead of building
//                        and measuring the package (dist/), as users run it
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import type { ModelAdapter } from '../src/adapters/types.js'
import type { StreamChunk } from '../src/index.js'
import { CPU_CLOCK, cpuUs } from './peers/clock.js'
import { median } from './peers/harness.js'
import { markdownTable, ratioLines, runPeers, type PeerResults, type Ratio } from './peers/run.js'
import { growthBench, growthSection, type GrowthResults } from './growth.js'
import { writeBlock } from './readme-block.js'
import { storeBench } from './stores.js'

// Build first, so the numbers are the package's; the loop processes inherit BENCH_SOURCE.
if (process.env.BENCH_SOURCE !== 'src' && !process.argv.includes('--readme')) {
  console.log('building the package (npm run build) ...')
  if (spawnSync('npm', ['run', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] }).status !== 0) throw new Error('npm run build failed')
  process.env.BENCH_SOURCE = 'dist'
}
const { lib, assemble, testing, SOURCE } = await import('./peers/agentchart-lib.js')
const { createAgent, createSession, userMessage } = lib
const { StreamAssembler } = assemble
const { textResponse } = testing

const TURNS = Number(process.env.BENCH_TURNS ?? 10_000)
const WINDOW = Math.max(1, Math.floor(TURNS / 10))
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 2_000)
const QUICK = process.env.BENCH_QUICK === '1'
const RESULTS = new URL('./results.json', import.meta.url)

/** A model that answers every request with the same chunks, without timers. */
function constantModel(chunks: readonly StreamChunk[]): ModelAdapter {
  return {
    provider: 'bench',
    model: 'constant',
    async *stream() {
      yield* chunks
    },
  }
}

function manyChunks(n: number): StreamChunk[] {
  const out: StreamChunk[] = [{ type: 'block-start', index: 0, blockType: 'text' }]
  for (let i = 0; i < n; i++) out.push({ type: 'text-delta', index: 0, text: 'x' })
  out.push({ type: 'finish', reason: { kind: 'stop' } })
  return out
}

/** The smallest loop that writes the same log shape: the baseline we compare against. */
async function minimalTurn(session: ReturnType<typeof createSession>, model: ModelAdapter, turn: number, text: string) {
  const m = userMessage(text)
  session.append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [m] })
  session.append('turn/start', { turn })
  session.append('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] })
  session.append('step/start', { turn, step: 1 })
  session.append('user/message', m, { surfaceOp: 'append' })
  if (turn === 1) {
    session.append('request/header', { header: { config: { provider: 'bench', model: 'constant' } }, reason: 'initial' })
    session.append('request/context', { provider: 'bench', model: 'constant' })
  }
  const seqs: number[] = []
  const assembler = new StreamAssembler()
  const controller = new AbortController()
  for await (const chunk of model.stream({
    sessionId: session.id,
    config: { provider: 'bench', model: 'constant' },
    messages: session.deriveMessages(),
    signal: controller.signal,
  })) {
    seqs.push(session.append('assistant/chunk', { turn, step: 1, chunk }).seq)
    assembler.push(chunk)
  }
  const result = assembler.result()
  session.append(
    'assistant/message',
    { turn, step: 1, message: { id: `m${turn}`, role: 'assistant', content: result.content, source: { kind: 'model', provider: 'bench', model: 'constant' } } },
    { surfaceOp: 'append', sourceEventSeqs: seqs },
  )
  session.append('step/end', { turn, step: 1 })
  session.append('turn/end', { turn, reason: { kind: 'completed' } })
}

/**
 * One agent (or minimal session) over TURNS turns, the main thread's CPU
 * time read only at a few turns so the reading costs nothing per turn:
 * windows of WINDOW turns, the 101 turns around turn 100 and the last 101.
 */
async function turns(label: string, runTurn: (turn: number) => Promise<void>) {
  const early = Math.max(0, Math.min(49, TURNS - 101))
  const late = Math.max(0, TURNS - 101)
  const marks = new Set([early, Math.min(TURNS, early + 101), late, TURNS])
  for (let w = WINDOW; w <= TURNS; w += WINDOW) marks.add(w)
  const clock = new Map<number, number>([[0, cpuUs()]])
  for (let turn = 1; turn <= TURNS; turn++) {
    await runTurn(turn)
    if (marks.has(turn)) clock.set(turn, cpuUs())
  }
  /** Mean µs per turn over turns from+1 … to. */
  const mean = (from: number, to: number) => (clock.get(to)! - clock.get(from)!) / (to - from)
  const windows: number[] = []
  for (let w = WINDOW; w <= TURNS; w += WINDOW) windows.push(mean(w - WINDOW, w))
  const first = windows[0]
  const last = windows[windows.length - 1]
  console.log(`${label.padEnd(22)} µs/turn by window: ${windows.map((w) => w.toFixed(1)).join(' ')}  (last/first ${(last / first).toFixed(2)})`)
  return { windows, at100: mean(early, Math.min(TURNS, early + 101)), atEnd: mean(late, TURNS) }
}

async function inProcess() {
  console.log(`agentchart bench — node ${process.version}, ${TURNS} one-step turns of one agent, windows of ${WINDOW}\n`)
  const reply = textResponse('hello there, this is a reply')

  // 1. per-turn cost as one agent's history grows: flat, not growing with history.
  // A throwaway agent warms the JIT first, so turn 100 is not measured cold.
  const warm = createAgent({ model: constantModel(reply) })
  for (let t = 1; t <= Math.min(1000, TURNS); t++) {
    warm.followup(userMessage(`warm-up ${t}`))
    await warm.whenIdle()
  }
  const baseModel = constantModel(reply)
  const warmSession = createSession()
  for (let t = 1; t <= Math.min(1000, TURNS); t++) await minimalTurn(warmSession, baseModel, t, `warm-up ${t}`)
  const baseSession = createSession()
  const base = await turns('minimal loop', (t) => minimalTurn(baseSession, baseModel, t, `prompt ${t}`))
  const agent = createAgent({ model: constantModel(reply) })
  const ours = await turns('agentchart', async (t) => {
    agent.followup(userMessage(`prompt ${t}`))
    await agent.whenIdle()
  })
  const history = agent.session.deriveMessages().length
  const { at100, atEnd } = ours
  console.log(`per-turn overhead ratio (agentchart / minimal, medians of windows): ${(median(ours.windows) / median(base.windows)).toFixed(2)}x`)
  console.log(`turn ${TURNS} ÷ turn 100 (means of 101 turns): ${(atEnd / at100).toFixed(2)}x with ${history} messages of history`)
  console.log(`session length after the run: ${agent.session.length} events\n`)

  // 2. per-chunk cost: one long stream, same chunks through both
  const chunkModel = constantModel(manyChunks(CHUNKS))
  const chunkSession = createSession()
  let t0 = cpuUs()
  for (let i = 1; i <= 20; i++) await minimalTurn(chunkSession, chunkModel, i, 'go')
  const minimalPerChunk = (cpuUs() - t0) / (20 * CHUNKS)
  const chunkAgent = createAgent({ model: chunkModel })
  t0 = cpuUs()
  for (let i = 1; i <= 20; i++) {
    chunkAgent.followup(userMessage('go'))
    await chunkAgent.whenIdle()
  }
  const oursPerChunk = (cpuUs() - t0) / (20 * CHUNKS)
  console.log(
    `per-chunk (one ${CHUNKS}-chunk stream): minimal ${minimalPerChunk.toFixed(2)} µs, agentchart ${oursPerChunk.toFixed(2)} µs (${(oursPerChunk / minimalPerChunk).toFixed(2)}x)\n`,
  )

  // 3. memory per idle agent
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage().heapUsed
  const idle = Array.from({ length: 1000 }, () => createAgent({ model: baseModel }))
  gc?.()
  const after = process.memoryUsage().heapUsed
  const idleKiB = (after - before) / idle.length / 1024
  console.log(`memory per idle agent: ${idleKiB.toFixed(1)} KiB${gc ? '' : ' (run with --expose-gc for a steadier number)'}\n`)

  // 4. session append throughput (the in-memory store)
  const s = createSession()
  const n = 200_000
  t0 = cpuUs()
  for (let i = 0; i < n; i++) s.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x' } })
  const perSecond = n / ((cpuUs() - t0) / 1e6)
  console.log(`session append throughput (chunks): ${Math.round(perSecond).toLocaleString('en')} events/s\n`)

  const growth: Ratio = {
    label: `per turn at turn ${TURNS} ÷ at turn 100 (one agent, ${history} messages of history at the end; means of 101 turns)`,
    value: atEnd / at100,
    target: '≤ 1.3x',
    met: TURNS >= 10_000 ? atEnd / at100 <= 1.3 : null,
  }
  return {
    growth: {
      turns: TURNS,
      historyMessages: history,
      turnUsAt100: at100,
      turnUsAtEnd: atEnd,
      windowUs: { minimal: base.windows, agentchart: ours.windows },
      clock: CPU_CLOCK,
      ratio: growth,
    },
    chunkStream: { chunks: CHUNKS, minimalUs: minimalPerChunk, agentchartUs: oursPerChunk },
    idleAgentKiB: idleKiB,
    appendsPerSecond: perSecond,
  }
}

function machine() {
  const cpu = cpus()
  return { cpu: cpu[0]?.model ?? 'unknown', cores: cpu.length, memoryGiB: Math.round(totalmem() / 2 ** 30), platform: `${process.platform} ${process.arch}` }
}

type InProcess = Awaited<ReturnType<typeof inProcess>>

interface Results {
  generatedAt: string
  machine: ReturnType<typeof machine>
  node: string
  quick: boolean
  /** What was measured: the built package (`dist`) or the sources through tsx (`src`). */
  source?: 'dist' | 'src'
  inProcess: InProcess
  /** One session at 1k-1M events (bench/growth.ts); absent in runs before it existed. */
  longSessions?: GrowthResults | null
  peers: PeerResults | null
}

/** The table, the ratios and the in-process numbers: the `results` block of bench/README.md. */
function resultsSection(results: Results): string {
  const { machine: m, inProcess: local, peers } = results
  const lines = [
    `Run of ${results.generatedAt.slice(0, 10)} on ${m.cpu} (${m.cores} cores, ${m.memoryGiB} GiB), ${m.platform}, Node ${results.node}` +
      `${results.quick ? ' (BENCH_QUICK: a look, not a result)' : ''}; agentchart ${results.source === 'src' ? 'from its sources through tsx (BENCH_SOURCE=src)' : 'as the built package (dist/)'}.`,
    '',
  ]
  if (peers) {
    const versions = Object.values(peers.loops).flatMap((row) => Object.entries(row.versions).map(([k, v]) => `${k} ${v}`))
    lines.push(`Packages: ${versions.join(', ')}.`, '', markdownTable(peers), '', 'Ratios against the targets of issue #13:', '')
    for (const line of ratioLines(peers)) lines.push(`- ${line}`)
  }
  const g = local.growth.ratio
  lines.push(
    `- ${g.label}: ${g.value?.toFixed(2)}x (target ${g.target}${g.met === null ? ', not judged: fewer than 10,000 turns' : g.met ? ', met' : ', NOT met'})`,
    '',
    `In this process: idle agent ${local.idleAgentKiB.toFixed(1)} KiB; ${Math.round(local.appendsPerSecond).toLocaleString('en')} chunk appends/s;`,
    `one ${local.chunkStream.chunks}-chunk stream ${local.chunkStream.agentchartUs.toFixed(2)} µs per chunk (minimal ${local.chunkStream.minimalUs.toFixed(2)} µs);`,
    `growth run ${local.growth.turnUsAt100.toFixed(0)} µs per one-step turn at turn 100, ${local.growth.turnUsAtEnd.toFixed(0)} µs at turn ${local.growth.turns}; ` +
      `µs per turn by window of ${local.growth.turns / 10} turns: ${local.growth.windowUs.agentchart.map((w) => w.toFixed(0)).join(', ')} ` +
      `(minimal loop: ${local.growth.windowUs.minimal.map((w) => w.toFixed(0)).join(', ')}).`,
  )
  return lines.join('\n')
}

/** The census, the profile and the XState floor: the `profile` block of bench/README.md. */
function profileSection(results: Results): string | null {
  const a = results.peers?.agentchart
  if (!a?.census || !a.profile || !a.xstateFloor || !a.reachable) return null
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`
  return [
    `From the run of ${results.generatedAt.slice(0, 10)}. One turn of the workload is ${a.census.eventsPerTurn} machine events and ` +
      `${a.census.microstepsPerTurn} microsteps (${a.census.actionsPerTurn} actions) in ${a.census.actors} actor: ` +
      `${Object.entries(a.census.eventTypes)
        .map(([k, v]) => `${v} \`${k}\``)
        .join(', ')}.`,
    '',
    `Self time over ${a.profile.turns} turns at C = ${a.profile.chunks} (V8's sampling profiler, the one behind \`--cpu-prof\`, ` +
      `started and stopped around the turns only; ${a.profile.totalMs.toFixed(0)} ms sampled):`,
    '',
    '| where | self time |',
    '|---|---:|',
    ...Object.entries(a.profile.categories).map(([k, v]) => `| ${k} | ${pct(v)} |`),
    '',
    `Time with an XState frame on the stack (callees included, so our actions and the runtime's effect handlers too): ` +
      `${pct(a.profile.inclusive.XState)}; with a zod frame: ${pct(a.profile.inclusive.zod)}.`,
    '',
    '| function | where | category | self |',
    '|---|---|---|---:|',
    ...a.profile.top.slice(0, 15).map((t) => `| \`${t.function}\` | ${t.where.replace(/\.ts:1$/, '.ts')} | ${t.category} | ${pct(t.share)} |`),
    '',
    "**XState alone, on a machine of the same shape.** The agent machine's tree " +
      `(${a.xstateFloor.shape.states} states, depth ${a.xstateFloor.shape.depth}, ${a.xstateFloor.shape.parallel} parallel, ` +
      `${a.xstateFloor.shape.always} eventless transitions whose guards never pass) mirrored node for node and parked in its deepest ` +
      `configuration, \`${a.xstateFloor.parkedAt}\` (${a.xstateFloor.shape.active} active nodes), one emit per event ` +
      `(\`bench/peers/xstate-floor.ts\`):`,
    '',
    '| per event | µs |',
    '|---|---:|',
    ...Object.entries(a.xstateFloor.perEventUs).map(([k, us]) => `| ${k} | ${us.toFixed(2)} |`),
    '',
    `So XState costs about ${a.xstateFloor.eventUs.toFixed(1)} µs for an event that takes one microstep in a machine of this shape, ` +
      `and ${a.xstateFloor.perMicrostepUs.toFixed(1)} µs for each further microstep` +
      (a.xstateFloor.perAssignUs === undefined
        ? ''
        : ` (of an event's cost, each context assignment is ${a.xstateFloor.perAssignUs.toFixed(1)} µs: XState clones the snapshot and recomputes its state value for every one)`) +
      `. At today's ${a.census.eventsPerTurn} events and ` +
      `${a.census.microstepsPerTurn} microsteps per turn that is **${a.reachable.xstatePerStepUs.toFixed(0)} µs per step of XState alone** ` +
      `(${a.reachable.xstatePerStepOneMicrostepPerEventUs.toFixed(0)} µs if every event took a single microstep).`,
  ].join('\n')
}

function writeReadme(results: Results): void {
  writeBlock('results', resultsSection(results))
  writeBlock('profile', profileSection(results))
  if (results.longSessions) writeBlock('growth', growthSection(results.longSessions))
}

async function main() {
  // --readme: render bench/README.md again from the stored bench/results.json
  if (process.argv.includes('--readme')) {
    writeReadme(JSON.parse(readFileSync(RESULTS, 'utf8')) as Results)
    console.log('rendered bench/README.md from bench/results.json')
    return
  }
  const local = await inProcess()
  const longSessions = process.env.BENCH_GROWTH === '0' ? null : await growthBench()
  let peers: PeerResults | null = null
  if (process.env.BENCH_PEERS !== '0') {
    console.log('side by side with the peers, each loop in its own process:')
    peers = runPeers({ quick: QUICK, loops: process.env.BENCH_LOOPS?.split(',') })
    console.log(`\n${markdownTable(peers)}\n`)
    for (const line of ratioLines(peers)) console.log(line)
  }
  console.log(`${local.growth.ratio.label}: ${local.growth.ratio.value?.toFixed(2)}x (target ${local.growth.ratio.target})`)
  const results: Results = {
    generatedAt: new Date().toISOString(),
    machine: machine(),
    node: process.version,
    quick: QUICK,
    source: SOURCE,
    inProcess: local,
    longSessions,
    peers,
  }
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`)
  writeReadme(results)
  console.log('\nwrote bench/results.json and the generated blocks of bench/README.md')
  // the durable stores (issue #9): batched append rates and the cost a store adds to a streamed step
  if (process.env.BENCH_STORES !== '0') {
    console.log('')
    await storeBench()
  }
}

await main()

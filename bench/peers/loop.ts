// One loop, one process: `node --expose-gc --import tsx bench/peers/loop.ts
// <loop> <timing|heap|profile|census|replay> [json options]` prints one JSON line.
// The orchestrator (run.ts) starts one of these per loop and measure.
import { measureHeap, measureTiming, type Loop, type TimingOptions } from './harness.js'

export const LOOPS = ['floor', 'agentchart', 'ai-sdk', 'openai-agents', 'langgraph'] as const
export type LoopName = (typeof LOOPS)[number]

export interface LoopOutput {
  loop: string
  label: string
  versions: Record<string, string>
  notes: string
  node: string
  mode: string
  result: unknown
}

async function load(name: string): Promise<Loop> {
  if (!(LOOPS as readonly string[]).includes(name)) throw new Error(`unknown loop ${name}; one of ${LOOPS.join(', ')}`)
  const mod = (await import(`./loops/${name}.js`)) as { default: () => Loop }
  return mod.default()
}

async function main(): Promise<void> {
  const [name, mode, json] = process.argv.slice(2)
  const options = (json ? JSON.parse(json) : {}) as Record<string, unknown>
  const loop = await load(name)
  let result: unknown
  if (mode === 'timing') {
    result = await measureTiming(loop, options as unknown as TimingOptions)
  } else if (mode === 'heap') {
    result = await measureHeap(loop, Number(options.turns), Number(options.chunks), {
      warmupTurns: options.warmupTurns === undefined ? undefined : Number(options.warmupTurns),
      every: options.every === undefined ? undefined : Number(options.every),
    })
  } else if (mode === 'profile') {
    const { profile } = await import('./profile.js')
    result = await profile(loop, options)
  } else if (mode === 'census') {
    if (name !== 'agentchart') throw new Error('census counts agentchart machine events')
    const { census } = await import('./census.js')
    result = await census(options)
  } else if (mode === 'replay') {
    if (name !== 'agentchart') throw new Error('replay times agentchart machine alone')
    const { replayMachine } = await import('./replay.js')
    result = await replayMachine(options)
  } else {
    throw new Error(`unknown mode ${mode}; timing, heap, profile, census or replay`)
  }
  const out: LoopOutput = { loop: loop.name, label: loop.label, versions: loop.versions, notes: loop.notes, node: process.version, mode, result }
  process.stdout.write(`${JSON.stringify(out)}\n`)
}

await main()

// `npm run bench`: the loop's own cost, side by side in one process with a
// hand-written minimal loop over the same scripted workload. Reported as
// ratios and per-window costs; nothing here is asserted by the tests.
import { performance } from 'node:perf_hooks'
import { createAgent, createSession, userMessage, type StreamChunk } from '../src/index.js'
import { StreamAssembler } from '../src/adapters/assemble.js'
import type { ModelAdapter } from '../src/adapters/types.js'
import { textResponse } from '../src/testing/index.js'

const TURNS = Number(process.env.BENCH_TURNS ?? 10_000)
const WINDOW = Math.max(1, Math.floor(TURNS / 10))
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 2_000)

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

async function turns(label: string, runTurn: (turn: number) => Promise<void>) {
  const windows: number[] = []
  let start = performance.now()
  for (let turn = 1; turn <= TURNS; turn++) {
    await runTurn(turn)
    if (turn % WINDOW === 0) {
      const now = performance.now()
      windows.push(((now - start) * 1000) / WINDOW)
      start = now
    }
  }
  const first = windows[0]
  const last = windows[windows.length - 1]
  console.log(`${label.padEnd(22)} µs/turn by window: ${windows.map((w) => w.toFixed(1)).join(' ')}  (last/first ${(last / first).toFixed(2)})`)
  return windows
}

async function main() {
  console.log(`agentchart bench — node ${process.version}, ${TURNS} one-step turns, windows of ${WINDOW}\n`)
  const reply = textResponse('hello there, this is a reply')

  // 1. per-step cost as the session grows: flat, not growing with history
  const baseSession = createSession()
  const baseModel = constantModel(reply)
  const base = await turns('minimal loop', (t) => minimalTurn(baseSession, baseModel, t, `prompt ${t}`))
  const agent = createAgent({ model: constantModel(reply) })
  const ours = await turns('agentchart', async (t) => {
    agent.followup(userMessage(`prompt ${t}`))
    await agent.whenIdle()
  })
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  console.log(`per-turn overhead ratio (agentchart / minimal, medians): ${(median(ours) / median(base)).toFixed(2)}x`)
  console.log(`session length after the run: ${agent.session.length} events\n`)

  // 2. per-chunk cost: one long stream, same chunks through both
  const chunkModel = constantModel(manyChunks(CHUNKS))
  const chunkSession = createSession()
  let t0 = performance.now()
  for (let i = 1; i <= 20; i++) await minimalTurn(chunkSession, chunkModel, i, 'go')
  const minimalPerChunk = ((performance.now() - t0) * 1000) / (20 * CHUNKS)
  const chunkAgent = createAgent({ model: chunkModel })
  t0 = performance.now()
  for (let i = 1; i <= 20; i++) {
    chunkAgent.followup(userMessage('go'))
    await chunkAgent.whenIdle()
  }
  const oursPerChunk = ((performance.now() - t0) * 1000) / (20 * CHUNKS)
  console.log(
    `per-chunk: minimal ${minimalPerChunk.toFixed(2)} µs, agentchart ${oursPerChunk.toFixed(2)} µs (${(oursPerChunk / minimalPerChunk).toFixed(2)}x)\n`,
  )

  // 3. memory per idle agent
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage().heapUsed
  const idle = Array.from({ length: 1000 }, () => createAgent({ model: baseModel }))
  gc?.()
  const after = process.memoryUsage().heapUsed
  console.log(`memory per idle agent: ${((after - before) / idle.length / 1024).toFixed(1)} KiB${gc ? '' : ' (run with --expose-gc for a steadier number)'}\n`)

  // 4. session append throughput (the in-memory store)
  const s = createSession()
  const n = 200_000
  t0 = performance.now()
  for (let i = 0; i < n; i++) s.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x' } })
  const secs = (performance.now() - t0) / 1000
  console.log(`session append throughput (chunks): ${Math.round(n / secs).toLocaleString('en')} events/s`)
  console.log('\npeer libraries: not run here (no network to install them); the minimal loop above is the stand-in baseline.')
}

await main()

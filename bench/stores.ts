// Store throughput for `npm run bench` (and `npm run bench:stores` alone):
// batched append rates of SQLite and PostgreSQL, and what a store adds to a
// streamed step. Targets (issue #9): SQLite >= 100k events/s batched, a store
// adding < 20% to a streamed step. Reported, never asserted by the tests.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { createAgent, createSession, userMessage, type SessionEvent, type StreamChunk } from '../src/index.js'
import type { ModelAdapter } from '../src/adapters/types.js'
import { openaiModel } from '../src/adapters/openai.js'
import { memoryStore, postgresStore, sqliteStore, type SessionStore } from '../src/stores/index.js'
import { startPostgres } from '../scripts/embedded-postgres.js'

const EVENTS = Number(process.env.BENCH_STORE_EVENTS ?? 100_000)
const STEPS = Number(process.env.BENCH_STORE_STEPS ?? 2_000)
const STEP_CHUNKS = Number(process.env.BENCH_STEP_CHUNKS ?? 50)

const rate = (n: number) => `${Math.round(n).toLocaleString('en')} events/s`

/** A model that streams `n` text deltas per request without timers (the step cost is the loop's alone). */
function streamingModel(n: number): ModelAdapter {
  const chunks: StreamChunk[] = [{ type: 'block-start', index: 0, blockType: 'text' }]
  for (let i = 0; i < n; i++) chunks.push({ type: 'text-delta', index: 0, text: `token${i} ` })
  chunks.push({ type: 'usage', usage: { inputTokens: 10, outputTokens: n } }, { type: 'finish', reason: { kind: 'stop' } })
  return {
    provider: 'bench',
    model: 'stream',
    async *stream() {
      yield* chunks
    },
  }
}

// A chat-completions server in its own process (so its CPU is not counted as the agent's): every request is
// answered with `chunks` SSE text deltas, a finish and a usage chunk, as a provider streams them.
const SSE_SERVER = `
const chunks = Number(process.argv[1])
const meta = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' }
const frame = (choices, extra) => 'data: ' + JSON.stringify({ ...meta, choices, ...extra }) + '\\n\\n'
let body = ''
for (let i = 0; i < chunks; i++) body += frame([{ index: 0, delta: { content: 'token' + i + ' ' }, finish_reason: null }])
body += frame([{ index: 0, delta: {}, finish_reason: 'stop' }]) + frame([], { usage: { prompt_tokens: 10, completion_tokens: chunks, total_tokens: 10 + chunks } }) + 'data: [DONE]\\n\\n'
const server = require('node:http').createServer((req, res) => {
  req.resume()
  req.on('end', () => { res.writeHead(200, { 'content-type': 'text/event-stream' }); res.end(body) })
})
server.listen(0, '127.0.0.1', () => console.log(server.address().port))
`

/** Starts the SSE server process; resolves to its base URL and a stop function. */
async function startSseServer(chunks: number): Promise<{ baseURL: string; stop(): void }> {
  const child = spawn(process.execPath, ['-e', SSE_SERVER, String(chunks)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const [line] = (await once(child.stdout, 'data')) as [Buffer]
  return { baseURL: `http://127.0.0.1:${line.toString().trim()}/v1`, stop: () => child.kill() }
}

/** A realistic log to append: turns of a streamed step, mostly chunks. */
function sampleEvents(count: number): SessionEvent[] {
  const session = createSession()
  for (let turn = 1; session.length < count; turn++) {
    const m = userMessage(`prompt ${turn}`)
    session.append('turn/start', { turn })
    session.append('step/start', { turn, step: 1 })
    session.append('user/message', m, { surfaceOp: 'append' })
    const seqs: number[] = []
    for (let i = 0; i < 40; i++)
      seqs.push(session.append('assistant/chunk', { turn, step: 1, chunk: { type: 'text-delta', index: 0, text: `token${i} ` } }).seq)
    session.append(
      'assistant/message',
      {
        turn,
        step: 1,
        message: { id: `a${turn}`, role: 'assistant', content: [{ type: 'text', text: 'an answer' }], source: { kind: 'model', provider: 'b', model: 'm' } },
      },
      { surfaceOp: 'append', sourceEventSeqs: seqs },
    )
    session.append('step/end', { turn, step: 1 })
    session.append('turn/end', { turn, reason: { kind: 'completed' } })
  }
  return session.events.slice(0, count)
}

/** Events per second committing `events` in batches of `batch` through one lease: by the clock and per second of this process's CPU. */
async function appendRate(store: SessionStore, events: readonly SessionEvent[], batch: number, id: string): Promise<string> {
  const handle = await store.open(id)
  const t0 = performance.now()
  const c0 = process.cpuUsage()
  for (let i = 0; i < events.length; i += batch) await handle.append(events.slice(i, i + batch))
  const c = process.cpuUsage(c0)
  const seconds = (performance.now() - t0) / 1000
  await handle.release()
  return `${rate(events.length / seconds)} (${rate(events.length / ((c.user + c.system) / 1e6))} of CPU)`
}

/** Per one-step streamed turn, after one unmeasured window (JIT warm-up): medians of windows, in wall time and in this process's CPU time (steadier on a shared machine). */
async function stepCost(make: () => Promise<ReturnType<typeof createAgent>>): Promise<{ wall: number; cpu: number }> {
  const agent = await make()
  const wall: number[] = []
  const cpu: number[] = []
  const window = Math.max(1, Math.floor(STEPS / 10))
  for (let i = 0; i < window; i++) {
    agent.followup(userMessage('warm up'))
    await agent.whenIdle()
  }
  for (let w = 0; w < STEPS / window; w++) {
    const t0 = performance.now()
    const c0 = process.cpuUsage()
    for (let i = 0; i < window; i++) {
      agent.followup(userMessage('go'))
      await agent.whenIdle()
    }
    const c = process.cpuUsage(c0)
    wall.push(((performance.now() - t0) * 1000) / window)
    cpu.push((c.user + c.system) / window)
  }
  await agent.dispose()
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  return { wall: median(wall), cpu: median(cpu) }
}

/** Runs the store section of the benchmark. */
export async function storeBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'agentchart-bench-'))
  const server = await startPostgres()
  const stores: SessionStore[] = []
  const sqlite = (name: string) => {
    const store = sqliteStore({ path: join(dir, `${name}.db`) })
    stores.push(store)
    return store
  }
  const postgres = () => {
    const store = postgresStore({ connectionString: server.connectionString })
    stores.push(store)
    return store
  }
  try {
    console.log(`store append throughput: ${EVENTS.toLocaleString('en')} events of streamed turns (mostly chunks), one lease`)
    const events = sampleEvents(EVENTS)
    for (const batch of [1000, 100]) {
      const line = [`  batches of ${String(batch).padEnd(5)}`]
      line.push(`sqlite ${await appendRate(sqlite(`rate-${batch}`), events, batch, 'rate')}`)
      line.push(`postgres ${await appendRate(postgres(), events, batch, `rate-${batch}`)}`)
      line.push(`memory ${await appendRate(memoryStore(), events, batch, 'rate')}`)
      console.log(line.join('\n    '))
    }

    console.log(`\nstore cost per streamed step (${STEP_CHUNKS} chunks, one step per turn, ${STEPS} turns, medians):`)
    const model = streamingModel(STEP_CHUNKS)
    const none = await stepCost(() => Promise.resolve(createAgent({ model })))
    let n = 0
    const pct = (cost: number, base: number) => `${cost >= base ? '+' : ''}${(((cost - base) / base) * 100).toFixed(1)}%`
    const show = (label: string, cost: { wall: number; cpu: number }, base?: { wall: number; cpu: number }) =>
      console.log(
        `  ${label.padEnd(10)} cpu ${cost.cpu.toFixed(0).padStart(6)} µs/step${base ? ` (${pct(cost.cpu, base.cpu)})`.padEnd(10) : ''.padEnd(10)}` +
          `  wall ${cost.wall.toFixed(0).padStart(6)} µs/step${base ? ` (${pct(cost.wall, base.wall)})` : ''}`,
      )
    const over = async (label: string, store: () => SessionStore) => {
      show(label, await stepCost(() => createAgent({ model, store: store(), sessionId: `step-${n++}` })), none)
    }
    show('no store', none)
    await over('memory', () => memoryStore())
    await over('sqlite', () => sqlite('steps'))
    await over('postgres', postgres)

    // The same step through the real provider path: the OpenAI adapter over loopback HTTP, the server in another process.
    const server = await startSseServer(STEP_CHUNKS)
    try {
      console.log(`\nstore cost per streamed step through the OpenAI adapter over loopback HTTP (${STEP_CHUNKS} SSE chunks, ${STEPS} turns, medians):`)
      const http = () => openaiModel({ baseURL: server.baseURL, model: 'm', maxRetries: 0 })
      const base = await stepCost(() => Promise.resolve(createAgent({ model: http() })))
      show('no store', base)
      for (const [label, store] of [
        ['memory', () => memoryStore()],
        ['sqlite', () => sqlite('http-steps')],
        ['postgres', postgres],
      ] as const) {
        show(label, await stepCost(() => createAgent({ model: http(), store: store(), sessionId: `http-step-${n++}` })), base)
      }
    } finally {
      server.stop()
    }
  } finally {
    for (const store of stores) await store.close()
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await storeBench()

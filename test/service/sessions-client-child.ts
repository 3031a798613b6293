// The client process of the sessions-across scale test: creates sessions,
// sends followups, steers during running turns, injects and cancels, follows
// every session with watch(), and writes what it sent and saw to a JSON file.
import { writeFileSync } from 'node:fs'
import type { RunResult, SessionEvent, SessionEventOf } from '../../src/index.js'
import { userMessage } from '../../src/index.js'
import { createSessionClient, postgresStore, sqliteStore } from '../../src/service/index.js'

const [kind, target, count, out, prefix = ''] = process.argv.slice(2)
const store = kind === 'postgres' ? postgresStore({ connectionString: target }) : sqliteStore({ path: target })
const client = createSessionClient({ store })
const sessions: string[] = []
for (let i = 0; i < Number(count); i++) sessions.push(await client.create(`${prefix}s${i}`))

const watched = new Map<string, SessionEvent[]>()
const waiters = new Map<string, { predicate: (e: SessionEvent) => boolean; resolve: (e: SessionEvent) => void }[]>()
const subscriptions = sessions.map((id) => {
  watched.set(id, [])
  waiters.set(id, [])
  return client.watch(id).subscribe((event) => {
    watched.get(id)!.push(event)
    for (const waiter of [...waiters.get(id)!]) {
      if (!waiter.predicate(event)) continue
      waiters.set(
        id,
        waiters.get(id)!.filter((w) => w !== waiter),
      )
      waiter.resolve(event)
    }
  })
})
/** The first event (already seen or later) that matches. */
function seen(id: string, predicate: (e: SessionEvent) => boolean): Promise<SessionEvent> {
  const found = watched.get(id)!.find(predicate)
  if (found) return Promise.resolve(found)
  return new Promise((resolve) => waiters.get(id)!.push({ predicate, resolve }))
}
/**
 * The turn whose step entered message `messageId` (it is logged after step/start), or undefined when that turn
 * ended first (a crash right after the claim: the repair closes the turn before any step).
 */
async function stepOfClaim(id: string, messageId: string, run: Promise<RunResult>): Promise<number | undefined> {
  const claim = await Promise.race([seen(id, (e) => e.type === 'user/message' && e.data.id === messageId), run.then(() => undefined)])
  if (claim === undefined) return undefined
  const starts = watched.get(id)!.filter((e) => e.type === 'turn/start' && e.seq < claim.seq)
  return (starts[starts.length - 1] as SessionEventOf<'turn/start'>).data.turn
}

const sent: { sessionId: string; messageId: string; kind: string }[] = []
const runs: { sessionId: string; messageId: string; result: RunResult }[] = []
const cancels: { sessionId: string; turn: number }[] = []
const message = (text: string) => userMessage(text)

async function run(id: string, text: string, during?: (messageId: string, pending: Promise<RunResult>) => Promise<void>): Promise<RunResult> {
  const m = message(text)
  sent.push({ sessionId: id, messageId: m.id, kind: 'followup' })
  const pending = client.run(id, m)
  await during?.(m.id, pending)
  const result = await pending
  runs.push({ sessionId: id, messageId: m.id, result })
  return result
}

// phase A: a prompt per session, steered and injected while its turn runs (a worker is killed meanwhile)
process.stdout.write('phase A\n')
await Promise.all(
  sessions.map((id, i) =>
    run(id, `${id} first`, async (messageId, pending) => {
      await stepOfClaim(id, messageId, pending)
      const steer = message(`${id} steer`)
      const inject = message(`${id} inject`)
      sent.push({ sessionId: id, messageId: steer.id, kind: 'steer' }, { sessionId: id, messageId: inject.id, kind: 'inject' })
      await client.steer(id, steer)
      await client.inject(id, inject)
      void i
    }),
  ),
)
// phase B: every third session has a turn cancelled mid-step; then one more prompt each
process.stdout.write('phase B\n')
await Promise.all(
  sessions.map(async (id, i) => {
    if (i % 3 === 0) {
      await run(id, `${id} [hang]`, async (messageId, pending) => {
        const turn = (await stepOfClaim(id, messageId, pending))!
        cancels.push({ sessionId: id, turn })
        await client.cancel(id)
      })
    }
    await run(id, `${id} last`)
  }),
)
// the watches have caught up with the committed logs
for (const id of sessions) {
  for (;;) {
    const status = await client.status(id)
    if (status.phase === 'idle' && watched.get(id)!.length === status.length && status.pendingMail === 0) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
for (const subscription of subscriptions) subscription.unsubscribe()
writeFileSync(out, JSON.stringify({ sessions, sent, runs, cancels, watched: Object.fromEntries(watched) }))
await client.close()
await store.close()
process.stdout.write('done\n')

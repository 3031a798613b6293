// One worker of the scale-out example: it polls the sessions table, opens
// (and so leases) sessions nobody drives that still have work, and runs
// their remaining turns. Two workers racing for one session is fine: the
// lease lets exactly one in, the other gets SESSION_IN_USE and moves on. A
// session whose worker died is picked up once its lease lapses; opening it
// repairs the turn the dead worker left open.
//
// Env: DATABASE_URL, WORKER (its name, the lease holder), TURNS, LEASE_MS,
// STALL_TURN (optional: the model hangs on that turn's request, so the worker
// can be killed while it surely holds an open turn).
import { z } from 'zod'
import { createAgent, defineTool, SessionInUseError, type Agent, type ModelAdapter, type SessionEvent, type StreamChunk } from '../../src/index.js'
import { postgresStore } from '../../src/stores/index.js'
import { textResponse, toolCallResponse } from '../../src/testing/index.js'

const name = process.env.WORKER ?? `worker-${process.pid}`
const turns = Number(process.env.TURNS ?? 4)
const leaseMs = Number(process.env.LEASE_MS ?? 1500)
const perWorker = Number(process.env.SESSIONS_PER_WORKER ?? 3)
const stallTurn = Number(process.env.STALL_TURN ?? 0)
const store = postgresStore({ connectionString: process.env.DATABASE_URL!, max: 4 })
const say = (line: string) => console.log(`[${name}] ${line}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Completed turns in a log: the work a session has had done. */
const completed = (events: readonly unknown[]) => (events as SessionEvent[]).filter((e) => e.type === 'turn/end' && e.data.reason.kind === 'completed').length

/** A stand-in for a real model: asks for a lookup, then answers from its result, streaming a few words at a time. */
const model: ModelAdapter = {
  provider: 'example',
  model: 'slow-echo',
  async *stream(request): AsyncGenerator<StreamChunk> {
    const asked = request.messages.findLast((m) => m.role === 'user' && m.content[0]?.type === 'text')?.content[0]
    const question = asked?.type === 'text' ? asked.text : ''
    if (stallTurn > 0 && question.startsWith(`question ${stallTurn} `)) {
      // a stand-in for a process that hangs mid-request: its turn stays open in the log until someone repairs it
      say(`${question.split(' about ')[1]} turn ${stallTurn}: the model stalls`)
      await new Promise((resolve) => request.signal.addEventListener('abort', resolve, { once: true }))
      return
    }
    const last = request.messages.at(-1)
    const answering = last?.content[0]?.type === 'tool-result'
    const chunks = answering
      ? textResponse('Here is what the lookup found, summarised in a few streamed words.')
      : toolCallResponse([{ id: `call-${Date.now()}`, name: 'lookup', arguments: '{"topic":"leases"}' }])
    for (const chunk of chunks) {
      await sleep(15)
      if (request.signal.aborted) return
      yield chunk
    }
  },
}

const lookup = defineTool({
  name: 'lookup',
  description: 'looks something up (slowly)',
  input: z.object({ topic: z.string() }),
  execute: async ({ topic }) => {
    await sleep(80)
    return `notes about ${topic}`
  },
})

/** Drives one session until it has all its turns, unless another worker got the lease first. */
async function serve(sessionId: string): Promise<void> {
  let agent: Agent
  try {
    agent = await createAgent({ model, store, sessionId, tools: [lookup], lease: { holder: name, leaseMs }, logger: { error: () => {} } })
  } catch (error) {
    if (error instanceof SessionInUseError) return // someone else drives it
    throw error
  }
  const done = completed(agent.session.events)
  const repaired = agent.session.events.some((e) => e.type === 'turn/end' && e.data.reason.kind === 'interrupted' && e.seq >= agent.session.seedLength)
  say(repaired ? `took over ${sessionId} at turn ${done + 1}, repairing the turn its last worker left open` : `took ${sessionId} at turn ${done + 1}`)
  for (let turn = done + 1; turn <= turns; turn++) {
    agent.followup(`question ${turn} about ${sessionId}`)
    await agent.whenIdle()
    say(`${sessionId} turn ${turn} done`)
  }
  await agent.dispose()
}

let stopping = false
process.on('SIGTERM', () => (stopping = true))
const driving = new Map<string, Promise<void>>()
while (!stopping) {
  for (const info of await store.list()) {
    if (driving.size >= perWorker) break
    if (driving.has(info.id) || info.lease !== null) continue
    // a read without a lease: a finished session is not opened (and so not touched) again
    if (completed((await store.load(info.id)) ?? []) >= turns) continue
    driving.set(
      info.id,
      serve(info.id)
        .catch((error: unknown) => say(`failed on ${info.id}: ${String(error)}`))
        .finally(() => driving.delete(info.id)),
    )
  }
  await sleep(100)
}
await Promise.all(driving.values())
await store.close()

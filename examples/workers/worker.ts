// One worker of the scale-out example: serveSessions takes the sessions
// that have mail and no driver from the queue (pg-boss), opens each one (the
// lease lets exactly one worker in), applies its mail, and gives it back once
// it rests idle. A session whose worker died is picked up once its lease
// lapses; opening it repairs the turn the dead worker left open.
//
// Env: DATABASE_URL, WORKER (its name, the lease holder), LEASE_MS,
// STALL_TURN (optional: the model hangs on that turn's request, so the worker
// can be killed while it surely holds an open turn).
import { z } from 'zod'
import { defineTool, type ModelAdapter, type SessionEvent, type StreamChunk } from '../../src/index.js'
import { postgresStore, serveSessions } from '../../src/service/index.js'
import { textResponse, toolCallResponse } from '../../src/testing/index.js'

const name = process.env.WORKER ?? `worker-${process.pid}`
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

const workers = await serveSessions({
  store,
  agent: () => ({ model, tools: [lookup], logger: { error: () => {} } }),
  concurrency: perWorker,
  idleMs: 300,
  leaseMs,
  name,
  onOpen: (agent) => {
    const turn = completed(agent.session.events) + 1
    const repaired = agent.session.events.some((e) => e.type === 'turn/end' && e.data.reason.kind === 'interrupted' && e.seq >= agent.session.seedLength)
    say(repaired ? `took over ${agent.sessionId} at turn ${turn}, repairing the turn its last worker left open` : `took ${agent.sessionId} at turn ${turn}`)
    agent.on('session/event', ({ event }) => {
      if (event.type === 'turn/end' && event.data.reason.kind === 'completed') say(`${agent.sessionId} turn ${event.data.turn} done`)
    })
  },
  onError: (error, sessionId) => say(`failed on ${sessionId ?? '-'}: ${String(error)}`),
})
process.on('SIGTERM', () => {
  void workers
    .close()
    .then(() => store.close())
    .then(() => process.exit(0))
})

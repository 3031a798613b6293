// The client and the workers on every store with a mailbox: each message kind
// reaches the session's driver and is applied as the local call would be
// (IN, CX rules), run() and watch() read what was committed, bad input is
// refused with a typed error. Client and worker use separate store instances
// where the store allows it, so they talk only through the store.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { firstValueFrom, filter, take, toArray } from 'rxjs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool, type SessionEvent, type SessionEventOf } from '../../src/index.js'
import {
  createSessionClient,
  memoryStore,
  postgresStore,
  serveSessions,
  sqliteStore,
  type SessionClient,
  type SessionStore,
  type SessionWorkers,
} from '../../src/service/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { createDatabase, startPostgres, type PostgresServer } from '../../scripts/embedded-postgres.js'
import { slowModel } from './sessions-support.js'

let server: PostgresServer
let dir: string
beforeAll(async () => {
  server = await startPostgres()
  dir = mkdtempSync(join(tmpdir(), 'agentchart-across-'))
}, 120_000)
afterAll(async () => {
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
}, 60_000)

interface Pair {
  client: SessionStore
  worker: SessionStore
  close(): Promise<void>
}

let dbs = 0
const kinds: Record<string, () => Promise<Pair>> = {
  memory: async () => {
    const store = memoryStore()
    return { client: store, worker: store, close: () => store.close() }
  },
  sqlite: async () => {
    const path = join(dir, `s${dbs++}.db`)
    const client = sqliteStore({ path })
    const worker = sqliteStore({ path })
    return { client, worker, close: async () => (await client.close(), await worker.close()) }
  },
  postgres: async () => {
    const url = await createDatabase(server, `across${dbs++}`)
    const client = postgresStore({ connectionString: url })
    const worker = postgresStore({ connectionString: url })
    return { client, worker, close: async () => (await worker.close(), await client.close()) }
  },
}

const texts = (events: readonly SessionEvent[], type: 'user/message' = 'user/message') =>
  events.filter((e) => e.type === type).map((e) => ((e as SessionEventOf<'user/message'>).data.content[0] as { text: string }).text)
const until = (client: SessionClient, id: string, predicate: (e: SessionEvent) => boolean) => firstValueFrom(client.watch(id).pipe(filter(predicate)))
const load = async (store: SessionStore, id: string) => (await store.load(id)) as SessionEvent[]

describe.each(Object.keys(kinds))('sessions across processes on %s', (kind) => {
  let pair: Pair
  let workers: SessionWorkers
  let client: SessionClient
  const start = async (options: Partial<Parameters<typeof serveSessions>[0]> = {}) => {
    pair = await kinds[kind]()
    workers = await serveSessions({ store: pair.worker, agent: () => ({ model: slowModel(60) }), concurrency: 4, idleMs: 300, ...options })
    client = createSessionClient({ store: pair.client })
  }
  const stop = async () => {
    await client.close()
    await workers.close()
    await pair.close()
  }

  it('IN-1: a followup from the client runs as its own turn on a worker; run() resolves with that turn', async () => {
    await start()
    try {
      const id = await client.create()
      const first = await client.run(id, 'one')
      const second = await client.run(id, 'two')
      expect(first).toMatchObject({ turn: 1, end: { kind: 'completed' }, text: 're: one', steps: 1 })
      expect(second).toMatchObject({ turn: 2, end: { kind: 'completed' }, text: 're: two', steps: 1 })
      const log = await load(pair.client, id)
      expect(texts(log)).toEqual(['one', 'two'])
      expect(checkSessionInvariants(log)).toEqual([])
      const status = await client.status(id)
      expect(status).toMatchObject({ sessionId: id, phase: 'idle', length: log.length, pendingMail: 0 })
    } finally {
      await stop()
    }
  }, 30_000)

  it('IN-12: a steer sent during a running turn joins that turn at its next step', async () => {
    // a step long enough that the steer lands inside it even on a loaded machine
    await start({ agent: () => ({ model: slowModel(400) }) })
    try {
      const id = await client.create()
      const running = client.run(id, 'start')
      await until(client, id, (e) => e.type === 'step/start')
      expect((await client.status(id)).phase).toBe('running')
      await client.steer(id, 'steered')
      const result = await running
      expect(result).toMatchObject({ turn: 1, end: { kind: 'completed' }, steps: 2, text: 're: steered' })
      const log = await load(pair.client, id)
      expect(log.filter((e) => e.type === 'turn/start')).toHaveLength(1)
      expect(texts(log)).toEqual(['start', 'steered'])
      expect(checkSessionInvariants(log)).toEqual([])
    } finally {
      await stop()
    }
  }, 30_000)

  it('IN-11: an inject does not wake the session; it joins the first step of the next woken turn, ahead of its prompt', async () => {
    await start()
    try {
      const id = await client.create()
      await client.inject(id, 'context')
      // nobody drives the session for an inject alone
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(await client.status(id)).toMatchObject({ driver: null, pendingMail: 1 })
      const result = await client.run(id, 'question')
      expect(result).toMatchObject({ turn: 1, steps: 1, end: { kind: 'completed' } })
      const log = await load(pair.client, id)
      expect(texts(log)).toEqual(['context', 'question'])
      expect(log.filter((e) => e.type === 'turn/start')).toHaveLength(1)
    } finally {
      await stop()
    }
  }, 30_000)

  it('CX-5: a cancel from the client ends the running turn aborted with its cause, and run() says so', async () => {
    await start()
    try {
      const id = await client.create()
      const running = client.run(id, 'long [hang]')
      await until(client, id, (e) => e.type === 'step/start')
      await client.cancel(id, { kind: 'user' })
      const result = await running
      expect(result.end).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
      const after = await client.run(id, 'again')
      expect(after).toMatchObject({ turn: 2, end: { kind: 'completed' }, text: 're: again' })
      expect(checkSessionInvariants(await load(pair.client, id))).toEqual([])
    } finally {
      await stop()
    }
  }, 30_000)

  it('CX-10: followups queued behind a cancel are discarded and their run() resolves discarded', async () => {
    await start()
    try {
      const id = await client.create()
      const first = client.run(id, 'a [hang]')
      await until(client, id, (e) => e.type === 'step/start')
      const queued = client.run(id, 'b')
      await until(client, id, (e) => e.type === 'agent/inbox/spliced' && e.data.inserted.some((m) => (m.content[0] as { text: string }).text === 'b'))
      await client.cancel(id)
      expect((await first).end.kind).toBe('aborted')
      expect((await queued).end).toMatchObject({ kind: 'discarded' })
      expect(texts(await load(pair.client, id))).toEqual(['a [hang]'])
    } finally {
      await stop()
    }
  }, 30_000)

  it('TL-18: approve and deny of a pending ask go through the client', async () => {
    const deploy = defineTool({ name: 'deploy', description: 'deploys', input: z.object({ env: z.string() }), execute: ({ env }) => `deployed ${env}` })
    const scripts = new Map<string, ReturnType<typeof scriptedModel>>()
    await start({
      agent: (id) => {
        if (!scripts.has(id))
          scripts.set(
            id,
            scriptedModel([
              toolCallResponse([{ id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' }]),
              textResponse('done one'),
              toolCallResponse([{ id: 'c2', name: 'deploy', arguments: '{"env":"dev"}' }]),
              textResponse('done two'),
            ]),
          )
        return { model: scripts.get(id)!, tools: [deploy], approvals: true }
      },
      onOpen: (agent) => agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'deploy?' })),
      idleMs: 2000,
    })
    try {
      const id = await client.create()
      const approved = client.run(id, 'ship it')
      await until(client, id, (e) => e.type === 'tool/approval-request')
      expect((await client.status(id)).phase).toBe('awaiting-approval')
      await client.approve(id, 'c1')
      expect(await approved).toMatchObject({ end: { kind: 'completed' }, text: 'done one' })
      const denied = client.run(id, 'ship dev')
      await until(client, id, (e) => e.type === 'tool/approval-request' && e.data.callId === 'c2')
      await client.deny(id, 'c2', 'not today')
      expect(await denied).toMatchObject({ end: { kind: 'completed' }, text: 'done two' })
      const log = await load(pair.client, id)
      expect(log.filter((e) => e.type === 'tool/approval-answer').map((e) => (e as SessionEventOf<'tool/approval-answer'>).data.decision)).toEqual([
        'approve',
        'deny',
      ])
      expect(checkSessionInvariants(log)).toEqual([])
    } finally {
      await stop()
    }
  }, 30_000)

  it('mail sent while a driver holds the session survives that driver dying before it read it: the next driver delivers it once', async () => {
    await start({ leaseMs: 300, rescueMs: 50 })
    try {
      const id = await client.create()
      // a worker that dies without a word: it holds the lease and never renews or releases it
      await pair.client.open(id, { holder: 'worker:dead', leaseMs: 300 })
      const result = client.run(id, 'are you there')
      expect((await client.status(id)).driver).toBe('worker:dead')
      expect(await result).toMatchObject({ turn: 1, end: { kind: 'completed' }, text: 're: are you there' })
      const log = await load(pair.client, id)
      expect(texts(log)).toEqual(['are you there'])
      expect(checkSessionInvariants(log)).toEqual([])
      expect((await client.status(id)).pendingMail).toBe(0)
    } finally {
      await stop()
    }
  }, 30_000)

  it('close() hands back what it cannot finish: the running turn ends aborted{disposed}, queued prompts stay for the next worker', async () => {
    await start()
    const id = await client.create()
    const hanging = client.run(id, 'stuck [hang]')
    await until(client, id, (e) => e.type === 'user/message')
    const queued = client.run(id, 'later')
    await until(client, id, (e) => e.type === 'agent/inbox/spliced' && e.data.inserted.some((m) => (m.content[0] as { text: string }).text === 'later'))
    await workers.close({ graceMs: 50 })
    expect((await hanging).end).toEqual({ kind: 'aborted', reason: { kind: 'disposed' } })
    expect(await client.status(id)).toMatchObject({ driver: null, phase: 'idle' })
    // the next worker finds the queued prompt parked (PH-5) and runs it at the next waking message
    workers = await serveSessions({ store: pair.worker, agent: () => ({ model: slowModel(20) }), concurrency: 2, idleMs: 300 })
    try {
      const nudge = await client.run(id, 'nudge')
      const later = await queued
      expect(later).toMatchObject({ end: { kind: 'completed' }, text: 're: later' })
      expect(nudge).toMatchObject({ end: { kind: 'completed' }, text: 're: nudge' })
      const log = await load(pair.client, id)
      expect(texts(log)).toEqual(['stuck [hang]', 'later', 'nudge'])
      expect(checkSessionInvariants(log)).toEqual([])
    } finally {
      await stop()
    }
  }, 30_000)

  it('a session whose agent factory never settles holds up no other session, and close() still returns', async () => {
    await start({ agent: (id) => (id === 'stuck' ? new Promise<never>(() => {}) : { model: slowModel(10) }), onError: () => {} })
    await client.create('stuck')
    await client.create('ok')
    await client.followup('stuck', 'hello')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(await client.run('ok', 'other')).toMatchObject({ end: { kind: 'completed' }, text: 're: other' })
    await stop()
  }, 30_000)

  it('close({ graceMs }) gives back a session whose tool ignores its cancel: the call ends TOOL_OUTCOME_UNKNOWN and the lease is free', async () => {
    const stuck = defineTool({ name: 'stuck', description: 'never returns', input: z.object({}), execute: () => new Promise<string>(() => {}) })
    await start({
      agent: () => ({ model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'stuck', arguments: '{}' }]), textResponse('x')]), tools: [stuck] }),
    })
    const id = await client.create()
    const run = client.run(id, 'go')
    await until(client, id, (e) => e.type === 'tool/call')
    await workers.close({ graceMs: 50 })
    expect((await run).end).toEqual({ kind: 'aborted', reason: { kind: 'disposed' } })
    const log = await load(pair.client, id)
    expect(log.find((e): e is SessionEventOf<'tool/result'> => e.type === 'tool/result')?.data.error?.code).toBe('TOOL_OUTCOME_UNKNOWN')
    expect(checkSessionInvariants(log)).toEqual([])
    expect(await client.status(id)).toMatchObject({ driver: null, phase: 'idle' })
    await client.close()
    await pair.close()
  }, 30_000)

  it('an agent factory that returns no options is reported as a ConfigError naming agent', async () => {
    const errors: unknown[] = []
    await start({ agent: () => undefined as never, onError: (error) => errors.push(error) })
    const id = await client.create()
    await client.followup(id, 'hello')
    for (let i = 0; i < 200 && errors.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(errors[0]).toMatchObject({ name: 'ConfigError', path: 'agent' })
    expect(String((errors[0] as Error).message)).toMatch(/must return agent options, got undefined/)
    await stop()
  }, 30_000)

  it('watch() from any seq gives the committed log with no gap and no duplicate, live', async () => {
    await start()
    try {
      const id = await client.create()
      const seen: SessionEvent[] = []
      const subscription = client.watch(id).subscribe((e) => seen.push(e))
      const fromThree: SessionEvent[] = []
      const later = client.watch(id, { fromSeq: 3 }).subscribe((e) => fromThree.push(e))
      await client.run(id, 'x')
      await client.run(id, 'y')
      const log = await load(pair.client, id)
      await until(client, id, (e) => e.seq === log.length - 1)
      await new Promise((resolve) => setTimeout(resolve, 50))
      subscription.unsubscribe()
      later.unsubscribe()
      expect(seen).toEqual(log)
      expect(fromThree).toEqual(log.slice(3))
      const replay = await firstValueFrom(client.watch(id).pipe(take(log.length), toArray()))
      expect(replay).toEqual(log)
      // from every seq, folded chunk runs included: the log from there on
      expect(log.some((e) => e.type === 'assistant/chunk')).toBe(true)
      for (let k = 0; k < log.length; k++) expect(await firstValueFrom(client.watch(id, { fromSeq: k })), `from ${k}`).toEqual(log[k])
    } finally {
      await stop()
    }
  }, 30_000)

  it('IN-1: run() with a message id an earlier turn used resolves with the turn that ran this send, as agent.run() does', async () => {
    await start()
    try {
      const id = await client.create()
      const message = (text: string) => ({ id: 'm1', role: 'user' as const, content: [{ type: 'text' as const, text }], source: { kind: 'user' as const } })
      expect(await client.run(id, message('first'))).toMatchObject({ turn: 1, text: 're: first' })
      expect(await client.run(id, message('second'))).toMatchObject({ turn: 2, end: { kind: 'completed' }, text: 're: second' })
    } finally {
      await stop()
    }
  }, 30_000)

  it('refuses an unknown session, a malformed message and a closed store with typed errors', async () => {
    await start()
    try {
      await expect(client.followup('nobody', 'hi')).rejects.toMatchObject({ code: 'SESSION_UNKNOWN' })
      await expect(client.status('nobody')).rejects.toMatchObject({ code: 'SESSION_UNKNOWN' })
      const id = await client.create()
      // an empty session is in use too: a second create of its id is refused, not taken for a fresh one
      await expect(client.create(id)).rejects.toMatchObject({ name: 'ConfigError', path: 'sessionId' })
      await expect(client.followup(id, { role: 'user', content: 'not blocks' } as never)).rejects.toMatchObject({ code: 'INVALID_MESSAGE' })
      await expect(client.send(id, 'x', 'elsewhere' as never, true)).rejects.toMatchObject({ path: 'target' })
      await expect(client.cancel(id, { kind: 'nope' } as never)).rejects.toMatchObject({ path: 'cause' })
      expect((await client.status(id)).pendingMail).toBe(0)
      await pair.client.close()
      await expect(client.followup(id, 'late')).rejects.toMatchObject({ code: 'STORE_CLOSED' })
    } finally {
      await stop()
    }
  }, 30_000)
})

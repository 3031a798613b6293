// The durability contract of an agent over a store (issue #9): outside work
// starts only on a committed log, a step's events are committed together,
// flush() and whenIdle() wait for commits, and a failed commit halts the
// session so the stored log stays a prefix a new instance repairs.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { Agent, createAgent, defineTool, StoreError, userMessage, type SessionEvent, type StreamChunk } from '../../src/index.js'
import { memoryStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { controlledStore, plain, until } from './support.js'

const quiet = { error: () => {} }

/** A long streamed answer: one chunk per word. */
function streamed(words: number): StreamChunk[] {
  const chunks: StreamChunk[] = [{ type: 'block-start', index: 0, blockType: 'text' }]
  for (let i = 0; i < words; i++) chunks.push({ type: 'text-delta', index: 0, text: `w${i} ` })
  chunks.push({ type: 'finish', reason: { kind: 'stop' } })
  return chunks
}

describe('outside work waits for its commits', () => {
  it('RS-8: the model request is dispatched only once every event before it is committed', async () => {
    const control = controlledStore('manual')
    const model = scriptedModel([textResponse('hi')])
    const agent = await createAgent({ model, store: control.store, sessionId: 's', logger: quiet })
    agent.followup(userMessage('hello'))
    const commit = await control.nextCommit()
    expect(commit.events.map((e) => e.type)).toEqual([
      'agent/inbox/spliced',
      'turn/start',
      'agent/inbox/spliced',
      'step/start',
      'user/message',
      'request/header',
      'request/context',
    ])
    expect(model.requests).toHaveLength(0)
    expect(agent.committedLength).toBe(0)
    control.mode = 'auto'
    commit.resolve()
    await until(() => model.requests.length === 1, 5000, 'the request')
    expect(agent.committedLength).toBe(7)
    await agent.whenIdle()
    expect(plain(await control.store.load('s'))).toEqual(plain(agent.session.events))
    await agent.dispose()
  })

  for (const mode of ['auto', 'sync'] as const) {
    it(`RS-8: hooks with listeners, the model, tool bodies and jobs all see a committed log (${mode} commits)`, async () => {
      const control = controlledStore(mode)
      control.delayMs = 2
      const seen: string[] = []
      let agent!: Agent
      const check = (what: string) => {
        seen.push(what)
        expect(agent.committedLength, what).toBe(agent.session.length)
      }
      const probe = defineTool({
        name: 'probe',
        description: 'checks durability',
        input: z.object({}),
        executionMode: 'parallel',
        execute: () => (check('tool'), 'ok'),
      })
      const model = scriptedModel([
        () => (
          check('model'),
          toolCallResponse([
            { id: 'c1', name: 'probe', arguments: '{}' },
            { id: 'c2', name: 'probe', arguments: '{}' },
          ])
        ),
        () => (check('model'), textResponse('done')),
      ])
      agent = await createAgent({ model, store: control.store, sessionId: 's', tools: [probe], logger: quiet })
      agent.on('agent/pre-step', (_p, next) => (check('pre-step'), next()))
      agent.on('agent/request', (_p, next) => (check('request'), next()))
      agent.on('tools/pre-execute', (_p, next) => (check('pre-execute'), next()))
      agent.on('tools/post-execute', (_p, next) => (check('post-execute'), next()))
      agent.on('agent/turn-stopping', () => check('turn-stopping'))
      agent.followup('go')
      await agent.whenIdle()
      agent.inject('more context')
      expect(await agent.runMaintenance(async () => (check('job'), 42))).toBe(42)
      expect(new Set(seen)).toEqual(new Set(['pre-step', 'request', 'model', 'pre-execute', 'tool', 'post-execute', 'turn-stopping', 'job']))
      expect(plain(await control.store.load('s'))).toEqual(plain(agent.session.events))
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      await agent.dispose()
    })
  }

  it("a step's chunks are committed together, with the step's end", async () => {
    const control = controlledStore('auto')
    const agent = await createAgent({ model: scriptedModel([streamed(40)]), store: control.store, sessionId: 's', logger: quiet })
    agent.followup('talk')
    await agent.whenIdle()
    const withChunks = control.batches.filter((b) => b.events.some((e) => e.type === 'assistant/chunk'))
    expect(withChunks).toHaveLength(1)
    expect(withChunks[0].events.filter((e) => e.type === 'assistant/chunk')).toHaveLength(42)
    expect(withChunks[0].events.map((e) => e.type)).toContain('step/end')
    expect(control.batches.every((b) => b.outcome === 'committed')).toBe(true)
    await agent.dispose()
  })

  it('a long stream is committed in the background once enough events wait', async () => {
    // a synchronous store (SQLite) commits each full batch on the spot; an async one keeps one commit in flight
    const control = controlledStore('sync')
    const agent = await createAgent({
      model: scriptedModel([streamed(100)]),
      store: control.store,
      sessionId: 's',
      commits: { maxEvents: 16 },
      logger: quiet,
    })
    agent.followup('talk')
    await agent.whenIdle()
    const withChunks = control.batches.filter((b) => b.events.some((e) => e.type === 'assistant/chunk'))
    expect(withChunks.length).toBeGreaterThan(3)
    expect(plain(await control.store.load('s'))).toEqual(plain(agent.session.events))
    await agent.dispose()
  })

  it('a slow stream is committed in the background while it runs (age threshold)', async () => {
    const control = controlledStore('auto')
    async function* slowly(): AsyncGenerator<StreamChunk> {
      for (const chunk of streamed(6)) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        yield chunk
      }
    }
    const agent = await createAgent({ model: scriptedModel([() => slowly()]), store: control.store, sessionId: 's', logger: quiet })
    agent.followup('talk')
    await agent.whenIdle()
    const withChunks = control.batches.filter((b) => b.events.some((e) => e.type === 'assistant/chunk'))
    expect(withChunks.length).toBeGreaterThan(2)
    expect(plain(await control.store.load('s'))).toEqual(plain(agent.session.events))
    await agent.dispose()
  })

  it('flush() and whenIdle() resolve only once the store holds everything appended', async () => {
    const control = controlledStore('auto')
    control.delayMs = 15
    const agent = await createAgent({ model: scriptedModel([textResponse('a')]), store: control.store, sessionId: 's', logger: quiet })
    agent.inject('context')
    expect(agent.committedLength).toBe(0)
    await agent.flush()
    expect(agent.committedLength).toBe(1)
    expect(await control.store.load('s')).toHaveLength(1)
    agent.followup('go')
    await agent.whenIdle()
    expect(agent.committedLength).toBe(agent.session.length)
    expect(plain(await control.store.load('s'))).toEqual(plain(agent.session.events))
    await agent.dispose()
  })

  it('run() resolves once the turn it reports on is committed: its result is an acknowledgement', async () => {
    const control = controlledStore('auto')
    control.delayMs = 15
    const model = scriptedModel([textResponse('a'), textResponse('b')])
    const agent = await createAgent({ model, store: control.store, sessionId: 's', logger: quiet })
    const first = await agent.run('go')
    expect(first.end).toEqual({ kind: 'completed' })
    const turnEnd = agent.session.events.findLast((e) => e.type === 'turn/end')!
    expect(agent.committedLength).toBeGreaterThan(turnEnd.seq)
    expect((await control.store.load('s'))?.at(turnEnd.seq)).toMatchObject({ type: 'turn/end', data: { turn: first.turn } })
    // a failing store halts the session (the turn ends error); run() still resolves, with that result
    control.failWith = new Error('disk full')
    const second = await agent.run('again')
    expect(second.end.kind).toBe('error')
    await expect(agent.flush()).rejects.toBeInstanceOf(StoreError)
    await agent.dispose()
  })

  it('compact() resolves once the summary and its record are committed', async () => {
    const control = controlledStore('auto')
    control.delayMs = 15
    const answers = ['one', 'two', 'three'].map((n) => textResponse(`answer ${n} `.padEnd(200, 'x')))
    const agent = await createAgent({
      model: scriptedModel(answers),
      store: control.store,
      sessionId: 's',
      logger: quiet,
      compaction: { contextWindow: 400, auto: false, summarise: () => 'the user asked three questions' },
    })
    for (const question of ['one', 'two', 'three']) await agent.run(question)
    const result = await agent.compact()
    expect(result.compacted).toBe(true)
    const record = agent.session.events.findLast((e) => e.type === 'compaction/completed')!
    expect(agent.committedLength).toBeGreaterThan(record.seq)
    expect((await control.store.load('s'))?.at(record.seq)).toMatchObject({ type: 'compaction/completed' })
    await agent.dispose()
  })

  it('session/committed reports each commit with the number of durable events', async () => {
    const control = controlledStore('auto')
    const agent = await createAgent({ model: scriptedModel([textResponse('a')]), store: control.store, sessionId: 's', logger: quiet })
    const lengths: number[] = []
    agent.on('session/committed', ({ length }) => lengths.push(length))
    agent.followup('go')
    await agent.whenIdle()
    expect(lengths.length).toBeGreaterThan(0)
    expect(lengths).toEqual([...lengths].sort((a, b) => a - b))
    expect(lengths.at(-1)).toBe(agent.session.length)
    await agent.dispose()
  })
})

describe('a failed commit', () => {
  /** Runs one tool turn whose second commit (the one the tool body waits for) fails. */
  async function failSecondCommit(mode: 'manual' | 'sync') {
    const control = controlledStore(mode)
    let ran = 0
    const tool = defineTool({ name: 't', description: 't', input: z.object({}), execute: () => (ran++, 'ran') })
    const script: ScriptEntry[] = [toolCallResponse([{ id: 'c1', name: 't', arguments: '{}' }]), textResponse('after')]
    const agent = await createAgent({ model: scriptedModel(script), store: control.store, sessionId: 's', tools: [tool], logger: quiet })
    const errors: unknown[] = []
    agent.on('agent/error', ({ error }) => void errors.push(error))
    const failure = new Error('disk full')
    if (mode === 'sync') {
      // the first commit goes through, every later one fails
      agent.on('session/committed', () => void (control.failWith = failure))
      agent.followup('go')
    } else {
      agent.followup('go')
      ;(await control.nextCommit()).resolve()
      const second = await control.nextCommit()
      expect(second.events.at(-1)?.type).toBe('tool/call')
      second.reject(failure)
    }
    await agent.whenIdle()
    return { control, agent, errors, ran: () => ran, failure }
  }

  for (const mode of ['manual', 'sync'] as const) {
    it(`RS-8: halts the session: the work waiting for it never starts, agent/error reports it, the store keeps what it acknowledged (${mode === 'sync' ? 'synchronous' : 'asynchronous'} store)`, async () => {
      const { control, agent, errors, ran, failure } = await failSecondCommit(mode)
      expect(ran()).toBe(0)
      expect(agent.status).toBe('idle')
      expect(errors.length).toBeGreaterThan(0)
      expect(errors[0]).toBeInstanceOf(StoreError)
      expect((errors[0] as StoreError).code).toBe('STORE_FAULT')
      expect((errors[0] as StoreError).cause).toBe(failure)
      expect(agent.session.halted).toBe(errors[0])
      // acknowledged = committed: exactly the first batch, identical to the log's prefix
      const stored = (await control.store.load('s')) as SessionEvent[]
      expect(stored).toHaveLength(control.batches[0].events.length)
      expect(agent.committedLength).toBe(stored.length)
      expect(plain(stored)).toEqual(plain(agent.session.events.slice(0, stored.length)))
      // IN-7: a send whose durable append fails throws and changes nothing
      const before = agent.session.length
      expect(() => agent.followup('again')).toThrow(StoreError)
      expect(agent.session.length).toBe(before)
      await expect(agent.flush()).rejects.toBeInstanceOf(StoreError)
      await agent.dispose()
    })
  }

  it('leaves a prefix the next instance repairs and continues', async () => {
    const { control, agent } = await failSecondCommit('manual')
    const stored = (await control.store.load('s'))!.length
    await agent.dispose()
    control.mode = 'auto'
    const next = await createAgent({ model: scriptedModel([textResponse('back')]), store: control.store, sessionId: 's', logger: quiet })
    const types = next.session.events.slice(stored).map((e) => e.type)
    expect(types).toEqual(['session/end-seed', 'step/end', 'turn/end'])
    expect(next.session.events.at(-1)?.data).toEqual({ turn: 1, reason: { kind: 'interrupted' } })
    next.followup('again')
    await next.whenIdle()
    expect(next.session.events.findLast((e) => e.type === 'turn/end')?.data).toEqual({ turn: 2, reason: { kind: 'completed' } })
    expect(checkSessionInvariants(next.session.events)).toEqual([])
    expect(plain(await control.store.load('s'))).toEqual(plain(next.session.events))
    await next.dispose()
  })

  it('fails a maintenance job that was waiting for it, and runMaintenance rejects with the fault', async () => {
    const control = controlledStore('manual')
    const agent = await createAgent({ model: scriptedModel([]), store: control.store, sessionId: 's', logger: quiet })
    agent.inject('context')
    let started = false
    const job = agent.runMaintenance(async () => {
      started = true
      return 1
    })
    ;(await control.nextCommit()).reject(new Error('gone'))
    await expect(job).rejects.toBeInstanceOf(StoreError)
    await agent.whenIdle()
    expect(started).toBe(false)
    expect(agent.status).toBe('idle')
    await agent.dispose()
  })
})

describe('checkpoints over a long history', () => {
  it('RS-8: checkpoints are spaced by at least as many events as the history has nodes, so their pass over it costs the same per event at any length', async () => {
    const store = memoryStore()
    const taken: Array<{ length: number; nodes: number }> = []
    // the store's handle, seen from outside: every checkpoint committed with a batch
    const watched = Object.create(store, {
      open: {
        value: async (id: string, options: unknown) => {
          const handle = await store.open(id, options as never)
          return Object.create(handle, {
            append: {
              value: (batch: readonly SessionEvent[], checkpoint?: { length: number; text: string }) => {
                if (checkpoint) taken.push({ length: checkpoint.length, nodes: (JSON.parse(checkpoint.text) as { surface: number[] }).surface.length })
                return handle.append(batch, checkpoint as never)
              },
            },
          })
        },
      },
    }) as typeof store
    const turns = 400
    const agent = await createAgent({
      model: scriptedModel(Array.from({ length: turns }, (_, i) => textResponse(`answer ${i}`))),
      store: watched,
      sessionId: 'long',
    })
    for (let i = 0; i < turns; i++) await agent.run(`question ${i}`)
    await agent.dispose()
    expect(taken.at(-1)!.nodes).toBeGreaterThan(600)
    for (let k = 1; k < taken.length; k++) expect(taken[k].length - taken[k - 1].length).toBeGreaterThanOrEqual(Math.max(256, taken[k - 1].nodes))
  }, 60_000)
})

describe('createAgent over a store', () => {
  it('returns a promise with a store and stays synchronous without one', async () => {
    const plainAgent = createAgent({ model: scriptedModel([]) })
    expect(plainAgent).toBeInstanceOf(Agent)
    const pending = createAgent({ model: scriptedModel([]), store: memoryStore() })
    expect(pending).toBeInstanceOf(Promise)
    const stored = await pending
    expect(stored.sessionId).toMatch(/^[0-9a-f-]{36}$/)
    await Promise.all([plainAgent.dispose(), stored.dispose()])
  })

  it('refuses bad options before the store is touched', async () => {
    const store = memoryStore()
    await expect(createAgent({ model: {} as never, store, sessionId: 'x' })).rejects.toThrow(/ModelAdapter/)
    await expect(createAgent({ model: scriptedModel([]), store, sessionId: 'x', id: 'y' })).rejects.toThrow(/differs/)
    await expect(createAgent({ model: scriptedModel([]), store, sessionId: '' })).rejects.toThrow(/session id/)
    // a lone surrogate would come back from a text column as U+FFFD: listed under an id that opens another session
    await expect(createAgent({ model: scriptedModel([]), store, sessionId: 'chat-\uD83D' })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      path: 'sessionId',
    })
    await expect(store.load('chat-\uDE00-x')).rejects.toThrow(/lone surrogate at 5/)
    expect(await createAgent({ model: scriptedModel([]), store, sessionId: 'chat-\uD83D\uDE00' }).then((a) => a.dispose())).toBeUndefined()
    await expect(createAgent({ model: scriptedModel([]), store, session: {} } as never)).rejects.toThrow(/either a session or a store/)
    expect(() => new Agent({ model: scriptedModel([]), store } as never)).toThrow(/returns a promise/)
    expect((await store.list()).map((s) => s.id)).toEqual(['chat-\uD83D\uDE00'])
  })

  it('RS-8: writes every event from the first, the end-seed and the repair closers included; the id is in the store and on the agent', async () => {
    const store = memoryStore()
    let release!: () => void
    const slow = defineTool({ name: 'slow', description: 's', input: z.object({}), execute: () => new Promise<string>((r) => (release = () => r('x'))) })
    const first = await createAgent({
      model: scriptedModel([toolCallResponse([{ id: 'a', name: 'slow', arguments: '{}' }])]),
      store,
      sessionId: 'chat-1',
      tools: [slow],
      logger: quiet,
    })
    expect(first.sessionId).toBe('chat-1')
    expect(first.id).toBe('chat-1')
    expect(first.store).toBe(store)
    first.followup('go')
    await until(() => release !== undefined, 5000, 'the tool body')
    // the process "dies" here: what the store holds is what a new process finds
    const crashed = (await store.load('chat-1'))!
    expect(crashed.at(-1)).toMatchObject({ type: 'tool/call' })
    const handle = (await store.list())[0]
    expect(handle).toMatchObject({ id: 'chat-1', length: crashed.length })
    // a new process opens it once the old lease is gone (released here; lapsed after a real crash)
    first.cancel()
    release()
    await first.whenIdle()
    const copy = memoryStore()
    const raw = await copy.open('chat-1')
    raw.append(crashed as SessionEvent[])
    await raw.release()
    const resumed = await createAgent({ model: scriptedModel([textResponse('ok')]), store: copy, sessionId: 'chat-1', logger: quiet })
    const stored = (await copy.load('chat-1'))!
    expect(stored.slice(crashed.length).map((e) => (e as SessionEvent).type)).toEqual(['session/end-seed', 'tool/result', 'step/end', 'turn/end'])
    expect(plain(stored)).toEqual(plain(resumed.session.events))
    expect(checkSessionInvariants(resumed.session.events)).toEqual([])
    await Promise.all([first.dispose(), resumed.dispose()])
  })
})

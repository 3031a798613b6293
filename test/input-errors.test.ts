// Bad input at the everyday entry points gets a typed error naming what was
// wrong (house rule), instead of a bare TypeError, a listener that silently
// never runs, or an agent that breaks later; and what a waterfall listener
// returning nothing means, as docs/api.md says.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, createAgent, createSession, defineTool, forkSession, InboxError, retryPolicy, userMessage } from '../src/index.js'
import { agentMachine } from '../src/machines/index.js'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { memoryStore, sqliteStore } from '../src/stores/index.js'
import {
  checkSessionInvariants,
  errorResponse,
  maxTokensResponse,
  reasoningResponse,
  scriptedModel,
  textResponse,
  toolCallResponse,
} from '../src/testing/index.js'

describe('userMessage', () => {
  it.each([
    ['a number', 42],
    ['undefined', undefined],
    ['null', null],
    ['an object', { text: 'hi' }],
  ])('refuses %s as its content with InboxError INVALID_MESSAGE at message.content', (_name, content) => {
    const call = () => userMessage(content as never)
    expect(call).toThrow(InboxError)
    expect(call).toThrow(/message\.content: expected a text or an array of content blocks/)
    try {
      call()
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_MESSAGE', path: 'message.content' })
    }
  })

  it('refuses options that are not an object, naming them', () => {
    expect(() => userMessage('hi', null as never)).toThrow(InboxError)
    expect(() => userMessage('hi', 'm1' as never)).toThrow(/options must be an object/)
  })

  it('still builds texts and block arrays', () => {
    expect(userMessage('hi', { id: 'm1' })).toEqual({ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } })
    expect(userMessage([{ type: 'text', text: 'a' }], { id: 'm2' }).content).toEqual([{ type: 'text', text: 'a' }])
  })
})

describe('agent.on', () => {
  it('refuses a name that is no extension point or notification, listing the names, and registers nothing', async () => {
    const agent = createAgent({ model: scriptedModel([textResponse('ok')]) })
    for (const name of ['agent/prestep', 'session/created', '', 7]) {
      const call = () => agent.on(name as never, (() => undefined) as never)
      expect(call).toThrow(ConfigError)
      expect(call).toThrow(/unknown listener name .*agent\/pre-step, .*session\/committed/)
    }
    // the agent is untouched and serves as usual
    const result = await agent.run('hello')
    expect(result.end).toEqual({ kind: 'completed' })
    await agent.dispose()
  })

  it('accepts every documented name and returns a disposer', async () => {
    const agent = createAgent({ model: scriptedModel([textResponse('ok')]) })
    const seen: string[] = []
    const names = [
      'agent/pre-step',
      'agent/request',
      'agent/request-error',
      'agent/turn-stopping',
      'system-prompt/assemble',
      'llm/stream',
      'tools/execute',
      'tools/pre-execute',
      'tools/post-execute',
      'tools/result',
      'tools/approval-requested',
      'agent/status',
      'agent/inbox/inserted',
      'agent/inbox/discarded',
      'agent/inbox/claimed',
      'agent/error',
      'agent/session-start',
      'session/event',
      'session/committed',
    ] as const
    const disposers = names.map((name) => agent.on(name, (() => void seen.push(name)) as never))
    for (const dispose of disposers) expect(typeof dispose).toBe('function')
    agent.on('agent/status', ({ status }) => void seen.push(`status ${status}`))
    for (const dispose of disposers) dispose()
    await agent.run('hello')
    expect(seen).toEqual(['status running', 'status idle'])
    await agent.dispose()
  })
})

describe('agent.send and inbox.splice', () => {
  it('name a bad target with a ConfigError even when the value cannot be turned into a string', () => {
    const agent = createAgent({ model: scriptedModel([]) })
    const hostile = {
      toString: () => {
        throw new Error('no string for you')
      },
    }
    for (const target of ['nextturn', hostile, Symbol('t')]) {
      expect(() => agent.send('hi', target as never, true)).toThrow(ConfigError)
      expect(() => agent.inbox.splice(target as never, 0, 0, 'hi')).toThrow(/target must be 'next-turn' or 'next-step', got /)
    }
    expect(agent.session.events).toEqual([])
    expect(agent.status).toBe('idle')
  })
})

describe('createAgent options', () => {
  it.each([
    ['tools that are not an array', { tools: 'search' }, 'tools', /tools must be an array of tools made by defineTool/],
    ['a tool that is not one', { tools: [null] }, 'tools.0', /tools\[0\] must be a tool made by defineTool, got null/],
    ['an inspect that is neither a function nor an observer', { inspect: 5 }, 'inspect', /inspect must be a function or an observer/],
    ['an observer whose next is not a function', { inspect: { next: 'log' } }, 'inspect', /inspect must be a function or an observer/],
    ['a logger without error()', { logger: 5 }, 'logger', /logger must be an object with an error\(message, error\) method/],
    ['a machine that is not a state machine', { machine: {} }, 'machine', /machine must be agentMachine or a variant/],
    ['approvals that is not a boolean', { approvals: 'yes' }, 'approvals', /approvals must be true or false/],
    [
      'a stored log given as the session',
      { session: [] },
      'session',
      /session must be a Session \(a stored log becomes one with createSession\(\{ seed: events \}\)\)/,
    ],
    ['an agent given as the session', { session: createAgent({ model: scriptedModel([]) }) }, 'session', /session must be a Session/],
    [
      'a model adapter whose provider is not a string',
      { model: Object.assign(scriptedModel([]), { provider: 42 }) },
      'model.provider',
      /model.provider must be a string, got 42/,
    ],
    [
      'a model adapter whose model is not a string',
      { model: Object.assign(scriptedModel([]), { model: null }) },
      'model.model',
      /model.model must be a string, got null/,
    ],
  ])('refuse %s with a ConfigError naming the option', (_name, bad, path, message) => {
    const create = () => createAgent({ model: scriptedModel([]), ...bad } as never)
    expect(create).toThrow(ConfigError)
    expect(create).toThrow(message)
    try {
      create()
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_CONFIG', path })
    }
  })

  it('still take what the docs describe: an observer, a logger, approvals and the stock machine', async () => {
    const seen: string[] = []
    const agent = createAgent({
      model: scriptedModel([textResponse('ok')]),
      inspect: { next: (event) => void seen.push(event.type) },
      logger: { error: () => undefined },
      approvals: false,
      machine: agentMachine,
      tools: [],
    })
    expect((await agent.run('hello')).end).toEqual({ kind: 'completed' })
    expect(seen).toContain('@xstate.event')
    await agent.dispose()
  })
})

describe('the response helpers of agentchart/testing', () => {
  it.each([
    ['textResponse(42)', () => textResponse(42 as never), /textResponse: text must be a string, got 42/],
    ['maxTokensResponse(undefined)', () => maxTokensResponse(undefined as never), /maxTokensResponse: text must be a string/],
    ['reasoningResponse(null, ...)', () => reasoningResponse(null as never, 'x'), /reasoningResponse: reasoning must be a string/],
    ['toolCallResponse(calls not an array)', () => toolCallResponse({ id: 'c1' } as never), /calls must be an array of \{ id, name, arguments \}/],
    ['toolCallResponse([{}])', () => toolCallResponse([{}] as never), /calls\[0\]\.id must be a string/],
    [
      'toolCallResponse with object arguments',
      () => toolCallResponse([{ id: 'c1', name: 'add', arguments: { a: 1 } }] as never),
      /calls\[0\]\.arguments must be a string \(the raw JSON text the model sent: JSON\.stringify it\)/,
    ],
  ])('%s throws a ConfigError saying what is wrong', (_name, call, message) => {
    expect(call).toThrow(ConfigError)
    expect(call).toThrow(message)
  })

  it('still build the documented streams', () => {
    expect(toolCallResponse([{ id: 'c1', name: 'add', arguments: '{}' }]).at(-1)).toEqual({ type: 'finish', reason: { kind: 'tool-calls' } })
    expect(textResponse('').map((c) => c.type)).toEqual(['finish'])
  })
})

describe('a waterfall listener that returns nothing', () => {
  it('is an answer, not "carry on": pre-step ends the turn error, pre-execute makes the call an error result', async () => {
    const preStep = createAgent({ model: scriptedModel([textResponse('ok')]), logger: { error: () => undefined } })
    preStep.on('agent/pre-step', (() => undefined) as never)
    const blocked = await preStep.run('hello')
    expect(blocked.end).toMatchObject({ kind: 'error', error: { message: expect.stringMatching(/agent\/pre-step must return/) as unknown } })
    await preStep.dispose()

    const tool = defineTool({ name: 't', description: 'a tool', input: z.object({}), execute: () => 'ran' })
    const model = scriptedModel([toolCallResponse([{ id: 'c1', name: 't', arguments: '{}' }]), textResponse('done')])
    const preExecute = createAgent({ model, tools: [tool], logger: { error: () => undefined } })
    preExecute.on('tools/pre-execute', (() => undefined) as never)
    expect((await preExecute.run('go')).end).toEqual({ kind: 'completed' })
    const result = preExecute.session.events.find((e) => e.type === 'tool/result')
    expect(result?.type === 'tool/result' && result.data.message.content[0]).toMatchObject({
      isError: true,
      content: expect.stringMatching(/tools\/pre-execute must return/) as unknown,
    })
    await preExecute.dispose()
  })
})

describe('forkSession', () => {
  it('refuses what is not a Session with a ConfigError pointing an agent at agent.fork (it used to say the store had failed)', async () => {
    const agent = createAgent({ model: scriptedModel([textResponse('ok')]) })
    await agent.run('hello')
    for (const parent of [agent, 5, null, { id: 'x', events: [] }]) {
      const fork = () => forkSession(parent as never, { upTo: 0 })
      expect(fork).toThrow(ConfigError)
      expect(fork).toThrow(/forkSession needs a Session \(for an agent: agent\.fork\(\{ upTo \}\) or forkSession\(agent\.session, \.\.\.\)\)/)
    }
    const last = agent.session.events.at(-1)!.seq
    expect(forkSession(agent.session, { upTo: last }).events).toHaveLength(last + 2)
    await agent.dispose()
  })
})

describe('a -0 where the log records a count', () => {
  it('is read as 0 (as JSON writes it) in a retry delay, a splice start and a fork point, so the log reopens as written', async () => {
    const model = scriptedModel([errorResponse({ message: 'busy', code: 'RATE_LIMITED' }), textResponse('ok')])
    const agent = createAgent({ model, logger: { error: () => {} } })
    agent.on('agent/request-error', () => ({ kind: 'retry', delayMs: -0 }))
    await expect(agent.run('hi')).resolves.toMatchObject({ end: { kind: 'completed' } })
    agent.inbox.splice('next-turn', -0, 0, 'later')
    const logged = agent.session.events
      .filter((e) => e.type === 'llm/retry' || e.type === 'agent/inbox/spliced')
      .map((e) => e.data as { delayMs?: number; start?: number })
    expect(logged.map((d) => d.delayMs ?? d.start).every((n) => Object.is(n, 0))).toBe(true)
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
    expect(() => createSession({ seed: agent.session.events })).not.toThrow()
    const fork = forkSession(agent.session, { upTo: -0 })
    expect(fork.events.at(-1)!.data).toEqual({ fork: { parent: agent.session.id, upTo: 0, seedLength: 2 } })
    expect(() => createSession({ seed: fork.events })).not.toThrow()
    await agent.dispose()
  })
})

describe('store, lease, commit, retry and fork options', () => {
  const model = () => scriptedModel([textResponse('ok')])
  it.each([
    ['a store of null', { store: null }, 'store', /options.store must be a SessionStore, got null/],
    ['commits.maxEvents of 0', { commits: { maxEvents: 0 } }, 'commits.maxEvents', /commits.maxEvents must be a positive integer, got 0/],
    ['commits.maxEvents of NaN', { commits: { maxEvents: Number.NaN } }, 'commits.maxEvents', /got NaN/],
    ['commits.maxDelayMs past a timer', { commits: { maxDelayMs: 1e12 } }, 'commits.maxDelayMs', /from 0 to 2147483647/],
    ['commits that is not an object', { commits: 5 }, 'commits', /commits must be an object/],
    ['a mailbox that is not a boolean', { mailbox: 'no' }, 'mailbox', /mailbox must be true or false/],
    ['a lease past a timer', { lease: { leaseMs: 2 ** 34 } }, 'lease.leaseMs', /lease.leaseMs must be an integer number of milliseconds from 10 to 2147483647/],
  ])('createAgent over a store refuses %s with a ConfigError naming it, before the store is touched', async (_name, bad, path, message) => {
    const store = memoryStore()
    const open = createAgent({ model: model(), store, ...bad } as never) as unknown as Promise<unknown>
    await expect(open).rejects.toThrow(message)
    await expect(open).rejects.toMatchObject({ name: 'ConfigError', path })
    expect(await store.list()).toEqual([])
  })

  it.each([
    [
      'a delay no timer can wait',
      { baseDelayMs: 1e300, maxDelayMs: 1e300 },
      'retry.baseDelayMs',
      /baseDelayMs must be a number of milliseconds from 0 to 2147483647/,
    ],
    ['a misspelt option', { maxRetires: 1 }, 'retry.maxRetires', /unknown option maxRetires; the options are maxRetries, baseDelayMs/],
  ])('the retry policy refuses %s by name', (_name, bad, path, message) => {
    const create = () => createAgent({ model: model(), retry: bad as never })
    expect(create).toThrow(message)
    expect(create).toThrow(expect.objectContaining({ path }))
    // the same policy as a listener names the option itself
    expect(() => retryPolicy(bad as never)).toThrow(expect.objectContaining({ path: path.replace('retry.', '') }))
  })

  it('sqliteStore refuses a busy timeout SQLite cannot take with a ConfigError naming it', () => {
    expect(() => sqliteStore({ path: join(tmpdir(), 'never-opened.db'), busyTimeoutMs: 2 ** 31 })).toThrow(
      expect.objectContaining({ name: 'ConfigError', path: 'busyTimeoutMs', message: expect.stringMatching(/from 0 to 2147483647, got 2147483648/) }),
    )
  })

  it('a retry policy whose random() answers NaN waits no time instead of failing the turn', async () => {
    const agent = createAgent({
      model: scriptedModel([errorResponse({ message: 'busy', code: 'RATE_LIMIT' }), textResponse('ok')]),
      retry: { random: () => Number.NaN },
    })
    await expect(agent.run('hi')).resolves.toMatchObject({ end: { kind: 'completed' } })
    expect(agent.session.events.find((e) => e.type === 'llm/retry')!.data).toMatchObject({ delayMs: 0 })
    await agent.dispose()
  })

  it('forkSession refuses a now that is not a clock, and logs a -0 reading as 0', async () => {
    const agent = createAgent({ model: model() })
    await agent.run('hi')
    const upTo = agent.session.events.at(-1)!.seq
    expect(() => forkSession(agent.session, { upTo, now: 5 as never })).toThrow(expect.objectContaining({ name: 'ConfigError', path: 'now' }))
    expect(() => forkSession(agent.session, { upTo, now: () => Number.NaN })).toThrow(/now must return a finite number of epoch ms, got NaN/)
    const fork = forkSession(agent.session, { upTo, now: () => -0 })
    expect(Object.is(fork.events.at(-1)!.time, 0)).toBe(true)
    expect(() => createSession({ seed: fork.events })).not.toThrow()
    await agent.dispose()
  })
})

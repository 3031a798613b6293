// RQ-14: the retry policy decides, the attempt machine waits. A retry with a
// delay logs llm/retry, waits in its cancellable backoff, logs
// llm/retry-started and runs the next attempt of the same step.
import { describe, expect, it } from 'vitest'
import { openaiModel } from '../../src/adapters/openai.js'
import { createAgent, retryPolicy, type ModelAdapter, type StreamChunk } from '../../src/index.js'
import { memoryStore } from '../../src/stores/index.js'
import { checkSessionInvariants, errorResponse, scriptedModel, textResponse } from '../../src/testing/index.js'
import { delta, finishChunk, sse, startChatServer } from '../adapters/chat-server.js'
import { ofType, scriptedAgent, trace, track } from '../helpers.js'

const server = { message: 'overloaded', code: 'SERVER', status: 503 }

/** A sleep that records what was asked and returns at once (no wall-clock in the assertions). */
function instantSleep() {
  const asked: number[] = []
  return { asked, sleep: async (ms: number) => void asked.push(ms) }
}

describe('RQ-14: the retry policy', () => {
  it('RQ-14: on by default: a retryable failure is retried after its backoff, in the same step, with llm/retry and llm/retry-started logged', async () => {
    const { asked, sleep } = instantSleep()
    const { agent, model } = scriptedAgent([errorResponse(server), textResponse('second time lucky')], { sleep })
    const result = await agent.run('go')
    expect(result).toMatchObject({ end: { kind: 'completed' }, text: 'second time lucky', steps: 1 })
    expect(model.requests).toHaveLength(2)
    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(go)',
      'request/header',
      'request/context',
      'llm/retry',
      'llm/retry-started',
      'assistant/message',
      'step/end{1,1}',
      'turn/end{1,completed}',
    ])
    const [retry] = ofType(agent, 'llm/retry')
    const [started] = ofType(agent, 'llm/retry-started')
    expect(retry.data).toEqual({ turn: 1, step: 1, retryId: expect.any(String), provider: 'scripted', retry: 1, delayMs: asked[0], failure: server })
    expect(started.data).toEqual({ turn: 1, step: 1, retryId: retry.data.retryId, retry: 1 })
    // the default backoff of the first retry is a random share of 1000 ms (full jitter)
    expect(asked).toHaveLength(1)
    expect(asked[0]).toBeGreaterThanOrEqual(0)
    expect(asked[0]).toBeLessThan(1000)
  })

  it('RQ-14: a 429 then a 200 from the provider: one retry after the Retry-After it asked for, one step, policy on by default', async () => {
    let calls = 0
    const provider = await startChatServer(() =>
      ++calls === 1
        ? { kind: 'status', status: 429, body: { error: { message: 'slow down', type: 'rate_limit' } }, headers: { 'retry-after': '2' } }
        : sse(delta({ content: 'fine now' }), finishChunk('stop')),
    )
    try {
      const { asked, sleep } = instantSleep()
      const agent = track(createAgent({ model: openaiModel({ model: 'm', baseURL: provider.baseURL }), sleep, logger: { error: () => {} } }))
      const result = await agent.run('hello')
      expect(result).toMatchObject({ end: { kind: 'completed' }, text: 'fine now', steps: 1 })
      expect(provider.received.map((r) => r.status)).toEqual([429, 200])
      expect(asked).toEqual([2000])
      const [retry] = ofType(agent, 'llm/retry')
      expect(retry.data).toMatchObject({ retry: 1, delayMs: 2000, failure: { code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 2000 } })
      expect(ofType(agent, 'step/start')).toHaveLength(1)
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
    } finally {
      await provider.close()
    }
  })

  it('RQ-14: with the real timer the backoff is waited out, and the retry then runs', async () => {
    const { agent, model } = scriptedAgent([errorResponse({ ...server, providerRetryAfterMs: 20 }), textResponse('ok')])
    expect((await agent.run('go')).end).toEqual({ kind: 'completed' })
    expect(model.requests).toHaveLength(2)
    expect(ofType(agent, 'llm/retry')[0].data.delayMs).toBe(20)
  })

  it('RQ-12: a cancel during the backoff ends the turn aborted at once: no retry-started, no further request', async () => {
    // a minute-long backoff on the real timer: the turn can only settle if the cancel ends the wait
    const { agent, model } = scriptedAgent([errorResponse({ ...server, providerRetryAfterMs: 60_000 }), textResponse('never')])
    agent.on('session/event', ({ event }) => {
      if (event.type === 'llm/retry') queueMicrotask(() => agent.cancel({ kind: 'hook', reason: 'no waiting' }))
    })
    const result = await agent.run('go')
    expect(result.end).toEqual({ kind: 'aborted', reason: { kind: 'hook', reason: 'no waiting' } })
    expect(model.requests).toHaveLength(1)
    expect(trace(agent).slice(-4)).toEqual(['request/context', 'llm/retry', 'step/end{1,1}', 'turn/end{1,aborted}'])
  })

  it('RQ-14: retries stop after maxRetries; each failure is offered with its attempt number, retries count 1, 2', async () => {
    const { sleep } = instantSleep()
    const attempts: number[] = []
    const { agent, model } = scriptedAgent([errorResponse(server), errorResponse(server), errorResponse(server), textResponse('too late')], {
      sleep,
      retry: { maxRetries: 2 },
    })
    agent.on('agent/request-error', async ({ attempt }, next) => {
      attempts.push(attempt)
      return next() // the policy decides
    })
    const result = await agent.run('go')
    expect(result.end).toEqual({ kind: 'error', error: server })
    expect(model.requests).toHaveLength(3)
    expect(attempts).toEqual([1, 2, 3])
    expect(ofType(agent, 'llm/retry').map((e) => e.data.retry)).toEqual([1, 2])
    expect(ofType(agent, 'llm/retry-started').map((e) => e.data.retry)).toEqual([1, 2])
  })

  it('RQ-14: codes outside the retryable set are not retried; retry: false turns the policy off', async () => {
    const quota = { message: 'no credit', code: 'QUOTA', status: 402 }
    const first = scriptedAgent([errorResponse(quota)]).agent
    expect((await first.run('go')).end).toEqual({ kind: 'error', error: quota })
    const off = scriptedAgent([errorResponse(server)], { retry: false }).agent
    expect((await off.run('go')).end).toEqual({ kind: 'error', error: server })
    expect(ofType(off, 'llm/retry')).toEqual([])
  })

  it('RQ-10: a listener returning a plain {kind: "retry"} still retries at once, with no backoff events', async () => {
    const { asked, sleep } = instantSleep()
    const { agent, model } = scriptedAgent([errorResponse(server), textResponse('ok')], { sleep })
    agent.on('agent/request-error', () => ({ kind: 'retry' }))
    expect((await agent.run('go')).end).toEqual({ kind: 'completed' })
    expect(model.requests).toHaveLength(2)
    expect(asked).toEqual([])
    expect(ofType(agent, 'llm/retry')).toEqual([])
  })

  it('RQ-14: a listener may name its own delay, or give up before the policy; a bad delay ends the turn error', async () => {
    const { asked, sleep } = instantSleep()
    const own = scriptedAgent([errorResponse(server), textResponse('ok')], { sleep }).agent
    own.on('agent/request-error', () => ({ kind: 'retry', delayMs: 250.4 }))
    expect((await own.run('go')).end).toEqual({ kind: 'completed' })
    expect(asked).toEqual([250])
    expect(ofType(own, 'llm/retry')[0].data.delayMs).toBe(250)

    const giveUp = scriptedAgent([errorResponse(server)], { sleep }).agent
    giveUp.on('agent/request-error', () => undefined)
    expect((await giveUp.run('go')).end).toEqual({ kind: 'error', error: server })

    const bad = scriptedAgent([errorResponse(server)], { sleep }).agent
    bad.on('agent/request-error', () => ({ kind: 'retry', delayMs: -1 }))
    const result = await bad.run('go')
    expect(result.end.kind === 'error' && result.end.error.message).toMatch(/delayMs must be a number of milliseconds/)
  })

  it('RQ-14: retryPolicy() is also a ready listener, e.g. a stricter policy for one agent with the default off', async () => {
    const { asked, sleep } = instantSleep()
    const chunks: StreamChunk[] = errorResponse({ message: 'busy', code: 'RATE_LIMIT' })
    const { agent } = scriptedAgent([chunks, textResponse('ok')], { sleep, retry: false })
    agent.on('agent/request-error', retryPolicy({ maxRetries: 1, baseDelayMs: 100, random: () => 0.5 }))
    expect((await agent.run('go')).end).toEqual({ kind: 'completed' })
    expect(asked).toEqual([50])
  })

  it('RQ-14: a sleep that throws is logged and the retry starts without its wait: the turn never hangs in backoff', async () => {
    const logged: unknown[] = []
    const { agent, model } = scriptedAgent([errorResponse(server), textResponse('ok')], {
      sleep: () => Promise.reject(new Error('clock broke')),
      logger: { error: (_message, error) => logged.push(error) },
    })
    expect((await agent.run('go')).end).toEqual({ kind: 'completed' })
    expect(model.requests).toHaveLength(2)
    expect(logged).toEqual([new Error('clock broke')])
    expect(trace(agent).filter((t) => t.startsWith('llm/'))).toEqual(['llm/retry', 'llm/retry-started'])
  })

  it('RQ-14: over a store, the retried request starts only once llm/retry and llm/retry-started are committed', async () => {
    const { sleep } = instantSleep()
    const scripted = scriptedModel([errorResponse(server), textResponse('ok')])
    const committedAtRequest: Array<[number, number]> = []
    let agent!: Awaited<ReturnType<typeof createAgent>>
    const model: ModelAdapter = {
      provider: scripted.provider,
      model: scripted.model,
      stream: (request) => {
        committedAtRequest.push([agent.committedLength, agent.session.length])
        return scripted.stream(request)
      },
    }
    const store = memoryStore()
    agent = await createAgent({ model, store, sessionId: 'retry', sleep, logger: { error: () => {} } })
    try {
      expect((await agent.run('go')).end).toEqual({ kind: 'completed' })
      expect(committedAtRequest).toHaveLength(2)
      for (const [committed, length] of committedAtRequest) expect(committed).toBe(length)
      await agent.flush() // run() resolves at turn/end; the tail commits in the background
      const stored = JSON.parse(JSON.stringify((await store.load('retry')) ?? [])) as unknown
      expect(stored).toEqual(JSON.parse(JSON.stringify(agent.session.events)))
      expect(trace(agent).filter((t) => t.startsWith('llm/'))).toEqual(['llm/retry', 'llm/retry-started'])
    } finally {
      await agent.dispose()
    }
  })

  it('RQ-14: bad retry options fail createAgent', () => {
    expect(() => scriptedAgent([], { retry: { maxRetries: -1 } })).toThrow(/maxRetries/)
    expect(() => scriptedAgent([], { retry: 'yes' as never })).toThrow(/retry must be false or retry policy options/)
    expect(() => scriptedAgent([], { sleep: 5 as never })).toThrow(/sleep must be a function/)
  })
})

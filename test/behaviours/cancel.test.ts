// CX — cancellation: the cause, the inbox, the wake latch, disposal, and
// every point where a cancel can land (listeners, observers, mid-stream,
// tool bodies). Only the public API is used.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  ConfigError,
  defineTool,
  userMessage,
  type Agent,
  type AgentCancelCause,
  type SessionEvent,
  type StreamChunk,
  type TurnEndReason,
} from '../../src/index.js'
import { checkSessionInvariants, errorResponse, hang, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { ofType, record, scriptedAgent, textOf, tick, trace } from '../helpers.js'

// ---- local plumbing -----------------------------------------------------------

/** Resolves once the signal is aborted (a cooperative listener or tool). */
function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}

/** Poll (across macrotasks) until `condition` holds; fails the test if it never does. */
async function until(condition: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return
    await tick()
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** A promise with its resolve handle, for gates the test opens. */
function gate<T = void>() {
  let open!: (value: T) => void
  const promise = new Promise<T>((resolve) => (open = resolve))
  return { promise, open }
}

const ends = (agent: Agent): TurnEndReason[] =>
  agent.session.events.filter((e): e is Extract<SessionEvent, { type: 'turn/end' }> => e.type === 'turn/end').map((e) => e.data.reason)

const prompts = (agent: Agent) => ofType(agent, 'user/message').map((e) => e.data.id)

/** Record agent/error notifications (cancellation must never produce one). */
function errors(agent: Agent): unknown[] {
  const seen: unknown[] = []
  agent.on('agent/error', (p) => void seen.push(p.error))
  return seen
}

/** A tool whose body waits until the test releases it, ignoring the signal (a slow abort). */
function slowTool(release: Promise<void>, seen: { signal?: AbortSignal } = {}) {
  return defineTool({
    name: 'slow',
    description: 'waits for the test',
    input: z.object({}),
    execute: async (_args, { signal }) => {
      seen.signal = signal
      await release
      return 'slow done'
    },
  })
}

const callSlow = toolCallResponse([{ id: 'c1', name: 'slow', arguments: '{}' }])

/** A streamed answer that delivers `chunks` and then waits for the abort. */
const streamThenHang =
  (chunks: StreamChunk[]): ScriptEntry =>
  (request) =>
    (async function* () {
      for (const chunk of chunks) yield chunk
      await untilAborted(request.signal)
    })()

// ---- CX-1 .. CX-5: causes, first cause wins, the inbox, idle cancel --------------

describe('CX-1: the cause aborts the activity signal verbatim', () => {
  const causes: AgentCancelCause[] = [{ kind: 'user' }, { kind: 'parent' }, { kind: 'hook', reason: 'budget exceeded' }]
  for (const cause of causes) {
    it(`CX-1: cancel(${JSON.stringify(cause)}) aborts the live signal with that exact object`, async () => {
      const { agent, model } = scriptedAgent([hang])
      agent.followup('hi')
      await until(() => model.requests.length === 1, 'the model request')
      const signal = model.requests[0].signal
      expect(signal.aborted).toBe(false)
      agent.cancel(cause)
      expect(signal.aborted).toBe(true)
      expect(signal.reason).toBe(cause)
      await agent.whenIdle()
      expect(ends(agent)).toEqual([{ kind: 'aborted', reason: cause }])
    })
  }

  it('CX-1: the log records the cause as it was when cancel() checked it: changing the object afterwards changes nothing logged', async () => {
    const { agent, model } = scriptedAgent([hang])
    agent.followup('hi')
    await until(() => model.requests.length === 1, 'the model request')
    const cause = { kind: 'hook' as const, reason: 'budget exceeded' }
    agent.cancel(cause)
    cause.reason = 'rewritten later'
    expect(model.requests[0].signal.reason).toBe(cause)
    await agent.whenIdle()
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'budget exceeded' } }])
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('CX-1: cancel() defaults to the user cause; disposal aborts with {kind:"disposed"}', async () => {
    const { agent, model } = scriptedAgent([hang, hang])
    agent.followup('one')
    await until(() => model.requests.length === 1)
    agent.cancel()
    expect(model.requests[0].signal.reason).toEqual({ kind: 'user' })
    await agent.whenIdle()
    agent.followup('two')
    await until(() => model.requests.length === 2)
    await agent.dispose()
    expect(model.requests[1].signal.reason).toEqual({ kind: 'disposed' })
    expect(ends(agent)).toEqual([
      { kind: 'aborted', reason: { kind: 'user' } },
      { kind: 'aborted', reason: { kind: 'disposed' } },
    ])
  })

  it('CX-1: an invalid cause is refused and aborts nothing', async () => {
    const { agent, model } = scriptedAgent([hang])
    agent.followup('hi')
    await until(() => model.requests.length === 1)
    expect(() => agent.cancel({ kind: 'bogus' } as never)).toThrow(ConfigError)
    expect(model.requests[0].signal.aborted).toBe(false)
    agent.cancel()
    await agent.whenIdle()
  })
})

describe('CX-2: the first cause wins', () => {
  it('CX-2: later cancels keep the first reason and durable outcome, but still clear the inbox without keepInbox', async () => {
    const { agent, model } = scriptedAgent([hang])
    const discarded: string[] = []
    agent.on('agent/inbox/discarded', (p) => void discarded.push(p.message.id))
    agent.followup('hi')
    await until(() => model.requests.length === 1)
    const signal = model.requests[0].signal
    agent.inject(userMessage('context', { id: 'ctx' }))
    const first: AgentCancelCause = { kind: 'hook', reason: 'first' }
    agent.cancel(first, { keepInbox: true })
    agent.cancel({ kind: 'parent' }, { keepInbox: true })
    expect(signal.reason).toBe(first)
    expect(agent.inbox.nextStep.map((m) => m.id)).toEqual(['ctx'])
    agent.cancel({ kind: 'user' })
    expect(signal.reason).toBe(first)
    expect(agent.inbox.hasPending).toBe(false)
    expect(discarded).toEqual(['ctx'])
    await agent.whenIdle()
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: first }])
    expect(trace(agent)).toContain('spliced(next-step -1 canceled)')
  })
})

describe('CX-3: cancel and the inbox', () => {
  it('CX-3: without keepInbox both lists are cleared durably, next-step first, with discarded per item', async () => {
    const { agent, model } = scriptedAgent([hang])
    const discarded: string[] = []
    agent.on('agent/inbox/discarded', (p) => void discarded.push(p.message.id))
    agent.followup(userMessage('first', { id: 'p1' }))
    await until(() => model.requests.length === 1)
    agent.followup(userMessage('queued 1', { id: 'q1' }))
    agent.followup(userMessage('queued 2', { id: 'q2' }))
    agent.steer(userMessage('steer', { id: 's1' }))
    const before = agent.session.length
    agent.cancel()
    const appended = agent.session.events.slice(before).map((e) => trace([e])[0])
    expect(appended).toEqual(['spliced(next-step -1 canceled)', 'spliced(next-turn -2 canceled)'])
    expect(discarded).toEqual(['s1', 'q1', 'q2'])
    expect(agent.inbox.nextTurn).toEqual([])
    expect(agent.inbox.nextStep).toEqual([])
    await agent.whenIdle()
    await tick()
    expect(model.requests).toHaveLength(1)
    expect(ofType(agent, 'turn/start')).toHaveLength(1)
  })

  it('CX-3: with keepInbox nothing is removed and no splice is appended', async () => {
    const { agent, model } = scriptedAgent([hang])
    const discarded = record(agent, ['agent/inbox/discarded'])
    agent.followup('first')
    await until(() => model.requests.length === 1)
    agent.followup(userMessage('queued', { id: 'q1' }))
    agent.inject(userMessage('context', { id: 'c1' }))
    const splicesBefore = ofType(agent, 'agent/inbox/spliced').length
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    await agent.whenIdle()
    expect(ofType(agent, 'agent/inbox/spliced')).toHaveLength(splicesBefore)
    expect(discarded).toEqual([])
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual(['q1'])
    expect(agent.inbox.nextStep.map((m) => m.id)).toEqual(['c1'])
  })

  it('CX-3: a cancel without keepInbox also drops the wake latch', async () => {
    const release = gate()
    const { agent, model } = scriptedAgent([callSlow, textResponse('never')], { tools: [slowTool(release.promise)] })
    agent.followup('go')
    await until(() => ofType(agent, 'tool/call').length === 1)
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    agent.followup(userMessage('latched', { id: 'late' })) // latches (CX-12)
    agent.cancel() // discards it and the latch
    release.open()
    await agent.whenIdle()
    await tick()
    expect(model.requests).toHaveLength(1)
    expect(ofType(agent, 'turn/start')).toHaveLength(1)
    expect(agent.status).toBe('idle')
  })
})

describe('CX-4: cancelling an idle agent', () => {
  it('CX-4: aborts nothing and arms nothing; the next waking send runs normally', async () => {
    const { agent, model } = scriptedAgent([textResponse('ok')])
    const statuses = record(agent, ['agent/status'])
    agent.cancel({ kind: 'hook', reason: 'nothing to cancel' })
    expect(agent.session.events).toEqual([])
    expect(statuses).toEqual([])
    agent.followup('hi')
    await agent.whenIdle()
    expect(model.requests[0].signal.aborted).toBe(false)
    expect(ends(agent)).toEqual([{ kind: 'completed' }])
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
  })

  it('CX-4: without keepInbox parked items are discarded; with keepInbox they stay', async () => {
    const { agent } = scriptedAgent([])
    const discarded: string[] = []
    agent.on('agent/inbox/discarded', (p) => void discarded.push(p.message.id))
    agent.inject(userMessage('ctx', { id: 'c1' }))
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    expect(agent.inbox.nextStep.map((m) => m.id)).toEqual(['c1'])
    expect(trace(agent)).toEqual(['spliced(next-step +1)'])
    agent.cancel()
    expect(trace(agent)).toEqual(['spliced(next-step +1)', 'spliced(next-step -1 canceled)'])
    expect(discarded).toEqual(['c1'])
    expect(agent.inbox.hasPending).toBe(false)
    expect(agent.status).toBe('idle')
  })
})

describe('CX-5: a cancelled turn ends aborted, never error', () => {
  it('CX-5: turn/end{aborted, reason: cause}, no agent/error, and the next prompt runs normally', async () => {
    const { agent, model } = scriptedAgent([hang, textResponse('fine')])
    const seen = errors(agent)
    agent.followup('one')
    await until(() => model.requests.length === 1)
    agent.cancel({ kind: 'parent' })
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'parent' } }, { kind: 'completed' }])
    expect(seen).toEqual([])
    expect(model.requests[1].signal.aborted).toBe(false)
  })
})

// ---- CX-6 .. CX-8: landing points ---------------------------------------------------

describe('CX-6: by landing point', () => {
  it('CX-6: during agent/pre-step: turn/start, claim, turn/end{aborted}; no step, no model call', async () => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    const reached = gate()
    agent.on('agent/pre-step', async ({ signal }, next) => {
      reached.open()
      await untilAborted(signal)
      return next()
    })
    agent.followup('hi')
    await reached.promise
    agent.cancel()
    await agent.whenIdle()
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'turn/start{1}', 'spliced(next-turn -1)', 'turn/end{1,aborted}'])
    expect(model.requests).toEqual([])
  })

  it('CX-6: from a step/start observer: step/start, user/message, step/end, turn/end{aborted}; no request', async () => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    agent.on('session/event', ({ event }) => {
      if (event.type === 'step/start') agent.cancel()
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(trace(agent, { chunks: true })).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(hi)',
      'step/end{1,1}',
      'turn/end{1,aborted}',
    ])
    expect(model.requests).toEqual([])
  })

  it('CX-6: from the request records logged before dispatch: no chunks and no model call', async () => {
    for (const type of ['request/header', 'request/context'] as const) {
      const { agent, model } = scriptedAgent([textResponse('never')])
      agent.on('session/event', ({ event }) => {
        if (event.type === type) agent.cancel()
      })
      agent.followup('hi')
      await agent.whenIdle()
      expect(trace(agent, { chunks: true }).slice(3), type).toEqual([
        'step/start{1,1}',
        'user/message(hi)',
        'request/header',
        'request/context',
        'step/end{1,1}',
        'turn/end{1,aborted}',
      ])
      expect(model.requests, type).toEqual([])
    }
  })

  it('CX-6: during agent/turn-stopping: the turn ends aborted and no further step runs, even with staged input', async () => {
    const { agent, model } = scriptedAgent([textResponse('one'), textResponse('two')])
    const reached = gate()
    agent.on('agent/turn-stopping', async ({ signal }) => {
      agent.steer(userMessage('more', { id: 'more' }))
      reached.open()
      await untilAborted(signal)
    })
    agent.followup('hi')
    await reached.promise
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    await agent.whenIdle()
    expect(trace(agent).slice(-4)).toEqual(['assistant/message', 'step/end{1,1}', 'spliced(next-step +1)', 'turn/end{1,aborted}'])
    expect(model.requests).toHaveLength(1)
    // aborted turns park their pending input (PH-5)
    expect(agent.inbox.nextStep.map((m) => m.id)).toEqual(['more'])
    expect(agent.status).toBe('idle')
  })

  it('CX-6: from the running-status listener: no turn/start at all', async () => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    const statuses = record(agent, ['agent/status'])
    agent.on('agent/status', ({ status }) => {
      if (status === 'running') agent.cancel({ kind: 'user' }, { keepInbox: true })
    })
    agent.followup(userMessage('hi', { id: 'p1' }))
    await agent.whenIdle()
    expect(trace(agent)).toEqual(['spliced(next-turn +1)'])
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual(['p1'])
    expect(model.requests).toEqual([])
  })

  it('CX-6: from an assistant/message observer of a text answer: the step closes and the turn ends aborted', async () => {
    const { agent, model } = scriptedAgent([textResponse('answer')])
    agent.on('session/event', ({ event }) => {
      if (event.type === 'assistant/message') agent.cancel({ kind: 'hook', reason: 'seen' })
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(trace(agent).slice(-3)).toEqual(['assistant/message', 'step/end{1,1}', 'turn/end{1,aborted}'])
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'seen' } }])
    expect(model.requests).toHaveLength(1)
  })
})

describe('CX-7: interrupted prefix', () => {
  const textThenPartialCall: StreamChunk[] = [
    { type: 'block-start', index: 0, blockType: 'text' },
    { type: 'text-delta', index: 0, text: 'Hel' },
    { type: 'text-delta', index: 0, text: 'lo' },
    { type: 'block-start', index: 1, blockType: 'tool-call' },
    { type: 'tool-call-delta', index: 1, id: 'c1', name: 'lookup', argumentsDelta: '{"q":' },
    { type: 'usage', usage: { inputTokens: 7, outputTokens: 3 } },
  ]

  it('CX-7: cancelled mid-stream, visible text is kept as assistant/message{interrupted} citing every chunk; tool calls dropped', async () => {
    const { agent, model } = scriptedAgent([streamThenHang(textThenPartialCall), textResponse('next')])
    agent.followup('hi')
    await until(() => ofType(agent, 'assistant/chunk').length === textThenPartialCall.length, 'all chunks')
    agent.cancel()
    await agent.whenIdle()
    expect(trace(agent).slice(-4)).toEqual(['request/context', 'assistant/message(interrupted)', 'step/end{1,1}', 'turn/end{1,aborted}'])
    const [prefix] = ofType(agent, 'assistant/message')
    expect(prefix.data.interrupted).toBe(true)
    expect(prefix.data.message.content).toEqual([{ type: 'text', text: 'Hello' }])
    expect(prefix.data.usage).toEqual({ inputTokens: 7, outputTokens: 3 })
    expect(prefix.sourceEventSeqs).toEqual(ofType(agent, 'assistant/chunk').map((e) => e.seq))
    // the prefix is history for the next request
    agent.followup('again')
    await agent.whenIdle()
    expect(model.requests[1].messages.map((m) => m.id)).toContain(prefix.data.message.id)
    expect(ends(agent).map((r) => r.kind)).toEqual(['aborted', 'completed'])
  })

  it('CX-7: open (unclosed) reasoning and closed text blocks both count; cancelled from a chunk observer', async () => {
    const chunks: StreamChunk[] = [
      { type: 'block-start', index: 0, blockType: 'reasoning' },
      { type: 'reasoning-delta', index: 0, text: 'thinking' },
      { type: 'block-start', index: 1, blockType: 'text' },
      { type: 'text-delta', index: 1, text: 'partial' },
      { type: 'block-end', index: 1, block: { type: 'text', text: 'partial answer' } },
      { type: 'text-delta', index: 2, text: 'never logged' },
    ]
    const { agent } = scriptedAgent([streamThenHang(chunks)])
    agent.on('session/event', ({ event }) => {
      if (event.type === 'assistant/chunk' && event.data.chunk.type === 'block-end') agent.cancel()
    })
    agent.followup('hi')
    await agent.whenIdle()
    const logged = ofType(agent, 'assistant/chunk')
    expect(logged.map((e) => e.data.chunk.type)).toEqual(['block-start', 'reasoning-delta', 'block-start', 'text-delta', 'block-end'])
    const [prefix] = ofType(agent, 'assistant/message')
    expect(prefix.data.interrupted).toBe(true)
    expect(prefix.data.message.content).toEqual([
      { type: 'reasoning', text: 'thinking' },
      { type: 'text', text: 'partial answer' },
    ])
    expect(prefix.data.usage).toBeUndefined()
    expect(prefix.sourceEventSeqs).toEqual(logged.map((e) => e.seq))
  })

  it('CX-7: after a retried attempt the prefix cites only the cancelled attempt’s chunks', async () => {
    const failed: StreamChunk[] = [...textResponse('lost').slice(0, -1), ...errorResponse({ message: 'overloaded', code: 'SERVER' })]
    const { agent } = scriptedAgent([failed, streamThenHang(textResponse('kept').slice(0, -1))])
    agent.on('agent/request-error', () => ({ kind: 'retry' }))
    agent.followup('hi')
    await until(() => ofType(agent, 'assistant/chunk').length === failed.length + 4, 'the second attempt')
    agent.cancel()
    await agent.whenIdle()
    const chunks = ofType(agent, 'assistant/chunk').map((e) => e.seq)
    const [prefix] = ofType(agent, 'assistant/message')
    expect(prefix.data.message.content).toEqual([{ type: 'text', text: 'kept' }])
    expect(prefix.sourceEventSeqs).toEqual(chunks.slice(failed.length))
  })
})

describe('CX-8: no interrupted prefix', () => {
  it('CX-8: nothing visible streamed (only a partial tool call, or whitespace): no assistant/message', async () => {
    const cases: StreamChunk[][] = [
      [
        { type: 'block-start', index: 0, blockType: 'tool-call' },
        { type: 'tool-call-delta', index: 0, id: 'c1', name: 'lookup', argumentsDelta: '{"q":"x"}' },
        { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c1', name: 'lookup', arguments: '{"q":"x"}' } },
      ],
      [
        { type: 'block-start', index: 0, blockType: 'text' },
        { type: 'text-delta', index: 0, text: '  \n ' },
      ],
    ]
    for (const chunks of cases) {
      const { agent } = scriptedAgent([streamThenHang(chunks)])
      agent.followup('hi')
      await until(() => ofType(agent, 'assistant/chunk').length === chunks.length)
      agent.cancel()
      await agent.whenIdle()
      expect(ofType(agent, 'assistant/message')).toEqual([])
      expect(ofType(agent, 'tool/call')).toEqual([])
      expect(trace(agent).slice(-3)).toEqual(['request/context', 'step/end{1,1}', 'turn/end{1,aborted}'])
    }
  })

  it('CX-8: cancelled during request-error recovery after a stream that showed text: no prefix, turn aborted', async () => {
    const failed: StreamChunk[] = [...textResponse('visible').slice(0, -1), ...errorResponse({ message: 'boom', code: 'SERVER' })]
    const { agent, model } = scriptedAgent([failed, textResponse('never')])
    const seen = errors(agent)
    const reached = gate()
    agent.on('agent/request-error', async ({ signal }) => {
      reached.open()
      await untilAborted(signal)
      return { kind: 'retry' }
    })
    agent.followup('hi')
    await reached.promise
    agent.cancel({ kind: 'hook', reason: 'stop' })
    await agent.whenIdle()
    expect(ofType(agent, 'assistant/message')).toEqual([])
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'stop' } }])
    expect(model.requests).toHaveLength(1)
    expect(seen).toEqual([])
  })
})

// ---- CX-9 .. CX-11: cancel right after waking sends, keepInbox ---------------------

describe('CX-9..CX-11: cancel right after waking sends', () => {
  it('CX-9: followup(m) then cancel(keepInbox) cannot keep m: claimed, aborted with no step, never logged', async () => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    const discarded = record(agent, ['agent/inbox/discarded'])
    agent.followup(userMessage('m', { id: 'm' }))
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    await agent.whenIdle()
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'turn/start{1}', 'spliced(next-turn -1)', 'turn/end{1,aborted}'])
    expect(ofType(agent, 'user/message')).toEqual([])
    expect(agent.inbox.hasPending).toBe(false)
    expect(discarded).toEqual([])
    expect(model.requests).toEqual([])
  })

  it('CX-10: followup(a), followup(b), cancel() from idle: one aborted turn for a, b discarded, no second turn', async () => {
    const { agent, model } = scriptedAgent([textResponse('never'), textResponse('never')])
    const statuses = record(agent, ['agent/status'])
    const discarded: string[] = []
    agent.on('agent/inbox/discarded', (p) => void discarded.push(p.message.id))
    agent.followup(userMessage('a', { id: 'a' }))
    agent.followup(userMessage('b', { id: 'b' }))
    agent.cancel()
    await agent.whenIdle()
    await tick()
    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'spliced(next-turn +1)',
      'spliced(next-turn -1 canceled)',
      'turn/end{1,aborted}',
    ])
    expect(discarded).toEqual(['b'])
    expect(model.requests).toEqual([])
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
  })

  it('CX-11: with keepInbox pending items stay queued, then run FIFO as their own turns at the next waking send', async () => {
    const { agent, model } = scriptedAgent([hang, textResponse('b'), textResponse('c'), textResponse('d')])
    const statuses = record(agent, ['agent/status'])
    agent.followup(userMessage('a', { id: 'a' }))
    await until(() => model.requests.length === 1)
    agent.followup(userMessage('b', { id: 'b' }))
    agent.followup(userMessage('c', { id: 'c' }))
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    await agent.whenIdle()
    await tick(5)
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual(['b', 'c'])
    expect(model.requests).toHaveLength(1)
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
    agent.followup(userMessage('d', { id: 'd' }))
    await agent.whenIdle()
    expect(ends(agent).map((r) => r.kind)).toEqual(['aborted', 'completed', 'completed', 'completed'])
    expect(prompts(agent)).toEqual(['a', 'b', 'c', 'd'])
    const perTurn = ofType(agent, 'step/start').map((s) => s.data.turn)
    expect(perTurn).toEqual([1, 2, 3, 4])
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle', 'agent/status:running', 'agent/status:idle'])
  })
})

// ---- CX-12 .. CX-14: the wake latch ---------------------------------------------------

describe('CX-12: waking sends after the abort are forced into next-turn and latch', () => {
  it('CX-12: a steer from an abort-signal observer goes to next-turn and replays as a new turn', async () => {
    const { agent, model } = scriptedAgent([hang, textResponse('late answer')])
    const statuses = record(agent, ['agent/status'])
    agent.followup('first')
    await until(() => model.requests.length === 1)
    model.requests[0].signal.addEventListener('abort', () => agent.steer(userMessage('late', { id: 'late' })))
    agent.cancel()
    await until(() => ends(agent).length === 2, 'the latched turn')
    await agent.whenIdle()
    const lateSplice = ofType(agent, 'agent/inbox/spliced').find((e) => e.data.inserted.some((m) => m.id === 'late'))
    expect(lateSplice?.data.target).toBe('next-turn')
    expect(ends(agent).map((r) => r.kind)).toEqual(['aborted', 'completed'])
    const log = trace(agent)
    expect(log.slice(log.indexOf('turn/start{2}'), log.indexOf('turn/start{2}') + 4)).toEqual([
      'turn/start{2}',
      'spliced(next-turn -1)',
      'step/start{2,1}',
      'user/message(late)',
    ])
    expect(model.requests[1].signal.aborted).toBe(false)
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle', 'agent/status:running', 'agent/status:idle'])
  })

  it('CX-12: a followup from the running-status listener after a cancel there latches and runs', async () => {
    const { agent, model } = scriptedAgent([textResponse('second answer')])
    const statuses = record(agent, ['agent/status'])
    let first = true
    agent.on('agent/status', ({ status }) => {
      if (status !== 'running' || !first) return
      first = false
      agent.cancel()
      agent.followup(userMessage('second', { id: 'second' }))
    })
    agent.followup(userMessage('first', { id: 'first' }))
    await until(() => ends(agent).length === 1, 'the latched turn')
    await agent.whenIdle()
    expect(trace(agent)).toEqual([
      'spliced(next-turn +1)',
      'spliced(next-turn -1 canceled)',
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(second)',
      'request/header',
      'request/context',
      'assistant/message',
      'step/end{1,1}',
      'turn/end{1,completed}',
    ])
    expect(model.requests).toHaveLength(1)
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle', 'agent/status:running', 'agent/status:idle'])
  })

  it('CX-12: long into a slow abort (a tool body ignoring the signal), a steer is forced into next-turn and latched', async () => {
    const release = gate()
    const seen: { signal?: AbortSignal } = {}
    const { agent, model } = scriptedAgent([callSlow, textResponse('for late')], { tools: [slowTool(release.promise, seen)] })
    agent.followup('go')
    await until(() => seen.signal !== undefined, 'the tool body')
    agent.cancel({ kind: 'user' })
    await tick(5)
    agent.steer(userMessage('late', { id: 'late' }))
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual(['late'])
    expect(agent.inbox.nextStep).toEqual([])
    expect(agent.status).toBe('running')
    release.open()
    await until(() => ends(agent).length === 2, 'the latched turn')
    await agent.whenIdle()
    expect(ends(agent).map((r) => r.kind)).toEqual(['aborted', 'completed'])
    const [result] = ofType(agent, 'tool/result')
    expect(result.data.error).toEqual({ name: 'AbortError', code: 'ABORTED' })
    expect(prompts(agent).slice(-1)).toEqual(['late'])
    expect(model.requests).toHaveLength(2)
  })
})

describe('CX-13: a latched wake replays at convergence', () => {
  it('CX-13: the latched prompt runs as a new turn without another send', async () => {
    const release = gate()
    const { agent, model } = scriptedAgent([callSlow, textResponse('latched')], { tools: [slowTool(release.promise)] })
    agent.followup('go')
    await until(() => ofType(agent, 'tool/call').length === 1)
    agent.cancel()
    agent.followup(userMessage('next', { id: 'next' }))
    release.open()
    await until(() => ends(agent).length === 2)
    await agent.whenIdle()
    expect(prompts(agent)).toEqual([prompts(agent)[0], 'next'])
    expect(ends(agent).map((r) => r.kind)).toEqual(['aborted', 'completed'])
    expect(model.requests).toHaveLength(2)
  })

  it('CX-13: if the latched message was removed before convergence, no turn starts', async () => {
    const release = gate()
    const { agent, model } = scriptedAgent([callSlow, textResponse('never')], { tools: [slowTool(release.promise)] })
    const statuses = record(agent, ['agent/status'])
    agent.followup('go')
    await until(() => ofType(agent, 'tool/call').length === 1)
    agent.cancel()
    agent.followup(userMessage('next', { id: 'next' }))
    expect(agent.inbox.remove('next')).toBe(true)
    release.open()
    await agent.whenIdle()
    await tick(5)
    expect(ofType(agent, 'turn/start')).toHaveLength(1)
    expect(model.requests).toHaveLength(1)
    expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
  })

  it('CX-13: a latched wake still replays when only next-step holds work', async () => {
    const release = gate()
    const { agent, model } = scriptedAgent([callSlow, textResponse('ctx turn')], { tools: [slowTool(release.promise)] })
    agent.followup('go')
    await until(() => ofType(agent, 'tool/call').length === 1)
    agent.inject(userMessage('context', { id: 'ctx' }))
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    agent.followup(userMessage('next', { id: 'next' }))
    agent.inbox.remove('next')
    release.open()
    await until(() => ends(agent).length === 2)
    await agent.whenIdle()
    expect(prompts(agent).slice(-1)).toEqual(['ctx'])
    expect(ends(agent).map((r) => r.kind)).toEqual(['aborted', 'completed'])
    expect(model.requests).toHaveLength(2)
  })
})

describe('CX-14: a later cancel discards the latch', () => {
  it('CX-14: cancel without keepInbox drops the latched message and latch; a new waking send latches again and replays', async () => {
    const release = gate()
    const { agent, model } = scriptedAgent([callSlow, textResponse('for y')], { tools: [slowTool(release.promise)] })
    const discarded: string[] = []
    agent.on('agent/inbox/discarded', (p) => void discarded.push(p.message.id))
    agent.followup('go')
    await until(() => ofType(agent, 'tool/call').length === 1)
    const first: AgentCancelCause = { kind: 'hook', reason: 'first' }
    agent.cancel(first, { keepInbox: true })
    agent.followup(userMessage('x', { id: 'x' }))
    agent.cancel({ kind: 'user' })
    expect(discarded).toEqual(['x'])
    expect(agent.inbox.hasPending).toBe(false)
    agent.steer(userMessage('y', { id: 'y' }))
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual(['y'])
    release.open()
    await until(() => ends(agent).length === 2)
    await agent.whenIdle()
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: first }, { kind: 'completed' }])
    expect(prompts(agent).slice(-1)).toEqual(['y'])
    expect(prompts(agent)).not.toContain('x')
    expect(model.requests).toHaveLength(2)
  })
})

// ---- CX-15 .. CX-17: disposal and the turn signal ------------------------------------

describe('CX-15: a disposed cancel never latches', () => {
  it('CX-15: disposal does not wait for model work that ignores the signal', async () => {
    const stuck: ScriptEntry = () =>
      (async function* (): AsyncGenerator<StreamChunk> {
        await new Promise(() => {})
      })()
    const { agent, model } = scriptedAgent([stuck])
    agent.followup('hi')
    await until(() => model.requests.length === 1)
    await agent.dispose()
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'disposed' } }])
    expect(agent.status).toBe('idle')
  })

  it('CX-15: wakes sent during disposal stay parked in the durable inbox and start no turn', async () => {
    const release = gate()
    const { agent, model } = scriptedAgent([callSlow, textResponse('never')], { tools: [slowTool(release.promise)] })
    agent.followup('go')
    await until(() => ofType(agent, 'tool/call').length === 1)
    model.requests[0].signal.addEventListener('abort', () => agent.followup(userMessage('from abort', { id: 'a1' })))
    const disposed = agent.dispose()
    agent.steer(userMessage('during disposal', { id: 'a2' }))
    release.open()
    await disposed
    await tick(5)
    expect(ofType(agent, 'turn/start')).toHaveLength(1)
    expect(model.requests).toHaveLength(1)
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual(['a1', 'a2'])
    const inserted = ofType(agent, 'agent/inbox/spliced')
      .filter((e) => e.data.inserted.length > 0)
      .map((e) => e.data.target)
    expect(inserted.slice(-2)).toEqual(['next-turn', 'next-turn'])
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'disposed' } }])
  })
})

describe('CX-16: the turn signal reaches every await point', () => {
  type Landing = {
    name: string
    script: ScriptEntry[]
    arm: (agent: Agent, reached: (signal: AbortSignal) => void) => void
    tools?: ReturnType<typeof defineTool>[]
  }
  const waitTool = defineTool({
    name: 'wait',
    description: 'waits for the abort',
    input: z.object({}),
    execute: async (_args, { signal }) => {
      reachedTool?.(signal)
      await untilAborted(signal)
      throw signal.reason instanceof Error ? signal.reason : new Error('aborted')
    },
  })
  let reachedTool: ((signal: AbortSignal) => void) | undefined
  const landings: Landing[] = [
    {
      name: 'agent/pre-step',
      script: [textResponse('never')],
      arm: (agent, reached) =>
        agent.on('agent/pre-step', async ({ signal }) => {
          reached(signal)
          await untilAborted(signal)
          throw new Error('listener gave up')
        }),
    },
    {
      name: 'agent/request',
      script: [textResponse('never')],
      arm: (agent, reached) =>
        agent.on('agent/request', async ({ signal }, next) => {
          reached(signal)
          await untilAborted(signal)
          return next()
        }),
    },
    {
      name: 'the model request',
      script: [
        (request) => {
          reachedModel?.(request.signal)
          return 'hang'
        },
      ],
      arm: (_agent, reached) => (reachedModel = reached),
    },
    {
      name: 'agent/request-error',
      script: [errorResponse({ message: 'overloaded', code: 'SERVER' }), textResponse('never')],
      arm: (agent, reached) =>
        agent.on('agent/request-error', async ({ signal }) => {
          reached(signal)
          await untilAborted(signal)
          return { kind: 'retry' }
        }),
    },
    {
      name: 'agent/turn-stopping',
      script: [textResponse('done')],
      arm: (agent, reached) =>
        agent.on('agent/turn-stopping', async ({ signal }) => {
          reached(signal)
          await untilAborted(signal)
        }),
    },
    {
      name: 'a tool execution',
      script: [toolCallResponse([{ id: 'w1', name: 'wait', arguments: '{}' }]), textResponse('never')],
      tools: [waitTool],
      arm: (_agent, reached) => (reachedTool = reached),
    },
  ]
  let reachedModel: ((signal: AbortSignal) => void) | undefined

  for (const landing of landings) {
    it(`CX-16: a cooperative wait in ${landing.name} settles the turn aborted{cause}`, async () => {
      const { agent, model } = scriptedAgent(landing.script, landing.tools ? { tools: landing.tools } : {})
      const seen = errors(agent)
      const statuses = record(agent, ['agent/status'])
      const reached = gate<AbortSignal>()
      landing.arm(agent, reached.open)
      agent.followup('hi')
      const signal = await reached.promise
      expect(signal).toBeInstanceOf(AbortSignal)
      expect(signal.aborted).toBe(false)
      const cause: AgentCancelCause = { kind: 'hook', reason: landing.name }
      agent.cancel(cause)
      expect(signal.reason).toBe(cause)
      await agent.whenIdle()
      expect(ends(agent)).toEqual([{ kind: 'aborted', reason: cause }])
      expect(seen).toEqual([])
      expect(statuses).toEqual(['agent/status:running', 'agent/status:idle'])
      // every request made in the turn carries the same signal
      for (const request of model.requests) expect(request.signal).toBe(signal)
      reachedModel = undefined
      reachedTool = undefined
    })
  }
})

describe('CX-16: a listener or tool body that cancels by itself', () => {
  const selfCancel = (agent: Agent, reason: string) => agent.cancel({ kind: 'hook', reason })
  const cases: Array<{ name: string; script: ScriptEntry[]; arm: (agent: Agent) => void; tools?: ReturnType<typeof defineTool>[]; requests: number }> = [
    {
      name: 'agent/inbox/claimed',
      script: [textResponse('never')],
      arm: (agent) => agent.on('agent/inbox/claimed', () => selfCancel(agent, 'agent/inbox/claimed')),
      requests: 0,
    },
    {
      name: 'agent/pre-step',
      script: [textResponse('never')],
      arm: (agent) =>
        agent.on('agent/pre-step', (_p, next) => {
          selfCancel(agent, 'agent/pre-step')
          return next()
        }),
      requests: 0,
    },
    {
      name: 'agent/request',
      script: [textResponse('never')],
      arm: (agent) =>
        agent.on('agent/request', (_p, next) => {
          selfCancel(agent, 'agent/request')
          return next()
        }),
      requests: 0,
    },
    {
      name: 'agent/request-error',
      script: [errorResponse({ message: 'overloaded', code: 'SERVER' }), textResponse('never')],
      arm: (agent) =>
        agent.on('agent/request-error', () => {
          selfCancel(agent, 'agent/request-error')
          return { kind: 'retry' }
        }),
      requests: 1,
    },
    {
      name: 'agent/turn-stopping',
      script: [textResponse('done'), textResponse('never')],
      arm: (agent) =>
        agent.on('agent/turn-stopping', () => {
          agent.steer('one more step')
          selfCancel(agent, 'agent/turn-stopping')
        }),
      requests: 1,
    },
    {
      name: 'a tool body',
      script: [toolCallResponse([{ id: 'q1', name: 'quit', arguments: '{}' }]), textResponse('never')],
      tools: [
        defineTool({
          name: 'quit',
          description: 'cancels its own turn',
          input: z.object({}),
          execute: (_args, { agent }) => {
            selfCancel(agent, 'a tool body')
            return 'finished anyway'
          },
        }),
      ],
      arm: () => {},
      requests: 1,
    },
  ]
  for (const c of cases) {
    it(`CX-16: cancelling from inside ${c.name} settles the turn aborted{cause} with no further request`, async () => {
      const { agent, model } = scriptedAgent(c.script, c.tools ? { tools: c.tools } : {})
      const seen = errors(agent)
      c.arm(agent)
      agent.followup('hi')
      await agent.whenIdle()
      expect(ends(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: c.name } }])
      expect(model.requests).toHaveLength(c.requests)
      expect(seen).toEqual([])
      if (c.tools) {
        const [result] = ofType(agent, 'tool/result')
        expect(result.data.error).toEqual({ name: 'AbortError', code: 'ABORTED' })
      }
    })
  }
})

describe('CX-17: disposal', () => {
  it('CX-17: the active turn ends aborted{disposed} balanced, queued items are discarded, statuses stay running, idle', async () => {
    const { agent, model } = scriptedAgent([hang, textResponse('never')])
    const order: string[] = []
    agent.on('agent/status', ({ status }) => void order.push(status))
    const discarded: string[] = []
    agent.on('agent/inbox/discarded', (p) => void discarded.push(p.message.id))
    agent.followup('active')
    await until(() => model.requests.length === 1)
    agent.followup(userMessage('tail', { id: 'tail' }))
    const disposal = agent.dispose()
    expect(agent.dispose()).toBe(disposal)
    await disposal.then(() => order.push('disposed'))
    expect(order).toEqual(['running', 'idle', 'disposed'])
    expect(trace(agent).slice(-5)).toEqual([
      'request/context',
      'spliced(next-turn +1)',
      'spliced(next-turn -1 canceled)',
      'step/end{1,1}',
      'turn/end{1,aborted}',
    ])
    expect(ends(agent)).toEqual([{ kind: 'aborted', reason: { kind: 'disposed' } }])
    expect(discarded).toEqual(['tail'])
    expect(model.requests).toHaveLength(1)
    // only now deregistered: the machine is final and the handle refuses work
    expect(agent.actor.getSnapshot().value).toBe('disposed')
    expect(() => agent.followup('after')).toThrow(/disposed/)
  })

  it('CX-17: disposing an idle agent resolves at once and deregisters', async () => {
    const { agent } = scriptedAgent([])
    agent.inject(userMessage('parked', { id: 'p' }))
    await agent.dispose()
    expect(trace(agent)).toEqual(['spliced(next-step +1)', 'spliced(next-step -1 canceled)'])
    expect(agent.actor.getSnapshot().value).toBe('disposed')
    expect(() => agent.inject('late')).toThrow(/disposed/)
  })
})

describe('CX-4 with a failing store', () => {
  it('CX-4: an idle cancel whose discard cannot be logged leaves the parked items pending, in the machine and the public inbox', async () => {
    const { agent, model } = scriptedAgent([textResponse('later')])
    agent.inject('parked')
    const append = agent.session.append.bind(agent.session)
    agent.session.append = ((type: string, data: any, intent?: any) => {
      if (type === 'agent/inbox/spliced' && data.outcome === 'canceled') throw new Error('store is full')
      return append(type as never, data, intent)
    }) as typeof agent.session.append
    expect(() => agent.cancel()).toThrow(/store is full/)
    agent.session.append = append as typeof agent.session.append
    expect(agent.inbox.nextStep.map(textOf)).toEqual(['parked'])
    agent.followup('now')
    await agent.whenIdle()
    expect(trace(agent).filter((t) => t.startsWith('user/message'))).toEqual(['user/message(parked)', 'user/message(now)'])
    expect(model.requests).toHaveLength(1)
  })
})

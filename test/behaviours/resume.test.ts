// RS — resume and repair: a new agent instance over a stored log continues
// it, restores its inbox, and closes a turn a crash left open.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, createSession, defineTool, repairClosers, userMessage, type Agent, type SessionEvent } from '../../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, scriptedAgent, tick, trace, track } from '../helpers.js'

/** A finished two-turn agent whose log we can resume. */
async function twoTurns(): Promise<Agent> {
  const { agent } = scriptedAgent([textResponse('one'), textResponse('two')])
  agent.followup(userMessage('first'))
  await agent.whenIdle()
  agent.followup(userMessage('second'))
  await agent.whenIdle()
  return agent
}

/** An agent over a copy of `events`, as a new instance would load it. */
function resume(events: readonly SessionEvent[], script = [textResponse('resumed')], options: { id?: string } = {}) {
  const model = scriptedModel(script)
  const agent = track(createAgent({ model, session: createSession({ seed: events, ...options }), logger: { error: () => {} } }))
  return { agent, model }
}

/** A log cut while the first of two exclusive calls runs: one call started, one only planned. */
async function crashedInTool(): Promise<{ events: SessionEvent[]; finish: () => Promise<void> }> {
  let release!: () => void
  const slow = defineTool({
    name: 'slow',
    description: 'waits',
    input: z.object({}),
    execute: () => new Promise<string>((resolve) => (release = () => resolve('done'))),
  })
  const { agent } = scriptedAgent(
    [
      toolCallResponse([
        { id: 'a', name: 'slow', arguments: '{}' },
        { id: 'b', name: 'slow', arguments: '{}' },
      ]),
    ],
    { tools: [slow] },
  )
  agent.followup(userMessage('go'))
  for (let i = 0; i < 200 && !release; i++) await tick(1)
  const events = [...agent.session.events]
  return {
    events,
    finish: async () => {
      agent.cancel()
      release()
      await agent.whenIdle()
    },
  }
}

describe('RS — resume and repair', () => {
  it('RS-1: a new instance continues the stored log: same history, next turn number, contiguous seqs after the end-seed', async () => {
    const first = await twoTurns()
    const stored = first.session.events
    const { agent } = resume(stored)
    expect(agent.session.deriveMessages()).toEqual(first.session.deriveMessages())
    expect(agent.session.events.at(-1)?.type).toBe('session/end-seed')
    agent.followup(userMessage('third'))
    await agent.whenIdle()
    const live = agent.session.events.slice(stored.length + 1)
    expect(live[0].seq).toBe(stored.length + 1)
    expect(live.map((e) => e.seq)).toEqual(live.map((_, i) => stored.length + 1 + i))
    expect(ofType(agent, 'turn/start').map((e) => e.data.turn)).toEqual([1, 2, 3])
  })

  it('RS-2: resuming starts no turn; pending items are restored and enter with the next waking send', async () => {
    const { agent: first } = scriptedAgent([textResponse('x')])
    first.inject(userMessage('context', { id: 'ctx' }))
    first.on('agent/pre-step', () => ({ kind: 'reject' }))
    first.followup(userMessage('blocked', { id: 'p1' }))
    first.followup(userMessage('parked', { id: 'p2' }))
    await first.whenIdle()
    // p1 (with the injected context) was claimed and rejected; p2 stays parked (PH-5)
    first.inject(userMessage('late context', { id: 'ctx2' }))
    const { agent, model } = resume(first.session.events, [textResponse('ok')])
    await tick(5)
    expect(agent.status).toBe('idle')
    expect(agent.session.events.at(-1)?.type).toBe('session/end-seed')
    expect(agent.inbox.nextTurn.map((m) => m.id)).toEqual(['p2'])
    expect(agent.inbox.nextStep.map((m) => m.id)).toEqual(['ctx2'])
    agent.followup(userMessage('now', { id: 'p3' }))
    await agent.whenIdle()
    expect(model.requests).toHaveLength(2)
    const entered = ofType(agent, 'user/message').map((e) => e.data.id)
    expect(entered).toEqual(['ctx2', 'p2', 'p3'])
  })

  it("RS-3: the first request of the resumed instance logs a resume header with the new instance's config", async () => {
    const { agent: first } = scriptedAgent([textResponse('x')])
    first.on('agent/request', (_p, next) => next().then((c) => ({ ...c, model: 'switched' })))
    first.followup('hello')
    await first.whenIdle()
    expect(ofType(first, 'request/header')[0].data.header.config.model).toBe('switched')
    const { agent } = resume(first.session.events)
    agent.followup('again')
    await agent.whenIdle()
    const headers = ofType(agent, 'request/header')
    expect(headers.map((h) => h.data.reason)).toEqual(['initial', 'resume'])
    expect(headers[1].data.header.config).toEqual({ provider: 'scripted', model: 'scripted-1' })
  })

  it('RS-4: a log cut inside a step gets error results for its open calls, step/end, then turn/end{interrupted}', async () => {
    const crash = await crashedInTool()
    const { agent } = resume(crash.events)
    await crash.finish()
    const closers = agent.session.events.slice(crash.events.length + 1)
    expect(trace(closers)).toEqual(['tool/result(a)', 'tool/result(b)', 'step/end{1,1}', 'turn/end{1,interrupted}'])
    expect(closers.map((e) => e.seq)).toEqual([0, 1, 2, 3].map((i) => crash.events.length + 1 + i))
    const lastTime = crash.events.at(-1)!.time
    expect(closers.every((e) => e.time === lastTime)).toBe(true)
    const again = resume(crash.events).agent
    const ids = (a: Agent) => ofType(a, 'tool/result').map((e) => e.data.message.id)
    expect(ids(again)).toEqual(ids(agent)) // deterministic ids
  })

  it('RS-5: a started call has an unknown outcome and cites its call; a call never started may be retried', async () => {
    const crash = await crashedInTool()
    const { agent } = resume(crash.events)
    await crash.finish()
    const [a, b] = ofType(agent, 'tool/result').slice(-2)
    const call = crash.events.find((e) => e.type === 'tool/call' && e.data.callId === 'a')!
    expect(a.data.error).toEqual({ name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' })
    expect(a.sourceEventSeqs).toEqual([call.seq])
    expect(a.data.message.content[0].content).toMatch(/outcome of this tool call is unknown.*only if the call is safe to repeat/)
    expect(b.data.error).toEqual({ name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' })
    expect(b.sourceEventSeqs).toBeUndefined()
    expect(b.data.message.content[0].content).toMatch(/never started.*may retry/)
    // the repaired results are model-visible: the next request carries them
    agent.followup('continue')
    await agent.whenIdle()
    const history = agent.session.deriveMessages()
    expect(history.filter((m) => m.source.kind === 'tool').map((m) => (m.source as { callId: string }).callId)).toEqual(['a', 'b'])
  })

  it('RS-6: repair adds nothing to an empty or balanced log and leaves closed turns alone; the loop never writes interrupted', async () => {
    expect(repairClosers([])).toEqual([])
    const first = await twoTurns()
    expect(repairClosers(first.session.events)).toEqual([])
    const { agent } = resume(first.session.events)
    expect(agent.session.events.length).toBe(first.session.events.length + 1) // only the end-seed
    const crash = await crashedInTool()
    await crash.finish()
    // the live agent closed its own turn: aborted, never interrupted
    expect(ofType(first, 'turn/end').every((e) => e.data.reason.kind !== 'interrupted')).toBe(true)
    const closers = repairClosers(crash.events)
    expect(closers.map((c) => c.type)).toEqual(['tool/result', 'tool/result', 'step/end', 'turn/end'])
    expect(closers.every((c) => (c.data as { turn: number }).turn === 1)).toBe(true)
  })

  it('RS-7: loading a session whose open turn belongs to a live agent is refused; that agent closes the turn itself', async () => {
    let release!: () => void
    const slow = defineTool({ name: 'slow', description: 'w', input: z.object({}), execute: () => new Promise<string>((r) => (release = () => r('ok'))) })
    const { agent: live } = scriptedAgent([toolCallResponse([{ id: 'a', name: 'slow', arguments: '{}' }]), textResponse('done')], { tools: [slow] })
    live.followup('go')
    for (let i = 0; i < 200 && !release; i++) await tick(1)
    const model = scriptedModel([])
    expect(() => createAgent({ model, session: createSession({ id: live.id, seed: live.session.events }) })).toThrow(/open in a live agent/)
    expect(() => createAgent({ model, session: live.session })).toThrow(/already belongs to a live agent/)
    release()
    await live.whenIdle()
    expect(trace(live).at(-1)).toBe('turn/end{1,completed}')
    // once the live agent has closed it, the same log loads normally
    const later = track(createAgent({ model, session: createSession({ id: `${live.id}-copy`, seed: live.session.events }) }))
    expect(later.inbox.hasPending).toBe(false)
    expect(later.session.events.at(-1)?.type).toBe('session/end-seed')
  })
})

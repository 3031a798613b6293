// The timeline model the page draws, built from real logs of a scripted agent.
import { describe, expect, it } from 'vitest'
import { SessionModel } from '../../src/viewer/page/model.js'
import type { WireEvent } from '../../src/viewer/page/protocol.js'
import { summarize } from '../../src/viewer/page/describe.js'
import { subagentsExample } from '../../examples/subagents.js'
import { approvalScenario, largeSession, scenario } from './scenario.js'

/** Run the whole scripted scenario (retry, parallel and exclusive tools, a steer, a cancel, a second turn). */
async function scenarioLog() {
  const s = scenario()
  s.agent.followup('Tidy the files')
  await s.recovering.promise
  s.releaseRecovery.open()
  await s.writing.promise
  s.agent.steer('Actually, use the staging folder')
  s.releaseWrite.open()
  await s.streaming.promise
  s.agent.cancel()
  await s.agent.whenIdle()
  s.agent.followup('Second turn')
  await s.agent.whenIdle()
  const events = s.agent.session.events
  await s.agent.dispose()
  return events as readonly WireEvent[]
}

describe('viewer timeline model', () => {
  it('finds turns, steps, the failed attempt and its retry, tool lanes, the steer and the cancel', async () => {
    const events = await scenarioLog()
    const model = new SessionModel()
    model.append(events.slice(0, 10))
    model.append(events.slice(10))
    expect(model.events).toHaveLength(events.length)

    expect(model.turns.map((t) => [t.turn, t.reason?.kind, t.steps.length])).toEqual([
      [1, 'aborted', 2],
      [2, 'completed', 1],
    ])
    const [first, second] = model.turns[0].steps
    expect(first.attempts.map((a) => [a.index, a.outcome, a.failure?.code ?? null])).toEqual([
      [1, 'failed', 'SERVER'],
      [2, 'ok', null],
    ])
    // the retry streamed its tool calls; the cancelled step's stream left an interrupted prefix
    expect(first.attempts[1].chunks).toBeGreaterThan(3)
    expect(second.attempts.map((a) => a.outcome)).toEqual(['interrupted'])
    expect(second.attempts[0].streamStart).not.toBeNull()

    // r1 and r2 overlapped (two lanes, one group); w1 ran alone after them
    const byCall = Object.fromEntries(model.tools.map((t) => [t.callId, t]))
    expect(byCall.r1.group).toBe(byCall.r2.group)
    expect(byCall.r1.lane).not.toBe(byCall.r2.lane)
    expect(byCall.w1.group.calls).toEqual([byCall.w1])
    expect(byCall.w1.start).toBeGreaterThan(Math.max(byCall.r1.end!, byCall.r2.end!))
    expect(model.lanes).toBe(2)

    // two prompts and a steer; the steer was claimed at the second step and entered there
    expect(model.arrivals.map((a) => [a.target, a.text])).toEqual([
      ['next-turn', 'Tidy the files'],
      ['next-step', 'Actually, use the staging folder'],
      ['next-turn', 'Second turn'],
    ])
    const steer = model.arrivals[1]
    expect(steer.claimedBy).toBe(1)
    expect(events[steer.enteredAt!].type).toBe('user/message')
    expect(steer.enteredAt!).toBeGreaterThan(second.start)
    // the log itself says the send woke the agent: a stored log tells a steer from an inject
    expect(steer.wakeup).toBe(true)
    expect(model.viaOf(steer)).toBe('steer')
    expect(model.viaOf(model.arrivals[0])).toBe('followup')
    // a log written before the field: only the live agent's note can tell
    const old = new SessionModel()
    old.append(events.map((e) => (e.type === 'agent/inbox/spliced' ? { ...e, data: { ...(e.data as object), wakeup: undefined } } : e)))
    expect(old.viaOf(old.arrivals[1])).toBe('next-step')
    old.note([{ messageId: steer.messageId, wakeup: true }], [])
    expect(old.viaOf(old.arrivals[1])).toBe('steer')

    expect(model.markers.map((m) => [m.type, m.label])).toEqual([['cancel', 'cancelled (user)']])
    // every event belongs to an item of the timeline
    expect(model.owner.every((uid) => model.items.has(uid))).toBe(true)
    expect(model.items.get(model.owner[byCall.w1.start])).toBe(byCall.w1)
  })

  it('names the waits from the log: the backoff before a retry and the call waiting for approval, with how each ended', async () => {
    const { agent } = approvalScenario()
    agent.followup('Ship it')
    while (agent.pendingApprovals.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    const waiting = new SessionModel()
    waiting.append(agent.session.events as readonly WireEvent[])
    expect(waiting.waiting).toMatchObject({ wait: 'approval', label: 'waiting for approval of deploy', detail: 'Deploy to production?', end: null })
    agent.approve('d1')
    await agent.whenIdle()
    const events = agent.session.events as readonly WireEvent[]
    await agent.dispose()
    const model = new SessionModel()
    model.append(events)
    expect(model.waits.map((w) => [w.wait, w.label, w.outcome])).toEqual([
      ['backoff', 'backing off 300 ms before retry 1', 'retried'],
      ['approval', 'waiting for approval of deploy', 'approved'],
    ])
    expect(model.waiting).toBeNull()
    const retry = events.find((e) => e.type === 'llm/retry')!
    const approval = events.find((e) => e.type === 'tool/approval-request')!
    expect(model.waits[0]).toMatchObject({ start: retry.seq, end: events.find((e) => e.type === 'llm/retry-started')!.seq })
    expect(model.waits[1]).toMatchObject({ start: approval.seq, end: events.find((e) => e.type === 'tool/approval-answer')!.seq })
    // the rows read as sentences: no JSON where a person reads them
    const rows = events.map((e) => summarize(e, model))
    for (const [i, e] of events.entries()) if (e.type !== 'tool/call' && e.type !== 'assistant/chunk') expect(rows[i], e.type).not.toMatch(/[{}]/)
    expect(rows[approval.seq]).toBe("deploy #d1 waits for a person's approval: “Deploy to production?”")
    expect(rows[retry.seq]).toBe('the request to scripted failed (RATE_LIMIT: rate limited); retry 1 in 300 ms')
  })

  it('names a live wait the log does not record (a maintenance job) from the machine state, and closes it when the state is left', () => {
    const model = new SessionModel()
    model.append([{ seq: 0, time: 1, type: 'turn/start', data: { turn: 1 } }])
    model.liveState(['maintenance'])
    expect(model.waiting).toMatchObject({ wait: 'maintenance', label: 'running a maintenance job', start: 0, end: null })
    model.liveState(['idle'])
    expect(model.waiting).toBeNull()
    expect(model.waits.map((w) => [w.wait, w.outcome])).toEqual([['maintenance', 'done']])
    // read from the configuration each event was appended in, a wait sits between the events around it
    model.liveState(['running.turn.step.attempt.recovering'], 5)
    model.liveState(['running.turn.step.attempt.recovering'], 6)
    model.liveState(['running.turn.step.attempt.building'], 7)
    expect(model.waits.at(-1)).toMatchObject({
      wait: 'recovering',
      label: 'deciding whether to retry (request-error listener)',
      start: 4,
      end: 7,
      outcome: 'done',
    })
  })

  it('links subagents from the calls that ran them and rolls their tokens into the totals, saying how much was theirs', async () => {
    const { planner } = await subagentsExample()
    const model = new SessionModel()
    model.append(planner as readonly WireEvent[])
    expect(model.subagents.map((s) => [s.callId, s.tool, s.sessionId, s.end, s.steps, s.tokens])).toEqual([
      ['r1', 'research', 'research-weather', 'completed', 1, 120],
      ['r2', 'research', 'research-trains', 'completed', 1, 120],
      ['s1', 'summarise', 'summary', 'completed', 1, 120],
    ])
    // the example's own numbers: the planner's turn spent 600 tokens, 360 of them in its three children (TurnResult.usage, subagentUsage)
    expect(model.usage).toMatchObject({ totalTokens: 600, subagentTokens: 360, subagents: 3 })
    const result = planner.find((e) => e.type === 'tool/result')!
    expect(summarize(result as WireEvent, model)).toBe(
      'research #r1 returns “notes on weather in May” (subagent research-weather: completed, 1 step, 120 tokens)',
    )
  })

  it('reads a child log: its parent session and call, from its prompt', async () => {
    const { children } = await subagentsExample()
    const model = new SessionModel()
    model.append(children[0] as readonly WireEvent[])
    expect(model.parent).toMatchObject({ sessionId: 'planner', tool: expect.any(String) })
    expect(['r1', 'r2', 's1']).toContain(model.parent!.callId)
  })

  it('skips events it already has and stops at a gap, so a resumed connection cannot duplicate or reorder', async () => {
    const events = await scenarioLog()
    const model = new SessionModel()
    model.append(events.slice(0, 20))
    model.append(events.slice(10, 30))
    model.append(events.slice(40))
    expect(model.events.map((e) => e.seq)).toEqual(events.slice(0, 30).map((e) => e.seq))
  })

  it('reads a hostile or malformed log without throwing', () => {
    const model = new SessionModel()
    const junk: WireEvent[] = [
      { seq: 0, time: 1, type: 'turn/end', data: null },
      { seq: 1, time: 2, type: 'tool/result', data: { message: 'nope' } },
      { seq: 2, time: 3, type: 'agent/inbox/spliced', data: { target: 'elsewhere', start: -5, removedCount: 99, inserted: [null, { id: 7 }] } },
      { seq: 3, time: 4, type: 'assistant/chunk', data: { chunk: { type: 'finish', reason: { kind: 'error' } } } },
      { seq: 4, time: 5, type: '<b>custom</b>', data: { a: [1, { b: 2 }] } },
    ]
    model.append(junk)
    expect(model.events).toHaveLength(5)
    for (const event of junk) expect(typeof summarize(event)).toBe('string')
  })

  it('takes a 10,000-event session in one pass', async () => {
    const events = await largeSession(10_000)
    const model = new SessionModel()
    for (let i = 0; i < events.length; i += 500) model.append(events.slice(i, i + 500) as readonly WireEvent[])
    expect(model.events.length).toBe(events.length)
    expect(model.turns.length).toBe(events.filter((e) => e.type === 'turn/start').length)
    expect(model.tools.every((t) => t.end !== null && t.group.calls.length === 1)).toBe(true)
  })
})

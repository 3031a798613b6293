// The timeline model the page draws, built from real logs of a scripted agent.
import { describe, expect, it } from 'vitest'
import { SessionModel } from '../../src/viewer/page/model.js'
import type { WireEvent } from '../../src/viewer/page/protocol.js'
import { summarize } from '../../src/viewer/page/describe.js'
import { largeSession, scenario } from './scenario.js'

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

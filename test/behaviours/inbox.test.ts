// IN — Inbox: the two pending lists, their durable splices, claims, and
// rebuilding them from a stored log (BEHAVIOURS.md IN-1..IN-14).
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, createSession, defineTool, userMessage, type Agent, type ModelAdapter, type UserMessage } from '../../src/index.js'
import { checkSessionInvariants, hang, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { propertyRuns, record, scriptedAgent, textOf, tick, timeline, trace } from '../helpers.js'

const m = (id: string, text = id) => userMessage(text, { id })
const ids = (list: readonly UserMessage[]) => list.map((x) => x.id)
const phase = (agent: Agent) => {
  const value = agent.actor.getSnapshot().value
  return typeof value === 'string' ? value : Object.keys(value)[0]
}
const splices = (agent: Agent) => agent.session.events.filter((e) => e.type === 'agent/inbox/spliced')
const spliceData = (agent: Agent) => splices(agent).map((e) => e.data)
const userTexts = (agent: Agent) => agent.session.events.flatMap((e) => (e.type === 'user/message' ? [textOf(e.data)] : []))

/** A session whose inbox splice appends throw while `failing.on` is set. */
function failingSplices() {
  const session = createSession()
  const append = session.append.bind(session)
  const failing = { on: false }
  session.append = ((type: string, data: unknown, intent?: unknown) => {
    if (failing.on && type === 'agent/inbox/spliced') throw new Error('disk full')
    return append(type as never, data as never, intent as never)
  }) as typeof session.append
  return { session, failing }
}

/** A model that answers every request with the same text, however many there are. */
function echoModel(text = 'ok'): ModelAdapter {
  return {
    provider: 'echo',
    model: 'echo-1',
    stream: () =>
      (async function* () {
        yield* textResponse(text)
      })(),
  }
}

describe('IN — Inbox', () => {
  it('IN-1: followup inserts at the end of next-turn and wakes the agent', async () => {
    const { agent } = scriptedAgent([textResponse('a'), textResponse('b'), textResponse('c')])
    agent.followup(m('p1'))
    expect(agent.status).toBe('running')
    agent.followup(m('p2'))
    agent.followup(m('p3'))
    expect(ids(agent.inbox.nextTurn)).toEqual(['p2', 'p3'])
    expect(spliceData(agent).filter((d) => d.inserted.length > 0)).toEqual([
      { target: 'next-turn', start: 0, inserted: [m('p1')] },
      { target: 'next-turn', start: 0, inserted: [m('p2')] },
      { target: 'next-turn', start: 1, inserted: [m('p3')] },
    ])
    await agent.whenIdle()
    expect(userTexts(agent)).toEqual(['p1', 'p2', 'p3'])
  })

  it('IN-1: steer inserts into next-step and wakes an idle agent', async () => {
    const { agent, model } = scriptedAgent([textResponse('a')])
    agent.steer(m('s'))
    expect(agent.status).toBe('running')
    await agent.whenIdle()
    expect(trace(agent)).toEqual([
      'spliced(next-step +1)',
      'turn/start{1}',
      'spliced(next-step -1)',
      'step/start{1,1}',
      'user/message(s)',
      'request/header',
      'request/context',
      'assistant/message',
      'step/end{1,1}',
      'turn/end{1,completed}',
    ])
    expect(spliceData(agent)[0]).toEqual({ target: 'next-step', start: 0, inserted: [m('s')], wakeup: true })
    expect(model.requests).toHaveLength(1)
  })

  it('IN-1: inject inserts at the end of next-step without waking', async () => {
    const { agent, model } = scriptedAgent([])
    const status = record(agent, ['agent/status'])
    agent.inject(m('i1'))
    agent.inject(m('i2'))
    expect(agent.status).toBe('idle')
    expect(ids(agent.inbox.nextStep)).toEqual(['i1', 'i2'])
    // the log keeps that these were injects, not steers: a stored log tells them apart
    expect(spliceData(agent)).toEqual([
      { target: 'next-step', start: 0, inserted: [m('i1')], wakeup: false },
      { target: 'next-step', start: 1, inserted: [m('i2')], wakeup: false },
    ])
    await tick()
    expect(agent.session.events.some((e) => e.type === 'turn/start')).toBe(false)
    expect(status).toEqual([])
    expect(model.requests).toHaveLength(0)
  })

  it('IN-1: send(m, target, wakeup) is the general form of the three', async () => {
    const { agent } = scriptedAgent([textResponse('a'), textResponse('b')])
    agent.send(m('t'), 'next-turn', false)
    expect(agent.status).toBe('idle')
    expect(ids(agent.inbox.nextTurn)).toEqual(['t'])
    agent.send(m('s'), 'next-step', true)
    expect(agent.status).toBe('running')
    await agent.whenIdle()
    // the woken turn claims the steering and the parked prompt together
    expect(trace(agent).slice(0, 8)).toEqual([
      'spliced(next-turn +1)',
      'spliced(next-step +1)',
      'turn/start{1}',
      'spliced(next-step -1)',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(s)',
      'user/message(t)',
    ])
    expect(() => agent.send(m('x'), 'elsewhere' as never, true)).toThrow(/target/)
    expect(agent.inbox.hasPending).toBe(false)
  })

  it('IN-2: the splice is appended before the lists change, one per mutation', () => {
    const { agent } = scriptedAgent([])
    const seen: string[] = []
    agent.on('session/event', ({ event }) => {
      if (event.type === 'agent/inbox/spliced') seen.push(`${ids(agent.inbox.nextTurn).join(',')}|${ids(agent.inbox.nextStep).join(',')}`)
    })
    agent.inject(m('a'))
    agent.send(m('b'), 'next-turn', false)
    agent.inbox.replace('a', m('a2'))
    agent.inbox.remove('b')
    agent.inbox.clear()
    // each observer saw the lists as they were before its own splice
    expect(seen).toEqual(['|', '|a', 'b|a', 'b|a2', '|a2'])
    expect(splices(agent)).toHaveLength(5)
    expect(agent.inbox.hasPending).toBe(false)
  })

  it('IN-2: a mutation that neither removes nor inserts appends and notifies nothing', async () => {
    const { agent } = scriptedAgent([])
    const live = record(agent, ['agent/inbox/inserted', 'agent/inbox/discarded', 'agent/status'])
    agent.inbox.clear()
    expect(agent.inbox.remove('nope')).toBe(false)
    expect(agent.inbox.replace('nope', m('x'))).toBe(false)
    agent.inbox.splice('next-turn', 0, 0)
    agent.inbox.splice('next-step', 5, 3)
    agent.cancel()
    await tick()
    expect(agent.session.events).toEqual([])
    expect(live).toEqual([])
  })

  it('IN-3: stored splices carry the normalized start, removedCount only when positive, canceled only for non-claims', async () => {
    const { agent } = scriptedAgent([textResponse('a'), textResponse('b')])
    agent.inject(m('i1'))
    agent.inject(m('i2'))
    agent.inject(m('i3'))
    agent.inbox.remove('i2')
    agent.send(m('t1'), 'next-turn', false)
    agent.followup(m('t2'))
    await agent.whenIdle()
    agent.inject(m('late'))
    agent.inbox.clear()
    // strict: removedCount and outcome are absent, not undefined, where they do not apply
    expect(spliceData(agent)).toStrictEqual([
      { target: 'next-step', start: 0, inserted: [m('i1')], wakeup: false },
      { target: 'next-step', start: 1, inserted: [m('i2')], wakeup: false },
      { target: 'next-step', start: 2, inserted: [m('i3')], wakeup: false },
      { target: 'next-step', start: 1, removedCount: 1, inserted: [], outcome: 'canceled' },
      { target: 'next-turn', start: 0, inserted: [m('t1')] },
      { target: 'next-turn', start: 1, inserted: [m('t2')] },
      // the claim: pure deletions without an outcome
      { target: 'next-step', start: 0, removedCount: 2, inserted: [] },
      { target: 'next-turn', start: 0, removedCount: 1, inserted: [] },
      { target: 'next-turn', start: 0, removedCount: 1, inserted: [] }, // turn 2 claims t2
      { target: 'next-step', start: 0, inserted: [m('late')], wakeup: false },
      { target: 'next-step', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' },
    ])
    expect(agent.inbox.hasPending).toBe(false)
  })

  it('IN-3: splice coordinates follow Array.prototype.splice normalization', () => {
    const { agent } = scriptedAgent([])
    // [start, deleteCount, normalized start]; the resulting list is what Array.prototype.splice gives
    const cases: Array<[unknown, unknown, number]> = [
      [-1, 1, 3], // negative start counts from the end
      [-99, 1, 0], // and clamps at 0
      [99, 0, 4], // out-of-range start clamps to the length
      ['x', 1, 0], // non-numeric start is 0
      [1.7, 1, 1], // fractions truncate
      [2, 99, 2], // delete count clamps to what exists
      [1, -3, 1], // a negative delete count removes nothing
    ]
    cases.forEach(([start, count, normalized], k) => {
      agent.inbox.clear()
      agent.inbox.splice('next-step', 0, 0, m('a'), m('b'), m('c'), m('d'))
      const fresh = m(`n${k}`)
      const reference = ['a', 'b', 'c', 'd']
      const removed = reference.splice(start as number, count as number, fresh.id)
      const seq = agent.session.events.length
      agent.inbox.splice('next-step', start as number, count as number, fresh)
      expect(agent.session.events).toHaveLength(seq + 1)
      expect(agent.session.events[seq].data, `case ${k}`).toEqual({
        target: 'next-step',
        start: normalized,
        ...(removed.length > 0 ? { removedCount: removed.length } : {}),
        inserted: [fresh],
        ...(removed.length > 0 ? { outcome: 'canceled' } : {}),
      })
      expect(ids(agent.inbox.nextStep), `case ${k}`).toEqual(reference)
    })
    // start alone removes everything from there, like Array.prototype.splice(start)
    expect(ids(agent.inbox.nextStep)).toEqual(['a', 'n6', 'b', 'c', 'd'])
    agent.inbox.splice('next-step', -2)
    expect(ids(agent.inbox.nextStep)).toEqual(['a', 'n6', 'b'])
    expect(agent.session.events.at(-1)!.data).toEqual({ target: 'next-step', start: 3, removedCount: 2, inserted: [], outcome: 'canceled' })
    agent.inbox.clear()
  })

  it('IN-4: discarded fires per removed message, then inserted per inserted message, after the lists change', () => {
    const { agent } = scriptedAgent([])
    const out = timeline(agent)
    const lists: string[] = []
    const snap = () => lists.push(ids(agent.inbox.nextStep).join(','))
    agent.on('agent/inbox/inserted', snap)
    agent.on('agent/inbox/discarded', snap)
    agent.inbox.splice('next-step', 0, 0, m('a'), m('b'), m('c'))
    agent.inbox.splice('next-step', 0, 2, m('x'), m('y'))
    expect(out).toEqual([
      'spliced(next-step +3)',
      'inserted(a)',
      'inserted(b)',
      'inserted(c)',
      'spliced(next-step -2 +2 canceled)',
      'discarded(a)',
      'discarded(b)',
      'inserted(x)',
      'inserted(y)',
    ])
    // every notification already sees the lists after the splice
    expect(lists).toEqual(['a,b,c', 'a,b,c', 'a,b,c', 'x,y,c', 'x,y,c', 'x,y,c', 'x,y,c'])
    agent.inbox.clear()
  })

  it('IN-4: replace(id, m2) is one canceled splice in place, then discarded(old) and inserted(m2)', () => {
    const { agent } = scriptedAgent([])
    agent.inject(m('a'))
    agent.inject(m('b'))
    agent.inject(m('c'))
    const out = timeline(agent)
    expect(agent.inbox.replace('b', m('b2', 'B'))).toBe(true)
    expect(out).toEqual(['spliced(next-step -1 +1 canceled)', 'discarded(b)', 'inserted(B)'])
    expect(agent.session.events.at(-1)!.data).toEqual({
      target: 'next-step',
      start: 1,
      removedCount: 1,
      inserted: [m('b2', 'B')],
      outcome: 'canceled',
    })
    expect(ids(agent.inbox.nextStep)).toEqual(['a', 'b2', 'c'])
    // a string becomes a fresh text message
    expect(agent.inbox.replace('c', 'C')).toBe(true)
    expect(agent.inbox.nextStep.map(textOf)).toEqual(['a', 'B', 'C'])
    agent.inbox.clear()
  })

  it('IN-5: remove and replace search both lists and return false, logging nothing, for an id not pending', () => {
    const { agent } = scriptedAgent([])
    agent.inject(m('s1'))
    agent.send(m('t1'), 'next-turn', false)
    agent.send(m('t2'), 'next-turn', false)
    expect(agent.inbox.remove('t2')).toBe(true)
    expect(agent.inbox.replace('s1', m('s2'))).toBe(true)
    expect(spliceData(agent).slice(-2)).toEqual([
      { target: 'next-turn', start: 1, removedCount: 1, inserted: [], outcome: 'canceled' },
      { target: 'next-step', start: 0, removedCount: 1, inserted: [m('s2')], outcome: 'canceled' },
    ])
    const length = agent.session.events.length
    expect(agent.inbox.remove('t2')).toBe(false)
    expect(agent.inbox.remove('s1')).toBe(false)
    expect(agent.inbox.replace('s1', m('s3'))).toBe(false)
    expect(agent.session.events).toHaveLength(length)
    expect(ids(agent.inbox.nextStep)).toEqual(['s2'])
    expect(ids(agent.inbox.nextTurn)).toEqual(['t1'])
    agent.inbox.clear()
  })

  it('IN-5: clear() removes next-step first, then next-turn, each as its own canceled splice only if non-empty', () => {
    const { agent } = scriptedAgent([])
    agent.send(m('t1'), 'next-turn', false)
    agent.inject(m('s1'))
    agent.send(m('t2'), 'next-turn', false)
    agent.inject(m('s2'))
    const out = timeline(agent)
    agent.inbox.clear()
    expect(out).toEqual([
      'spliced(next-step -2 canceled)',
      'discarded(s1)',
      'discarded(s2)',
      'spliced(next-turn -2 canceled)',
      'discarded(t1)',
      'discarded(t2)',
    ])
    agent.send(m('t3'), 'next-turn', false)
    out.length = 0
    agent.inbox.clear()
    expect(out).toEqual(['spliced(next-turn -1 canceled)', 'discarded(t3)'])
    expect(agent.inbox.hasPending).toBe(false)
  })

  it('IN-6: an id may be pending once across both lists; a duplicate throws "already pending" and logs nothing', () => {
    const { agent } = scriptedAgent([])
    agent.inject(m('x'))
    agent.send(m('y'), 'next-turn', false)
    const length = agent.session.events.length
    const live = record(agent, ['agent/inbox/inserted', 'agent/inbox/discarded'])
    expect(() => agent.inject(m('x', 'again'))).toThrow(/already pending/)
    expect(() => agent.followup(m('x'))).toThrow(/already pending/)
    expect(() => agent.send(m('y'), 'next-step', false)).toThrow(/already pending/)
    expect(() => agent.inbox.replace('x', m('y'))).toThrow(/already pending/)
    expect(() => agent.inbox.splice('next-turn', 0, 0, m('x'))).toThrow(/already pending/)
    expect(() => agent.inbox.splice('next-step', 0, 0, m('z'), m('z'))).toThrow(/already pending/)
    expect(agent.session.events).toHaveLength(length)
    expect(live).toEqual([])
    expect(agent.status).toBe('idle')
    expect(ids(agent.inbox.nextStep)).toEqual(['x'])
    expect(ids(agent.inbox.nextTurn)).toEqual(['y'])
    // replacing a message by one with its own id is not a duplicate
    expect(agent.inbox.replace('x', m('x', 'x2'))).toBe(true)
    agent.inbox.clear()
  })

  it('IN-6: a duplicate sent from a notification listener throws there, and the send that notified it succeeds', async () => {
    const { agent } = scriptedAgent([textResponse('a')])
    agent.inject(m('x'))
    const inner: unknown[] = []
    const off = agent.on('agent/inbox/inserted', ({ message }) => {
      if (message.id !== 'y') return
      try {
        agent.inject(m('x', 'x again'))
      } catch (error) {
        inner.push(error)
      }
      try {
        agent.inbox.replace('x', m('y'))
      } catch (error) {
        inner.push(error)
      }
    })
    expect(() => agent.inject(m('y'))).not.toThrow()
    off()
    expect(inner.map((e) => (e as Error).message)).toEqual([expect.stringMatching(/"x" is already pending/), expect.stringMatching(/"y" is already pending/)])
    expect(trace(agent)).toEqual(['spliced(next-step +1)', 'spliced(next-step +1)'])
    expect(ids(agent.inbox.nextStep)).toEqual(['x', 'y'])
    agent.inbox.clear()
  })

  it('IN-6: the same id may be sent again once the earlier one was removed or claimed', async () => {
    const { agent } = scriptedAgent([textResponse('a'), textResponse('b')])
    agent.inject(m('r'))
    agent.inbox.remove('r')
    agent.inject(m('r', 'r again'))
    expect(agent.inbox.nextStep.map(textOf)).toEqual(['r again'])
    agent.inbox.clear()
    agent.followup(m('p'))
    // claimed synchronously (PH-2), so the id is free again
    agent.followup(m('p', 'p again'))
    await agent.whenIdle()
    expect(userTexts(agent)).toEqual(['p', 'p again'])
  })

  it('IN-7: a message that is not lossless JSON throws synchronously and changes nothing', async () => {
    const { agent, model } = scriptedAgent([])
    const live = record(agent, ['agent/inbox/inserted', 'agent/status'])
    const bad = [
      { id: 'u', role: 'user', content: [{ type: 'text', text: 'a', extra: undefined }], source: { kind: 'user' } },
      { id: 'd', role: 'user', content: [{ type: 'text', text: 'a' }], source: { kind: 'plugin', plugin: 'p', at: new Date() } },
      { id: 'n', role: 'user', content: [{ type: 'text', text: 'a' }], source: { kind: 'plugin', plugin: 'p', n: Number.NaN } },
    ]
    for (const message of bad) {
      expect(() => agent.followup(message as never)).toThrow(/lossless/)
      expect(() => agent.steer(message as never)).toThrow(/lossless/)
      expect(() => agent.inject(message as never)).toThrow(/lossless/)
    }
    await tick()
    expect(agent.session.events).toEqual([])
    expect(agent.inbox.hasPending).toBe(false)
    expect(agent.status).toBe('idle')
    expect(live).toEqual([])
    expect(model.requests).toHaveLength(0)
  })

  it('IN-7: a send whose durable append fails throws and leaves the log, lists, status and wake state unchanged', async () => {
    const { session, failing } = failingSplices()
    const { agent, model } = scriptedAgent([textResponse('a')], { session })
    const live = record(agent, ['agent/inbox/inserted', 'agent/status'])
    agent.inject(m('kept'))
    live.length = 0
    const before = agent.session.events
    failing.on = true
    expect(() => agent.followup(m('p'))).toThrow('disk full')
    expect(() => agent.steer(m('s'))).toThrow('disk full')
    expect(() => agent.inject(m('i'))).toThrow('disk full')
    expect(() => agent.inbox.remove('kept')).toThrow('disk full')
    expect(agent.session.events).toEqual(before)
    expect(ids(agent.inbox.nextStep)).toEqual(['kept'])
    expect(agent.inbox.nextTurn).toEqual([])
    expect(agent.status).toBe('idle')
    expect(live).toEqual([])
    failing.on = false
    await tick()
    // no wake was latched by the failed sends: nothing runs until a waking send arrives
    expect(agent.session.events.some((e) => e.type === 'turn/start')).toBe(false)
    expect(model.requests).toHaveLength(0)
    // and the failed message ids are free to send again
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(userTexts(agent)).toEqual(['kept', 'p'])
  })

  it('IN-7: a failed waking send during maintenance latches no wake', async () => {
    const { session, failing } = failingSplices()
    const { agent, model } = scriptedAgent([], { session })
    let release!: () => void
    const job = agent.runMaintenance(() => new Promise<void>((resolve) => (release = resolve)))
    agent.inject(m('ctx'))
    failing.on = true
    expect(() => agent.followup(m('p'))).toThrow('disk full')
    expect(() => agent.steer(m('s'))).toThrow('disk full')
    failing.on = false
    release()
    await job
    await agent.whenIdle()
    await tick()
    // a latch would have started a turn for the pending context once the job settled
    expect(trace(agent)).toEqual(['spliced(next-step +1)'])
    expect(model.requests).toHaveLength(0)
    agent.inbox.clear()
  })

  it('IN-7: a failed send during a running turn leaves the running turn and the lists untouched', async () => {
    const { session, failing } = failingSplices()
    const { agent } = scriptedAgent([hang], { session })
    agent.followup(m('p'))
    const before = agent.session.events
    failing.on = true
    expect(() => agent.steer(m('s'))).toThrow('disk full')
    expect(() => agent.followup(m('q'))).toThrow('disk full')
    failing.on = false
    expect(agent.session.events).toEqual(before)
    expect(agent.inbox.hasPending).toBe(false)
    expect(agent.status).toBe('running')
    agent.cancel()
    await agent.whenIdle()
    expect(trace(agent).at(-1)).toBe('turn/end{1,aborted}')
  })

  it('IN-8: inbox messages are deep-frozen at insertion and logged identically', async () => {
    const { agent } = scriptedAgent([textResponse('a')])
    const raw = {
      id: 'raw',
      role: 'user' as const,
      content: [{ type: 'text' as const, text: 'hello' }],
      source: { kind: 'plugin' as const, plugin: 'p', form: 'f' },
    }
    const listenerErrors: unknown[] = []
    agent.on('agent/inbox/inserted', ({ message }) => {
      try {
        ;(message.content[0] as { text: string }).text = 'changed by a listener'
      } catch (error) {
        listenerErrors.push(error)
      }
    })
    agent.inject(raw)
    expect(Object.isFrozen(raw)).toBe(true)
    expect(Object.isFrozen(raw.content[0])).toBe(true)
    expect(Object.isFrozen(raw.source)).toBe(true)
    expect(() => {
      raw.content[0].text = 'changed by the sender'
    }).toThrow(TypeError)
    expect(listenerErrors).toHaveLength(1)
    expect(listenerErrors[0]).toBeInstanceOf(TypeError)
    const made = userMessage('made')
    expect(() => (made.content as unknown[]).push({ type: 'text', text: 'more' })).toThrow(TypeError)
    expect([made, made.content[0], made.source].every((part) => Object.isFrozen(part))).toBe(true)
    agent.followup(made)
    await agent.whenIdle()
    const logged = agent.session.events.flatMap((e) => (e.type === 'user/message' ? [e.data] : []))
    expect(logged).toEqual([
      { id: 'raw', role: 'user', content: [{ type: 'text', text: 'hello' }], source: { kind: 'plugin', plugin: 'p', form: 'f' } },
      { id: made.id, role: 'user', content: [{ type: 'text', text: 'made' }], source: { kind: 'user' } },
    ])
  })

  it('IN-9: a turn-boundary claim splices all next-step items, then the first prompt, then announces them in batch order', async () => {
    const { agent } = scriptedAgent([textResponse('a'), textResponse('b')])
    agent.inject(m('i1'))
    agent.inject(m('i2'))
    agent.send(m('t1'), 'next-turn', false)
    const out = timeline(agent)
    agent.followup(m('t2'))
    expect(out).toEqual([
      'spliced(next-turn +1)',
      'inserted(t2)',
      'status:running',
      'turn/start{1}',
      'spliced(next-step -2)',
      'spliced(next-turn -1)',
      'claimed(i1@1)',
      'claimed(i2@1)',
      'claimed(t1@1)',
    ])
    expect(spliceData(agent).slice(-2)).toEqual([
      { target: 'next-step', start: 0, removedCount: 2, inserted: [] },
      { target: 'next-turn', start: 0, removedCount: 1, inserted: [] },
    ])
    await agent.whenIdle()
    // turn 2 holds only the second prompt; next-step was empty, so it gets no splice for it
    expect(out.slice(out.indexOf('turn/start{2}'), out.indexOf('turn/start{2}') + 4)).toEqual([
      'turn/start{2}',
      'spliced(next-turn -1)',
      'claimed(t2@2)',
      'step/start{2,1}',
    ])
    expect(out.filter((x) => x.startsWith('discarded'))).toEqual([])
  })

  it('IN-9: a claim between steps takes only next-step items; an empty list gives no splice and no notification', async () => {
    let agent!: Agent
    const probe = defineTool({
      name: 'probe',
      description: 'steers and queues a prompt while it runs',
      input: z.object({ n: z.number() }),
      execute: ({ n }) => {
        if (n === 1) {
          agent.steer(m('s'))
          agent.followup(m('q'))
        }
        return 'done'
      },
    })
    const made = scriptedAgent(
      [
        toolCallResponse([{ id: 'c1', name: 'probe', arguments: '{"n":1}' }]),
        toolCallResponse([{ id: 'c2', name: 'probe', arguments: '{"n":2}' }]),
        textResponse('end of turn 1'),
        textResponse('turn 2'),
      ],
      { tools: [probe] },
    )
    agent = made.agent
    const out = timeline(agent)
    agent.followup(m('p'))
    await agent.whenIdle()
    const between = (a: string, b: string) => out.slice(out.indexOf(a) + 1, out.indexOf(b))
    expect(between('step/end{1,1}', 'step/start{1,2}')).toEqual(['spliced(next-step -1)', 'claimed(s@1)'])
    expect(between('step/end{1,2}', 'step/start{1,3}')).toEqual([])
    expect(between('turn/start{2}', 'step/start{2,1}')).toEqual(['spliced(next-turn -1)', 'claimed(q@2)'])
    expect(trace(agent).filter((x) => x.startsWith('user/message') || x.startsWith('turn/'))).toEqual([
      'turn/start{1}',
      'user/message(p)',
      'user/message(s)',
      'turn/end{1,completed}',
      'turn/start{2}',
      'user/message(q)',
      'turn/end{2,completed}',
    ])
  })

  it('IN-10: the claim runs synchronously after turn/start and after step/end, before agent/pre-step', async () => {
    let agent!: Agent
    const steerer = defineTool({
      name: 'steerer',
      description: 'steers while it runs',
      input: z.object({}),
      execute: () => {
        agent.steer(m('s'))
        return 'ok'
      },
    })
    const made = scriptedAgent([toolCallResponse([{ id: 'c1', name: 'steerer', arguments: '{}' }]), textResponse('b')], { tools: [steerer] })
    agent = made.agent
    const out = timeline(agent)
    const seen: string[] = []
    agent.on('agent/pre-step', ({ messages, step }, next) => {
      seen.push(`pre-step ${step}: [${messages.map(textOf)}] pending=${agent.inbox.hasPending} after=${out.at(-1)}`)
      return next()
    })
    agent.inject(m('i'))
    agent.followup(m('p'))
    // the first claim happened before followup returned
    expect(out.slice(-4)).toEqual(['spliced(next-step -1)', 'spliced(next-turn -1)', 'claimed(i@1)', 'claimed(p@1)'])
    expect(seen).toEqual([])
    await agent.whenIdle()
    expect(seen).toEqual(['pre-step 1: [i,p] pending=false after=claimed(p@1)', 'pre-step 2: [s] pending=false after=claimed(s@1)'])
    const at = out.indexOf('step/end{1,1}')
    expect(out.slice(at, at + 3)).toEqual(['step/end{1,1}', 'spliced(next-step -1)', 'claimed(s@1)'])
  })

  it('IN-10: input inserted after the claim waits for a later boundary, even when the proposed step is rejected', async () => {
    const { agent } = scriptedAgent([textResponse('a'), textResponse('b')])
    const discarded = record(agent, ['agent/inbox/discarded'])
    let reject = false
    agent.on('agent/pre-step', ({ step }, next) => {
      if (step === 1) agent.inject(m(`late-${agent.session.events.length}`, 'late'))
      return reject ? { kind: 'reject' } : next()
    })
    agent.followup(m('p'))
    await agent.whenIdle()
    // entered at step 2 of the same turn, never in step 1
    expect(trace(agent).filter((x) => /user\/message|step\/start/.test(x))).toEqual([
      'step/start{1,1}',
      'user/message(p)',
      'step/start{1,2}',
      'user/message(late)',
    ])
    reject = true
    agent.followup(m('q'))
    await agent.whenIdle()
    expect(trace(agent).slice(-4)).toEqual(['turn/start{2}', 'spliced(next-turn -1)', 'spliced(next-step +1)', 'turn/end{2,blocked}'])
    // the late input stays parked; the claimed (and rejected) prompt is never discarded
    expect(agent.inbox.nextStep.map(textOf)).toEqual(['late'])
    expect(discarded).toEqual([])
    expect(userTexts(agent)).not.toContain('q')
    agent.inbox.clear()
  })

  it('IN-11: an idle inject logs one next-step splice, opens no turn, and joins the next woken turn ahead of its prompt', async () => {
    const { agent, model } = scriptedAgent([textResponse('a')])
    const status = record(agent, ['agent/status'])
    agent.inject(m('ctx'))
    await tick()
    expect(trace(agent)).toEqual(['spliced(next-step +1)'])
    expect(status).toEqual([])
    expect(agent.status).toBe('idle')
    agent.followup(m('prompt'))
    await agent.whenIdle()
    expect(trace(agent).slice(0, 7)).toEqual([
      'spliced(next-step +1)',
      'spliced(next-turn +1)',
      'turn/start{1}',
      'spliced(next-step -1)',
      'spliced(next-turn -1)',
      'step/start{1,1}',
      'user/message(ctx)',
    ])
    expect(model.requests[0].messages.map((x) => x.content.map((b) => ('text' in b ? b.text : '')).join(''))).toEqual(['ctx', 'prompt'])
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
  })

  for (const how of ['steer', 'inject'] as const) {
    it(`IN-12: ${how} input arriving while a turn runs is entered at its next step, extending the turn`, async () => {
      let agent!: Agent
      const made = scriptedAgent([
        () => {
          agent[how](m('mid'))
          return textResponse('first')
        },
        textResponse('second'),
      ])
      agent = made.agent
      agent.followup(m('p'))
      await agent.whenIdle()
      expect(trace(agent)).toEqual([
        'spliced(next-turn +1)',
        'turn/start{1}',
        'spliced(next-turn -1)',
        'step/start{1,1}',
        'user/message(p)',
        'request/header',
        'request/context',
        'spliced(next-step +1)',
        'assistant/message',
        'step/end{1,1}',
        'spliced(next-step -1)',
        'step/start{1,2}',
        'user/message(mid)',
        'assistant/message',
        'step/end{1,2}',
        'turn/end{1,completed}',
      ])
      expect(made.model.requests).toHaveLength(2)
    })
  }

  it('IN-12: input injected by agent/turn-stopping keeps the turn going for another step', async () => {
    const { agent, model } = scriptedAgent([textResponse('a'), textResponse('b')])
    let once = true
    agent.on('agent/turn-stopping', () => {
      if (once) agent.inject(m('more'))
      once = false
    })
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(trace(agent).filter((x) => x.startsWith('turn/') || x.startsWith('step/start'))).toEqual([
      'turn/start{1}',
      'step/start{1,1}',
      'step/start{1,2}',
      'turn/end{1,completed}',
    ])
    expect(model.requests).toHaveLength(2)
  })

  it('IN-13: N followups sent synchronously from idle run as turns 1..N, one prompt each, in one running/idle pair', async () => {
    const n = 4
    const { agent } = scriptedAgent(Array.from({ length: n }, (_, k) => textResponse(`r${k}`)))
    const status = record(agent, ['agent/status'])
    for (let k = 1; k <= n; k++) agent.followup(m(`p${k}`))
    await agent.whenIdle()
    const turns = new Map<number, string[]>()
    let turn = 0
    for (const e of agent.session.events) {
      if (e.type === 'turn/start') turn = e.data.turn
      if (e.type === 'user/message') turns.set(turn, [...(turns.get(turn) ?? []), textOf(e.data)])
    }
    expect([...turns]).toEqual([
      [1, ['p1']],
      [2, ['p2']],
      [3, ['p3']],
      [4, ['p4']],
    ])
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
  })

  it('IN-13: a followup sent while a turn runs (listener, tool, model adapter) lands in a later turn', async () => {
    let agent!: Agent
    const tool = defineTool({
      name: 'queue',
      description: 'queues a prompt',
      input: z.object({}),
      execute: () => {
        agent.followup(m('from-tool'))
        return 'queued'
      },
    })
    const made = scriptedAgent(
      [
        () => {
          agent.followup(m('from-model'))
          return toolCallResponse([{ id: 'c1', name: 'queue', arguments: '{}' }])
        },
        textResponse('turn 1 done'),
        textResponse('2'),
        textResponse('3'),
        textResponse('4'),
      ],
      { tools: [tool] },
    )
    agent = made.agent
    const once = agent.on('agent/inbox/claimed', () => {
      once()
      agent.followup(m('from-listener'))
    })
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(trace(agent).filter((x) => x.startsWith('user/message') || x.startsWith('turn/start'))).toEqual([
      'turn/start{1}',
      'user/message(p)',
      'turn/start{2}',
      'user/message(from-listener)',
      'turn/start{3}',
      'user/message(from-model)',
      'turn/start{4}',
      'user/message(from-tool)',
    ])
  })

  it('IN-14: a new agent over a stored log rebuilds both lists from its splices', async () => {
    const { agent: first } = scriptedAgent([textResponse('a')])
    first.followup(m('p0'))
    await first.whenIdle()
    first.inject(m('i1'))
    first.inject(m('i2'))
    first.send(m('q1'), 'next-turn', false)
    first.send(m('q2'), 'next-turn', false)
    first.inbox.remove('i2')
    first.inbox.replace('q1', m('q1b'))
    const stored = first.session.events

    const { agent: second, model } = scriptedAgent([textResponse('b'), textResponse('c'), textResponse('d')], {
      session: createSession({ seed: stored }),
    })
    expect(second.inbox.nextStep).toEqual(first.inbox.nextStep)
    expect(second.inbox.nextTurn).toEqual(first.inbox.nextTurn)
    expect(ids(second.inbox.nextStep)).toEqual(['i1'])
    expect(ids(second.inbox.nextTurn)).toEqual(['q1b', 'q2'])
    expect(Object.isFrozen(second.inbox.nextTurn[0].content)).toBe(true)
    // the rebuilt lists drive the loop: the next woken turn takes the parked context and the oldest prompt
    second.followup(m('p1'))
    await second.whenIdle()
    const live = trace(second.session.events.slice(second.session.seedLength))
    expect(live).toEqual([
      'spliced(next-turn +1)',
      'turn/start{2}',
      'spliced(next-step -1)',
      'spliced(next-turn -1)',
      'step/start{2,1}',
      'user/message(i1)',
      'user/message(q1b)',
      'request/header',
      'assistant/message',
      'step/end{2,1}', // the route is unchanged (RQ-5)
      'turn/end{2,completed}',
      'turn/start{3}',
      'spliced(next-turn -1)',
      'step/start{3,1}',
      'user/message(q2)',
      'assistant/message',
      'step/end{3,1}',
      'turn/end{3,completed}',
      'turn/start{4}',
      'spliced(next-turn -1)',
      'step/start{4,1}',
      'user/message(p1)',
      'assistant/message',
      'step/end{4,1}',
      'turn/end{4,completed}',
    ])
    expect(second.inbox.hasPending).toBe(false)
    expect(model.requests).toHaveLength(3)
  })

  it('IN-14: the rebuilt lists survive a chain of resumes', () => {
    const { agent: a } = scriptedAgent([])
    a.inject(m('x'))
    const { agent: b } = scriptedAgent([], { session: createSession({ seed: a.session.events }) })
    b.send(m('y'), 'next-turn', false)
    const { agent: c } = scriptedAgent([], { session: createSession({ seed: b.session.events }) })
    expect(ids(c.inbox.nextStep)).toEqual(['x'])
    expect(ids(c.inbox.nextTurn)).toEqual(['y'])
    for (const agent of [a, b, c]) agent.inbox.clear()
  })

  it('IN-14: a splice inconsistent with the replayed lists makes construction fail, naming its seq', () => {
    const { agent } = scriptedAgent([])
    agent.inject(m('x'))
    const stored = agent.session.events
    const bogus = (seq: number, data: object) => ({ seq, time: 1, type: 'agent/inbox/spliced', data })
    const model = { provider: 'p', model: 'm', stream: () => (async function* () {})() }
    const tooMany = [...stored, bogus(stored.length, { target: 'next-step', start: 0, removedCount: 2, inserted: [] })]
    expect(() => createAgent({ model, session: createSession({ seed: tooMany }) })).toThrow(new RegExp(`seq ${stored.length}\\b`))
    const pastEnd = [...stored, bogus(stored.length, { target: 'next-turn', start: 1, inserted: [m('y')] })]
    expect(() => createAgent({ model, session: createSession({ seed: pastEnd }) })).toThrow(new RegExp(`seq ${stored.length}\\b`))
    const duplicate = [...stored, bogus(stored.length, { target: 'next-turn', start: 0, inserted: [m('x')] })]
    expect(() => createAgent({ model, session: createSession({ seed: duplicate }) })).toThrow(new RegExp(`seq ${stored.length}\\b`))
    agent.inbox.clear()
  })

  type Op = { kind: 'followup' | 'steer' | 'inject' | 'park' | 'clear' | 'wait' } | { kind: 'remove' | 'replace'; pick: number }
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.constantFrom(...(['followup', 'steer', 'inject', 'park', 'clear', 'wait'] as const)).map((kind) => ({ kind })),
    fc.record({ kind: fc.constantFrom('remove' as const, 'replace' as const), pick: fc.nat() }),
  )

  /** Perform one random inbox operation; remove and replace say whether they found a pending id (undefined when none was pending). */
  async function applyOp(agent: Agent, o: Op, fresh: () => UserMessage): Promise<boolean | undefined> {
    const pending = [...agent.inbox.nextStep, ...agent.inbox.nextTurn]
    switch (o.kind) {
      case 'followup':
        return void agent.followup(fresh())
      case 'steer':
        return void agent.steer(fresh())
      case 'inject':
        return void agent.inject(fresh())
      case 'park':
        return void agent.send(fresh(), 'next-turn', false)
      case 'clear':
        return void agent.inbox.clear()
      case 'wait':
        return void (await tick())
      case 'remove':
        return pending.length > 0 ? agent.inbox.remove(pending[o.pick % pending.length].id) : undefined
      case 'replace':
        return pending.length > 0 ? agent.inbox.replace(pending[o.pick % pending.length].id, fresh()) : undefined
    }
  }

  it('IN-1 (property): random sends, removals and replacements from idle never lose a message, and status alternates running/idle', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 30 }), async (ops) => {
        const model = echoModel()
        const agent = createAgent({ model, logger: { error: () => {} } })
        const status: string[] = []
        const discarded: string[] = []
        const inserted: string[] = []
        agent.on('agent/status', ({ status: s }) => status.push(s))
        agent.on('agent/inbox/discarded', ({ message }) => discarded.push(message.id))
        agent.on('agent/inbox/inserted', ({ message }) => inserted.push(message.id))
        const sent: string[] = []
        const fresh = () => {
          const message = m(`m${sent.length}`)
          sent.push(message.id)
          return message
        }
        for (const o of ops) {
          const found = await applyOp(agent, o, fresh)
          if (found !== undefined) expect(found).toBe(true)
        }
        await agent.whenIdle()
        const logged = agent.session.events.flatMap((e) => (e.type === 'user/message' ? [e.data.id] : []))
        const still = [...ids(agent.inbox.nextStep), ...ids(agent.inbox.nextTurn)]
        // every message ends exactly once: logged as user/message, discarded by a canceled splice, or still pending
        for (const id of sent) {
          const fates = [logged, discarded, still].map((list) => list.filter((x) => x === id).length)
          expect(
            fates.reduce((a, b) => a + b),
            `fate of ${id}: ${fates}`,
          ).toBe(1)
        }
        expect(inserted).toEqual(sent)
        expect(logged.length + discarded.length + still.length).toBe(sent.length)
        // a waking send was the only way to start: running and idle strictly alternate, ending idle
        expect(status).toEqual(status.map((_, k) => (k % 2 === 0 ? 'running' : 'idle')))
        expect(status.length % 2).toBe(0)
        expect(agent.status).toBe('idle')
        expect(checkSessionInvariants(agent.session.events)).toEqual([])
      }),
      { numRuns: propertyRuns(150) },
    )
  })

  type Busy = Op | { kind: 'cancel'; keepInbox: boolean } | { kind: 'maintain' }
  const busyOp: fc.Arbitrary<Busy> = fc.oneof(
    { arbitrary: op, weight: 6 },
    { arbitrary: fc.record({ kind: fc.constant('cancel' as const), keepInbox: fc.boolean() }), weight: 1 },
    { arbitrary: fc.constant({ kind: 'maintain' as const }), weight: 1 },
  )

  it('IN-1 (property): with cancels and maintenance jobs mixed in, every message is logged, discarded, pending, or claimed by an aborted turn', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(busyOp, { maxLength: 30 }), async (ops) => {
        const agent = createAgent({ model: echoModel(), logger: { error: () => {} } })
        const status: string[] = []
        const discarded: string[] = []
        const claimed = new Map<string, number>()
        agent.on('agent/status', ({ status: s }) => status.push(s))
        agent.on('agent/inbox/discarded', ({ message }) => discarded.push(message.id))
        agent.on('agent/inbox/claimed', ({ message, turn }) => claimed.set(message.id, turn))
        const sent: string[] = []
        const jobs: Promise<unknown>[] = []
        const fresh = () => {
          const message = m(`m${sent.length}`)
          sent.push(message.id)
          return message
        }
        for (const o of ops) {
          switch (o.kind) {
            case 'cancel':
              agent.cancel({ kind: 'user' }, { keepInbox: o.keepInbox })
              break
            case 'maintain':
              if (phase(agent) === 'idle') {
                jobs.push(
                  agent.runMaintenance(
                    (signal) =>
                      new Promise((resolve) => {
                        signal.addEventListener('abort', resolve, { once: true })
                        setTimeout(resolve, 1)
                      }),
                  ),
                )
              } else {
                expect(() => agent.runMaintenance(async () => {})).toThrow(/only while the agent is idle/)
              }
              break
            default:
              await applyOp(agent, o, fresh)
          }
        }
        await Promise.all(jobs)
        await agent.whenIdle()
        expect(phase(agent)).toBe('idle')
        const events = agent.session.events
        const logged = events.flatMap((e) => (e.type === 'user/message' ? [e.data.id] : []))
        const endOf = new Map(events.flatMap((e) => (e.type === 'turn/end' ? [[e.data.turn, e.data.reason.kind] as const] : [])))
        const still = [...ids(agent.inbox.nextStep), ...ids(agent.inbox.nextTurn)]
        for (const id of sent) {
          const lost = claimed.has(id) && !logged.includes(id) ? 1 : 0
          if (lost) expect(endOf.get(claimed.get(id)!), `turn that claimed ${id}`).toBe('aborted')
          const fates = [logged, discarded, still].map((list) => list.filter((x) => x === id).length)
          expect(fates.reduce((a, b) => a + b) + lost, `fate of ${id}: ${fates}, lost ${lost}`).toBe(1)
        }
        expect(status).toEqual(status.map((_, k) => (k % 2 === 0 ? 'running' : 'idle')))
        expect(status.length % 2).toBe(0)
        expect(checkSessionInvariants(events)).toEqual([])
      }),
      { numRuns: propertyRuns(150) },
    )
  })
})

// PH — Agent phases and status: idle/running/maintenance, the public status,
// how activities start, chain turns, park work, and report failures
// (BEHAVIOURS.md PH-1..PH-8, with Decision 5 and Decision 7).
import { describe, expect, it } from 'vitest'
import { createAgent, createSession, LlmError, userMessage, type Agent } from '../../src/index.js'
import { errorResponse, hang, maxTokensResponse, scriptedModel, textResponse, type ScriptEntry } from '../../src/testing/index.js'
import { record, scriptedAgent, textOf, tick, timeline, trace } from '../helpers.js'

const m = (id: string, text = id) => userMessage(text, { id })
const phase = (agent: Agent) => {
  const value = agent.actor.getSnapshot().value
  return typeof value === 'string' ? value : Object.keys(value)[0]
}

/** A script entry that answers once `release()` is called. */
function gated(response = textResponse('released')) {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  const entry: ScriptEntry = async () => {
    await gate
    return response
  }
  return { entry, release }
}

/** A session whose appends of `type` throw while `failing.on` is set. */
function failingSession(type: string) {
  const session = createSession()
  const append = session.append.bind(session)
  const failing = { on: false, error: new Error(`${type} refused by the store`) }
  session.append = ((t: string, data: unknown, intent?: unknown) => {
    if (failing.on && t === type) throw failing.error
    return append(t as never, data as never, intent as never)
  }) as typeof session.append
  return { session, failing }
}

describe('PH — Agent phases and status', () => {
  it('PH-1: status is running only in the running phase, and agent/status fires only on a change', async () => {
    const { agent } = scriptedAgent([textResponse('a'), textResponse('b'), textResponse('c')])
    const status = record(agent, ['agent/status'])
    const seen: string[] = []
    agent.on('agent/pre-step', ({ turn }, next) => {
      seen.push(`turn ${turn}: ${agent.status}/${phase(agent)}`)
      return next()
    })
    expect([agent.status, phase(agent)]).toEqual(['idle', 'idle'])
    agent.followup(m('p1'))
    agent.followup(m('p2'))
    expect([agent.status, phase(agent)]).toEqual(['running', 'running'])
    await agent.whenIdle()
    expect([agent.status, phase(agent)]).toEqual(['idle', 'idle'])
    // two turns back to back: no repeated running, no idle between them
    expect(seen).toEqual(['turn 1: running/running', 'turn 2: running/running'])
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
    agent.followup(m('p3'))
    await agent.whenIdle()
    expect(status).toEqual(['agent/status:running', 'agent/status:idle', 'agent/status:running', 'agent/status:idle'])
  })

  it('PH-1: maintenance reads as idle and entering or leaving it emits no status', async () => {
    const { agent } = scriptedAgent([])
    const status = record(agent, ['agent/status'])
    let release!: () => void
    const job = agent.runMaintenance(() => new Promise<void>((resolve) => (release = resolve)))
    expect(phase(agent)).toBe('maintenance')
    expect(agent.status).toBe('idle')
    release()
    await job
    await agent.whenIdle()
    expect(phase(agent)).toBe('idle')
    expect(status).toEqual([])
  })

  for (const [how, send] of [
    ['followup', (a: Agent) => a.followup(m('p'))],
    ['steer', (a: Agent) => a.steer(m('p'))],
    ['send(next-turn, wakeup)', (a: Agent) => a.send(m('p'), 'next-turn', true)],
  ] as const) {
    it(`PH-2: a waking ${how} to an idle agent inserts, runs, opens the turn and claims before it returns`, async () => {
      const { agent } = scriptedAgent([textResponse('a')])
      const out = timeline(agent, { errors: true })
      const preStep: string[] = []
      agent.on('agent/pre-step', (_p, next) => {
        preStep.push(out.at(-1)!)
        return next()
      })
      send(agent)
      const target = how === 'steer' ? 'next-step' : 'next-turn'
      expect(out).toEqual([`spliced(${target} +1)`, 'inserted(p)', 'status:running', 'turn/start{1}', `spliced(${target} -1)`, 'claimed(p@1)'])
      expect(agent.status).toBe('running')
      // the first asynchronous wait (agent/pre-step) comes only after the claim
      expect(preStep).toEqual([])
      await agent.whenIdle()
      expect(preStep).toEqual(['claimed(p@1)'])
    })
  }

  it('PH-3: a waking send while a live activity runs only inserts, with no status change', async () => {
    const first = gated()
    const { agent } = scriptedAgent([first.entry, textResponse('s seen'), textResponse('q answered')])
    const out = timeline(agent, { errors: true })
    agent.followup(m('p'))
    await tick()
    const mark = out.length
    agent.followup(m('q'))
    agent.steer(m('s'))
    agent.send(m('r'), 'next-step', true)
    expect(out.slice(mark)).toEqual(['spliced(next-turn +1)', 'inserted(q)', 'spliced(next-step +1)', 'inserted(s)', 'spliced(next-step +1)', 'inserted(r)'])
    expect(agent.status).toBe('running')
    first.release()
    await agent.whenIdle()
    // the running driver claimed them itself: steering at the next step, the prompt as the next turn
    expect(trace(agent).filter((x) => /user\/message|turn\//.test(x))).toEqual([
      'turn/start{1}',
      'user/message(p)',
      'user/message(s)',
      'user/message(r)',
      'turn/end{1,completed}',
      'turn/start{2}',
      'user/message(q)',
      'turn/end{2,completed}',
    ])
    expect(out.filter((x) => x.startsWith('status'))).toEqual(['status:running', 'status:idle'])
  })

  for (const [reason, first] of [
    ['completed', textResponse('done')],
    ['max-tokens', maxTokensResponse('cut off')],
  ] as const) {
    it(`PH-4: after a stepped ${reason} turn, pending work opens the next turn at once with a fresh signal`, async () => {
      const { agent } = scriptedAgent([first, textResponse('second')])
      const out = timeline(agent, { errors: true })
      const signals: AbortSignal[] = []
      agent.on('agent/pre-step', ({ signal }, next) => {
        signals.push(signal)
        return next()
      })
      agent.followup(m('p1'))
      agent.followup(m('p2'))
      await agent.whenIdle()
      const end1 = out.indexOf(`turn/end{1,${reason}}`)
      expect(end1).toBeGreaterThan(0)
      expect(out.slice(end1, end1 + 3)).toEqual([`turn/end{1,${reason}}`, 'turn/start{2}', 'spliced(next-turn -1)'])
      expect(out.filter((x) => x.startsWith('status'))).toEqual(['status:running', 'status:idle'])
      expect(out.at(-2)).toBe('turn/end{2,completed}')
      expect(out.at(-1)).toBe('status:idle')
      expect(signals).toHaveLength(2)
      expect(signals[1]).not.toBe(signals[0])
      expect(signals.map((s) => s.aborted)).toEqual([false, false])
    })
  }

  it('PH-4: with both lists empty after the turn, the driver goes idle', async () => {
    const { agent } = scriptedAgent([textResponse('done')])
    const out = timeline(agent, { errors: true })
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(out.slice(-2)).toEqual(['turn/end{1,completed}', 'status:idle'])
    expect(agent.inbox.hasPending).toBe(false)
  })

  it('PH-5: after a blocked turn the driver goes idle with work parked until the next waking send', async () => {
    const { agent } = scriptedAgent([textResponse('q'), textResponse('r')])
    const status = record(agent, ['agent/status'])
    const off = agent.on('agent/pre-step', () => ({ kind: 'reject' }))
    agent.inject(m('ctx'))
    agent.followup(m('p'))
    agent.followup(m('q'))
    await agent.whenIdle()
    expect(trace(agent).at(-1)).toBe('turn/end{1,blocked}')
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
    await tick()
    expect(agent.inbox.nextTurn.map(textOf)).toEqual(['q'])
    expect(trace(agent).filter((x) => x.startsWith('turn/start'))).toEqual(['turn/start{1}'])
    off()
    agent.followup(m('r'))
    await agent.whenIdle()
    // parked work runs first, each prompt as its own turn
    expect(trace(agent).filter((x) => /user\/message|turn\/start/.test(x))).toEqual([
      'turn/start{1}',
      'turn/start{2}',
      'user/message(q)',
      'turn/start{3}',
      'user/message(r)',
    ])
  })

  it('PH-5: after an error turn the driver goes idle with work parked', async () => {
    const { agent } = scriptedAgent([errorResponse({ message: 'overloaded', code: 'SERVER' }), textResponse('q')], { retry: false })
    agent.followup(m('p'))
    agent.followup(m('q'))
    agent.inject(m('ctx'))
    await agent.whenIdle()
    await tick()
    expect(trace(agent).at(-1)).toBe('turn/end{1,error}')
    expect(agent.inbox.nextTurn.map(textOf)).toEqual(['q'])
    expect(agent.inbox.nextStep.map(textOf)).toEqual(['ctx'])
    expect(agent.status).toBe('idle')
    agent.inbox.clear()
  })

  it('PH-5: after an aborted turn the driver goes idle with kept work parked', async () => {
    const { agent } = scriptedAgent([hang])
    const status = record(agent, ['agent/status'])
    agent.followup(m('p'))
    agent.followup(m('q'))
    await tick()
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    await agent.whenIdle()
    await tick()
    expect(trace(agent).at(-1)).toBe('turn/end{1,aborted}')
    expect(agent.inbox.nextTurn.map(textOf)).toEqual(['q'])
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
    agent.inbox.clear()
  })

  it('PH-5: a zero-step completed turn does not park: the driver opens the next turn (Decision 5)', async () => {
    const { agent, model } = scriptedAgent([textResponse('q answered')])
    const status = record(agent, ['agent/status'])
    agent.on('agent/pre-step', ({ turn }, next) => (turn === 1 ? { kind: 'enter', messages: [] } : next()))
    agent.followup(m('p'))
    agent.followup(m('q'))
    await agent.whenIdle()
    expect(trace(agent).filter((x) => /turn\/|step\/start|user\/message/.test(x))).toEqual([
      'turn/start{1}',
      'turn/end{1,completed}',
      'turn/start{2}',
      'step/start{2,1}',
      'user/message(q)',
      'turn/end{2,completed}',
    ])
    expect(model.requests).toHaveLength(1)
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
  })

  it('PH-6: one running and one idle per activity, idle after the last turn/end', async () => {
    const { agent } = scriptedAgent([textResponse('a'), errorResponse({ message: 'down', code: 'SERVER' }), textResponse('c')], { retry: false })
    const out = timeline(agent, { errors: true })
    agent.followup(m('p1'))
    agent.followup(m('p2'))
    await agent.whenIdle()
    const statuses = out.filter((x) => x.startsWith('status'))
    expect(statuses).toEqual(['status:running', 'status:idle'])
    expect(out.indexOf('status:idle')).toBe(out.indexOf('turn/end{2,error}') + 1)
    agent.followup(m('p3'))
    await agent.whenIdle()
    expect(out.filter((x) => x.startsWith('status'))).toEqual(['status:running', 'status:idle', 'status:running', 'status:idle'])
    expect(out.at(-1)).toBe('status:idle')
    expect(out.at(-2)).toBe('turn/end{3,completed}')
  })

  it('PH-6: an activity cancelled before turn/start goes idle at once', async () => {
    const { agent, model } = scriptedAgent([textResponse('later')])
    const out = timeline(agent, { errors: true })
    const off = agent.on('agent/status', ({ status }) => {
      if (status === 'running') agent.cancel()
    })
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(out).toEqual(['spliced(next-turn +1)', 'inserted(p)', 'status:running', 'spliced(next-turn -1 canceled)', 'discarded(p)', 'status:idle'])
    off()
    // the agent is usable again
    agent.followup(m('q'))
    await agent.whenIdle()
    expect(trace(agent).at(-1)).toBe('turn/end{1,completed}')
    expect(model.requests).toHaveLength(1)
  })

  it('PH-6: throwing status listeners, cancellation and disposal keep one running/idle pair', async () => {
    const { agent } = scriptedAgent([hang])
    const status = record(agent, ['agent/status'])
    agent.on('agent/status', () => {
      throw new Error('status listener failure')
    })
    agent.followup(m('p'))
    await tick()
    agent.cancel()
    agent.cancel({ kind: 'parent' })
    await agent.whenIdle()
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
    expect(trace(agent).at(-1)).toBe('turn/end{1,aborted}')

    const { agent: other } = scriptedAgent([hang])
    const otherStatus = record(other, ['agent/status'])
    other.on('agent/status', () => {
      throw new Error('status listener failure')
    })
    other.followup(m('p'))
    await tick()
    await other.dispose()
    expect(otherStatus).toEqual(['agent/status:running', 'agent/status:idle'])
    expect(other.session.events.at(-1)!.data).toEqual({ turn: 1, reason: { kind: 'aborted', reason: { kind: 'disposed' } } })
  })

  it('PH-7: whenIdle resolves at once when idle, and says nothing about parked messages', async () => {
    const { agent } = scriptedAgent([])
    agent.inject(m('parked'))
    let resolved = false
    void agent.whenIdle().then(() => (resolved = true))
    await Promise.resolve()
    expect(resolved).toBe(true)
    expect(agent.inbox.hasPending).toBe(true)
    agent.inbox.clear()
  })

  it('PH-7: whenIdle waits for the activity and the latched replay started before it retired', async () => {
    const { agent } = scriptedAgent([hang, textResponse('replayed')])
    agent.followup(m('p'))
    await tick()
    const idle = agent.whenIdle()
    let resolved = false
    void idle.then(() => (resolved = true))
    agent.cancel()
    // sent after the abort but before convergence: latched and replayed as a new activity (CX-12, CX-13)
    agent.followup(m('latched'))
    await idle
    expect(resolved).toBe(true)
    expect(trace(agent).filter((x) => /turn\/end|user\/message/.test(x))).toEqual([
      'user/message(p)',
      'turn/end{1,aborted}',
      'user/message(latched)',
      'turn/end{2,completed}',
    ])
    expect(agent.status).toBe('idle')
  })

  it('PH-7: whenIdle resolves when the activity failed or was cancelled before opening a turn', async () => {
    const { agent } = scriptedAgent([errorResponse({ message: 'bad', code: 'INVALID_REQUEST' })])
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(trace(agent).at(-1)).toBe('turn/end{1,error}')

    const { agent: other } = scriptedAgent([])
    other.on('agent/status', ({ status }) => {
      if (status === 'running') other.cancel()
    })
    other.followup(m('p'))
    const idle = other.whenIdle()
    await idle
    expect(other.status).toBe('idle')
    expect(other.session.events.some((e) => e.type === 'turn/start')).toBe(false)
  })

  it('PH-8: agent/error reports a failure verbatim before the turn/end{error} it explains', async () => {
    const { agent } = scriptedAgent([errorResponse({ message: 'overloaded', code: 'SERVER', status: 503 })], { retry: false })
    const out = timeline(agent, { errors: true })
    const errors: unknown[] = []
    agent.on('agent/error', ({ error }) => errors.push(error))
    agent.followup(m('p'))
    await agent.whenIdle()
    const end = agent.session.events.at(-1)!
    expect(end.type).toBe('turn/end')
    expect(out.slice(-4)).toEqual(['step/end{1,1}', 'error@1.1', 'turn/end{1,error}', 'status:idle'])
    const reason = (end.data as { reason: { kind: string; error: unknown } }).reason
    expect(reason).toEqual({ kind: 'error', error: { message: 'overloaded', code: 'SERVER', status: 503 } })
    // the same facts: an LlmError carrying the failure turn/end records
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(LlmError)
    expect((errors[0] as LlmError).failure).toEqual(reason.error)
  })

  it('PH-8: a throwing agent/pre-step listener is reported with the thrown value itself, step being the proposed one', async () => {
    const { agent } = scriptedAgent([])
    const out = timeline(agent, { errors: true })
    const thrown = new RangeError('pre-step broke')
    const errors: unknown[] = []
    agent.on('agent/error', ({ error }) => errors.push(error))
    agent.on('agent/pre-step', () => {
      throw thrown
    })
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBe(thrown)
    expect(out.slice(-3)).toEqual(['error@1.1', 'turn/end{1,error}', 'status:idle'])
  })

  it('PH-8: a failed turn/start append is reported and no turn opens', async () => {
    const { session, failing } = failingSession('turn/start')
    const { agent } = scriptedAgent([textResponse('p'), textResponse('q')], { session })
    const out = timeline(agent, { errors: true })
    const errors: unknown[] = []
    agent.on('agent/error', ({ error }) => errors.push(error))
    failing.on = true
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(errors).toEqual([failing.error])
    expect(out).toEqual(['spliced(next-turn +1)', 'inserted(p)', 'status:running', 'error@1.0', 'status:idle'])
    // nothing was claimed: the prompt waits for the next waking send
    expect(agent.inbox.nextTurn.map(textOf)).toEqual(['p'])
    failing.on = false
    agent.followup(m('q'))
    await agent.whenIdle()
    expect(trace(agent).filter((x) => /turn\/|user\/message/.test(x))).toEqual([
      'turn/start{1}',
      'user/message(p)',
      'turn/end{1,completed}',
      'turn/start{2}',
      'user/message(q)',
      'turn/end{2,completed}',
    ])
  })

  it('PH-8: a failed turn/end append is reported', async () => {
    const { session, failing } = failingSession('turn/end')
    // not tracked: the refused turn/end leaves the log unbalanced on purpose
    const agent = createAgent({ model: scriptedModel([textResponse('a')]), session, logger: { error: () => {} } })
    const errors: unknown[] = []
    agent.on('agent/error', ({ turn, error }) => errors.push([turn, error]))
    failing.on = true
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(errors).toEqual([[1, failing.error]])
    expect(agent.status).toBe('idle')
    expect(trace(agent).at(-1)).toBe('step/end{1,1}')
  })

  it('PH-8: cancellation and disposal never emit agent/error', async () => {
    const { agent } = scriptedAgent([hang, hang])
    const errors = record(agent, ['agent/error'])
    agent.followup(m('p'))
    await tick()
    agent.cancel({ kind: 'hook', reason: 'stop' })
    await agent.whenIdle()
    agent.followup(m('q'))
    await tick()
    await agent.dispose()
    expect(trace(agent).filter((x) => x.startsWith('turn/end'))).toEqual(['turn/end{1,aborted}', 'turn/end{2,aborted}'])
    expect(errors).toEqual([])
  })
})

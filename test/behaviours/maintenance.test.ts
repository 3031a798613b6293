// MT — Maintenance: jobs run from true idle with their own signal; waking
// sends made meanwhile latch and drain once the job settles
// (BEHAVIOURS.md MT-1..MT-6).
import { describe, expect, it } from 'vitest'
import { AgentStateError, userMessage, type Agent } from '../../src/index.js'
import { hang, textResponse } from '../../src/testing/index.js'
import { record, scriptedAgent, textOf, tick, trace } from '../helpers.js'

const m = (id: string, text = id) => userMessage(text, { id })
const phase = (agent: Agent) => {
  const value = agent.actor.getSnapshot().value
  return typeof value === 'string' ? value : Object.keys(value)[0]
}

/** A job that runs until `release(value)` and records the signal it was given. */
function controlledJob<T = string>() {
  const job = {
    signal: null as AbortSignal | null,
    calls: 0,
    release: (_value: T) => {},
    run: (signal: AbortSignal) => {
      job.calls++
      job.signal = signal
      return new Promise<T>((resolve) => (job.release = resolve))
    },
  }
  return job
}

describe('MT — Maintenance', () => {
  it('MT-1: a job starts synchronously from idle with its own signal, and status stays idle', async () => {
    const { agent } = scriptedAgent([textResponse('a')])
    const status = record(agent, ['agent/status'])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    expect(job.calls).toBe(1)
    expect(job.signal).toBeInstanceOf(AbortSignal)
    expect(job.signal!.aborted).toBe(false)
    expect(agent.status).toBe('idle')
    expect(phase(agent)).toBe('maintenance')
    job.release('ok')
    await done
    await agent.whenIdle()
    expect(status).toEqual([])
    // the job's signal is its own, not a turn's
    const turnSignals: AbortSignal[] = []
    agent.on('agent/pre-step', ({ signal }, next) => {
      turnSignals.push(signal)
      return next()
    })
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(turnSignals).toHaveLength(1)
    expect(turnSignals[0]).not.toBe(job.signal)
  })

  it('MT-1: runMaintenance throws synchronously while a driver runs or another job is active', async () => {
    const { agent } = scriptedAgent([hang])
    const second = controlledJob()
    const first = controlledJob()
    const done = agent.runMaintenance(first.run)
    expect(() => agent.runMaintenance(second.run)).toThrow(AgentStateError)
    expect(second.calls).toBe(0)
    first.release('first')
    await expect(done).resolves.toBe('first')
    await agent.whenIdle()

    agent.followup(m('p'))
    expect(() => agent.runMaintenance(second.run)).toThrow(/only while the agent is idle/)
    await tick()
    expect(() => agent.runMaintenance(second.run)).toThrow(AgentStateError)
    expect(second.calls).toBe(0)
    agent.cancel()
    await agent.whenIdle()
    // back at true idle, jobs are accepted again
    const third = agent.runMaintenance(async () => 3)
    await expect(third).resolves.toBe(3)
  })

  it("MT-2: runMaintenance returns the job's own promise, with its value or its rejection", async () => {
    const { agent } = scriptedAgent([textResponse('after')])
    const own = Promise.resolve({ compacted: 12 })
    const returned = agent.runMaintenance(() => own)
    expect(returned).toBe(own)
    await expect(returned).resolves.toEqual({ compacted: 12 })
    await agent.whenIdle()

    const failure = new Error('job failed')
    await expect(agent.runMaintenance(async () => Promise.reject(failure))).rejects.toBe(failure)
    await agent.whenIdle()

    // a job that throws synchronously rejects the returned promise with that value
    const thrown = new TypeError('sync throw')
    const rejected = agent.runMaintenance(() => {
      throw thrown
    })
    await expect(rejected).rejects.toBe(thrown)
    await agent.whenIdle()
    // and the agent is still usable
    agent.followup(m('p'))
    await agent.whenIdle()
    expect(trace(agent).at(-1)).toBe('turn/end{1,completed}')
  })

  it('MT-3: waking sends during a job insert normally and latch; the drain starts only after the job settles', async () => {
    const { agent } = scriptedAgent([textResponse('one'), textResponse('two')])
    const status = record(agent, ['agent/status'])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    agent.followup(m('p'))
    agent.steer(m('s'))
    agent.followup(m('q'))
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'spliced(next-step +1)', 'spliced(next-turn +1)'])
    expect(agent.session.events.map((e) => (e.data as { target?: string }).target)).toEqual(['next-turn', 'next-step', 'next-turn'])
    await tick()
    expect(agent.session.events.some((e) => e.type === 'turn/start')).toBe(false)
    expect(agent.status).toBe('idle')
    expect(status).toEqual([])
    job.release('done')
    await done
    await agent.whenIdle()
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
    expect(trace(agent).filter((x) => /turn\/|user\/message/.test(x))).toEqual([
      'turn/start{1}',
      'user/message(s)',
      'user/message(p)',
      'turn/end{1,completed}',
      'turn/start{2}',
      'user/message(q)',
      'turn/end{2,completed}',
    ])
  })

  it('MT-4: an inject during a job does not latch: no turn starts when the job settles', async () => {
    const { agent, model } = scriptedAgent([])
    const status = record(agent, ['agent/status'])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    agent.inject(m('ctx'))
    agent.send(m('parked'), 'next-turn', false)
    job.release('done')
    await done
    await agent.whenIdle()
    await tick()
    expect(trace(agent)).toEqual(['spliced(next-step +1)', 'spliced(next-turn +1)'])
    expect(agent.inbox.nextStep.map(textOf)).toEqual(['ctx'])
    expect(agent.inbox.nextTurn.map(textOf)).toEqual(['parked'])
    expect(status).toEqual([])
    expect(model.requests).toHaveLength(0)
    agent.inbox.clear()
  })

  it("MT-4: when the latched wake's message is removed before the job settles, no turn starts", async () => {
    const { agent, model } = scriptedAgent([])
    const status = record(agent, ['agent/status'])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    agent.followup(m('p'))
    expect(agent.inbox.remove('p')).toBe(true)
    job.release('done')
    await done
    await agent.whenIdle()
    await tick()
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'spliced(next-turn -1 canceled)'])
    expect(status).toEqual([])
    expect(model.requests).toHaveLength(0)
  })

  it('MT-5: cancelling a job aborts its signal with the cause and discards the pending wake and its latch', async () => {
    const { agent, model } = scriptedAgent([])
    const status = record(agent, ['agent/status', 'agent/inbox/discarded'])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    agent.followup(m('p'))
    const cause = { kind: 'hook' as const, reason: 'shutting down' }
    agent.cancel(cause)
    expect(job.signal!.aborted).toBe(true)
    expect(job.signal!.reason).toBe(cause)
    expect(agent.inbox.hasPending).toBe(false)
    job.release('stopped')
    await expect(done).resolves.toBe('stopped')
    await agent.whenIdle()
    await tick()
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'spliced(next-turn -1 canceled)'])
    expect(status).toEqual(['agent/inbox/discarded'])
    expect(model.requests).toHaveLength(0)
  })

  it('MT-5: dispose({ force }) abandons a job that ignores its signal after the grace, and the disposal settles', async () => {
    const { agent } = scriptedAgent([])
    let signal: AbortSignal | undefined
    void agent.runMaintenance((s) => ((signal = s), new Promise(() => {})))
    await agent.dispose({ force: true, graceMs: 20 })
    expect(signal!.aborted).toBe(true)
    expect(signal!.reason).toEqual({ kind: 'disposed' })
    expect(trace(agent)).toEqual([])
  })

  it('MT-5: a waking send after the cancel is forced into next-turn, latches, and runs after the job settles', async () => {
    const { agent } = scriptedAgent([textResponse('after the job')])
    const status = record(agent, ['agent/status'])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    agent.cancel()
    agent.steer(m('s'))
    expect(agent.session.events.at(-1)!.data).toEqual({ target: 'next-turn', start: 0, inserted: [m('s')] })
    expect(agent.inbox.nextTurn.map(textOf)).toEqual(['s'])
    await tick()
    expect(agent.session.events.some((e) => e.type === 'turn/start')).toBe(false)
    expect(status).toEqual([])
    job.release('done')
    await done
    await agent.whenIdle()
    expect(status).toEqual(['agent/status:running', 'agent/status:idle'])
    expect(trace(agent).filter((x) => /turn\/|user\/message/.test(x))).toEqual(['turn/start{1}', 'user/message(s)', 'turn/end{1,completed}'])
  })

  it('MT-5: with keepInbox the pending wake survives the cancel and runs after the job', async () => {
    const { agent } = scriptedAgent([textResponse('kept')])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    agent.followup(m('p'))
    agent.cancel({ kind: 'user' }, { keepInbox: true })
    expect(job.signal!.reason).toEqual({ kind: 'user' })
    job.release('done')
    await done
    await agent.whenIdle()
    expect(trace(agent).filter((x) => /turn\/|user\/message/.test(x))).toEqual(['turn/start{1}', 'user/message(p)', 'turn/end{1,completed}'])
  })

  it('MT-6: whenIdle during a job waits for the job and the turn its latched wake releases', async () => {
    const { agent } = scriptedAgent([textResponse('drained')])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    let idle = false
    const whenIdle = agent.whenIdle().then(() => (idle = true))
    await tick()
    expect(idle).toBe(false)
    agent.followup(m('p'))
    await tick()
    expect(idle).toBe(false)
    job.release('done')
    await done
    await whenIdle
    expect(trace(agent).at(-1)).toBe('turn/end{1,completed}')
    expect(agent.status).toBe('idle')
  })

  it('MT-6: whenIdle during a job with no wake resolves once the job settles', async () => {
    const { agent } = scriptedAgent([])
    const job = controlledJob()
    const done = agent.runMaintenance(job.run)
    let idle = false
    const whenIdle = agent.whenIdle().then(() => (idle = true))
    await tick()
    expect(idle).toBe(false)
    job.release('done')
    await done
    await whenIdle
    expect(idle).toBe(true)
    expect(phase(agent)).toBe('idle')
    expect(agent.session.events).toEqual([])
  })
  it('MT-1: runMaintenance from a listener or observer the agent is running throws AGENT_BUSY at once, and no job is dropped silently', async () => {
    const busy: unknown[] = []
    let ran = false
    const job = async () => {
      ran = true
    }
    // during a turn, from a notification listener
    const { agent: running } = scriptedAgent([textResponse('x')])
    running.on('agent/inbox/claimed', () => {
      try {
        running.runMaintenance(job)
      } catch (error) {
        busy.push(error)
      }
    })
    running.followup('go')
    await running.whenIdle()
    // at idle, from a session/event observer of an inject
    const { agent: idle } = scriptedAgent([])
    idle.on('session/event', () => {
      try {
        idle.runMaintenance(job)
      } catch (error) {
        busy.push(error)
      }
    })
    idle.inject('ctx')
    await tick(10)
    expect(busy).toHaveLength(2)
    for (const error of busy) {
      expect(error).toBeInstanceOf(AgentStateError)
      expect(error).toMatchObject({ code: 'AGENT_BUSY', message: expect.stringMatching(/from inside the agent/) })
    }
    expect(ran).toBe(false)
    // once the listener has returned, the same agent takes a job
    await expect(idle.runMaintenance(async () => 'done')).resolves.toBe('done')
  })
})

// Shared test plumbing: agents made here are checked against the session
// invariants after every test, and traces print compactly for assertions.
import { afterEach, expect } from 'vitest'
import { createAgent, type Agent, type AgentOptions, type SessionEvent, type UserMessage } from '../src/index.js'
import { checkSessionInvariants, scriptedModel, type ScriptEntry } from '../src/testing/index.js'

const live: Agent[] = []

/** Register an agent so its log is checked after the test. */
export function track<T extends Agent>(agent: T): T {
  live.push(agent)
  return agent
}

/** An agent over a scripted model, tracked for the invariant check. */
export function scriptedAgent(script: ScriptEntry[], options: Partial<AgentOptions> = {}) {
  const model = scriptedModel(script)
  const agent = track(createAgent({ model, logger: { error: () => {} }, ...options }))
  return { agent, model }
}

/** One short string per event: `turn/start{1}`, `turn/end{1,completed}`, `spliced(next-turn +1)`, ... */
export function describeEvent(e: SessionEvent): string {
  switch (e.type) {
    case 'turn/start':
      return `turn/start{${e.data.turn}}`
    case 'turn/end':
      return `turn/end{${e.data.turn},${e.data.reason.kind}}`
    case 'step/start':
      return `step/start{${e.data.turn},${e.data.step}}`
    case 'step/end':
      return `step/end{${e.data.turn},${e.data.step}}`
    case 'agent/inbox/spliced': {
      const d = e.data
      const parts: string[] = [d.target]
      if (d.removedCount) parts.push(`-${d.removedCount}`)
      if (d.inserted.length) parts.push(`+${d.inserted.length}`)
      if (d.outcome) parts.push(d.outcome)
      return `spliced(${parts.join(' ')})`
    }
    case 'user/message':
      return `user/message(${e.data.content.map((b) => ('text' in b ? b.text : b.type)).join('')})`
    case 'tool/call':
      return `tool/call(${e.data.callId})`
    case 'tool/result':
      return `tool/result(${e.data.message.source.callId})`
    case 'assistant/message':
      return e.data.interrupted ? 'assistant/message(interrupted)' : 'assistant/message'
    default:
      return e.type
  }
}

/** The log as compact strings, with assistant/chunk runs left out unless asked for. */
export function trace(agentOrEvents: Agent | readonly SessionEvent[], options: { chunks?: boolean } = {}): string[] {
  const events = Array.isArray(agentOrEvents) ? agentOrEvents : (agentOrEvents as Agent).session.events
  return events.filter((e) => options.chunks || e.type !== 'assistant/chunk').map(describeEvent)
}

/** Record live notifications by name, in order, as `name` or `name:detail`. */
export function record(agent: Agent, names: string[]): string[] {
  const seen: string[] = []
  for (const name of names) {
    agent.on(
      name as never,
      ((p: Record<string, unknown>) => {
        const detail = name === 'agent/status' ? `:${p.status}` : ''
        seen.push(`${name}${detail}`)
      }) as never,
    )
  }
  return seen
}

/** The logged events of one type, typed. */
export const ofType = <T extends SessionEvent['type']>(agent: Agent, type: T) =>
  agent.session.events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type)

/** The text of a message's blocks, for short assertions. */
export const textOf = (m: UserMessage) => m.content.map((b) => ('text' in b ? b.text : b.type)).join('')

/** Session events (chunks left out) and inbox/status notifications, in the order they happened; `errors` adds agent/error. */
export function timeline(agent: Agent, options: { errors?: boolean } = {}): string[] {
  const out: string[] = []
  agent.on('session/event', ({ event }) => {
    if (event.type !== 'assistant/chunk') out.push(describeEvent(event))
  })
  agent.on('agent/inbox/inserted', ({ message }) => out.push(`inserted(${textOf(message)})`))
  agent.on('agent/inbox/discarded', ({ message }) => out.push(`discarded(${textOf(message)})`))
  agent.on('agent/inbox/claimed', ({ message, turn }) => out.push(`claimed(${textOf(message)}@${turn})`))
  agent.on('agent/status', ({ status }) => out.push(`status:${status}`))
  if (options.errors) agent.on('agent/error', ({ turn, step }) => out.push(`error@${turn}.${step}`))
  return out
}

/** Make `session.append` refuse one event type, as a failing store would (the runtime appends only through it). */
export function refuseAppends(agent: Agent, type: string, error: unknown = new Error(`refused ${type}`)) {
  const original = agent.session.append.bind(agent.session) as (t: string, d: unknown, i?: unknown) => unknown
  const refused: string[] = []
  Object.defineProperty(agent.session, 'append', {
    configurable: true,
    writable: true,
    value: (t: string, data: unknown, intent?: unknown) => {
      if (t === type) {
        refused.push(t)
        throw error
      }
      return original(t, data, intent)
    },
  })
  return { refused, restore: () => delete (agent.session as { append?: unknown }).append }
}

/** The reasons of every logged turn/end, in order. */
export const turnEnds = (agent: Agent) => ofType(agent, 'turn/end').map((e) => e.data.reason)

/** fast-check runs: a modest default each property picks, or AGENTCHART_PROPERTY_RUNS for a deep run. */
export const propertyRuns = (modest: number) => Number(process.env.AGENTCHART_PROPERTY_RUNS ?? modest)

/** Wait for macrotasks to drain (hooks and streams settle across microtasks). */
export const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms))

afterEach(async () => {
  const agents = live.splice(0)
  for (const agent of agents) {
    await Promise.race([agent.whenIdle(), tick(2000)])
    expect(checkSessionInvariants(agent.session.events), `invariants of agent ${agent.id}`).toEqual([])
  }
})

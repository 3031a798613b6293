// The driver interface a conformance run talks to, and agentchart's own
// driver: it runs a scenario's inputs against a real agent, with every hook,
// model request and tool body waiting until the scenario answers it.
import { createAgent, type Agent, type AgentOptions } from '../../agent.js'
import { createSession } from '../../session/session.js'
import type { ModelAdapter, ModelRequest } from '../../adapters/types.js'
import type { SessionEvent, StreamChunk } from '../../session/schemas.js'
import { responseChunks, SCENARIO_CONFIG, SCENARIO_FAILURE, scenarioMessage, scenarioTools, toolOutcome } from '../model/harness.js'
import type { Scenario, ScenarioInput } from '../model/scenario.js'
import { textResponse } from '../responses.js'

/** What a conformance run needs from an implementation: run one scenario, hand back its session log. */
export interface ConformanceDriver {
  readonly name: string
  run(scenario: Scenario): Promise<ReadonlyArray<{ type: string; data: unknown }>>
}

type Gate = { kind: string; key?: string; answer: (input: ScenarioInput) => void; signal?: AbortSignal }

/** Let every pending microtask chain settle before the next input. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Run one scenario against a fresh agentchart agent (optionally built on a variant machine). */
export async function runOnAgentchart(
  scenario: Scenario,
  options: Pick<AgentOptions, 'machine'> & { observe?: (agent: Agent) => void } = {},
): Promise<SessionEvent[]> {
  const gates: Gate[] = []
  // a wait whose signal aborts is withdrawn: the runtime settled that effect as aborted already
  const wait = <T extends ScenarioInput>(kind: string, key?: string, signal?: AbortSignal) =>
    new Promise<T>((resolve) => {
      const withdraw = () => {
        const at = gates.indexOf(gate)
        if (at >= 0) gates.splice(at, 1)
      }
      const gate: Gate = {
        kind,
        key,
        signal,
        answer: (input) => {
          signal?.removeEventListener('abort', withdraw)
          resolve(input as T)
        },
      }
      gates.push(gate)
      signal?.addEventListener('abort', withdraw, { once: true })
    })
  let calls = 0
  let steers = 0
  let armed: string | null = null
  let agent!: Agent

  const model: ModelAdapter = {
    provider: SCENARIO_CONFIG.provider,
    model: SCENARIO_CONFIG.model,
    async *stream(request: ModelRequest): AsyncGenerator<StreamChunk> {
      const input = await wait<ScenarioInput & { type: 'model' }>('model', undefined, request.signal)
      const chunks = responseChunks(input, () => `c${++calls}`)
      yield* chunks
      if (input.response === 'partial') {
        await wait('model', undefined, request.signal)
        if (!request.signal.aborted) yield* textResponse('partial answer').slice(2)
      }
    },
  }
  const tools = scenarioTools(async (_name, _args, { callId }) => {
    const input = await wait<ScenarioInput & { type: 'tool' }>('tool', callId)
    const outcome = toolOutcome(callId, input.outcome)
    if (input.outcome === 'error') throw new Error('scripted tool failure')
    return outcome
  })
  const session = scenario.seed ? createSession({ seed: scenario.seed }) : undefined
  agent = createAgent({ model, tools, logger: { error: () => {} }, machine: options.machine, ...(session ? { session } : {}) })
  options.observe?.(agent)
  const append = agent.session.append.bind(agent.session)
  agent.session.append = (type: string, data: unknown, intent?: unknown) => {
    if (armed === type) {
      armed = null
      throw new Error('scripted store failure')
    }
    return append(type as never, data as never, intent as never)
  }

  const fail = () => {
    throw new Error(SCENARIO_FAILURE.message)
  }
  agent.on('agent/pre-step', async (p, next) => {
    const { decision } = await wait<ScenarioInput & { type: 'pre-step' }>('pre-step', undefined, p.signal)
    if (decision === 'throw') fail()
    if (decision === 'reject') return { kind: 'reject' }
    if (decision === 'empty') return { kind: 'enter', messages: [] }
    return next()
  })
  agent.on('agent/request', async (p, next) => {
    const { decision } = await wait<ScenarioInput & { type: 'request' }>('request', undefined, p.signal)
    if (decision === 'throw') fail()
    if (decision === 'no-route') return { provider: '', model: '' }
    return next()
  })
  agent.on('agent/request-error', async (p) => {
    const { decision } = await wait<ScenarioInput & { type: 'request-error' }>('request-error', undefined, p.signal)
    if (decision === 'throw') fail()
    return decision === 'retry' ? { kind: 'retry' } : undefined
  })
  agent.on('agent/turn-stopping', async (p) => {
    const { decision } = await wait<ScenarioInput & { type: 'turn-stopping' }>('turn-stopping', undefined, p.signal)
    if (decision === 'throw') fail()
    if (decision === 'steer') {
      try {
        agent.steer(scenarioMessage(`steer${++steers}`))
      } catch {
        // a refused steer (store failure) leaves the inbox as it was
      }
    }
  })
  agent.on('tools/pre-execute', async (p, next) => {
    const { decision } = await wait<ScenarioInput & { type: 'tool-pre' }>('tool-pre', p.callId)
    if (decision === 'throw') fail()
    if (decision === 'deny') return { kind: 'deny', reason: 'scripted denial' }
    return next()
  })
  agent.on('tools/post-execute', async (p, next) => {
    const { decision } = await wait<ScenarioInput & { type: 'tool-post' }>('tool-post', p.callId)
    if (decision === 'throw') fail()
    if (decision === 'replace') return { kind: 'accept', content: 'replaced' }
    if (decision === 'block') return { kind: 'block', feedback: 'blocked' }
    return next()
  })

  const answer = async (input: ScenarioInput, kind: string, key?: string) => {
    const at = gates.findIndex((g) => g.kind === kind && (key === undefined || g.key === key))
    if (at < 0) throw new Error(`scenario ${scenario.id}: nothing is waiting for ${JSON.stringify(input)}`)
    const [gate] = gates.splice(at, 1)
    gate.answer(input)
  }

  let cancelOn: string | null = null
  const cancelOnce = () => {
    cancelOn = null
    agent.cancel({ kind: 'user' })
  }
  agent.on('agent/status', ({ status }) => {
    if (cancelOn === 'agent/status' && status === 'running') cancelOnce()
  })
  agent.on('tools/result', () => {
    if (cancelOn === 'tools/result') cancelOnce()
  })
  agent.on('session/event', ({ event }) => {
    if (cancelOn === event.type) cancelOnce()
  })

  await settle()
  for (const input of scenario.inputs) {
    switch (input.type) {
      case 'send':
        try {
          agent.send(scenarioMessage(input.id), input.target, input.wakeup)
        } catch {
          // a refused send (IN-6, IN-7) changes nothing; the trace shows it
        }
        break
      case 'cancel':
        agent.cancel({ kind: 'user' }, { keepInbox: input.keepInbox })
        break
      case 'remove':
        agent.inbox.remove(input.id)
        break
      case 'replace':
        try {
          agent.inbox.replace(input.id, scenarioMessage(input.with))
        } catch {
          // a duplicate is refused
        }
        break
      case 'clear':
        agent.inbox.clear()
        break
      case 'splice':
        try {
          agent.inbox.splice(input.target, input.start, input.deleteCount, ...input.insert.map(scenarioMessage))
        } catch {
          // a duplicate is refused
        }
        break
      case 'dispose':
        void agent.dispose()
        break
      case 'cancel-on':
        cancelOn = input.trigger
        break
      case 'maintenance':
        void agent.runMaintenance(() => wait('job')).catch(() => {})
        break
      case 'job-done':
        await answer(input, 'job')
        break
      case 'fail-next':
        armed = input.eventType
        break
      case 'model':
        await answer(input, 'model')
        break
      case 'tool':
      case 'tool-pre':
      case 'tool-post':
        await answer(input, input.type, input.callId)
        break
      default:
        await answer(input, input.type)
    }
    await settle()
  }
  await settle()
  return [...agent.session.events]
}

/** agentchart itself as a conformance driver; `machine` swaps in a variant agent machine. */
export function createAgentchartDriver(options: Pick<AgentOptions, 'machine'> = {}): ConformanceDriver {
  return { name: 'agentchart', run: (scenario) => runOnAgentchart(scenario, options) }
}

export const agentchartDriver: ConformanceDriver = createAgentchartDriver()

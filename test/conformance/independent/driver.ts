// A conformance driver for the independent loop (./loop.ts), written from
// docs/conformance.md section 8: create the agent from the setup, register
// waiting listeners, perform each input, let the loop become quiescent, and
// hand back the log. Only types come from agentchart.
import type { ConformanceDriver, Scenario, ScenarioInput } from '../../../src/testing/index.js'
import { ForkRefused, IndependentAgent, type Chunk, type Json, type Message } from './loop.js'
import type { Mutation } from './mutants.js'

type Input<T extends ScenarioInput['type']> = Extract<ScenarioInput, { type: T }>
type Kind =
  'pre-step' | 'request' | 'request-error' | 'turn-stopping' | 'model' | 'tool-pre' | 'tool' | 'tool-post' | 'job-done' | 'backoff-elapsed' | 'summary'

const WITHDRAWN = Symbol('withdrawn')

/** Pending waits (spec 4.1): answered by inputs; the turn-level ones are withdrawn when their signal aborts. */
class Waits {
  #pending: Array<{ kind: Kind; callId?: string; resolve: (input: ScenarioInput | typeof WITHDRAWN) => void }> = []

  wait(kind: Kind, callId?: string, signal?: AbortSignal): Promise<ScenarioInput | typeof WITHDRAWN> {
    if (signal?.aborted) return Promise.resolve(WITHDRAWN)
    return new Promise((resolve) => {
      const withdraw = () => {
        this.#pending = this.#pending.filter((e) => e !== entry)
        resolve(WITHDRAWN)
      }
      const entry = {
        kind,
        callId,
        resolve: (input: ScenarioInput | typeof WITHDRAWN) => {
          signal?.removeEventListener('abort', withdraw)
          resolve(input)
        },
      }
      this.#pending.push(entry)
      signal?.addEventListener('abort', withdraw, { once: true })
    })
  }

  answer(kind: Kind, callId: string | undefined, input: ScenarioInput): boolean {
    const entry = this.#pending.find((e) => e.kind === kind && e.callId === callId)
    if (!entry) return false
    this.#pending = this.#pending.filter((e) => e !== entry)
    entry.resolve(input)
    return true
  }
}

const quiescent = () => new Promise<void>((resolve) => setImmediate(resolve))
const never = () => new Promise<never>(() => {})
const thrown = (message: string): never => {
  throw new Error(message)
}

/** Run one scenario on a fresh independent agent. */
export async function runIndependent(scenario: Scenario, mutation?: Mutation): Promise<unknown[]> {
  if (scenario.formatVersion !== 7) throw new Error(`unsupported formatVersion ${scenario.formatVersion}`)
  const { setup } = scenario
  const waits = new Waits()
  /** The live sessions of this run, as a process would know them (spec 5.17: a fork's id must be new). */
  const sessions = new Set<string>()
  // cancel-on (spec 5.10): one armed trigger, fired once, whichever agent of the scenario meets it
  let armed: Input<'cancel-on'> | null = null

  /** An agent with the scenario's setup over `seed`, its listeners registered (spec 8, step 2). */
  const start = (sessionId: string, seed: unknown[] | undefined, faults?: typeof setup.faults): IndependentAgent => {
    const agent = new IndependentAgent({
      model: {
        provider: setup.model.provider,
        model: setup.model.model,
        async *stream({ signal }) {
          for (;;) {
            const input = await waits.wait('model', undefined, signal)
            if (input === WITHDRAWN) return
            const { chunks, end } = input as Input<'model'>
            yield* chunks as Chunk[]
            if (end) return
          }
        },
      },
      tools: setup.tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema as Json,
        parallel: tool.executionMode === 'parallel',
        async execute(_args, { callId }) {
          const input = (await waits.wait('tool', callId)) as Input<'tool'>
          return input.action === 'throw'
            ? thrown(input.message)
            : (input.value as { content: string; concludesTurn?: boolean; additionalContexts?: Message[] })
        },
      })),
      maxParallelToolCalls: setup.maxParallelToolCalls,
      seed: seed as never,
      faults,
      approvals: setup.approvals === true,
      ...(setup.maxSteps !== undefined ? { maxSteps: setup.maxSteps } : {}),
      mutation,
      sessionId,
      sessions,
      // the backoff-elapsed input is the clock (spec 4)
      sleep: async (_ms, signal) => void (await waits.wait('backoff-elapsed', undefined, signal)),
      // spec 3 and 7.10: the policy as given; the summariser waits for the summary input (withdrawn on abort, 4.1)
      ...(setup.compaction
        ? {
            compaction: {
              ...setup.compaction,
              async summarise(signal: AbortSignal) {
                const input = await waits.wait('summary', undefined, signal)
                if (input === WITHDRAWN) return never()
                const i = input as Input<'summary'>
                return i.action === 'throw' ? thrown(i.message) : i.value
              },
            },
          }
        : {}),
    })

    // the waiting listeners (spec 4.1): the turn-level ones get the turn's signal
    const answerListener = (input: ScenarioInput | typeof WITHDRAWN, next: () => Promise<unknown>) => {
      if (input === WITHDRAWN) return never()
      const i = input as { action: string; value?: unknown; message?: string }
      return i.action === 'throw' ? thrown(i.message!) : i.action === 'next' ? next() : i.value
    }
    agent.on('agent/pre-step', async (p, next) => answerListener(await waits.wait('pre-step', undefined, p.signal), next))
    agent.on('agent/request', async (p, next) => answerListener(await waits.wait('request', undefined, p.signal), next))
    agent.on('agent/request-error', async (p, next) => answerListener(await waits.wait('request-error', undefined, p.signal), next))
    agent.on('agent/turn-stopping', async (p) => {
      const input = await waits.wait('turn-stopping', undefined, p.signal)
      if (input === WITHDRAWN) return never()
      const i = input as Input<'turn-stopping'>
      if (i.action === 'throw') thrown(i.message)
      else if (i.steer) {
        try {
          agent.steer(i.steer as Message)
        } catch {
          // refused: ignored (spec 4.3)
        }
      }
    })
    agent.on('tools/pre-execute', async (p, next) => answerListener(await waits.wait('tool-pre', p.callId), next))
    agent.on('tools/post-execute', async (p, next) => answerListener(await waits.wait('tool-post', p.callId), next))

    const fire = (trigger: string) => {
      if (armed?.trigger !== trigger) return
      const { cause, keepInbox } = armed
      armed = null
      try {
        agent.cancel(cause, { keepInbox })
      } catch {
        // refused: ignored
      }
    }
    agent.on('agent/status', (p) => p.status === 'running' && fire('agent/status'))
    agent.on('tools/result', () => fire('tools/result'))
    agent.on('session/event', (p) => fire(p.event.type))
    return agent
  }

  // the root session's id is the setup's, or one of our own (spec 3)
  let sessionId = setup.sessionId ?? `independent-${Math.random().toString(36).slice(2, 10)}`
  let agent = start(sessionId, setup.seed as unknown[] | undefined, setup.faults)

  const refusable = (call: () => unknown) => {
    try {
      call()
    } catch {
      // refused on purpose (spec 4.3)
    }
  }
  // spec 9: the error carries the log so far, which the runner shows
  const fail = (input: ScenarioInput, why: string): never => {
    throw Object.assign(new Error(`${scenario.id}: input #${scenario.inputs.indexOf(input)} (${input.type}): ${why}`), { log: [...agent.log] })
  }
  const answer = (input: ScenarioInput, kind: Kind, callId?: string) => {
    if (!waits.answer(kind, callId, input)) fail(input, `nothing waits for it${callId ? ` (${callId})` : ''}`)
  }
  const same = (a: unknown[], b: unknown[]) => JSON.stringify(a) === JSON.stringify(b)

  await quiescent()
  for (const input of scenario.inputs) {
    switch (input.type) {
      case 'send':
        refusable(() => agent.send(input.message as Message, input.target, input.wakeup))
        break
      case 'cancel':
        refusable(() => agent.cancel(input.cause, { keepInbox: input.keepInbox }))
        break
      case 'remove':
        refusable(() => agent.remove(input.id))
        break
      case 'replace':
        refusable(() => agent.replace(input.id, input.message as Message))
        break
      case 'clear':
        refusable(() => agent.clear())
        break
      case 'splice':
        refusable(() => agent.splice(input.target, input.start, input.deleteCount, ...(input.insert as Message[])))
        break
      case 'maintenance':
        refusable(() => void agent.runMaintenance(() => waits.wait('job-done')).catch(() => {}))
        break
      case 'dispose':
        void agent.dispose()
        break
      case 'cancel-on':
        armed = input
        break
      case 'compact':
        refusable(() => agent.compact())
        break
      case 'fail-append':
        agent.failNextAppend(input.eventType, new Error(input.message))
        break
      case 'job-done':
      case 'backoff-elapsed':
      case 'summary':
      case 'pre-step':
      case 'request':
      case 'request-error':
      case 'turn-stopping':
      case 'model':
        answer(input, input.type)
        break
      case 'tool':
      case 'tool-pre':
      case 'tool-post':
        answer(input, input.type, input.callId)
        break
      case 'approval':
        if (!agent.answerApproval(input.callId, input.decision === 'approve' ? { approved: true } : { approved: false, reason: input.reason }))
          fail(input, `no call waits for the approval of ${input.callId}`)
        break
      case 'fork': {
        // spec 5.17: accepted, the fork is driven from now on; refused, with the code asked for and nothing changed
        const before = [...agent.log]
        let seed: unknown[]
        try {
          seed = agent.fork(input.upTo, input.id)
        } catch (error) {
          const code = error instanceof ForkRefused ? error.code : String(error)
          if (code !== input.refused) fail(input, `refused with ${code}, expected ${input.refused ?? 'a fork'}`)
          if (!same(agent.log, before)) fail(input, 'a refused fork changed the log')
          break
        }
        if (input.refused) fail(input, `the fork was made, expected ${input.refused}`)
        if (!same(agent.log, before) || !same(seed.slice(0, input.upTo + 1), before.slice(0, input.upTo + 1)))
          fail(input, "the fork's prefix is not the parent's log")
        sessionId = input.id
        agent = start(sessionId, seed)
        break
      }
      case 'resume':
        // spec 5.18: the instance stops (nothing appended) and a new one starts over the stored log
        agent = start(sessionId, [...agent.log])
        break
      default:
        throw new Error(`${scenario.id}: unsupported input type ${(input as { type: string }).type}`)
    }
    await quiescent()
  }
  await quiescent()
  return agent.log
}

/** The independent loop as a conformance driver; `mutation` plants a deliberate bug. */
export function createIndependentDriver(mutation?: Mutation): ConformanceDriver {
  return { name: mutation ? `independent (${mutation})` : 'independent', run: (scenario) => runIndependent(scenario, mutation) as never }
}

export const driver = createIndependentDriver()
export default driver

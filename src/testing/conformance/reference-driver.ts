// The reference driver: agentchart itself under the conformance suite. It
// reads nothing but the scenario file and uses only public API (createAgent,
// createSession, defineTool, agent.on, session.failNextAppend);
// docs/conformance.md explains each step, and drivers for other
// implementations can follow it line by line.
//
// How it works: every listener the scenario answers (agent/pre-step,
// agent/request, agent/request-error, agent/turn-stopping, tools/pre-execute,
// tools/post-execute), the model stream and each tool body *wait* until the
// input that answers them is performed; so does a retry's backoff (the agent's
// clock is the `backoff-elapsed` input), and no retry policy is installed: the
// scenario's request-error inputs decide. After each input the driver lets the
// agent run until it waits again or rests (one setImmediate: agentchart's own
// waits are promise jobs), then performs the next input.
import { createAgent, type Agent, type AgentOptions } from '../../agent.js'
import type { ModelAdapter, ModelRequest } from '../../adapters/types.js'
import { createSession } from '../../session/session.js'
import type { SessionEvent, StreamChunk } from '../../session/schemas.js'
import { defineTool } from '../../tools/define.js'
import type { ConformanceDriver } from './driver.js'
import type { CancelTrigger, Scenario, ScenarioInput, ScenarioTool } from './format.js'

type Input<T extends ScenarioInput['type']> = Extract<ScenarioInput, { type: T }>
/** The waits an input can answer, keyed by input type (and call id for the tool inputs). */
type WaitKind = 'pre-step' | 'request' | 'request-error' | 'turn-stopping' | 'tool-pre' | 'tool' | 'tool-post' | 'model' | 'job-done' | 'backoff-elapsed'

/** A wait ended by its turn's abort rather than by an input. */
const WITHDRAWN = Symbol('withdrawn')

interface Wait {
  kind: WaitKind
  key: string | undefined
  resolve: (input: ScenarioInput | typeof WITHDRAWN) => void
}

/**
 * The pending waits of one scenario. A wait given the turn's signal is withdrawn when that signal aborts (or at once if
 * it already has): the implementation no longer waits for that answer, and no input of the scenario will give it.
 */
class Waits {
  readonly #pending: Wait[] = []

  wait(kind: WaitKind, key?: string, signal?: AbortSignal): Promise<ScenarioInput | typeof WITHDRAWN> {
    if (signal?.aborted) return Promise.resolve(WITHDRAWN)
    return new Promise((resolve) => {
      const wait: Wait = { kind, key, resolve }
      const withdraw = () => {
        const at = this.#pending.indexOf(wait)
        if (at >= 0) this.#pending.splice(at, 1)
        resolve(WITHDRAWN)
      }
      wait.resolve = (input) => {
        signal?.removeEventListener('abort', withdraw)
        resolve(input)
      }
      this.#pending.push(wait)
      signal?.addEventListener('abort', withdraw, { once: true })
    })
  }

  /** Answer the oldest wait of this kind (and key); false when nothing waits for it. */
  answer(kind: WaitKind, key: string | undefined, input: ScenarioInput): boolean {
    const at = this.#pending.findIndex((w) => w.kind === kind && w.key === key)
    if (at < 0) return false
    const [wait] = this.#pending.splice(at, 1)
    wait.resolve(input)
    return true
  }
}

/** Let the agent run until it waits for the next input or rests. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A withdrawn listener never returns: the loop stopped waiting for it when the turn was cancelled (CX-16). */
const never = () => new Promise<never>(() => {})

/** What a listener does for a `throw` action. */
const fail = (message: string): never => {
  throw new Error(message)
}

/** The scenario's tools: the declared schema is the one the header carries; bodies wait for their `tool` input. */
function toolsOf(declared: readonly ScenarioTool[], waits: Waits) {
  return declared.map((tool) =>
    defineTool({
      name: tool.name,
      description: tool.description,
      // the declared JSON Schema as is: the header carries it, and any arguments pass (the scenario scripts the body)
      input: { jsonSchema: tool.inputSchema },
      executionMode: tool.executionMode,
      execute: async (_args, { callId, signal }) => {
        const input = (await waits.wait('tool', callId)) as Input<'tool'>
        if (input.afterAbort !== signal.aborted) {
          throw new Error(
            `scenario expects tool ${callId} to settle ${input.afterAbort ? 'after' : 'before'} the abort, but the turn's signal is ${signal.aborted ? '' : 'not '}aborted`,
          )
        }
        return input.action === 'throw' ? fail(input.message) : input.value
      },
    }),
  )
}

/** The scripted model: each request streams the chunks of the next `model` inputs until one says `end`. */
function modelOf(scenario: Scenario, waits: Waits): ModelAdapter {
  return {
    provider: scenario.setup.model.provider,
    model: scenario.setup.model.model,
    async *stream(request: ModelRequest): AsyncGenerator<StreamChunk> {
      for (;;) {
        const input = await waits.wait('model', undefined, request.signal)
        if (input === WITHDRAWN) return
        const { chunks, end } = input as Input<'model'>
        yield* chunks
        if (end) return
      }
    },
  }
}

/** Register the listeners the scenario answers. */
function listen(agent: Agent, waits: Waits): void {
  agent.on('agent/pre-step', async (p, next) => {
    const input = await waits.wait('pre-step', undefined, p.signal)
    if (input === WITHDRAWN) return never()
    const i = input as Input<'pre-step'>
    return i.action === 'throw' ? fail(i.message) : i.action === 'next' ? next() : i.value
  })
  agent.on('agent/request', async (p, next) => {
    const input = await waits.wait('request', undefined, p.signal)
    if (input === WITHDRAWN) return never()
    const i = input as Input<'request'>
    return i.action === 'throw' ? fail(i.message) : i.action === 'next' ? next() : i.value
  })
  agent.on('agent/request-error', async (p, next) => {
    const input = await waits.wait('request-error', undefined, p.signal)
    if (input === WITHDRAWN) return never()
    const i = input as Input<'request-error'>
    return i.action === 'throw' ? fail(i.message) : i.action === 'next' ? next() : i.value
  })
  agent.on('agent/turn-stopping', async (p) => {
    const input = await waits.wait('turn-stopping', undefined, p.signal)
    if (input === WITHDRAWN) return never()
    const i = input as Input<'turn-stopping'>
    if (i.action === 'throw') fail(i.message)
    else if (i.steer) {
      try {
        agent.steer(i.steer)
      } catch {
        // a refused steer (the store failed) changes nothing; the listener returns normally
      }
    }
  })
  // the tool pipeline hooks are not withdrawn on abort: the loop awaits them in full (TL-15, TL-16)
  agent.on('tools/pre-execute', async (p, next) => {
    const i = (await waits.wait('tool-pre', p.callId)) as Input<'tool-pre'>
    return i.action === 'throw' ? fail(i.message) : i.action === 'next' ? next() : i.value
  })
  agent.on('tools/post-execute', async (p, next) => {
    const i = (await waits.wait('tool-post', p.callId)) as Input<'tool-post'>
    return i.action === 'throw' ? fail(i.message) : i.action === 'next' ? next() : i.value
  })
}

/** The armed `cancel-on` listener, if any: it cancels once, when its trigger happens next. */
function cancelOn(agent: Agent): (input: Input<'cancel-on'>) => void {
  let armed: Input<'cancel-on'> | null = null
  const fire = (trigger: CancelTrigger) => {
    if (armed?.trigger !== trigger) return
    const { cause, keepInbox } = armed
    armed = null
    try {
      agent.cancel(cause, { keepInbox })
    } catch {
      // refused (a failing store): the listener returns normally
    }
  }
  agent.on('agent/status', ({ status }) => status === 'running' && fire('agent/status'))
  agent.on('tools/result', () => fire('tools/result'))
  agent.on('session/event', ({ event }) => fire(event.type as CancelTrigger))
  return (input) => {
    armed = input
  }
}

/** Run one scenario on a fresh agentchart agent (optionally built on a variant machine); resolves to its log. */
export async function runOnAgentchart(
  scenario: Scenario,
  options: Pick<AgentOptions, 'machine'> & { observe?: (agent: Agent) => void } = {},
): Promise<SessionEvent[]> {
  const { setup } = scenario
  const waits = new Waits()
  const session = createSession(setup.seed ? { seed: setup.seed } : {})
  // store failures armed before the agent exists reach what it appends as it is created (repair closers, RS-4)
  for (const fault of setup.faults ?? []) session.failNextAppend(fault.eventType, new Error(fault.message))
  const agent = createAgent({
    model: modelOf(scenario, waits),
    tools: toolsOf(setup.tools, waits),
    maxParallelToolCalls: setup.maxParallelToolCalls,
    session,
    ...(setup.approvals ? { approvals: true } : {}),
    logger: { error: () => {} },
    // the scenario decides every recovery, and its backoff-elapsed input is the clock (spec section 4)
    retry: false,
    sleep: async (_ms, signal) => void (await waits.wait('backoff-elapsed', undefined, signal)),
    ...(options.machine ? { machine: options.machine } : {}),
  })
  options.observe?.(agent)
  listen(agent, waits)
  const arm = cancelOn(agent)
  const answer = (input: ScenarioInput, kind: WaitKind, key?: string) => {
    if (!waits.answer(kind, key, input)) {
      throw new Error(`${scenario.id}: input #${scenario.inputs.indexOf(input)} ${JSON.stringify(input).slice(0, 120)}: nothing is waiting for it`)
    }
  }
  // a refused call (a duplicate id, IN-6; a failing store, IN-7) changes nothing: the log shows it, the scenario goes on
  const refusable = (call: () => unknown) => {
    try {
      call()
    } catch {
      // expected by the scenario
    }
  }

  await settle()
  for (const input of scenario.inputs) {
    switch (input.type) {
      case 'send':
        refusable(() => agent.send(input.message, input.target, input.wakeup))
        break
      case 'cancel':
        refusable(() => agent.cancel(input.cause, { keepInbox: input.keepInbox }))
        break
      case 'remove':
        refusable(() => agent.inbox.remove(input.id))
        break
      case 'replace':
        refusable(() => agent.inbox.replace(input.id, input.message))
        break
      case 'clear':
        refusable(() => agent.inbox.clear())
        break
      case 'splice':
        refusable(() => agent.inbox.splice(input.target, input.start, input.deleteCount, ...input.insert))
        break
      case 'maintenance':
        // the job ignores its signal and ends at job-done (MT-5: a cancel aborts the signal, not the job)
        void agent.runMaintenance(() => waits.wait('job-done')).catch(() => {})
        break
      case 'job-done':
        answer(input, 'job-done')
        break
      case 'dispose':
        void agent.dispose()
        break
      case 'cancel-on':
        arm(input)
        break
      case 'fail-append':
        agent.session.failNextAppend(input.eventType, new Error(input.message))
        break
      case 'approval':
        // the call waits for this answer (TL-18); a refusal would mean the scenario and the agent disagree
        if (input.decision === 'approve') agent.approve(input.callId)
        else agent.deny(input.callId, input.reason)
        break
      case 'tool':
      case 'tool-pre':
      case 'tool-post':
        answer(input, input.type, input.callId)
        break
      default:
        answer(input, input.type)
    }
    await settle()
  }
  await settle()
  return [...agent.session.events]
}

/** agentchart as a conformance driver; `machine` swaps in a variant agent machine (to show the suite can fail). */
export function createAgentchartDriver(options: Pick<AgentOptions, 'machine'> = {}): ConformanceDriver {
  return { name: options.machine ? 'agentchart (variant machine)' : 'agentchart', run: (scenario) => runOnAgentchart(scenario, options) }
}

/** The reference driver: agentchart itself. */
export const agentchartDriver: ConformanceDriver = createAgentchartDriver()

// The reference driver: agentchart itself under the conformance suite. It
// reads nothing but the scenario file and uses only public API (createAgent,
// createSession, defineTool, agent.on, session.failNextAppend, agent.fork);
// docs/conformance.md explains each step, and drivers for other
// implementations can follow it line by line.
//
// How it works: every listener the scenario answers (agent/pre-step,
// agent/request, agent/request-error, agent/turn-stopping, tools/pre-execute,
// tools/post-execute), the model stream and each tool body *wait* until the
// input that answers them is performed; so does a retry's backoff (the agent's
// clock is the `backoff-elapsed` input), and no retry policy is installed: the
// scenario's request-error inputs decide; with compaction set up (format 6), the
// summariser waits for the `summary` input too. After each input the driver lets the
// agent run until it waits again or rests (one setImmediate: agentchart's own
// waits are promise jobs), then performs the next input. An accepted fork or a
// restart (format 5) swaps the agent the inputs go to for one over the fork or
// over the stored log; the expected log is that last session's.
import type { Agent } from '../../agent/agent.js'
import { createAgent } from '../../agent/create.js'
import type { AgentOptions } from '../../agent/options.js'
import type { ModelAdapter, ModelRequest } from '../../adapters/types.js'
import { ForkError } from '../../errors.js'
import { createSession, type Session } from '../../session/session.js'
import type { SessionEvent, StreamChunk } from '../../session/schemas.js'
import { defineTool } from '../../tools/define.js'
import type { ConformanceDriver } from './driver.js'
import type { CancelTrigger, Scenario, ScenarioInput, ScenarioTool } from './format.js'

type Input<T extends ScenarioInput['type']> = Extract<ScenarioInput, { type: T }>
/** The waits an input can answer, keyed by input type (and call id for the tool inputs). */
type WaitKind =
  'pre-step' | 'request' | 'request-error' | 'turn-stopping' | 'tool-pre' | 'tool' | 'tool-post' | 'model' | 'job-done' | 'backoff-elapsed' | 'summary'

/** A wait ended by its turn's abort rather than by an input. */
const WITHDRAWN = Symbol('withdrawn')

interface Wait {
  kind: WaitKind
  key: string | undefined
  /** Hands the waiting side its input. */
  give: (input: ScenarioInput) => void
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
      const withdraw = () => {
        const at = this.#pending.indexOf(wait)
        if (at >= 0) this.#pending.splice(at, 1)
        resolve(WITHDRAWN)
      }
      const give = (input: ScenarioInput) => {
        signal?.removeEventListener('abort', withdraw)
        resolve(input)
      }
      const wait: Wait = { kind, key, give }
      this.#pending.push(wait)
      signal?.addEventListener('abort', withdraw, { once: true })
    })
  }

  /** Answer the oldest wait of this kind (and key); false when nothing waits for it. */
  answer(kind: WaitKind, key: string | undefined, input: ScenarioInput): boolean {
    const at = this.#pending.findIndex((w) => w.kind === kind && w.key === key)
    if (at < 0) return false
    const [wait] = this.#pending.splice(at, 1)
    wait.give(input)
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

/**
 * Compaction as the scenario sets it up (format 5), or off. The estimate is agentchart's default, the one the
 * specification writes down; the summariser waits for the `summary` input, withdrawn when its signal aborts (CP-5).
 */
function compactionOf(setup: Scenario['setup']['compaction'], waits: Waits): AgentOptions['compaction'] {
  if (setup === undefined) return false
  const { contextWindow, threshold, keepRecent, auto, baseTokens } = setup
  return {
    contextWindow,
    threshold,
    keepRecent,
    auto,
    baseTokens,
    summarise: async ({ signal }) => {
      const input = await waits.wait('summary', undefined, signal)
      if (input === WITHDRAWN) return never()
      const i = input as Input<'summary'>
      return i.action === 'throw' ? fail(i.message) : i.value
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

/** The armed `cancel-on` input, shared by every agent of the scenario: it cancels once, when its trigger happens next. */
class CancelOn {
  #armed: Input<'cancel-on'> | null = null

  arm(input: Input<'cancel-on'>): void {
    this.#armed = input
  }

  /** Register the triggers on one agent: a status change to running, a logged event, a tools/result. */
  listen(agent: Agent): void {
    const fire = (trigger: CancelTrigger) => {
      if (this.#armed?.trigger !== trigger) return
      const { cause, keepInbox } = this.#armed
      this.#armed = null
      try {
        agent.cancel(cause, { keepInbox })
      } catch {
        // refused (a failing store): the listener returns normally
      }
    }
    agent.on('agent/status', ({ status }) => status === 'running' && fire('agent/status'))
    agent.on('tools/result', () => fire('tools/result'))
    agent.on('session/event', ({ event }) => fire(event.type as CancelTrigger))
  }
}

/** Why the events of a fork's prefix, or of a refused fork's parent, are not what they must be; null when they are. */
function unchanged(what: string, now: readonly SessionEvent[], before: readonly SessionEvent[]): string | null {
  if (now.length !== before.length) return `${what} has ${now.length} events, not ${before.length}`
  const at = now.findIndex((e, i) => JSON.stringify(e) !== JSON.stringify(before[i]))
  return at < 0 ? null : `${what} differs at seq ${at}`
}

/** Run one scenario on a fresh agentchart agent (optionally built on a variant machine); resolves to its log. */
export async function runOnAgentchart(
  scenario: Scenario,
  options: Pick<AgentOptions, 'machine'> & { observe?: (agent: Agent) => void } = {},
): Promise<SessionEvent[]> {
  const { setup } = scenario
  const waits = new Waits()
  const cancelOn = new CancelOn()
  const agents: Agent[] = []
  /** An agent with the scenario's setup over `session`, its listeners registered. */
  const agentOver = (session: Session): Agent => {
    const agent = createAgent({
      model: modelOf(scenario, waits),
      tools: toolsOf(setup.tools, waits),
      maxParallelToolCalls: setup.maxParallelToolCalls,
      session,
      ...(setup.approvals ? { approvals: true } : {}),
      // TU-16: a scenario without a step limit runs with none (its turns are short, but the default is not the format's)
      maxSteps: setup.maxSteps ?? Infinity,
      compaction: compactionOf(setup.compaction, waits),
      logger: { error: () => {} },
      // the scenario decides every recovery, and its backoff-elapsed input is the clock (spec section 4)
      retry: false,
      sleep: async (_ms, signal) => void (await waits.wait('backoff-elapsed', undefined, signal)),
      ...(options.machine ? { machine: options.machine } : {}),
    })
    agents.push(agent)
    options.observe?.(agent)
    listen(agent, waits)
    cancelOn.listen(agent)
    return agent
  }
  const session = createSession({ ...(setup.sessionId !== undefined ? { id: setup.sessionId } : {}), ...(setup.seed ? { seed: setup.seed } : {}) })
  // store failures armed before the agent exists reach what it appends as it is created (repair closers, RS-4)
  for (const fault of setup.faults ?? []) session.failNextAppend(fault.eventType, new Error(fault.message))
  /** The agent the inputs go to: the last fork's, or the restarted instance's (format 5). */
  let agent = agentOver(session)
  const failInput = (input: ScenarioInput, why: string): never => {
    throw new Error(`${scenario.id}: input #${scenario.inputs.indexOf(input)} ${JSON.stringify(input).slice(0, 120)}: ${why}`)
  }
  const answer = (input: ScenarioInput, kind: WaitKind, key?: string) => {
    if (!waits.answer(kind, key, input)) failInput(input, 'nothing is waiting for it')
  }
  // a refused call (a duplicate id, IN-6; a failing store, IN-7) changes nothing: the log shows it, the scenario goes on
  const refusable = (call: () => unknown) => {
    try {
      call()
    } catch {
      // expected by the scenario
    }
  }
  /** SS-14: fork the session driven now; accepted, drive the fork from now on; refused, check the code and that nothing changed. */
  const fork = async (input: Input<'fork'>) => {
    const before = [...agent.session.events]
    let child: Session
    try {
      child = await agent.fork({ upTo: input.upTo, id: input.id })
    } catch (error) {
      const code = error instanceof ForkError ? error.code : String(error)
      if (code !== input.refused) failInput(input, `the fork was refused with ${code}${input.refused ? `, not ${input.refused}` : ''}`)
      const changed = unchanged('the log of a refused fork', agent.session.events, before)
      if (changed) failInput(input, changed)
      return
    }
    if (input.refused) failInput(input, `the fork was made, but ${input.refused} was expected`)
    const changed =
      unchanged("the parent's log", agent.session.events, before) ??
      unchanged("the fork's prefix", child.events.slice(0, input.upTo + 1), before.slice(0, input.upTo + 1))
    if (changed) failInput(input, changed)
    agent = agentOver(child)
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
        cancelOn.arm(input)
        break
      case 'fail-append':
        agent.session.failNextAppend(input.eventType, new Error(input.message))
        break
      case 'compact':
        // from idle only (CP-4); the driver does not wait for it, and a refusal would show in the log as nothing
        void agent.compact().catch(() => {})
        break
      case 'approval':
        // the call waits for this answer (TL-18); a refusal would mean the scenario and the agent disagree
        if (input.decision === 'approve') agent.approve(input.callId)
        else agent.deny(input.callId, input.reason)
        break
      case 'fork':
        await fork(input)
        break
      case 'resume':
        // a restart: the stored log (every event as it is) under the same id, and a new instance over it (RS-1, IN-14);
        // the old instance rests idle and appends nothing more, as if its process had ended
        agent = agentOver(createSession({ id: agent.session.id, seed: [...agent.session.events] }))
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
  const log = [...agent.session.events]
  // a scenario of several sessions frees their ids (agent.fork refuses the id of any live agent), its log taken first
  if (agents.length > 1) await Promise.all(agents.map((a) => a.dispose({ force: true, graceMs: 0 })))
  return log
}

/** agentchart as a conformance driver; `machine` swaps in a variant agent machine (to show the suite can fail). */
export function createAgentchartDriver(options: Pick<AgentOptions, 'machine'> = {}): ConformanceDriver {
  return { name: options.machine ? 'agentchart (variant machine)' : 'agentchart', run: (scenario) => runOnAgentchart(scenario, options) }
}

/** The reference driver: agentchart itself. */
export const agentchartDriver: ConformanceDriver = createAgentchartDriver()

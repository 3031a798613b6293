// An agent as a tool: the call's body starts a child agent with a session of its own, runs one turn built from
// the call's arguments, and answers with the child's reply. The parent owns the child (the reference harness's
// rule): the parent's cancel cancels it with cause `parent`, the call disposes it when it ends, a failed or
// cancelled child gives the call an error result and the parent's turn goes on. The two logs name each other:
// the child's prompt says which session and call made it, the call's result `meta.subagent` names the child.
import type { Agent } from '../agent/agent.js'
import { createAgent } from '../agent/create.js'
import type { AgentOptions, StoredAgentOptions } from '../agent/options.js'
import { inspectorOf, telemetryOf } from '../agent/registry.js'
import { AgentchartError, ConfigError, SessionInUseError } from '../errors.js'
import { DEFAULT_LEASE_MS } from '../stores/lease.js'
import type { SessionStore } from '../stores/types.js'
import { describeValue } from '../values/foreign.js'
import { userMessage } from '../request/messages.js'
import type { RunResult, UsageTotals } from '../agent/results.js'
import type { UserMessage } from '../session/schemas.js'
import type { InferSchema, SchemaInput } from '../request/schema.js'
import { LogIndex } from '../agent/results.js'
import { OutputSchemas } from '../request/options.js'
import { createSession } from '../session/session.js'
import type { ModelAdapter } from '../adapters/types.js'
import {
  defineTool,
  setCallRecovery,
  type ExecutionMode,
  type InterruptedCall,
  type ToolContext,
  type ToolDefinition,
  type ToolResultValue,
} from '../tools/define.js'

/** The plugin name a child's prompt carries in its source, with the parent's session and call. */
export const SUBAGENT_SOURCE = 'agentchart/subagent'
/** How deep delegation may nest by default: a child's child's child is the last. */
export const DEFAULT_MAX_DEPTH = 3
/** How long a parent's cancel waits for a child's turn to end before the child is abandoned (and force-disposed). */
const ABANDON_GRACE_MS = 1_000

/** Delegation refused: the depth limit (`SUBAGENT_DEPTH`) or a child that could not be made (`SUBAGENT_CONFIG`). */
export class SubagentError extends AgentchartError {
  constructor(code: 'SUBAGENT_DEPTH' | 'SUBAGENT_CONFIG' | 'SUBAGENT_ABANDONED', message: string) {
    super(code, message)
    this.name = 'SubagentError'
  }
}

/** What the parent's call result says of its child (`tool/result` `meta.subagent`). */
export interface SubagentRecord {
  sessionId: string
  /** The child's turn, or null when the prompt never reached one. */
  turn: number | null
  end: RunResult['end']['kind']
  steps: number
  usage: UsageTotals
}

/** What the child's prompt records of its parent (the source of its `user/message`). */
export interface SubagentSource {
  [key: string]: unknown
  kind: 'plugin'
  plugin: typeof SUBAGENT_SOURCE
  parentSessionId: string
  /** The parent's turn and step that made the call (call ids are unique within a step only). */
  parentTurn: number
  parentStep: number
  parentCallId: string
  tool: string
}

export interface AgentToolDefinition<S extends SchemaInput<any>> {
  name: string
  description: string
  input: S
  /** The child's options for this call. With no `session` or `store`, a parent over a store stores the child beside it. */
  agent: (args: InferSchema<S>, context: ToolContext<Agent>) => AgentOptions | StoredAgentOptions
  /** The child's prompt (default: the `prompt`, `task` or `input` string argument, else the arguments as JSON). */
  prompt?: (args: InferSchema<S>) => string | readonly UserMessage['content'][number][]
  /** What the parent's model is shown (default: the child's answer text, or its structured object as JSON). */
  output?: (result: RunResult, child: Agent) => string | ToolResultValue
  executionMode?: ExecutionMode | ((args: InferSchema<S>) => ExecutionMode)
  timeoutMs?: number
  /** The deepest a chain of children may go (default 3); deeper delegation gives the call a SUBAGENT_DEPTH error. */
  maxDepth?: number
}

/** Each live child: its parent and the call that made it. Why a WeakMap: the registry must not keep agents alive. */
const parents = new WeakMap<Agent, { parent: Agent; callId: string; depth: number }>()
const children = new WeakMap<Agent, Set<Agent>>()

/** Who is told of each child as it is made (the viewer, to show a child's log live from its first event). */
const watchers = new WeakMap<Agent, Set<(child: Agent, callId: string, tool: string) => void>>()

/**
 * Call `listener` with each child `parent`'s calls start from now on, before the child runs its turn; returns
 * an unsubscribe. Why: a child lives only as long as its call, so a watcher must hear of it as it is made.
 */
export function watchSubagents(parent: Agent, listener: (child: Agent, callId: string, tool: string) => void): () => void {
  const set = watchers.get(parent) ?? new Set()
  watchers.set(parent, set.add(listener))
  return () => set.delete(listener)
}

/** The children `agent`'s tool calls are running now: handles to steer, inject into or cancel. */
export function subagentsOf(agent: Agent): readonly Agent[] {
  return [...(children.get(agent) ?? [])]
}

/** The parent and call of a child made by agentTool, or undefined for an agent nobody delegated to. */
export function parentOf(agent: Agent): { parent: Agent; callId: string; depth: number } | undefined {
  return parents.get(agent)
}

/** A tool whose body delegates to a child agent for one turn. Why: delegation with ownership, linked logs and rolled-up usage, without glue. */
export function agentTool<S extends SchemaInput<any>>(definition: AgentToolDefinition<S>): ToolDefinition<S> {
  if (typeof definition?.agent !== 'function')
    throw new ConfigError(`agentTool ${describeValue(definition?.name)}: agent must be a function of the arguments`, { path: 'agent' })
  if (definition.prompt !== undefined && typeof definition.prompt !== 'function')
    throw new ConfigError(`agentTool ${definition.name}: prompt must be a function`, { path: 'prompt' })
  if (definition.output !== undefined && typeof definition.output !== 'function')
    throw new ConfigError(`agentTool ${definition.name}: output must be a function`, { path: 'output' })
  const maxDepth = definition.maxDepth ?? DEFAULT_MAX_DEPTH
  if (!Number.isInteger(maxDepth) || maxDepth < 1)
    throw new ConfigError(`agentTool ${definition.name}: maxDepth must be a positive integer, got ${describeValue(maxDepth)}`, { path: 'maxDepth' })
  const { agent: childOptions, prompt, output, maxDepth: _depth, ...tool } = definition
  const defined = defineTool({
    ...tool,
    execute: (args, context: ToolContext<Agent>) => delegate(definition.name, maxDepth, childOptions(args, context), promptOf(args, prompt), output, context),
  })
  setCallRecovery(defined, recoverChild)
  return defined
}

/**
 * The session id a call's child gets beside its parent: `<parent>.<call id>`, each UTF-16 unit outside
 * `[A-Za-z0-9_.:-]` written as `%` and four hex digits (`a/b` is `a%002fb`), so that no two call ids share a child.
 */
function childSessionId(parentSessionId: string, callId: string): string {
  return `${parentSessionId}.${callId.replace(/[^A-Za-z0-9_.:-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}`
}

/**
 * The logs of a call's children in `store`, oldest first, and the id of the next: the call id's own, then `~2`,
 * `~3`... for each later call that reused the call id (models that number their calls per response do). Why: every delegation starts a fresh
 * child; a reused id must not resume another call's conversation.
 */
async function storedChildren(
  store: SessionStore,
  parentSessionId: string,
  callId: string,
): Promise<{ stored: { id: string; events: readonly unknown[] }[]; next: string }> {
  const base = childSessionId(parentSessionId, callId)
  const stored: { id: string; events: readonly unknown[] }[] = []
  for (let n = 1; ; n++) {
    const id = n === 1 ? base : `${base}~${n}`
    const events = await store.load(id)
    if (events === undefined) return { stored, next: id }
    stored.push({ id, events })
  }
}

/** Opens a crashed child only to repair it: it never runs a turn, so it needs no real model. */
const REPAIR_ONLY: ModelAdapter = Object.freeze({
  provider: 'agentchart',
  model: 'subagent-repair',
  stream: () => {
    throw new Error('a child opened to be repaired runs no turn')
  },
})

/**
 * Opens a crashed child to repair it, waiting out the lease the killed process left behind (it died with the
 * parent, so it lapses about when the parent's did), for at most one default lease and a second.
 */
async function openForRepair(call: InterruptedCall, childId: string): Promise<Agent> {
  const deadline = Date.now() + DEFAULT_LEASE_MS + 1_000
  for (;;) {
    try {
      return await createAgent({ store: call.store, sessionId: childId, model: REPAIR_ONLY, logger: call.logger })
    } catch (error) {
      if (!(error instanceof SessionInUseError) || Date.now() > Math.min(deadline, error.expiresAt + 1_000)) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

/**
 * A resuming parent asks what became of a child its crash cut short (stored beside it under the default id).
 * A child whose turn finished gives the call its answer; a child caught mid-turn is repaired now (its turn ends
 * `interrupted`, RS-4) and the call keeps the catalogue's unknown outcome (RS-5), naming the child either way.
 */
async function recoverChild(call: InterruptedCall): Promise<{ content: string; isError: boolean; meta?: unknown } | null> {
  const { stored } = await storedChildren(call.store, call.sessionId, call.callId)
  // the newest child whose prompt names this call and its step (a later step may reuse the call id)
  for (const { id, events } of stored.reverse()) {
    const turn = promptTurn(events, call)
    if (turn !== null) return closeFromChild(call, id, turn, events)
  }
  return null // the child never reached the store: nothing is known of it
}

/** The child's turn that took the prompt `call` sent: the turn/start before a user/message whose source names the call. */
function promptTurn(events: readonly unknown[], call: InterruptedCall): number | null {
  let turn: number | null = null
  for (const e of events as ReadonlyArray<{ type?: string; data?: { turn?: number; source?: Partial<SubagentSource> } }>) {
    if (e.type === 'turn/start') turn = e.data?.turn ?? null
    const source = e.type === 'user/message' ? e.data?.source : undefined
    // a prompt that names no parent step matches the call in any step
    const sameStep = source?.parentTurn === undefined || (source.parentTurn === call.turn && source.parentStep === call.step)
    if (source?.plugin === SUBAGENT_SOURCE && source.parentCallId === call.callId && sameStep) return turn
  }
  return null
}

/** The call's result from its child's log, repairing the child first when its turn is still open. */
async function closeFromChild(
  call: InterruptedCall,
  childId: string,
  turn: number,
  events: readonly unknown[],
): Promise<{ content: string; isError: boolean; meta?: unknown } | null> {
  const endOf = (events: readonly unknown[] | undefined) =>
    events?.find((e): e is { type: 'turn/end'; seq: number } => {
      const event = e as { type?: string; data?: { turn?: number } }
      return event.type === 'turn/end' && event.data?.turn === turn
    })
  let stored: readonly unknown[] | undefined = events
  if (!endOf(stored)) {
    // the child's turn is still open in its log: repair it now, as opening it anywhere would
    const child = await openForRepair(call, childId)
    await child.dispose()
    stored = await call.store.load(childId)
  }
  const end = endOf(stored)
  if (!stored || !end) return null
  const result = new LogIndex(createSession({ id: childId, seed: stored })).turnResult(turn, end.seq, new OutputSchemas())
  const record: SubagentRecord = { sessionId: childId, turn, end: result.end.kind, steps: result.steps, usage: result.usage }
  if (result.end.kind === 'completed') return { content: defaultOutput(result), isError: false, meta: { subagent: record } }
  const content =
    result.end.kind === 'interrupted'
      ? `Error: the subagent (session ${childId}) was cut short by a crash; its outcome is unknown. Retry only if its task is safe to repeat.`
      : `Error: ${defaultOutput(result)}`
  return { content, isError: true, meta: { subagent: record } }
}

async function delegate(
  tool: string,
  maxDepth: number,
  options: AgentOptions | StoredAgentOptions,
  content: string | readonly UserMessage['content'][number][],
  output: AgentToolDefinition<any>['output'],
  context: ToolContext<Agent>,
): Promise<string | ToolResultValue> {
  const parent = context.agent
  const depth = (parents.get(parent)?.depth ?? 0) + 1
  if (depth > maxDepth)
    throw new SubagentError('SUBAGENT_DEPTH', `${tool}: delegation deeper than ${maxDepth} levels is refused (this call would start level ${depth})`)
  if (context.signal.aborted) throw new SubagentError('SUBAGENT_CONFIG', `${tool}: the parent's turn was cancelled before the child started`)
  const child = await spawn(options, parent, context.callId)
  parents.set(child, { parent, callId: context.callId, depth })
  const siblings = children.get(parent) ?? new Set<Agent>()
  children.set(parent, siblings.add(child))
  for (const watcher of watchers.get(parent) ?? []) {
    try {
      watcher(child, context.callId, tool)
    } catch {
      // a watcher's fault is its own: the call goes on
    }
  }
  const cancel = () => child.cancel({ kind: 'parent' })
  context.signal.addEventListener('abort', cancel, { once: true })
  try {
    const source: SubagentSource = {
      kind: 'plugin',
      plugin: SUBAGENT_SOURCE,
      parentSessionId: parent.sessionId,
      parentTurn: context.turn,
      parentStep: context.step,
      parentCallId: context.callId,
      tool,
    }
    const result = await runOrAbandon(child, userMessage(content, { source }), context.signal, tool)
    const record: SubagentRecord = { sessionId: child.sessionId, turn: result.turn, end: result.end.kind, steps: result.steps, usage: result.usage }
    const shown = output ? output(result, child) : defaultOutput(result)
    const value: ToolResultValue = typeof shown === 'string' ? { content: shown } : { ...shown }
    if (result.end.kind !== 'completed') value.isError = true
    return { ...value, meta: { ...(isPlainObject(value.meta) ? value.meta : {}), subagent: record } }
  } finally {
    context.signal.removeEventListener('abort', cancel)
    siblings.delete(child)
    // a child that ignores its cancel must not hold the parent's call: after a parent's cancel it is abandoned
    const stuck = child.status === 'running'
    await child.dispose(context.signal.aborted ? { force: true, graceMs: stuck ? 0 : ABANDON_GRACE_MS } : {})
  }
}

/**
 * The child's turn, or, when the parent's signal aborts and the child's turn has not ended within the grace (a child
 * stuck in code that ignores its cancel), a SUBAGENT_ABANDONED error: the parent's cancel never waits on a child for good.
 */
async function runOrAbandon(child: Agent, prompt: UserMessage, signal: AbortSignal, tool: string): Promise<RunResult> {
  const run = child.run(prompt)
  let timer: ReturnType<typeof setTimeout> | undefined
  let onAbort: (() => void) | undefined
  const abandoned = new Promise<null>((resolve) => {
    onAbort = () => (timer = setTimeout(() => resolve(null), ABANDON_GRACE_MS))
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    const result = await Promise.race([run, abandoned])
    if (result !== null) return result
    run.catch(() => {})
    throw new SubagentError(
      'SUBAGENT_ABANDONED',
      `${tool}: the child did not end its turn within ${ABANDON_GRACE_MS} ms of the parent's cancel; it was abandoned`,
    )
  } finally {
    if (timer !== undefined) clearTimeout(timer)
    if (onAbort) signal.removeEventListener('abort', onAbort)
  }
}

/** The child agent, stored beside its parent when the parent has a store and the options name neither a session nor a store. */
async function spawn(options: AgentOptions | StoredAgentOptions, parent: Agent, callId: string): Promise<Agent> {
  if (typeof options !== 'object' || options === null)
    throw new SubagentError('SUBAGENT_CONFIG', `the child's options must be an object, got ${describeValue(options)}`)
  const given = options as AgentOptions & Partial<StoredAgentOptions>
  // the child reports to the parent's inspector unless its options name their own: one inspector shows both
  const inspect = given.inspect ?? inspectorOf(parent)
  const withInspector = inspect && !given.inspect ? { ...given, inspect } : given
  const own = nestedTelemetry(withInspector, parent, callId)
  const store = own.store ?? (own.session === undefined ? parent.store : undefined)
  if (store === undefined) return createAgent(own as AgentOptions)
  const sessionId = own.sessionId ?? (await storedChildren(store, parent.sessionId, callId)).next
  return createAgent({ ...(own as StoredAgentOptions), store, sessionId })
}

/**
 * The child's telemetry: the parent's tracer unless the child names its own, and its turns under the span of the call
 * that made it unless its options give a context of their own.
 */
function nestedTelemetry<O extends AgentOptions | StoredAgentOptions>(options: O, parent: Agent, callId: string): O {
  const spans = telemetryOf(parent)
  const given: unknown = options.telemetry
  // a malformed telemetry option is left for createAgent to refuse by name
  if (spans === undefined || (given !== undefined && (!isPlainObject(given) || given.context !== undefined))) return options
  const context = spans.contextOfCall(callId)
  if (context === null) return options
  return { ...options, telemetry: { ...(options.telemetry ?? spans.options), context } }
}

function promptOf<A>(
  args: A,
  prompt: ((args: A) => string | readonly UserMessage['content'][number][]) | undefined,
): string | readonly UserMessage['content'][number][] {
  if (prompt) return prompt(args)
  if (typeof args === 'string') return args
  if (isPlainObject(args)) for (const key of ['prompt', 'task', 'input']) if (typeof args[key] === 'string') return args[key]
  return JSON.stringify(args)
}

function defaultOutput(result: RunResult): string {
  if (result.object !== undefined) return JSON.stringify(result.object)
  if (result.end.kind === 'completed') return result.text
  const why = result.end.kind === 'error' ? `: ${result.end.error.message}` : ''
  return `the subagent's turn ended ${result.end.kind}${why}${result.text ? `; its partial answer: ${result.text}` : ''}`
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

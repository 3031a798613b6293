// A pure model of the environment around a machine: it performs the
// machine's effects the way the runtime does (appends go to a trace, syncs
// are answered at once) and leaves every async effect pending until a
// scenario input answers it. As an ActorLogic it can be walked by @xstate/graph.
import { createActor, type ActorLogic, type AnyStateMachine, type InspectionEvent, type Snapshot } from 'xstate'
import { z } from 'zod/v4'
import { canonical } from '../../values/canonical.js'
import { StreamAssembler } from '../../adapters/assemble.js'
import { applySplice } from '../../machines/inbox.js'
import type { AgentContext, AgentEvent, AppendEffect, Effect, Facts, InboxLists, RequestedCall } from '../../machines/types.js'
import type { LlmCallConfig, SessionEventType, StreamChunk, UserMessage } from '../../session/schemas.js'
import { defineTool, toolSchemas } from '../../tools/define.js'
import { errorResponse, maxTokensResponse, textResponse, toolCallResponse } from '../responses.js'
import type { ScenarioInput } from '../conformance/format.js'
import type { WalkInput } from './scenario.js'
import { SCRIPTED, cancelCause, scenarioMessage, scriptInput } from './script.js'
import { estimateMessageTokens, planCompaction, type CompactionPolicy, type SurfaceNodeView } from '../../compaction/plan.js'
import { SUMMARY_SOURCE, summaryText } from '../../session/vocabulary.js'
import type { CompactionPlan, Message } from '../../session/schemas.js'

/** The two tools every scenario knows: `p` is parallel-safe, `x` exclusive. Bodies are scripted. */
export function scenarioTools(execute: (name: 'p' | 'x', args: unknown, ctx: { callId: string; signal: AbortSignal }) => Promise<any>) {
  return (['p', 'x'] as const).map((name) =>
    defineTool({
      name,
      description: name === 'p' ? 'a parallel-safe read' : 'an exclusive write',
      input: z.object({}).loose(),
      executionMode: name === 'p' ? 'parallel' : 'exclusive',
      execute: (args, ctx) => execute(name, args, ctx),
    }),
  )
}

export const SCENARIO_CONFIG: LlmCallConfig = { provider: 'scripted', model: 'scripted-1' }
export const SCENARIO_FAILURE = { message: SCRIPTED.listenerFailure, code: 'UNKNOWN' }
const HEADER_TOOLS = toolSchemas(scenarioTools(() => Promise.resolve('')))

export { scenarioMessage }

/** What the runtime reports for a listener that threw `Error('scripted failure')`. */
const listenerThrew = (id: number): AgentEvent => ({ type: 'hook.failed', id, failure: SCENARIO_FAILURE })

/** What the runtime reports for the scripted store's refusal. */
const STORE_FAILURE = { message: SCRIPTED.storeFailure, code: 'UNKNOWN' }

/** What a scenario's model response streams; call ids come from the scenario's counter. */
export function responseChunks(response: WalkInput & { type: 'model' }, callIds: () => string): StreamChunk[] {
  switch (response.response) {
    case 'text':
      return textResponse('hello')
    case 'empty':
      return textResponse('')
    case 'tools':
      return toolCallResponse([
        { id: callIds(), name: 'p', arguments: '{}' },
        { id: callIds(), name: 'p', arguments: '{}' },
      ])
    case 'tools-mixed':
      return toolCallResponse([
        { id: callIds(), name: 'p', arguments: '{}' },
        { id: callIds(), name: 'x', arguments: '{}' },
        { id: callIds(), name: 'p', arguments: '{}' },
      ])
    case 'max-tokens':
      return maxTokensResponse('cut off')
    case 'max-tokens-tools':
      return [...toolCallResponse([{ id: callIds(), name: 'p', arguments: '{}' }]).slice(0, -1), { type: 'finish', reason: { kind: 'max-tokens' } }]
    case 'error':
      return errorResponse({ message: SCRIPTED.modelFailure, code: 'SERVER' })
    case 'tools-parallel':
      return toolCallResponse([
        { id: callIds(), name: 'p', arguments: '{}' },
        { id: callIds(), name: 'p', arguments: '{}' },
        { id: callIds(), name: 'p', arguments: '{}' },
      ])
    case 'partial':
      return PARTIAL.slice(0, 2) // block-start and a delta, then it waits for the abort
    // cut streams (CX-7): reasoning alone, whitespace alone, or reasoning, an empty text, a call and text
    case 'partial-reasoning':
      return [
        { type: 'block-start', index: 0, blockType: 'reasoning' },
        { type: 'reasoning-delta', index: 0, text: 'thinking' },
      ]
    case 'partial-blank':
      return [
        { type: 'block-start', index: 0, blockType: 'text' },
        { type: 'text-delta', index: 0, text: ' \n' },
      ]
    case 'partial-mixed':
      return [
        { type: 'block-start', index: 0, blockType: 'reasoning' },
        { type: 'reasoning-delta', index: 0, text: 'why' },
        { type: 'block-start', index: 1, blockType: 'text' },
        { type: 'text-delta', index: 1, text: '' },
        { type: 'block-start', index: 2, blockType: 'tool-call' },
        { type: 'tool-call-delta', index: 2, id: 'cut', name: 'p', argumentsDelta: '{' },
        { type: 'block-start', index: 3, blockType: 'text' },
        { type: 'text-delta', index: 3, text: 'so far' },
      ]
    case 'overflow':
      return errorResponse({ message: SCRIPTED.overflow, code: 'CONTEXT_WINDOW_EXCEEDED' })
    // the assembly rules (docs/conformance.md 7.4) on streams a careless adapter could send
    case 'closed-twice':
      return [...textResponse('hello').slice(0, -1), { type: 'block-end', index: 0, block: { type: 'text', text: 'again' } }, STOP]
    case 'after-close':
      return [...textResponse('hello').slice(0, -1), { type: 'text-delta', index: 0, text: ' more' }, STOP]
    case 'no-finish':
      return textResponse('hello').slice(0, -1)
    case 'calls-finish-empty':
      return [...textResponse('hello').slice(0, -1), { type: 'finish', reason: { kind: 'tool-calls' } }]
    case 'stop-with-calls':
      return [...toolCallResponse([{ id: callIds(), name: 'p', arguments: '{}' }]).slice(0, -1), STOP]
    case 'usage-twice':
      return [
        ...textResponse('hello').slice(0, -1),
        { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
        { type: 'usage', usage: { inputTokens: 2, outputTokens: 3 } },
        STOP,
      ]
    case 'out-of-order':
      return [
        { type: 'block-start', index: 1, blockType: 'text' },
        { type: 'text-delta', index: 1, text: 'first seen' },
        { type: 'block-start', index: 0, blockType: 'text' },
        { type: 'text-delta', index: 0, text: 'lower index' },
        STOP,
      ]
    case 'end-differs':
      return [
        { type: 'block-start', index: 0, blockType: 'text' },
        { type: 'text-delta', index: 0, text: 'draft' },
        { type: 'block-end', index: 0, block: { type: 'text', text: 'final' } },
        STOP,
      ]
  }
}

const STOP: StreamChunk = { type: 'finish', reason: { kind: 'stop' } }

/** The responses whose stream asks for tool calls: a walk past its step budget tries none of them. */
const CALLING: readonly ModelResponse[] = ['tools', 'tools-mixed', 'tools-parallel', 'stop-with-calls']

/** What a cut stream's next `model` input streams: the rest of the text of `partial`, or for the others a bare finish. */
function restOf(head: readonly StreamChunk[]): StreamChunk[] {
  return canonical(head) === canonical(PARTIAL.slice(0, 2)) ? PARTIAL_REST : [STOP]
}

/** A text answer cut in two: `partial` streams the head and waits; the next model input streams the rest. */
const PARTIAL = textResponse('partial answer')
export const PARTIAL_REST = PARTIAL.slice(2)

export type Pending =
  | { kind: 'hook'; id: number; name: string; payload: Record<string, unknown>; fallback: unknown; abandonOnCancel: boolean }
  | { kind: 'prepare'; id: number; seed: LlmCallConfig; abandonOnCancel: true }
  | { kind: 'model'; id: number; turn: number; step: number; partial?: { chunkSeqs: number[]; chunks: StreamChunk[] } }
  | { kind: 'tool'; id: number; call: RequestedCall }
  | { kind: 'job'; id: number }
  | { kind: 'wait'; id: number; ms: number; abandonOnCancel: true }
  | { kind: 'summary'; id: number; plan: CompactionPlan; abandonOnCancel: true }

export interface TraceEvent {
  type: string
  data: unknown
  surfaceOp?: unknown
  sourceEventSeqs?: number[]
}

export interface HarnessState {
  status: 'active'
  output: undefined
  error: undefined
  machine: unknown
  done: boolean
  pending: Pending[]
  trace: TraceEvent[]
  keys: Record<string, number>
  /** The inbox as the appended splices project it (what the runtime's lists hold). */
  lists: InboxLists
  inputs: WalkInput[]
  /** The same inputs spelled out in the portable format (prelude failures aside: they become the setup's faults). */
  script: ScenarioInput[]
  /**
   * For each input of `script`, for the data cover: what held when it was performed (`aborted`: the turn's signal had
   * aborted; `armed`: a listener cancel waited for its trigger), and the trace's length then.
   */
  scriptFlags: string[]
  scriptAt: number[]
  /** Facts of the walk the log does not spell out (e.g. an estimate exactly at the threshold), for the data cover. */
  notes: string[]
  aborted: boolean
  armed: string | null
  /** A listener that cancels when this happens next. */
  cancelOn: string | null
  rejections: string[]
  counters: {
    messages: number
    calls: number
    sends: number
    cancels: number
    removes: number
    fails: number
    maintenance: number
    watches: number
    strays: number
  }
  /** Transition definitions taken by the last input, and by the whole path, as `source#event#index` keys. */
  taken: string[]
  takenAll: string[]
}

export type ModelResponse = (WalkInput & { type: 'model' })['response']

/** Limits and choice sets that keep one walk finite and focused. */
export interface Budget {
  sends?: number
  cancels?: number
  removes?: number
  fails?: number
  maintenance?: number
  steps?: number
  attempts?: number
  turns?: number
  /** Model responses to try at each request. */
  responses?: readonly ModelResponse[]
  /** Try every hook decision and tool outcome, or only the defaults and one failure. */
  decisions?: 'all' | 'few'
  /** Store failures to try. */
  failTypes?: readonly string[]
  /** Store failures or listener cancels armed before the machine starts (for what a machine does as it starts). */
  prelude?: ReadonlyArray<Extract<WalkInput, { type: 'fail-next' | 'cancel-on' }>>
  /** Input over the walk's own (e.g. repair closers for a resumed agent); such scenarios are not replayed on the runtime. */
  input?: Record<string, unknown>
  /** A stored log the agent starts over: the walk's input is what the agent would derive from it (turn number, repair closers). */
  seed?: ReadonlyArray<{ seq: number; time: number; type: string; data: unknown }>
  /** Try `ask` at pre-execute and both answers of a person (TL-18). */
  approvals?: boolean
  /** Also try a disposal while a call waits for approval, which parks the wait (TL-18); counted with `maintenance`. */
  parks?: boolean
  /**
   * Compaction on with this policy (`auto` unless false): the walk measures its trace with it, the request's fixed
   * part (tool schemas, system prompt) counting 0 tokens, as a scenario's setup.compaction.baseTokens says.
   */
  compaction?: CompactionPolicy & { auto?: boolean }
  /** The agent's step limit (TU-16): the walk's machine input, and the exported scenario's `setup.maxSteps`. */
  maxSteps?: number
  /**
   * What the machine is told of its world (default: every extension point listened to and the session watched, as
   * under a conformance driver). Other facts walk the paths where nobody decides or watches, for coverage.
   */
  facts?: Partial<Facts>
  /** How many times someone may start or stop watching during the walk (`watch` inputs; walks with facts only). */
  watches?: number
  /** Keep the walk's scenarios out of the portable suite (the format does not describe their environment). */
  portable?: false
  /** How many requests the machine refuses to try: an answer for a call that does not wait, a job or compaction while busy. */
  strays?: number
  /** Causes of a plain cancel to try besides the user's (CX-1): `parent`, `hook` with a reason (default: the user's only). */
  causes?: readonly ('parent' | 'hook')[]
  /** Answers to try instead of those `decisions` picks, per kind of wait. */
  answers?: {
    tool?: readonly ('ok' | 'error' | 'concludes' | 'context')[]
    toolPre?: readonly ('allow' | 'deny' | 'throw' | 'ask')[]
    toolPost?: readonly ('accept' | 'replace' | 'block' | 'throw')[]
    summary?: readonly ('ok' | 'fail' | 'blank')[]
  }
  /** No approver is configured (TL-18): an `ask` is a denial; the exported scenario has no `setup.approvals`. */
  approver?: false
  /** The agent's pool size (default 10): the walk's machine input, and the exported scenario's `setup.maxParallelToolCalls`. */
  maxParallelToolCalls?: number
  /** Listener-triggered cancels to try. */
  cancelTriggers?: readonly ('agent/status' | 'turn/start' | 'step/start' | 'request/header' | 'assistant/message' | 'tools/result')[]
}

export interface HarnessOptions {
  machine: AnyStateMachine
  input: Record<string, unknown>
  budget?: Budget
  /** Sees the effects of every macrostep as emitted, and every persisted snapshot reached (e.g. to check they are JSON data). */
  observe?: { effects?: (effects: readonly Effect[]) => void; snapshot?: (snapshot: unknown) => void }
}

/** The call id a stray approval names: no call ever waits under it. */
const STRAY_CALL = 'stray'

const ALL_RESPONSES: readonly ModelResponse[] = ['text', 'empty', 'max-tokens', 'error', 'partial', 'max-tokens-tools', 'tools', 'tools-mixed']
const FAIL_TYPES = [
  'turn/start',
  'step/start',
  'user/message',
  'request/header',
  'step/end',
  'turn/end',
  'tool/call',
  'tool/result',
  'agent/inbox/spliced',
  'assistant/chunk',
]

/** A stable key for a transition definition: its source node, event and position. */
export function transitionKey(t: { source: { id: string }; eventType: string }, index: number): string {
  return `${t.source.id}#${t.eventType}#${index}`
}

/** The slice of XState's StateNode and transition definitions the walk reads. */
interface StateNodeView {
  id: string
  transitions: Map<string, TransitionView[]>
  always?: TransitionView[]
  states?: Record<string, StateNodeView>
}
interface TransitionView {
  source: StateNodeView
  eventType: string
  guard?: unknown
  target?: readonly StateNodeView[]
}

/** Every transition of a machine, keyed like `transitionKey`. */
export function allTransitions(machine: AnyStateMachine): Map<string, { source: string; event: string; guarded: boolean; target: string }> {
  const out = new Map<string, { source: string; event: string; guarded: boolean; target: string }>()
  const record = (node: StateNodeView, event: string, t: TransitionView, i: number) =>
    out.set(transitionKey(t, i), { source: node.id, event, guarded: t.guard !== undefined, target: (t.target ?? []).map((s) => s.id).join(',') })
  const visit = (node: StateNodeView) => {
    for (const [eventType, list] of node.transitions) list.forEach((t, i) => record(node, eventType, t, i))
    ;(node.always ?? []).forEach((t, i) => record(node, 'always', t, i))
    for (const child of Object.values(node.states ?? {})) visit(child)
  }
  visit(machine.root)
  return out
}

function indexOfTransition(t: TransitionView): number {
  const list = t.eventType === '' || t.eventType === undefined ? t.source.always : t.source.transitions.get(t.eventType)
  return (list ?? t.source.always ?? []).indexOf(t)
}

/** What one macrostep's effects came to (as in the runtime): the refused append and what was left out after it. */
interface Batch {
  failed: AppendEffect | null
  skipped: SessionEventType[]
  /** Ids of the effects asked for after the refusal, never started. */
  unstarted: number[]
}

const freshBatch = (): Batch => ({ failed: null, skipped: [], unstarted: [] })

/** Run machine events on a live actor restored from the state, performing effects like the runtime. */
class Step {
  readonly state: HarnessState
  readonly queue: AgentEvent[] = []
  batch: Batch = freshBatch()
  readonly actor
  buffer: Effect[] = []

  constructor(
    readonly options: HarnessOptions,
    from: HarnessState | null,
  ) {
    this.state = from
      ? {
          ...from,
          pending: [...from.pending],
          trace: [...from.trace],
          keys: { ...from.keys },
          inputs: [...from.inputs],
          script: [...from.script],
          scriptFlags: [...from.scriptFlags],
          notes: [...from.notes],
          scriptAt: [...from.scriptAt],
          rejections: [...from.rejections],
          counters: { ...from.counters },
          taken: [],
          takenAll: from.takenAll,
        }
      : {
          status: 'active',
          output: undefined,
          error: undefined,
          machine: undefined,
          done: false,
          pending: [],
          trace: [],
          // a resumed approval wait cites the calls its stored log holds
          keys: Object.fromEntries(
            (options.budget?.seed ?? []).flatMap((e) => (e.type === 'tool/call' ? [[`call:${(e.data as { callId: string }).callId}`, e.seq]] : [])),
          ),
          lists: {
            nextTurn: (options.input.nextTurn as UserMessage[] | undefined) ?? [],
            nextStep: (options.input.nextStep as UserMessage[] | undefined) ?? [],
          },
          inputs: [],
          script: [],
          scriptFlags: [],
          notes: [],
          scriptAt: [],
          aborted: false,
          armed: null,
          cancelOn: null,
          rejections: [],
          counters: { messages: 0, calls: 0, sends: 0, cancels: 0, removes: 0, fails: 0, maintenance: 0, watches: 0, strays: 0 },
          taken: [],
          takenAll: [],
        }
    const inspect = (event: InspectionEvent) => {
      if (event.type === '@xstate.microstep') {
        // XState reports the transitions a microstep took as `_transitions`
        for (const t of (event as unknown as { _transitions: TransitionView[] })._transitions) this.state.taken.push(transitionKey(t, indexOfTransition(t)))
      }
    }
    if (!from) {
      for (const armed of options.budget?.prelude ?? []) {
        this.state.inputs.push(armed)
        if (armed.type === 'fail-next') this.state.armed = armed.eventType
        else this.state.cancelOn = armed.trigger
      }
    }
    this.actor = createActor(options.machine, { input: options.input, inspect, ...(from ? { snapshot: from.machine as Snapshot<unknown> } : {}) })
    this.actor.on('effects', (batch) => this.buffer.push(...(batch as { effects: readonly Effect[] }).effects))
    this.actor.start()
    this.#perform()
  }

  send(event: AgentEvent): void {
    this.queue.push(event)
  }

  /** The seq the next trace event gets in the whole log: after a seed and its end-seed, if any. */
  seq(): number {
    const seed = this.options.budget?.seed
    return (seed ? seed.length + 1 : 0) + this.state.trace.length
  }

  /** Process queued machine events, one macrostep at a time, performing effects in order. */
  drain(): void {
    while (this.queue.length > 0) {
      const event = this.queue.shift()!
      if (this.actor.getSnapshot().status !== 'active') break
      this.actor.send(event)
      this.#perform()
    }
  }

  run(): HarnessState {
    this.drain()
    const snapshot = this.actor.getSnapshot()
    this.state.machine = this.actor.getPersistedSnapshot()
    this.options.observe?.snapshot?.(this.state.machine)
    this.state.done = snapshot.status !== 'active'
    this.state.takenAll = [...new Set([...this.state.takenAll, ...this.state.taken])]
    this.actor.stop()
    return this.state
  }

  /** The effects of one macrostep, then (like the runtime at the macrostep's end) the failure and the unstarted answers. */
  #perform(): void {
    const effects = this.buffer
    this.buffer = []
    this.options.observe?.effects?.(effects)
    for (const effect of effects) this.#effect(effect)
    const { failed, skipped, unstarted } = this.batch
    this.batch = freshBatch()
    if (!failed) return
    this.send({
      type: 'append.failed',
      eventType: failed.eventType,
      failure: STORE_FAILURE,
      skipped,
      unstarted,
      lists: this.state.lists,
      ...(failed.caller ? { caller: failed.caller } : {}),
    })
  }

  #effect(effect: Effect): void {
    const s = this.state
    const batch = this.batch
    switch (effect.type) {
      case 'fx.append': {
        if (batch.failed) {
          batch.skipped.push(effect.eventType)
          return
        }
        if (s.armed === effect.eventType) {
          s.armed = null
          batch.failed = effect
          return
        }
        const sources = effect.citeKeys ? effect.citeKeys.map((k) => s.keys[k]).filter((x) => x !== undefined) : effect.sourceEventSeqs
        const event: TraceEvent = { type: effect.eventType, data: effect.data }
        if (effect.surfaceOp) event.surfaceOp = effect.surfaceOp
        if (sources) event.sourceEventSeqs = [...sources]
        if (effect.key) s.keys[effect.key] = this.seq()
        s.trace.push(event)
        if (effect.eventType === 'agent/inbox/spliced') s.lists = applySplice(s.lists, effect.data as Parameters<typeof applySplice>[1])
        if (s.cancelOn === effect.eventType) this.#listenerCancels()
        return
      }
      case 'fx.notify':
        if (batch.failed) return
        if (s.cancelOn === effect.name && (effect.name !== 'agent/status' || effect.payload.status === 'running')) this.#listenerCancels()
        return
      case 'fx.reject':
        s.rejections.push(effect.code)
        return
      case 'fx.abort': {
        s.aborted = true
        // the runtime stops reading an aborted stream at once; the work the machine marked abandonOnCancel
        // it no longer waits for (its late answers would be dropped), so it is no longer pending
        const dropped = s.pending.filter((p) => p.kind === 'model' || ('abandonOnCancel' in p && p.abandonOnCancel))
        s.pending = s.pending.filter((p) => !dropped.includes(p))
        for (const p of dropped) if (p.kind === 'model') this.send(this.#cancelledModel(p))
        return
      }
      case 'fx.signal':
        s.aborted = false
        s.keys = {}
        return
      case 'fx.job':
        s.pending.push({ kind: 'job', id: effect.id })
        return
    }
    if (batch.failed) {
      batch.unstarted.push(effect.id)
      return
    }
    // as the runtime: work the machine abandons on cancel does not start once the signal has aborted
    if ('abandonOnCancel' in effect && effect.abandonOnCancel && s.aborted) return
    switch (effect.type) {
      case 'fx.confirm':
        return this.send({ type: 'appends.confirmed', id: effect.id })
      case 'fx.classify':
        return this.send({ type: 'tool.classified', id: effect.id, mode: effect.call.name === 'p' ? 'parallel' : 'exclusive' })
      case 'fx.measure':
        // as the runtime: the real plan over the walk's own log, answered at once
        return this.send({ type: 'compaction.measured', id: effect.id, plan: this.#measure(effect.reason, effect.entering) })
      case 'fx.summarise':
        s.pending.push({ kind: 'summary', id: effect.id, plan: effect.plan, abandonOnCancel: effect.abandonOnCancel })
        return
      case 'fx.hook':
        s.pending.push({
          kind: 'hook',
          id: effect.id,
          name: effect.name,
          payload: effect.payload,
          fallback: effect.fallback,
          abandonOnCancel: effect.abandonOnCancel,
        })
        return
      case 'fx.prepare':
        s.pending.push({ kind: 'prepare', id: effect.id, seed: effect.seed, abandonOnCancel: effect.abandonOnCancel })
        return
      case 'fx.model':
        if (s.aborted) {
          return this.send({ type: 'model.settled', id: effect.id, chunkSeqs: [], response: new StreamAssembler().result(), cancelled: true })
        }
        s.pending.push({ kind: 'model', id: effect.id, turn: effect.turn, step: effect.step })
        return
      case 'fx.tool':
        s.pending.push({ kind: 'tool', id: effect.id, call: effect.call })
        return
      case 'fx.wait':
        s.pending.push({ kind: 'wait', id: effect.id, ms: effect.ms, abandonOnCancel: effect.abandonOnCancel })
        return
    }
  }

  /** The compaction plan over the trace's surface (CP-1): the runtime's planCompaction with the walk's policy. */
  #measure(reason: Extract<Effect, { type: 'fx.measure' }>['reason'], entering: readonly UserMessage[]): CompactionPlan | null {
    const policy = this.options.budget?.compaction
    if (!policy) return null
    const seed = this.options.budget?.seed ?? []
    const offset = this.seq() - this.state.trace.length
    const nodes: SurfaceNodeView[] = []
    ;[...seed, ...this.state.trace].forEach((e, k) => {
      const i = k - seed.length
      const seq = k < seed.length ? k : offset + i
      const { surfaceOp } = e as TraceEvent
      if (surfaceOp === undefined) return
      const data = e.data as { message?: Message }
      const message = (e.type === 'user/message' ? e.data : data.message) as Message
      const node = { seq, type: e.type, message: message.role === 'assistant' && message.content.length === 0 ? undefined : message }
      if (surfaceOp === 'append') return void nodes.push(node)
      const op = surfaceOp as { start: number; end: number }
      const from = nodes.findIndex((n) => n.seq === op.start)
      const to = nodes.findIndex((n) => n.seq === op.end)
      nodes.splice(from, to - from + 1, node)
    })
    // CP-1: an estimate exactly at the threshold does not compact; the data cover wants a scenario that shows it
    const total = [...nodes.map((n) => (n.message ? estimateMessageTokens(n.message) : 0)), ...entering.map(estimateMessageTokens)].reduce((a, b) => a + b, 0)
    if (reason === 'auto' && total === policy.threshold * policy.contextWindow && !this.state.notes.includes('auto-at-threshold'))
      this.state.notes.push('auto-at-threshold')
    return planCompaction({ nodes, entering, baseTokens: 0, policy, reason, estimate: estimateMessageTokens })
  }

  /** A listener's cancel is queued behind the running macrostep, like the runtime's nested send. */
  #listenerCancels(): void {
    this.state.cancelOn = null
    this.send({ type: 'agent.cancel', cause: { kind: 'user' }, keepInbox: false })
  }

  #cancelledModel(p: Extract<Pending, { kind: 'model' }>): AgentEvent {
    const assembler = new StreamAssembler()
    for (const chunk of p.partial?.chunks ?? []) assembler.push(chunk)
    return { type: 'model.settled', id: p.id, chunkSeqs: p.partial?.chunkSeqs ?? [], response: assembler.result(), cancelled: true }
  }

  /** Stream a response into the trace the way the runtime's hot path does. */
  stream(p: Extract<Pending, { kind: 'model' }>, chunks: StreamChunk[], partial: boolean): void {
    const s = this.state
    const seqs = [...(p.partial?.chunkSeqs ?? [])]
    const all = [...(p.partial?.chunks ?? [])]
    for (const chunk of chunks) {
      if (s.armed === 'assistant/chunk') {
        s.armed = null
        s.pending = s.pending.filter((q) => q !== p)
        return this.send({ type: 'model.failed', id: p.id, failure: STORE_FAILURE })
      }
      seqs.push(this.seq())
      s.trace.push({ type: 'assistant/chunk', data: { turn: p.turn, step: p.step, chunk } })
      all.push(chunk)
    }
    s.pending = s.pending.filter((q) => q !== p)
    if (partial) {
      s.pending.push({ ...p, partial: { chunkSeqs: seqs, chunks: all } })
      return
    }
    const assembler = new StreamAssembler()
    for (const chunk of all) assembler.push(chunk)
    this.send({ type: 'model.settled', id: p.id, chunkSeqs: seqs, response: assembler.result(), cancelled: false })
  }
}

/** The part of a machine's context the approval inputs read (TL-18); a parked question waits for another instance. */
type ApprovalView = { toolBatch?: { approval: string | null; parked?: boolean } }

/** The call a person may answer now: the waiting one, unless a disposal parked it. */
function answerable(context: ApprovalView): string | null {
  return context.toolBatch?.parked ? null : (context.toolBatch?.approval ?? null)
}
/** CP-6: this step already met an overflow with a compaction (part machines' walks may start without the key). */
function overflowMet(context: AgentContext): boolean {
  const at = (context.compaction as AgentContext['compaction'] | undefined)?.overflowAt
  return at !== undefined && at !== null && at.turn === context.turn && at.step === context.step
}

const ctxOf = (state: HarnessState) => (state.machine as { context: AgentContext; value: unknown }).context

export interface Harness {
  logic: ActorLogic<HarnessState, WalkInput, unknown>
  apply(state: HarnessState, input: WalkInput): HarnessState | null
  /** Drive a state to rest with default answers (enter, the default request, a text answer, give up on errors, allow, accept). */
  complete(state: HarnessState, limit?: number): HarnessState
  choices(state: HarnessState): WalkInput[]
  abstract(state: HarnessState): string
  initial(): HarnessState
}

/** Build the harness logic for one machine. */
export function createHarness(options: HarnessOptions): Harness {
  const budget = {
    sends: 1,
    cancels: 0,
    removes: 0,
    fails: 0,
    maintenance: 0,
    steps: 3,
    attempts: 2,
    turns: 2,
    watches: 0,
    strays: 0,
    responses: ALL_RESPONSES,
    decisions: 'all' as 'all' | 'few',
    failTypes: FAIL_TYPES,
    cancelTriggers: [] as NonNullable<Budget['cancelTriggers']>,
    ...options.budget,
  }
  const few = budget.decisions === 'few'
  const pick = <T>(all: readonly T[], kept: readonly T[]): readonly T[] => (few ? kept : all)

  /** Apply one scenario input; returns the next state, or null when the input does not apply here. */
  function apply(state: HarnessState, input: WalkInput): HarnessState | null {
    const step = new Step(options, state)
    return applyOn(step, input) ? step.run() : null
  }

  /** Drive a state to rest with the default answer to the oldest pending effect, on one live actor. */
  function complete(state: HarnessState, limit = 200): HarnessState {
    const step = new Step(options, state)
    for (let i = 0; i < limit; i++) {
      const answer = defaultAnswer(step.state, step.actor.getSnapshot().context as ApprovalView)
      if (!answer) return step.run()
      if (!applyOn(step, answer)) throw new Error(`default answer ${JSON.stringify(answer)} does not apply`)
      step.drain()
    }
    throw new Error(`scenario did not come to rest within ${limit} default answers: ${JSON.stringify(step.state.inputs)}`)
  }

  /** Apply one input to a live step; false (and nothing changed) when it does not apply here. */
  function applyOn(step: Step, input: WalkInput): boolean {
    const s = step.state
    const first = <K extends Pending['kind']>(kind: K, pred: (p: Extract<Pending, { kind: K }>) => boolean = () => true) =>
      s.pending.find((p) => p.kind === kind && pred(p as Extract<Pending, { kind: K }>)) as Extract<Pending, { kind: K }> | undefined
    const take = (p: Pending) => (s.pending = s.pending.filter((q) => q !== p))
    const record = (explicit: ScenarioInput) => {
      s.script.push(explicit)
      // aborted: a cancelled activity still runs (an idle agent keeps the flag until its next activity)
      const running = (step.actor.getSnapshot() as { value: unknown }).value !== 'idle'
      const cut = s.pending.some((p) => p.kind === 'model' && p.partial !== undefined)
      s.scriptFlags.push([s.aborted && running ? 'aborted' : '', s.cancelOn !== null ? 'armed' : '', cut ? 'cut' : ''].filter(Boolean).join('+'))
      s.scriptAt.push(s.trace.length)
    }
    const hookOf = (name: string, callId?: string) => first('hook', (p) => p.name === name && (callId === undefined || p.payload.callId === callId))
    switch (input.type) {
      case 'send':
        s.counters.sends++
        step.send({ type: 'inbox.send', message: scenarioMessage(input.id), target: input.target, wakeup: input.wakeup })
        break
      case 'cancel':
        s.counters.cancels++
        step.send({ type: 'agent.cancel', cause: cancelCause(input.cause), keepInbox: input.keepInbox })
        break
      case 'remove':
        s.counters.removes++
        step.send({ type: 'inbox.remove', id: input.id })
        break
      case 'replace':
        s.counters.removes++
        step.send({ type: 'inbox.replace', id: input.id, message: scenarioMessage(input.with) })
        break
      case 'clear':
        s.counters.removes++
        step.send({ type: 'inbox.clear' })
        break
      case 'splice':
        s.counters.removes++
        step.send({
          type: 'inbox.splice',
          target: input.target,
          start: input.start,
          deleteCount: input.deleteCount,
          messages: input.insert.map(scenarioMessage),
        })
        break
      case 'dispose':
        // dispose() is a disposed cancel, then deregistration at rest (CX-17)
        s.counters.maintenance++
        step.send({ type: 'agent.cancel', cause: { kind: 'disposed' }, keepInbox: false })
        step.send({ type: 'agent.dispose' })
        break
      case 'cancel-on':
        s.counters.cancels++
        s.cancelOn = input.trigger
        break
      case 'maintenance':
        if ((step.actor.getSnapshot() as { value: unknown }).value === 'idle') s.counters.maintenance++
        else s.counters.strays++
        step.send({ type: 'maintenance.start' })
        break
      case 'compact': {
        const { value, context } = step.actor.getSnapshot() as { value: unknown; context: AgentContext }
        if (value === 'idle' && context.instance.compaction !== 'off') s.counters.maintenance++
        else s.counters.strays++
        step.send({ type: 'compaction.start' })
        break
      }
      case 'summary': {
        const p = first('summary')
        if (!p) return false
        take(p)
        if (input.outcome === 'fail') step.send({ type: 'compaction.failed', id: p.id, failure: { message: SCRIPTED.summaryFailure, code: 'UNKNOWN' } })
        // CP-3: as the runtime, a summary of whitespace only is no summary
        else if (input.outcome === 'blank')
          step.send({ type: 'compaction.failed', id: p.id, failure: { message: 'the compaction summariser returned no summary text', code: 'EMPTY_RESPONSE' } })
        else {
          const message: Message = { id: 'summary', role: 'user', content: [{ type: 'text', text: summaryText(SCRIPTED.summary) }], source: SUMMARY_SOURCE }
          const tokensAfter = Math.max(0, p.plan.tokensBefore - p.plan.rangeTokens + estimateMessageTokens(message))
          step.send({ type: 'compaction.summarised', id: p.id, summary: SCRIPTED.summary, tokensAfter })
        }
        break
      }
      case 'job-done': {
        const p = first('job')
        if (!p) return false
        take(p)
        step.send({ type: 'job.settled', id: p.id })
        break
      }
      case 'fail-next':
        s.counters.fails++
        s.armed = input.eventType
        break
      case 'pre-step': {
        const p = hookOf('agent/pre-step')
        if (!p) return false
        take(p)
        if (input.decision === 'throw') step.send(listenerThrew(p.id))
        else {
          const value = input.decision === 'reject' ? { kind: 'reject' } : input.decision === 'empty' ? { kind: 'enter', messages: [] } : p.fallback
          step.send({ type: 'hook.done', id: p.id, value })
        }
        break
      }
      case 'request': {
        const p = first('prepare')
        if (!p) return false
        take(p)
        if (input.decision === 'throw') {
          step.send(listenerThrew(p.id))
          break
        }
        const config = input.decision === 'no-route' ? { provider: '', model: '' } : p.seed
        const header = { config, tools: HEADER_TOOLS }
        const context = { provider: config.provider, model: config.model }
        step.send({ type: 'request.prepared', id: p.id, config, header, headerKey: canonical(header), context, contextKey: canonical(context) })
        break
      }
      case 'model': {
        const p = first('model')
        if (!p || (p.partial && input.response !== 'text')) return false
        const chunks = p.partial ? restOf(p.partial.chunks) : responseChunks(input, () => `c${++s.counters.calls}`)
        const end = p.partial !== undefined || !input.response.startsWith('partial')
        record(scriptInput(input, { chunks, end }))
        step.stream(p, chunks, !end)
        break
      }
      case 'request-error': {
        const p = hookOf('agent/request-error')
        if (!p) return false
        take(p)
        if (input.decision === 'throw') step.send(listenerThrew(p.id))
        else {
          const value =
            input.decision === 'retry' ? { kind: 'retry' } : input.decision === 'retry-later' ? { kind: 'retry', delayMs: SCRIPTED.retryDelayMs } : undefined
          step.send({ type: 'hook.done', id: p.id, value })
        }
        break
      }
      case 'backoff-elapsed': {
        const p = first('wait')
        if (!p) return false
        take(p)
        step.send({ type: 'backoff.elapsed', id: p.id })
        break
      }
      case 'turn-stopping': {
        const p = hookOf('agent/turn-stopping')
        if (!p) return false
        take(p)
        const steer = input.decision === 'steer' ? scenarioMessage(`steer${s.counters.messages + 1}`) : undefined
        record(scriptInput(input, { steer }))
        if (input.decision === 'throw') {
          step.send(listenerThrew(p.id))
          break
        }
        if (steer) {
          s.counters.messages++
          step.send({ type: 'inbox.send', message: steer, target: 'next-step', wakeup: true })
          step.drain() // the listener's steer completes before the listener returns
        }
        step.send({ type: 'hook.done', id: p.id, value: undefined })
        break
      }
      case 'tool-pre': {
        const p = hookOf('tools/pre-execute', input.callId)
        if (!p) return false
        take(p)
        if (input.decision === 'throw') step.send(listenerThrew(p.id))
        else
          step.send({
            type: 'hook.done',
            id: p.id,
            value:
              input.decision === 'deny'
                ? { kind: 'deny', reason: SCRIPTED.denial }
                : input.decision === 'ask'
                  ? { kind: 'ask', reason: SCRIPTED.question }
                  : { kind: 'allow' },
          })
        break
      }
      case 'watch':
        s.counters.watches++
        step.send({ type: 'facts.changed', facts: { observed: input.observed } })
        break
      case 'approval': {
        // the person answers the call that waits now, or (a stray) one that does not
        const waits = answerable(step.actor.getSnapshot().context as ApprovalView) === input.callId
        if (!waits && input.callId !== STRAY_CALL) return false
        if (!waits) s.counters.strays++
        step.send({
          type: 'approval.answered',
          callId: input.callId,
          approved: input.decision === 'approve',
          ...(input.decision === 'deny' ? { reason: SCRIPTED.refusal } : {}),
        })
        break
      }
      case 'tool': {
        const p = first('tool', (q) => q.call.callId === input.callId)
        if (!p) return false
        take(p)
        record(scriptInput(input, { aborted: s.aborted }))
        step.send({ type: 'tool.settled', id: p.id, outcome: toolOutcome(input.callId, input.outcome) })
        break
      }
      case 'tool-post': {
        const p = hookOf('tools/post-execute', input.callId)
        if (!p) return false
        take(p)
        if (input.decision === 'throw') step.send(listenerThrew(p.id))
        else
          step.send({
            type: 'hook.done',
            id: p.id,
            value:
              input.decision === 'replace'
                ? { kind: 'accept', content: SCRIPTED.replaced }
                : input.decision === 'block'
                  ? { kind: 'block', feedback: SCRIPTED.blocked }
                  : { kind: 'accept' },
          })
        break
      }
    }
    s.inputs.push(input)
    // model, tool and turn-stopping inputs recorded their explicit form above, with what they streamed or settled;
    // a watch has no portable form (walks with facts are not replayed)
    if (input.type !== 'model' && input.type !== 'tool' && input.type !== 'turn-stopping' && input.type !== 'watch') record(scriptInput(input))
    return true
  }

  /** The inputs worth trying from a state, within the budget. */
  function choices(state: HarnessState): WalkInput[] {
    if (state.done) return []
    const ctx = ctxOf(state)
    const value = (state.machine as { value: unknown }).value
    const out: WalkInput[] = []
    const c = state.counters
    for (const p of state.pending) {
      switch (p.kind) {
        case 'hook':
          if (p.name === 'agent/pre-step')
            out.push(
              ...pick(['default', 'reject', 'empty', 'throw'] as const, ['default', 'reject'] as const).map((decision) => ({
                type: 'pre-step' as const,
                decision,
              })),
            )
          if (p.name === 'agent/request-error') {
            const decisions = ctx.request.attempt < budget.attempts ? (['retry', 'retry-later', 'give-up', 'throw'] as const) : (['give-up', 'throw'] as const)
            out.push(...decisions.map((decision) => ({ type: 'request-error' as const, decision })))
          }
          if (p.name === 'agent/turn-stopping') {
            const decisions = ctx.step < budget.steps ? (['none', 'steer', 'throw'] as const) : (['none', 'throw'] as const)
            out.push(...decisions.map((decision) => ({ type: 'turn-stopping' as const, decision })))
          }
          if (p.name === 'tools/pre-execute')
            out.push(
              ...(
                budget.answers?.toolPre ?? (budget.approvals ? (['allow', 'ask'] as const) : pick(['allow', 'deny', 'throw'] as const, ['allow'] as const))
              ).map((decision) => ({
                type: 'tool-pre' as const,
                callId: String(p.payload.callId),
                decision,
              })),
            )
          if (p.name === 'tools/post-execute')
            out.push(
              ...(budget.answers?.toolPost ?? pick(['accept', 'replace', 'block', 'throw'] as const, ['accept'] as const)).map((decision) => ({
                type: 'tool-post' as const,
                callId: String(p.payload.callId),
                decision,
              })),
            )
          break
        case 'prepare':
          out.push(...pick(['default', 'no-route', 'throw'] as const, ['default'] as const).map((decision) => ({ type: 'request' as const, decision })))
          break
        case 'model': {
          if (p.partial) {
            out.push({ type: 'model', response: 'text' })
            break
          }
          const toolsAllowed = ctx.step < budget.steps
          const responses = budget.responses.filter((r) => toolsAllowed || !CALLING.includes(r))
          out.push(...responses.map((response) => ({ type: 'model' as const, response })))
          break
        }
        case 'tool':
          out.push(
            ...(budget.answers?.tool ?? pick(['ok', 'error', 'concludes', 'context'] as const, ['ok'] as const)).map((outcome) => ({
              type: 'tool' as const,
              callId: p.call.callId,
              outcome,
            })),
          )
          break
        case 'job':
          out.push({ type: 'job-done' })
          break
        case 'wait':
          out.push({ type: 'backoff-elapsed' })
          break
        case 'summary':
          out.push(...(budget.answers?.summary ?? (['ok', 'fail'] as const)).map((outcome) => ({ type: 'summary' as const, outcome })))
          break
      }
    }
    // a parked wait (TL-18): the disposed instance only lets the calls that started before it finish
    if ((ctx as ApprovalView).toolBatch?.parked) return out
    // TL-18: a person answers the call that waits for approval, or the agent is disposed meanwhile
    const waiting = answerable(ctx)
    if (waiting !== null) out.push({ type: 'approval', callId: waiting, decision: 'approve' }, { type: 'approval', callId: waiting, decision: 'deny' })
    if (waiting !== null && budget.parks && c.maintenance < budget.maintenance && state.pending.length <= 1) out.push({ type: 'dispose' })
    // user actions: from idle, or while exactly one effect is pending
    if (state.pending.length <= 1) {
      const turnsLeft = ctx.turn < budget.turns || value === 'idle'
      if (c.sends < budget.sends && turnsLeft) {
        const next = `m${c.sends + 1}`
        out.push({ type: 'send', id: next, target: 'next-turn', wakeup: true })
        out.push({ type: 'send', id: next, target: 'next-step', wakeup: true })
        out.push({ type: 'send', id: next, target: 'next-step', wakeup: false })
      }
      if (c.cancels < budget.cancels && state.cancelOn === null) {
        out.push({ type: 'cancel', keepInbox: false }, { type: 'cancel', keepInbox: true })
        for (const cause of budget.causes ?? []) out.push({ type: 'cancel', keepInbox: false, cause })
        for (const trigger of budget.cancelTriggers) out.push({ type: 'cancel-on', trigger })
      }
      const pendingIds = [...ctx.nextTurn, ...ctx.nextStep].map((m: UserMessage) => m.id)
      if (c.removes < budget.removes && pendingIds.length > 0) {
        out.push({ type: 'remove', id: pendingIds[0] }, { type: 'replace', id: pendingIds[0], with: `r${c.removes + 1}` }, { type: 'clear' })
        out.push({ type: 'splice', target: ctx.nextTurn.length > 0 ? 'next-turn' : 'next-step', start: -1, deleteCount: 1, insert: [] })
        // IN-6: a duplicate of a pending id is refused, whichever mutation tries it
        out.push({ type: 'splice', target: 'next-step', start: 0, deleteCount: 0, insert: [pendingIds[0]] })
        if (pendingIds.length > 1) out.push({ type: 'replace', id: pendingIds[0], with: pendingIds[1] })
        if (c.sends < budget.sends) out.push({ type: 'send', id: pendingIds[0], target: 'next-turn', wakeup: false })
      }
      if (value === 'idle' && c.maintenance < budget.maintenance) {
        out.push({ type: 'maintenance' }, { type: 'dispose' })
        if (ctx.instance.compaction !== 'off') out.push({ type: 'compact' })
      }
      // requests the machine refuses (MT-1, CP-4, TL-18), counted as strays
      if (c.strays < budget.strays) {
        if (value !== 'idle') out.push({ type: 'maintenance' }, { type: 'compact' })
        else if (ctx.instance.compaction === 'off') out.push({ type: 'compact' })
        out.push({ type: 'approval', callId: STRAY_CALL, decision: 'approve' })
      }
      if (budget.facts && c.watches < budget.watches) out.push({ type: 'watch', observed: !ctx.facts.observed })
      if (c.fails < budget.fails && state.armed === null) {
        for (const eventType of budget.failTypes) {
          out.push({ type: 'fail-next', eventType })
        }
      }
    }
    return out
  }

  /** A coarse picture of the state: what guards read, not the ever-growing trace. */
  function abstract(state: HarnessState): string {
    const ctx = ctxOf(state)
    const cap = (n: number, max = 2) => Math.min(n, max)
    return JSON.stringify([
      (state.machine as { value: unknown }).value,
      state.done,
      state.pending
        .map((p) =>
          p.kind === 'hook'
            ? p.name
            : p.kind === 'model' && p.partial
              ? `model-partial:${p.partial.chunks.map((c) => ('text' in c && typeof c.text === 'string' && !/\S/.test(c.text) ? `${c.type}-blank` : c.type)).join()}`
              : p.kind,
        )
        .sort(),
      state.aborted,
      state.armed,
      ctx.activity.cancelCause !== null,
      ctx.activity.wakeLatched,
      ctx.activity.disposing,
      ctx.maxTokensSeen,
      ctx.lastStep,
      cap(ctx.nextTurn.length),
      cap(ctx.nextStep.length),
      cap(ctx.step, 3),
      cap(ctx.request.attempt),
      cap(ctx.turn - ((options.input.lastTurn as number | undefined) ?? 0), 3),
      ctx.stepOutcome,
      ctx.endReason?.kind ?? null,
      // CP-6: whether this step already met an overflow with a compaction
      overflowMet(ctx),
      [
        ctx.toolBatch.calls.length,
        ctx.toolBatch.nextStart,
        ctx.toolBatch.nextCommit,
        ctx.toolBatch.inFlight,
        ctx.toolBatch.pool,
        ctx.toolBatch.concluded,
        ctx.toolBatch.failure !== null,
        (ctx as ApprovalView).toolBatch?.approval != null,
        // walks that vary the answers tell a settled outcome's kind apart, so each meets every post-execute decision
        budget.answers
          ? ctx.toolBatch.outcomes
              .map((o) => (o ? `${o.isError ? 'e' : 'o'}${o.concludesTurn ? 'c' : ''}${o.additionalContexts?.length ? 'x' : ''}` : '-'))
              .join()
          : null,
      ],
      [
        state.counters.sends,
        state.counters.cancels,
        state.counters.removes,
        state.counters.fails,
        state.counters.maintenance,
        state.counters.watches,
        state.counters.strays,
        state.cancelOn,
        ctx.facts?.observed ?? true,
      ],
    ])
  }

  const initial = (): HarnessState => new Step(options, null).run()

  const logic = {
    config: { id: 'harness' },
    transition: (state: HarnessState, input: WalkInput) => apply(state, input) ?? state,
    getInitialSnapshot: () => initial(),
    getPersistedSnapshot: (state: HarnessState) => state,
  } as unknown as ActorLogic<HarnessState, WalkInput, unknown>

  return { logic, apply, complete, choices, abstract, initial }
}

/** The default answer to the oldest pending effect, or null when nothing is pending. */
function defaultAnswer(state: HarnessState, context: ApprovalView): WalkInput | null {
  const p = state.pending[0]
  // TL-18: with nothing else to wait for, the person approves the call that waits
  const waiting = answerable(context)
  if (!p && waiting !== null && !state.done) return { type: 'approval', callId: waiting, decision: 'approve' }
  if (!p) return null
  switch (p.kind) {
    case 'hook':
      switch (p.name) {
        case 'agent/pre-step':
          return { type: 'pre-step', decision: 'default' }
        case 'agent/request-error':
          return { type: 'request-error', decision: 'give-up' }
        case 'agent/turn-stopping':
          return { type: 'turn-stopping', decision: 'none' }
        case 'tools/pre-execute':
          return { type: 'tool-pre', callId: String(p.payload.callId), decision: 'allow' }
        default:
          return { type: 'tool-post', callId: String(p.payload.callId), decision: 'accept' }
      }
    case 'prepare':
      return { type: 'request', decision: 'default' }
    case 'model':
      return { type: 'model', response: 'text' }
    case 'tool':
      return { type: 'tool', callId: p.call.callId, outcome: 'ok' }
    case 'job':
      return { type: 'job-done' }
    case 'wait':
      return { type: 'backoff-elapsed' }
    case 'summary':
      return { type: 'summary', outcome: 'ok' }
  }
}

/** The tool outcome a scenario input stands for. */
export function toolOutcome(callId: string, outcome: 'ok' | 'error' | 'concludes' | 'context') {
  switch (outcome) {
    case 'ok':
      return { isError: false, content: `ok ${callId}` }
    case 'error':
      return { isError: true, content: `Error: ${SCRIPTED.toolFailure}` }
    case 'concludes':
      return { isError: false, content: `ok ${callId}`, concludesTurn: true }
    case 'context':
      return { isError: false, content: `ok ${callId}`, additionalContexts: [scenarioMessage(`ctx-${callId}`)] }
  }
}

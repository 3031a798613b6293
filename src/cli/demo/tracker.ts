// What the demo shows, as a stream of progress events: the session log as it
// grows, plus what the log does not hold (when an attempt starts waiting on
// the model, when a tool body settles, which lane a call ran in). Renderers
// (the live tree, the JSON lines) consume these; the tracker also keeps the
// run's totals for the summary.
import type { Agent, LlmFailure, SessionEvent, TokenUsage, ToolDefinition, ToolResultValue, TurnEndReason } from '../../index.js'
import { defineTool } from '../../index.js'

export type Lane = 'parallel' | 'exclusive'

/** One thing that happened, in the order it happened. */
export type Progress =
  | { readonly type: 'turn-start'; readonly turn: number }
  | { readonly type: 'user'; readonly turn: number; readonly step: number; readonly text: string; readonly role: 'prompt' | 'steer' | 'context' }
  | { readonly type: 'step-start'; readonly turn: number; readonly step: number }
  | { readonly type: 'attempt-start'; readonly turn: number; readonly step: number; readonly attempt: number }
  | { readonly type: 'delta'; readonly kind: 'text' | 'reasoning'; readonly text: string }
  | { readonly type: 'attempt-end'; readonly outcome: 'answered' | 'tools' | 'interrupted'; readonly chars: number; readonly usage?: TokenUsage }
  | { readonly type: 'attempt-failed'; readonly attempt: number; readonly failure: LlmFailure; readonly retry: boolean }
  | { readonly type: 'tool-start'; readonly call: ToolCallView }
  | { readonly type: 'tool-settled'; readonly call: ToolCallView }
  | { readonly type: 'tool-result'; readonly call: ToolCallView }
  | { readonly type: 'step-end'; readonly turn: number; readonly step: number }
  | { readonly type: 'turn-end'; readonly turn: number; readonly reason: TurnEndReason; readonly totals: Totals }
  | { readonly type: 'session-event'; readonly event: SessionEvent }

/** A tool call as the tree shows it. */
export interface ToolCallView {
  readonly callId: string
  readonly name: string
  /** The raw argument text the model sent. */
  readonly args: string
  readonly lane: Lane
  /** Milliseconds from the step's first call to this call's start. */
  readonly offsetMs: number
  /** Body time in milliseconds, once settled. */
  durationMs?: number
  isError?: boolean
  /** A short description of the result (`21 entries`, `2,134 chars`), once committed. */
  preview?: string
}

/** Counts over some span of the run (one turn, or the whole run). */
export interface Totals {
  turns: number
  steps: number
  requests: number
  retries: number
  toolCalls: number
  parallelCalls: number
  exclusiveCalls: number
  inputTokens: number
  outputTokens: number
  cacheReadTokens: number
  reasoningTokens: number
  /** Milliseconds. */
  wallMs: number
}

const zeroTotals = (): Totals => ({
  turns: 0,
  steps: 0,
  requests: 0,
  retries: 0,
  toolCalls: 0,
  parallelCalls: 0,
  exclusiveCalls: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  reasoningTokens: 0,
  wallMs: 0,
})

/** Gets told when a wrapped tool body starts and settles; the tracker implements it. */
export interface ToolProbe {
  bodyStarted(callId: string): void
  bodySettled(callId: string, isError: boolean): void
}

/**
 * Wrap tools so their bodies report start and settle times. Why: results are committed in
 * model order, so the log's tool/result time is not when a parallel call finished.
 */
export function instrumentTools(tools: readonly ToolDefinition<any>[], probe: ToolProbe): ToolDefinition<any>[] {
  return tools.map((tool: ToolDefinition) =>
    defineTool({
      name: tool.name,
      description: tool.description,
      input: tool.input,
      executionMode: tool.executionMode,
      async execute(args, context) {
        probe.bodyStarted(context.callId)
        let isError = true
        try {
          const result: string | ToolResultValue = await tool.execute(args, context)
          isError = typeof result === 'object' && result.isError === true
          return result
        } finally {
          probe.bodySettled(context.callId, isError)
        }
      },
    }),
  )
}

/** The lane the scheduler puts a call in, decided as it does: on the parsed arguments, parallel only on an exact 'parallel'. */
export function laneOf(tools: readonly ToolDefinition<any>[], name: string, rawArgs: string): Lane {
  const tool: ToolDefinition | undefined = tools.find((t) => t.name === name)
  if (!tool) return 'exclusive'
  try {
    const mode = typeof tool.executionMode === 'function' ? tool.executionMode(JSON.parse(rawArgs) as never) : tool.executionMode
    return mode === 'parallel' ? 'parallel' : 'exclusive'
  } catch {
    return 'exclusive'
  }
}

/** A few words on a committed result: from the demo tools' `meta`, else the first line of its text. */
export function previewResult(content: string, meta: unknown): string {
  const m = (meta ?? {}) as Record<string, unknown>
  const n = (v: unknown) => (typeof v === 'number' ? v.toLocaleString('en-US') : '?')
  if (typeof m.entries === 'number') return `${n(m.entries)} entr${m.entries === 1 ? 'y' : 'ies'}`
  if (typeof m.chars === 'number') return typeof m.shown === 'number' ? `first ${n(m.shown)} of ${n(m.chars)} chars` : `${n(m.chars)} chars`
  // a file cut before its end was read: its size is known in bytes
  if (typeof m.bytes === 'number' && typeof m.shown === 'number') return `first ${n(m.shown)} chars of ${n(m.bytes)} bytes`
  if (typeof m.lines === 'number' && typeof m.files === 'number') {
    const names = typeof m.names === 'number' && m.names > 0 ? `, ${n(m.names)} file name${m.names === 1 ? '' : 's'}` : ''
    return `${n(m.lines)} matching line${m.lines === 1 ? '' : 's'} in ${n(m.files)} file${m.files === 1 ? '' : 's'}${names}`
  }
  const first = content.split('\n', 1)[0]
  return first.length > 60 ? `${first.slice(0, 59)}…` : first
}

/**
 * Follows one agent and turns what it does into Progress events.
 * Why: the tree, the JSON lines and the summary all need the same facts, and some of
 * them (attempt start, tool body times, lanes) are not in the log.
 */
export class Tracker implements ToolProbe {
  readonly run: Totals = zeroTotals()
  #turn: Totals = zeroTotals()
  readonly #startedAt = Date.now()
  #turnStartedAt = 0
  #turnNumber = 0
  /** Attempts per `turn:step`. */
  readonly #attempts = new Map<string, number>()
  readonly #calls = new Map<string, ToolCallView & { startedAt: number }>()
  #stepFirstCall = 0
  #streamedChars = 0
  #disposers: Array<() => void> = []
  readonly #listeners = new Set<(p: Progress) => void>()

  constructor(private readonly tools: readonly ToolDefinition<any>[]) {}

  /** Hear every progress event; returns a disposer. */
  subscribe(listener: (p: Progress) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #emit(p: Progress): void {
    for (const listener of this.#listeners) listener(p)
  }

  /** Start following `agent` (its log from now on, its attempts and its recovery decisions). */
  attach(agent: Agent): void {
    const sub = agent.session.events$.subscribe((event) => this.#onEvent(event))
    this.#disposers.push(() => sub.unsubscribe())
    this.#disposers.push(
      agent.on('agent/request', (p, next) => {
        const key = `${p.turn}:${p.step}`
        const attempt = (this.#attempts.get(key) ?? 0) + 1
        this.#attempts.set(key, attempt)
        for (const t of [this.run, this.#turn]) {
          t.requests++
          if (attempt > 1) t.retries++
        }
        this.#streamedChars = 0
        this.#emit({ type: 'attempt-start', turn: p.turn, step: p.step, attempt })
        return next()
      }),
    )
    this.#disposers.push(
      agent.on('agent/request-error', async (p, next) => {
        const decision = await next()
        if (p.failure.code !== 'ABORTED') {
          const attempt = this.#attempts.get(`${p.turn}:${p.step}`) ?? 1
          this.#emit({ type: 'attempt-failed', attempt, failure: p.failure, retry: decision?.kind === 'retry' })
        }
        return decision
      }),
    )
  }

  /** Stop following the agent. */
  detach(): void {
    for (const dispose of this.#disposers.splice(0)) dispose()
  }

  /** The whole run so far, with its wall time. */
  totals(): Totals {
    return { ...this.run, wallMs: Date.now() - this.#startedAt }
  }

  bodyStarted(callId: string): void {
    const call = this.#calls.get(callId)
    if (call) call.startedAt = Date.now()
  }

  bodySettled(callId: string, isError: boolean): void {
    const call = this.#calls.get(callId)
    if (!call) return
    call.durationMs = Date.now() - call.startedAt
    call.isError = isError
    this.#emit({ type: 'tool-settled', call })
  }

  #onEvent(event: SessionEvent): void {
    this.#emit({ type: 'session-event', event })
    switch (event.type) {
      case 'turn/start':
        this.#turn = zeroTotals()
        this.#turnStartedAt = Date.now()
        this.#turnNumber = event.data.turn
        this.run.turns++
        this.#turn.turns++
        this.#emit({ type: 'turn-start', turn: event.data.turn })
        return
      case 'step/start':
        this.run.steps++
        this.#turn.steps++
        this.#stepFirstCall = 0
        this.#emit({ type: 'step-start', turn: event.data.turn, step: event.data.step })
        return
      case 'user/message': {
        const step = this.#turn.steps
        const text = event.data.content
          .map((b) => (b.type === 'text' ? b.text : `[${b.type}]`))
          .join(' ')
          .trim()
        // input entered before the turn's first request is its prompt; later input is steering
        const role = event.data.source.kind !== 'user' ? 'context' : this.#turn.requests === 0 ? 'prompt' : 'steer'
        this.#emit({ type: 'user', turn: this.#turnNumber, step, text, role })
        return
      }
      case 'assistant/chunk': {
        const chunk = event.data.chunk
        if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta') {
          this.#streamedChars += chunk.text.length
          this.#emit({ type: 'delta', kind: chunk.type === 'text-delta' ? 'text' : 'reasoning', text: chunk.text })
        }
        return
      }
      case 'assistant/message': {
        const usage = event.data.usage
        if (usage) {
          for (const t of [this.run, this.#turn]) {
            t.inputTokens += usage.inputTokens
            t.outputTokens += usage.outputTokens
            t.cacheReadTokens += usage.cacheReadTokens ?? 0
            t.reasoningTokens += usage.reasoningTokens ?? 0
          }
        }
        const calls = event.data.message.content.some((b) => b.type === 'tool-call')
        const outcome = event.data.interrupted ? 'interrupted' : calls ? 'tools' : 'answered'
        this.#emit({ type: 'attempt-end', outcome, chars: this.#streamedChars, ...(usage ? { usage } : {}) })
        return
      }
      case 'tool/call': {
        const now = Date.now()
        if (this.#stepFirstCall === 0) this.#stepFirstCall = now
        const lane = laneOf(this.tools, event.data.name, event.data.arguments)
        const call = { callId: event.data.callId, name: event.data.name, args: event.data.arguments, lane, offsetMs: now - this.#stepFirstCall, startedAt: now }
        this.#calls.set(call.callId, call)
        for (const t of [this.run, this.#turn]) {
          t.toolCalls++
          if (lane === 'parallel') t.parallelCalls++
          else t.exclusiveCalls++
        }
        this.#emit({ type: 'tool-start', call })
        return
      }
      case 'tool/result': {
        const callId = event.data.message.source.callId
        const block = event.data.message.content[0]
        const content = typeof block.content === 'string' ? block.content : JSON.stringify(block.content)
        const call = this.#calls.get(callId) ?? { callId, name: '?', args: '', lane: 'exclusive' as Lane, offsetMs: 0, startedAt: Date.now() }
        call.isError = block.isError === true
        call.durationMs ??= Date.now() - call.startedAt
        call.preview = block.isError ? content.split('\n', 1)[0] : previewResult(content, event.data.meta)
        this.#calls.delete(callId)
        this.#emit({ type: 'tool-result', call })
        return
      }
      case 'step/end':
        this.#emit({ type: 'step-end', turn: event.data.turn, step: event.data.step })
        return
      case 'turn/end':
        this.#turn.wallMs = Date.now() - this.#turnStartedAt
        this.#emit({ type: 'turn-end', turn: event.data.turn, reason: event.data.reason, totals: { ...this.#turn } })
        return
      default:
        return
    }
  }
}

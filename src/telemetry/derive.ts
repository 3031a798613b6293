// The span tree of a session log: one pure pass over committed events that says which span starts and ends
// when, under which parent, with which attributes. Live telemetry and exportSessionSpans both run it, so a
// stored or replayed log gives the same tree, with the same times, as the run that wrote it.
import type {
  AgentCancelCause,
  ContentBlock,
  FinishReason,
  LlmFailure,
  Message,
  RequestHeader,
  SessionEvent,
  TokenUsage,
  TurnEndReason,
} from '../session/schemas.js'

export type SpanAttributeValue = string | number | boolean | string[]
export type SpanAttributes = Record<string, SpanAttributeValue>

/** One instruction to a tracer, with the time the log gives it (epoch ms). Span ids are ours, stable per log. */
export type SpanOp =
  | { op: 'start'; id: string; parent: string | null; name: string; kind: 'internal' | 'client'; time: number; attributes: SpanAttributes }
  | { op: 'event'; id: string; name: string; time: number; attributes: SpanAttributes }
  | { op: 'end'; id: string; time: number; attributes: SpanAttributes; error?: { type: string; message?: string } }

export interface DeriveOptions {
  /** The session id, recorded as `gen_ai.conversation.id` (the events themselves do not carry it). */
  sessionId?: string
  /** Record message content (inputs, outputs, tool arguments and results); off by default. */
  captureContent?: boolean
}

type StartOp = Extract<SpanOp, { op: 'start' }>

interface Usage {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  reasoning: number
}

interface Attempt {
  id: string
  /** First chunk other than usage/finish: the time to the first chunk. */
  firstChunk: number | null
  usage: TokenUsage | null
  blocks: ContentBlock[]
}

interface Step {
  id: string
  turn: number
  step: number
  attempts: number
  attempt: Attempt | null
  /** The retry number the next attempt runs as (from llm/retry-started), if a logged retry precedes it. */
  retry: number | null
  backoff: string | null
}

/** Our finish kinds in the GenAI conventions' words (`length` is the conventions' name for a hit output cap). */
const FINISH_REASONS: Record<FinishReason['kind'], string> = {
  stop: 'stop',
  'tool-calls': 'tool_calls',
  'max-tokens': 'length',
  aborted: 'aborted',
  error: 'error',
}

// the machine state each span stands for, as a path of the agent machine's states (docs/lifecycle.md)
const STATE = {
  turn: 'running.turn',
  step: 'running.turn.step',
  attempt: 'running.turn.step.attempt',
  backoff: 'running.turn.step.attempt.backoff',
  tool: 'running.turn.step.toolBatch',
  compactionInTurn: 'running.turn.compacting',
  compactionInAttempt: 'running.turn.step.attempt.compacting',
  compactionIdle: 'compacting',
} as const

/**
 * Turns committed events, one at a time and in seq order, into span operations. Every time is an event's
 * `time`: a span starts at the last event logged before the work it stands for and ends at the event that
 * closes it, so parallel tool calls overlap and exclusive ones do not, exactly as the log has them.
 */
export class SpanDeriver {
  readonly #options: DeriveOptions
  readonly #open = new Map<string, StartOp>()
  #turn: { id: string; turn: number; usage: Usage } | null = null
  #step: Step | null = null
  readonly #tools = new Map<string, string>()
  readonly #callNames = new Map<string, string>()
  #route: { provider: string; model: string } | null = null
  #header: RequestHeader | null = null
  /** The time of the last event that was not streamed output: where the next piece of work begins. */
  #mark = 0
  #last = 0
  /** The model-visible history, kept only when content is captured (the input of each request). */
  #surface: { seq: number; message: Message }[] | null

  constructor(options: DeriveOptions = {}) {
    this.#options = options
    this.#surface = options.captureContent === true ? [] : null
  }

  /**
   * Reads events whose spans someone else wrote (a seed, a fork's inherited history) for state only, and returns the
   * start operations of the spans they leave open, parents first: what a resumed agent has to reopen.
   */
  replay(events: readonly SessionEvent[]): SpanOp[] {
    for (const event of events) this.push(event)
    return [...this.#open.values()]
  }

  /** The time of the last event pushed (the end given to spans a log leaves open). */
  get lastTime(): number {
    return this.#last
  }

  push(event: SessionEvent): SpanOp[] {
    if ((event as { ignorable?: true }).ignorable || event.type === 'session/end-seed') return []
    const out: SpanOp[] = []
    const time = event.time
    this.#last = time
    switch (event.type) {
      case 'turn/start':
        if (this.#turn) this.#closeTurn(out, time, null)
        this.#turn = { id: `turn:${event.data.turn}`, turn: event.data.turn, usage: emptyUsage() }
        this.#start(out, this.#turn.id, null, 'invoke_agent', 'internal', time, {
          'gen_ai.operation.name': 'invoke_agent',
          ...this.#conversation(),
          ...this.#routeAttributes(),
          'agentchart.turn': event.data.turn,
          'agentchart.state': STATE.turn,
        })
        this.#mark = time
        break
      case 'step/start': {
        if (this.#step) this.#closeStep(out, time)
        const { turn, step } = event.data
        this.#step = { id: `step:${turn}.${step}`, turn, step, attempts: 0, attempt: null, retry: null, backoff: null }
        this.#start(out, this.#step.id, this.#turn?.id ?? null, 'step', 'internal', time, {
          'agentchart.turn': turn,
          'agentchart.step': step,
          'agentchart.state': STATE.step,
        })
        this.#mark = time
        break
      }
      case 'user/message':
        this.#apply(event)
        // a compaction summary replaces history when the compaction ends: the compaction, not new work, begins here
        if (event.surfaceOp === 'append') this.#mark = time
        break
      case 'request/header':
        this.#header = event.data.header
        this.#mark = time
        break
      case 'request/context':
        this.#route = { provider: event.data.provider, model: event.data.model }
        this.#mark = time
        break
      case 'assistant/chunk': {
        const attempt = this.#attempt(out)
        const { chunk } = event.data
        if (attempt === null) break
        if (chunk.type === 'usage') attempt.usage = chunk.usage
        else if (chunk.type === 'finish') {
          this.#endAttempt(out, time, chunk.reason)
          this.#mark = time
        } else {
          attempt.firstChunk ??= time
          if (chunk.type === 'block-end') {
            attempt.blocks.push(chunk.block)
            if (chunk.block.type === 'tool-call') this.#callNames.set(chunk.block.id, chunk.block.name)
          }
        }
        break
      }
      case 'assistant/message': {
        for (const block of event.data.message.content) if (block.type === 'tool-call') this.#callNames.set(block.id, block.name)
        // a stream cut short ends without a finish chunk: its attempt ends with the prefix the log keeps
        if (this.#step?.attempt || (this.#step && this.#step.attempts === 0)) {
          const attempt = this.#attempt(out)
          if (attempt) {
            if (event.data.usage && !attempt.usage) attempt.usage = event.data.usage
            if (attempt.blocks.length === 0) attempt.blocks.push(...event.data.message.content)
            this.#endAttempt(out, time, null, event.data.interrupted === true)
          }
        }
        this.#apply(event)
        this.#mark = time
        break
      }
      case 'llm/retry': {
        const step = this.#step
        if (step?.attempt) this.#endAttempt(out, time, { kind: 'error', failure: event.data.failure })
        if (step) {
          step.backoff = `backoff:${event.data.retryId}`
          this.#start(out, step.backoff, step.id, 'backoff', 'internal', time, {
            'agentchart.retry': event.data.retry,
            'agentchart.retry.delay_ms': event.data.delayMs,
            'agentchart.retry.failure': event.data.failure.code,
            'agentchart.state': STATE.backoff,
          })
        }
        this.#mark = time
        break
      }
      case 'llm/retry-started': {
        const step = this.#step
        if (step?.backoff) {
          this.#end(out, step.backoff, time, {})
          step.backoff = null
        }
        if (step) step.retry = event.data.retry
        this.#mark = time
        break
      }
      case 'tool/call': {
        const step = this.#step
        if (step?.attempt) this.#endAttempt(out, time, null)
        this.#callNames.set(event.data.callId, event.data.name)
        this.#startTool(out, event.data.callId, event.data.name, time, event.data.arguments)
        this.#mark = time
        break
      }
      case 'tool/result': {
        const callId = event.data.message.source.callId
        // a call refused before it ran (denied, cancelled before dispatch) has a result and no tool/call
        if (!this.#tools.has(callId)) this.#startTool(out, callId, this.#callNames.get(callId) ?? 'unknown', time, undefined)
        const id = this.#tools.get(callId)!
        this.#tools.delete(callId)
        const block = event.data.message.content[0]
        const attributes: SpanAttributes = {}
        if (this.#options.captureContent)
          attributes['gen_ai.tool.call.result'] = typeof block.content === 'string' ? block.content : JSON.stringify(block.content)
        const error = block.isError ? { type: event.data.error?.code ?? '_OTHER' } : undefined
        this.#end(out, id, time, attributes, error)
        this.#apply(event)
        this.#mark = time
        break
      }
      case 'tool/approval-request':
      case 'tool/approval-answer': {
        // the call is logged before its question: the wait shows on the call's own span
        const target = this.#tools.get(event.data.callId) ?? this.#step?.id
        if (target !== undefined) {
          const attributes: SpanAttributes = { 'gen_ai.tool.call.id': event.data.callId }
          if (event.type === 'tool/approval-request') attributes['gen_ai.tool.name'] = event.data.name
          else attributes['agentchart.approval.decision'] = event.data.decision
          const reason = event.data.reason
          if (this.#options.captureContent && reason !== undefined) attributes['agentchart.approval.reason'] = reason
          out.push({
            op: 'event',
            id: target,
            name: event.type === 'tool/approval-request' ? 'agentchart.approval.requested' : 'agentchart.approval.answered',
            time,
            attributes,
          })
        }
        this.#mark = time
        break
      }
      case 'step/end':
        if (this.#step) this.#closeStep(out, time)
        this.#mark = time
        break
      case 'turn/end':
        this.#closeTurn(out, time, event.data.reason)
        this.#mark = time
        break
      case 'compaction/completed':
      case 'compaction/failed':
        this.#compaction(out, event)
        this.#mark = time
        break
      case 'agent/inbox/spliced':
        this.#mark = time
        break
      default:
        break
    }
    return out
  }

  /** Ends every span still open at `time` (a log that stops mid-turn), marked incomplete. */
  finish(time: number = this.#last): SpanOp[] {
    const out: SpanOp[] = []
    for (const id of [...this.#open.keys()].reverse()) this.#end(out, id, time, { 'agentchart.incomplete': true })
    this.#turn = null
    this.#step = null
    this.#tools.clear()
    return out
  }

  // ---- spans -----------------------------------------------------------------

  #start(out: SpanOp[], id: string, parent: string | null, name: string, kind: 'internal' | 'client', time: number, attributes: SpanAttributes): void {
    const op: StartOp = { op: 'start', id, parent, name, kind, time, attributes }
    this.#open.set(id, op)
    out.push(op)
  }

  #end(out: SpanOp[], id: string, time: number, attributes: SpanAttributes, error?: { type: string; message?: string }): void {
    if (!this.#open.delete(id)) return
    out.push({ op: 'end', id, time, attributes, ...(error ? { error } : {}) })
  }

  /** The step's running attempt, opened at the mark when the log first shows its response. */
  #attempt(out: SpanOp[]): Attempt | null {
    const step = this.#step
    if (!step) return null
    if (step.attempt) return step.attempt
    step.attempts++
    const model = this.#route?.model ?? this.#header?.config.model ?? 'unknown'
    const id = `attempt:${step.turn}.${step.step}.${step.attempts}`
    const retry = step.retry ?? (step.attempts > 1 ? step.attempts - 1 : null)
    step.retry = null
    const attributes: SpanAttributes = {
      'gen_ai.operation.name': 'chat',
      ...this.#routeAttributes(),
      ...this.#conversation(),
      ...this.#requestAttributes(),
      'agentchart.turn': step.turn,
      'agentchart.step': step.step,
      'agentchart.attempt': step.attempts,
      ...(retry !== null ? { 'agentchart.retry': retry } : {}),
      'agentchart.state': STATE.attempt,
    }
    if (this.#surface) attributes['gen_ai.input.messages'] = JSON.stringify(this.#surface.map((node) => semconvMessage(node.message)))
    if (this.#surface && this.#header?.system !== undefined)
      attributes['gen_ai.system_instructions'] = JSON.stringify([{ type: 'text', content: this.#header.system }])
    this.#start(out, id, step.id, `chat ${model}`, 'client', this.#mark, attributes)
    step.attempt = { id, firstChunk: null, usage: null, blocks: [] }
    return step.attempt
  }

  #endAttempt(out: SpanOp[], time: number, reason: FinishReason | null, interrupted = false): void {
    const step = this.#step
    const attempt = step?.attempt
    if (!step || !attempt) return
    step.attempt = null
    const start = this.#open.get(attempt.id)?.time ?? time
    const attributes: SpanAttributes = {}
    if (reason) attributes['gen_ai.response.finish_reasons'] = [FINISH_REASONS[reason.kind]]
    if (interrupted) attributes['agentchart.interrupted'] = true
    if (attempt.firstChunk !== null) attributes['gen_ai.response.time_to_first_chunk'] = (attempt.firstChunk - start) / 1000
    if (attempt.usage) {
      Object.assign(attributes, usageAttributes(attempt.usage))
      if (this.#turn) addUsage(this.#turn.usage, attempt.usage)
    }
    if (this.#options.captureContent) {
      const output = { role: 'assistant', parts: attempt.blocks.map(semconvPart), ...(reason ? { finish_reason: FINISH_REASONS[reason.kind] } : {}) }
      attributes['gen_ai.output.messages'] = JSON.stringify([output])
    }
    const failure = reason?.kind === 'error' ? reason.failure : undefined
    this.#end(out, attempt.id, time, attributes, failure ? failureError(failure) : undefined)
  }

  #startTool(out: SpanOp[], callId: string, name: string, time: number, args: string | undefined): void {
    const step = this.#step
    const id = toolSpanId(callId)
    this.#tools.set(callId, id)
    const attributes: SpanAttributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': name,
      'gen_ai.tool.call.id': callId,
      'gen_ai.tool.type': 'function',
      ...this.#conversation(),
      ...(step ? { 'agentchart.turn': step.turn, 'agentchart.step': step.step } : {}),
      'agentchart.state': STATE.tool,
    }
    if (this.#options.captureContent && args !== undefined) attributes['gen_ai.tool.call.arguments'] = args
    this.#start(out, id, step?.id ?? this.#turn?.id ?? null, `execute_tool ${name}`, 'internal', time, attributes)
  }

  #closeStep(out: SpanOp[], time: number): void {
    const step = this.#step!
    if (step.attempt) this.#endAttempt(out, time, null)
    // a backoff a cancel ended: no retry started
    if (step.backoff) this.#end(out, step.backoff, time, { 'agentchart.retry.cancelled': true })
    for (const [callId, id] of this.#tools) {
      this.#end(out, id, time, { 'agentchart.incomplete': true })
      this.#tools.delete(callId)
    }
    this.#end(out, step.id, time, {})
    this.#step = null
  }

  #closeTurn(out: SpanOp[], time: number, reason: TurnEndReason | null): void {
    if (this.#step) this.#closeStep(out, time)
    const turn = this.#turn
    if (!turn) return
    this.#turn = null
    const attributes: SpanAttributes = { ...this.#routeAttributes() }
    if (turn.usage.input + turn.usage.output > 0) Object.assign(attributes, totalsAttributes(turn.usage))
    let error: { type: string; message?: string } | undefined
    if (reason === null) attributes['agentchart.incomplete'] = true
    else {
      attributes['agentchart.turn.end_reason'] = reason.kind
      if (reason.kind === 'error') error = failureError(reason.error)
      if (reason.kind === 'max-steps') attributes['agentchart.turn.max_steps'] = reason.limit
      if (reason.kind === 'aborted') Object.assign(attributes, causeAttributes(reason.reason))
    }
    this.#end(out, turn.id, time, attributes, error)
  }

  #compaction(out: SpanOp[], event: Extract<SessionEvent, { type: 'compaction/completed' | 'compaction/failed' }>): void {
    const { data, time } = event
    const step = this.#step
    const parent = step?.id ?? this.#turn?.id ?? null
    const state = step ? STATE.compactionInAttempt : this.#turn ? STATE.compactionInTurn : STATE.compactionIdle
    // inside a turn the compaction began at the last logged event; from idle (agent.compact()) the log holds only its end
    const start = parent === null ? time : this.#mark
    const id = `compaction:${data.compactionId}`
    this.#start(out, id, parent, 'compaction', 'internal', start, {
      'agentchart.compaction.reason': data.reason,
      ...this.#conversation(),
      'agentchart.state': state,
    })
    const attributes: SpanAttributes = {}
    if (event.type === 'compaction/completed') {
      const done = event.data
      attributes['agentchart.compaction.tokens_before'] = done.tokensBefore
      attributes['agentchart.compaction.tokens_after'] = done.tokensAfter
      attributes['agentchart.compaction.context_window'] = done.contextWindow
      if (done.usage) Object.assign(attributes, usageAttributes(done.usage))
      this.#end(out, id, time, attributes)
    } else {
      this.#end(out, id, time, attributes, failureError(event.data.failure))
    }
  }

  // ---- attributes ------------------------------------------------------------

  #conversation(): SpanAttributes {
    return this.#options.sessionId !== undefined ? { 'gen_ai.conversation.id': this.#options.sessionId } : {}
  }

  #routeAttributes(): SpanAttributes {
    const provider = this.#route?.provider ?? this.#header?.config.provider
    const model = this.#route?.model ?? this.#header?.config.model
    return {
      ...(provider !== undefined ? { 'gen_ai.provider.name': provider } : {}),
      ...(model !== undefined ? { 'gen_ai.request.model': model } : {}),
    }
  }

  /** The request settings the conventions name; provider options stay out (they are the provider's own fields). */
  #requestAttributes(): SpanAttributes {
    const config = this.#header?.config
    if (!config) return {}
    const out: SpanAttributes = {}
    if (config.maxTokens !== undefined) out['gen_ai.request.max_tokens'] = config.maxTokens
    if (config.temperature !== undefined) out['gen_ai.request.temperature'] = config.temperature
    if (config.stop !== undefined) out['gen_ai.request.stop_sequences'] = config.stop
    if (config.responseFormat !== undefined) out['gen_ai.output.type'] = config.responseFormat.type
    if (config.reasoningEffort !== undefined) out['agentchart.request.reasoning_effort'] = config.reasoningEffort
    return out
  }

  #apply(event: SessionEvent): void {
    const surface = this.#surface
    if (!surface || event.surfaceOp === undefined) return
    const message = event.type === 'user/message' ? event.data : (event.data as { message: Message }).message
    if (event.surfaceOp === 'append') {
      if (message.role !== 'assistant' || message.content.length > 0) surface.push({ seq: event.seq, message })
      return
    }
    const { start, end } = event.surfaceOp
    const from = surface.findIndex((node) => node.seq >= start)
    const to = surface.findLastIndex((node) => node.seq <= end)
    if (from < 0 || to < from) surface.push({ seq: event.seq, message })
    else surface.splice(from, to - from + 1, { seq: event.seq, message })
  }
}

/**
 * Every span operation of one log, in order; spans the log leaves open end at its last event. The first `inherited`
 * events (a fork's copy of its parent's history) are read for state only: their spans are the parent's.
 */
export function deriveSpans(events: readonly SessionEvent[], options: DeriveOptions = {}, inherited = 0): SpanOp[] {
  const deriver = new SpanDeriver(options)
  const out = deriver.replay(events.slice(0, inherited))
  for (const event of events.slice(inherited)) out.push(...deriver.push(event))
  return [...out, ...deriver.finish()]
}

// ---- helpers -------------------------------------------------------------------

const emptyUsage = (): Usage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 })

function addUsage(total: Usage, usage: TokenUsage): void {
  total.input += usage.inputTokens
  total.output += usage.outputTokens
  total.cacheRead += usage.cacheReadTokens ?? 0
  total.cacheWrite += usage.cacheWriteTokens ?? 0
  total.reasoning += usage.reasoningTokens ?? 0
}

function usageAttributes(usage: TokenUsage): SpanAttributes {
  const out: SpanAttributes = { 'gen_ai.usage.input_tokens': usage.inputTokens, 'gen_ai.usage.output_tokens': usage.outputTokens }
  if (usage.cacheReadTokens !== undefined) out['gen_ai.usage.cache_read.input_tokens'] = usage.cacheReadTokens
  if (usage.cacheWriteTokens !== undefined) out['gen_ai.usage.cache_creation.input_tokens'] = usage.cacheWriteTokens
  if (usage.reasoningTokens !== undefined) out['gen_ai.usage.reasoning.output_tokens'] = usage.reasoningTokens
  return out
}

function totalsAttributes(usage: Usage): SpanAttributes {
  const out: SpanAttributes = { 'gen_ai.usage.input_tokens': usage.input, 'gen_ai.usage.output_tokens': usage.output }
  if (usage.cacheRead > 0) out['gen_ai.usage.cache_read.input_tokens'] = usage.cacheRead
  if (usage.cacheWrite > 0) out['gen_ai.usage.cache_creation.input_tokens'] = usage.cacheWrite
  if (usage.reasoning > 0) out['gen_ai.usage.reasoning.output_tokens'] = usage.reasoning
  return out
}

/** The id of tool call `callId`'s span (a call id is open at most once at a time). */
export const toolSpanId = (callId: string): string => `tool:${callId}`

export function causeAttributes(cause: AgentCancelCause | { kind: 'legacy' }): SpanAttributes {
  return { 'agentchart.cancel.cause': cause.kind, ...(cause.kind === 'hook' ? { 'agentchart.cancel.reason': cause.reason } : {}) }
}

/** error.type is our failure code; the message is the provider's diagnostic, never request content. */
function failureError(failure: LlmFailure): { type: string; message: string } {
  return { type: failure.code, message: failure.message }
}

/** A message in the conventions' JSON shape (role and parts). */
function semconvMessage(message: Message): { role: string; parts: unknown[] } {
  const role = message.role === 'assistant' ? 'assistant' : message.content.some((b) => b.type === 'tool-result') ? 'tool' : 'user'
  return { role, parts: message.content.map(semconvPart) }
}

function semconvPart(block: ContentBlock): unknown {
  switch (block.type) {
    case 'text':
      return { type: 'text', content: block.text }
    case 'reasoning':
      return { type: 'reasoning', content: block.text }
    case 'image':
      // the bytes stay out: a span attribute is no place for an image
      return block.attachment.url !== undefined
        ? { type: 'uri', modality: 'image', mime_type: block.attachment.mediaType, uri: block.attachment.url }
        : { type: 'blob', modality: 'image', mime_type: block.attachment.mediaType }
    case 'tool-call':
      return { type: 'tool_call', id: block.id, name: block.name, arguments: parsedOr(block.arguments) }
    case 'tool-result':
      return { type: 'tool_call_response', id: block.toolCallId, response: block.content }
  }
}

function parsedOr(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

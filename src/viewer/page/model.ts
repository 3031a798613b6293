// The session as the timeline draws it, built one event at a time: turns,
// their steps, the attempts (model requests, retries included) inside each
// step with their streaming spans, tool calls on lanes grouped by overlap,
// inbox arrivals with where each was claimed and entered, cancels and errors.
// Pure data, no DOM: each event costs O(1) amortised, so a 10,000-event log
// loads in one pass and live events extend it in place. Logs come from
// outside, so every field is read defensively.
import type { ArrivalNote, CancelNote, WireEvent } from './protocol.js'

export interface Span {
  /** Unique per item, for selection and DOM keys. */
  readonly uid: number
  /** First and last seq the item covers; `end` is null while it is open. */
  start: number
  end: number | null
}

export type TurnReason = { kind: string; reason?: { kind?: string; reason?: string }; error?: { code?: string; message?: string } }

export interface TurnSpan extends Span {
  readonly kind: 'turn'
  readonly turn: number
  reason: TurnReason | null
  readonly steps: StepSpan[]
}

export interface StepSpan extends Span {
  readonly kind: 'step'
  readonly turn: number
  readonly step: number
  readonly attempts: AttemptSpan[]
}

/** One model request: `ok` ended with its anchor, `failed` with a failure finish, `interrupted` by a cancel with a visible prefix, `cut` by the step ending. */
export type AttemptOutcome = 'open' | 'ok' | 'failed' | 'interrupted' | 'cut'

export interface AttemptSpan extends Span {
  readonly kind: 'attempt'
  readonly turn: number
  readonly step: number
  /** 1 for the first request of the step, 2 for its first retry, ... */
  readonly index: number
  streamStart: number | null
  streamEnd: number | null
  chunks: number
  outcome: AttemptOutcome
  failure: { code: string; message: string } | null
}

export interface ToolGroup {
  readonly id: number
  start: number
  end: number | null
  readonly calls: ToolSpan[]
  /** Calls of the group still running. */
  open: number
}

export interface ToolSpan extends Span {
  readonly kind: 'tool'
  readonly callId: string
  readonly name: string
  readonly turn: number
  readonly step: number
  readonly lane: number
  readonly group: ToolGroup
  /** The error code of its result (`error` when the result is an error without one). */
  error: string | null
  /** A pair recorded for a call that never started (cancelled before dispatch). */
  synthetic: boolean
}

export interface Arrival extends Span {
  readonly kind: 'arrival'
  readonly messageId: string
  readonly target: 'next-turn' | 'next-step'
  /** Whether the send woke the agent, as the log recorded it (steer true, inject false); null when the log does not say. */
  readonly wakeup: boolean | null
  /** The message's source kind (`user`, `plugin`, `tool`). */
  readonly source: string
  readonly text: string
  claimedAt: number | null
  /** The turn that claimed it. */
  claimedBy: number | null
  enteredAt: number | null
  discardedAt: number | null
}

/** Why the agent is waiting, in the words a person uses: a person's answer, a retry's backoff, a maintenance job… */
export type WaitKind = 'approval' | 'backoff' | 'maintenance' | 'recovering'

/** A stretch of the session spent waiting: from the log (approvals, backoffs) or, live, from the machine's state. */
export interface WaitSpan extends Span {
  readonly kind: 'wait'
  readonly wait: WaitKind
  /** What it reads as on the timeline: `waiting for approval of deploy`, `backing off 2 s before retry 2`. */
  readonly label: string
  /** The question asked, the failure retried… */
  readonly detail: string
  /** How it ended: `approved`, `denied: …`, `cancelled`, `retried`; null while waiting. */
  outcome: string | null
  /** The call it holds (approvals). */
  readonly callId: string | null
}

/** A child agent an agentTool call started: its session, and what the parent's result says of it. */
export interface SubagentLink {
  readonly callId: string
  readonly sessionId: string
  /** The tool that delegated, from its call. */
  readonly tool: string
  /** From the call's result `meta.subagent` once the call ended. */
  end: string | null
  steps: number | null
  tokens: number | null
}

/** Token totals, counted as `agent.usage` and `TurnResult.usage` count them, the children's share apart. */
export interface UsageSummary {
  inputTokens: number
  outputTokens: number
  totalTokens: number
  /** Tokens the subagents spent (from their calls' results), included in the totals above. */
  subagentTokens: number
  subagents: number
}

export interface Marker {
  readonly uid: number
  readonly kind: 'marker'
  readonly seq: number
  readonly type: 'cancel' | 'cancel-request' | 'error'
  readonly label: string
}

export type Item = TurnSpan | StepSpan | AttemptSpan | ToolSpan | Arrival | WaitSpan | Marker

/** How an inbox item came in: next-turn is a followup; next-step is a steer (woke the agent) or an inject (did not), when the live agent said so. */
export type Via = 'followup' | 'steer' | 'inject' | 'context' | 'next-step'

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null
const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback)
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** The text of a message's content blocks, for labels. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((b: unknown) => {
      if (!isObject(b)) return ''
      if (typeof b.text === 'string') return b.text
      if (b.type === 'tool-call') return `${str(b.name)}(${str(b.arguments)})`
      if (b.type === 'tool-result') return textOf(b.content)
      return `[${str(b.type, 'block')}]`
    })
    .join(' ')
}

/** A delay as people say it: `300 ms`, `2 s`, `1.5 s`, `2 min`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`
  return `${Number((ms / 60_000).toFixed(1))} min`
}

/** A cancel cause as people say it: `user`, `hook: too slow`, `disposed`. */
export function causeLabel(cause: unknown): string {
  if (!isObject(cause)) return 'unknown'
  const kind = str(cause.kind, 'unknown')
  return typeof cause.reason === 'string' ? `${kind}: ${cause.reason}` : kind
}

export class SessionModel {
  readonly events: WireEvent[] = []
  /** Configuration id per seq, when the live agent sent them. */
  readonly eventConfigs: number[] = []
  readonly turns: TurnSpan[] = []
  readonly steps: StepSpan[] = []
  readonly attempts: AttemptSpan[] = []
  readonly tools: ToolSpan[] = []
  readonly groups: ToolGroup[] = []
  readonly arrivals: Arrival[] = []
  readonly markers: Marker[] = []
  readonly waits: WaitSpan[] = []
  /** Children started by this session's calls, in call order (from the log, or as the live server names them). */
  readonly subagents: SubagentLink[] = []
  /** The parent session and call, when this session is a subagent's (from its first prompt's source). */
  parent: { sessionId: string; callId: string; tool: string } | null = null
  readonly usage: UsageSummary = { inputTokens: 0, outputTokens: 0, totalTokens: 0, subagentTokens: 0, subagents: 0 }
  /** Count of events per type, in first-seen order. */
  readonly typeCounts = new Map<string, number>()
  /** The most specific item each event belongs to (seq → uid), for linking the log to the timeline. */
  readonly owner: number[] = []
  readonly items = new Map<number, Item>()
  /** Tool lanes in use: the most lanes ever open at once. */
  lanes = 0
  /** How inbox items came in, from the live agent (message id → woke the agent). */
  readonly wakeups = new Map<string, boolean>()
  /** Bumped on every change, so views know when to redraw. */
  version = 0

  #uid = 0
  #turn: TurnSpan | null = null
  #step: StepSpan | null = null
  #attempt: AttemptSpan | null = null
  readonly #openTools = new Map<string, ToolSpan>()
  readonly #laneUse: Array<ToolSpan | null> = []
  #group: ToolGroup | null = null
  readonly #pending = { 'next-turn': [] as Arrival[], 'next-step': [] as Arrival[] }
  readonly #byMessage = new Map<string, Arrival>()
  readonly #openWaits = new Map<string, WaitSpan>()
  #liveWait: WaitSpan | null = null
  readonly #toolNames = new Map<string, string>()
  #pendingUsage: Record<string, unknown> | null = null
  #usageFinished = false

  /** Add events; ones already seen (a resumed connection) are skipped, and a gap stops the batch. */
  append(events: readonly WireEvent[], configs?: readonly number[]): void {
    events.forEach((event, i) => {
      if (!isObject(event) || event.seq !== this.events.length) return
      this.events.push(event)
      if (configs && typeof configs[i] === 'number') this.eventConfigs[event.seq] = configs[i]
      this.typeCounts.set(event.type, (this.typeCounts.get(event.type) ?? 0) + 1)
      this.owner.push(this.#apply(event))
    })
    this.version++
  }

  /** Add what the live agent said about arrivals and cancel requests. */
  note(arrivals: readonly ArrivalNote[], cancels: readonly CancelNote[]): void {
    for (const a of arrivals) if (isObject(a) && typeof a.messageId === 'string') this.wakeups.set(a.messageId, a.wakeup === true)
    for (const c of cancels) {
      if (!isObject(c) || num(c.seq) === null) continue
      this.#marker(c.seq, 'cancel-request', `cancel requested (${causeLabel(c.cause)})`)
    }
    this.version++
  }

  /** How an arrival came in. */
  viaOf(arrival: Arrival): Via {
    if (arrival.target === 'next-turn') return 'followup'
    const woke = arrival.wakeup ?? this.wakeups.get(arrival.messageId)
    if (woke === true) return 'steer'
    if (woke === false) return 'inject'
    return arrival.source === 'tool' || arrival.source === 'plugin' ? 'context' : 'next-step'
  }

  /** The tool a call id names, once its tool/call was seen. */
  toolName(callId: string): string | undefined {
    return this.#toolNames.get(callId)
  }

  /** The subagent a call started, if any. */
  subagentOf(callId: string): SubagentLink | undefined {
    return this.subagents.find((s) => s.callId === callId)
  }

  /** A child the live server says a call started (before the call's result names it). */
  link(callId: string, sessionId: string, tool?: string): SubagentLink {
    let link = this.subagentOf(callId)
    if (!link) {
      link = { callId, sessionId, tool: tool ?? this.#toolNames.get(callId) ?? '?', end: null, steps: null, tokens: null }
      this.subagents.push(link)
      this.version++
    }
    return link
  }

  /**
   * What the live machine is waiting on that the log does not record (a maintenance job, the request-error
   * listener deciding on a retry), from its active leaves (as of event `seq`, or now); a wait the log records is left to the log.
   */
  liveState(leaves: readonly string[], seq?: number): void {
    const key = (leaf: string) => leaf.split('.').at(-1)
    const kind: WaitKind | null = leaves.some((l) => l === 'maintenance') ? 'maintenance' : leaves.some((l) => key(l) === 'recovering') ? 'recovering' : null
    const open = this.#liveWait
    if (open && open.wait === kind) return
    // from an event's configuration the change is placed between that event and the one before; from the current state, at the end
    const at = seq ?? this.last
    if (open) {
      open.end = Math.max(open.start, at)
      open.outcome = 'done'
      this.#liveWait = null
    }
    if (kind) {
      const label = kind === 'maintenance' ? 'running a maintenance job' : 'deciding whether to retry (request-error listener)'
      const detail =
        kind === 'maintenance' ? 'agent.runMaintenance: no turn starts until the job settles' : 'the agent/request-error listener has not answered yet'
      this.#liveWait = this.#wait(Math.max(0, seq === undefined ? this.last : seq - 1), kind, label, detail, null)
    }
    this.version++
  }

  /** The wait still open at the end of the session, newest first: what the agent is waiting on now. */
  get waiting(): WaitSpan | null {
    for (let i = this.waits.length - 1; i >= 0; i--) if (this.waits[i].end === null) return this.waits[i]
    return null
  }

  /** The last seq the log has (-1 when empty). */
  get last(): number {
    return this.events.length - 1
  }

  #next(): number {
    return ++this.#uid
  }

  #add<T extends Item>(item: T): T {
    this.items.set(item.uid, item)
    return item
  }

  #marker(seq: number, type: Marker['type'], label: string): Marker {
    const marker = this.#add<Marker>({ uid: this.#next(), kind: 'marker', seq, type, label })
    // markers stay sorted by seq (cancel requests can be noted after later events arrived)
    let at = this.markers.length
    while (at > 0 && this.markers[at - 1].seq > seq) at--
    this.markers.splice(at, 0, marker)
    return marker
  }

  #wait(seq: number, wait: WaitKind, label: string, detail: string, callId: string | null): WaitSpan {
    const span = this.#add<WaitSpan>({ uid: this.#next(), kind: 'wait', wait, label, detail, start: seq, end: null, outcome: null, callId })
    this.waits.push(span)
    return span
  }

  #closeWait(key: string, seq: number, outcome: string): WaitSpan | null {
    const wait = this.#openWaits.get(key)
    if (!wait) return null
    this.#openWaits.delete(key)
    wait.end = seq
    wait.outcome = outcome
    return wait
  }

  /** The innermost open item, owner of events that belong to no item of their own. */
  #innermost(): number {
    return (this.#attempt ?? this.#step ?? this.#turn)?.uid ?? 0
  }

  #ensureAttempt(seq: number): AttemptSpan | null {
    if (this.#attempt) return this.#attempt
    const step = this.#step
    if (!step) return null
    const attempt = this.#add<AttemptSpan>({
      uid: this.#next(),
      kind: 'attempt',
      turn: step.turn,
      step: step.step,
      index: step.attempts.length + 1,
      start: seq,
      end: null,
      streamStart: null,
      streamEnd: null,
      chunks: 0,
      outcome: 'open',
      failure: null,
    })
    step.attempts.push(attempt)
    this.attempts.push(attempt)
    this.#attempt = attempt
    return attempt
  }

  #closeAttempt(seq: number, outcome: AttemptOutcome): void {
    const attempt = this.#attempt
    if (!attempt) return
    attempt.end = seq
    attempt.outcome = outcome
    this.#attempt = null
  }

  /** Tokens as the library counts them: each attempt's last usage chunk (failed attempts too), else its message's usage. */
  #countUsage(event: WireEvent, data: Record<string, unknown>): void {
    if (event.type === 'assistant/chunk') {
      if (this.#usageFinished) this.#flushUsage()
      const chunk = isObject(data.chunk) ? data.chunk : {}
      if (chunk.type === 'usage' && isObject(chunk.usage)) this.#pendingUsage = chunk.usage
      else if (chunk.type === 'finish') this.#usageFinished = true
      return
    }
    if (event.type === 'assistant/message' && this.#pendingUsage === null && isObject(data.usage)) this.#count(data.usage, false)
    this.#flushUsage()
  }

  #flushUsage(): void {
    if (this.#pendingUsage !== null) this.#count(this.#pendingUsage, false)
    this.#pendingUsage = null
    this.#usageFinished = false
  }

  #apply(event: WireEvent): number {
    const { seq } = event
    const data = isObject(event.data) ? event.data : {}
    this.#countUsage(event, data)
    switch (event.type) {
      case 'turn/start': {
        const turn = this.#add<TurnSpan>({
          uid: this.#next(),
          kind: 'turn',
          turn: num(data.turn) ?? this.turns.length + 1,
          start: seq,
          end: null,
          reason: null,
          steps: [],
        })
        this.turns.push(turn)
        this.#turn = turn
        return turn.uid
      }
      case 'turn/end': {
        const turn = this.#turn ?? this.turns.findLast((t) => t.turn === data.turn && t.end === null)
        this.#closeAttempt(seq, 'cut')
        if (this.#step && this.#step.end === null) this.#step.end = seq
        this.#step = null
        this.#turn = null
        for (const key of [...this.#openWaits.keys()]) this.#closeWait(key, seq, 'the turn ended')
        const reason: TurnReason = isObject(data.reason) ? (data.reason as TurnReason) : { kind: 'unknown' }
        if (reason.kind === 'aborted') this.#marker(seq, 'cancel', `cancelled (${causeLabel(reason.reason)})`)
        if (reason.kind === 'error') this.#marker(seq, 'error', `error ${str(reason.error?.code)}: ${str(reason.error?.message)}`)
        if (!turn) return 0
        turn.end = seq
        turn.reason = reason
        return turn.uid
      }
      case 'step/start': {
        const turn = this.#turn
        if (!turn) return 0
        const step = this.#add<StepSpan>({
          uid: this.#next(),
          kind: 'step',
          turn: turn.turn,
          step: num(data.step) ?? turn.steps.length + 1,
          start: seq,
          end: null,
          attempts: [],
        })
        turn.steps.push(step)
        this.steps.push(step)
        this.#step = step
        return step.uid
      }
      case 'step/end': {
        const step = this.#step
        this.#closeAttempt(seq, 'cut')
        for (const key of [...this.#openWaits.keys()]) if (key.startsWith('retry:')) this.#closeWait(key, seq, 'the step ended')
        this.#step = null
        if (!step) return this.#innermost()
        step.end = seq
        return step.uid
      }
      case 'request/header':
      case 'request/context':
        return (this.#ensureAttempt(seq) ?? { uid: this.#innermost() }).uid
      case 'assistant/chunk': {
        const attempt = this.#ensureAttempt(seq)
        if (!attempt) return this.#innermost()
        attempt.chunks++
        attempt.streamStart ??= seq
        attempt.streamEnd = seq
        const chunk = isObject(data.chunk) ? data.chunk : {}
        const reason = isObject(chunk.reason) ? chunk.reason : null
        if (chunk.type === 'finish' && reason && (reason.kind === 'error' || reason.kind === 'aborted')) {
          const failure = isObject(reason.failure) ? reason.failure : {}
          attempt.failure = { code: str(failure.code, 'UNKNOWN'), message: str(failure.message) }
          this.#closeAttempt(seq, 'failed')
        }
        return attempt.uid
      }
      case 'assistant/message': {
        const attempt = this.#ensureAttempt(seq)
        if (!attempt) return this.#innermost()
        this.#closeAttempt(seq, data.interrupted === true ? 'interrupted' : 'ok')
        return attempt.uid
      }
      case 'tool/call':
        return this.#toolCall(seq, data)
      case 'tool/result':
        return this.#toolResult(seq, data)
      case 'agent/inbox/spliced':
        return this.#splice(seq, data)
      case 'tool/approval-request': {
        const callId = str(data.callId)
        const name = str(data.name, this.#toolNames.get(callId) ?? '?')
        const wait = this.#wait(seq, 'approval', `waiting for approval of ${name}`, str(data.reason), callId)
        this.#openWaits.set(`approval:${callId}`, wait)
        return wait.uid
      }
      case 'tool/approval-answer': {
        const decision = data.decision === 'approve' ? 'approved' : `denied${typeof data.reason === 'string' ? `: ${data.reason}` : ''}`
        return (this.#closeWait(`approval:${str(data.callId)}`, seq, decision) ?? { uid: this.#innermost() }).uid
      }
      case 'llm/retry': {
        const retry = num(data.retry) ?? 1
        const failure = isObject(data.failure) ? data.failure : {}
        const wait = this.#wait(
          seq,
          'backoff',
          `backing off ${duration(num(data.delayMs) ?? 0)} before retry ${retry}`,
          `${str(failure.code, 'failure')}: ${str(failure.message)}`,
          null,
        )
        this.#openWaits.set(`retry:${str(data.retryId)}`, wait)
        return wait.uid
      }
      case 'llm/retry-started':
        return (this.#closeWait(`retry:${str(data.retryId)}`, seq, 'retried') ?? { uid: this.#innermost() }).uid
      case 'user/message': {
        if (this.parent === null && isObject(data.source) && data.source.kind === 'plugin' && typeof data.source.parentSessionId === 'string') {
          this.parent = { sessionId: data.source.parentSessionId, callId: str(data.source.parentCallId), tool: str(data.source.tool) }
        }
        const arrival = this.#byMessage.get(str(data.id))
        if (arrival && arrival.claimedAt !== null && arrival.enteredAt === null) {
          arrival.enteredAt = seq
          arrival.end = seq
          return arrival.uid
        }
        return this.#innermost()
      }
      default:
        return this.#innermost()
    }
  }

  #toolCall(seq: number, data: Record<string, unknown>): number {
    let lane = this.#laneUse.indexOf(null)
    if (lane === -1) lane = this.#laneUse.push(null) - 1
    this.lanes = Math.max(this.lanes, this.#laneUse.length)
    // calls that overlap in the log ran together: they share a group; a call that overlaps none ran alone
    let group = this.#group
    if (!group || group.open === 0) {
      group = { id: this.groups.length, start: seq, end: null, calls: [], open: 0 }
      this.groups.push(group)
      this.#group = group
    }
    const tool = this.#add<ToolSpan>({
      uid: this.#next(),
      kind: 'tool',
      callId: str(data.callId),
      name: str(data.name, '?'),
      turn: num(data.turn) ?? 0,
      step: num(data.step) ?? 0,
      start: seq,
      end: null,
      lane,
      group,
      error: null,
      synthetic: false,
    })
    group.calls.push(tool)
    group.open++
    this.#toolNames.set(tool.callId, tool.name)
    this.#laneUse[lane] = tool
    this.tools.push(tool)
    this.#openTools.set(tool.callId, tool)
    return tool.uid
  }

  #toolResult(seq: number, data: Record<string, unknown>): number {
    const message = isObject(data.message) ? data.message : {}
    const source = isObject(message.source) ? message.source : {}
    const callId = str(source.callId)
    this.#closeWait(`approval:${callId}`, seq, 'closed without an answer')
    this.#subagentResult(callId, data.meta)
    const tool = this.#openTools.get(callId)
    if (!tool) return this.#innermost()
    this.#openTools.delete(callId)
    tool.end = seq
    const block = Array.isArray(message.content) && isObject(message.content[0]) ? message.content[0] : {}
    const error = isObject(data.error) ? str(data.error.code, 'error') : block.isError === true ? 'error' : null
    tool.error = error
    // a call never started is logged as an adjacent call/result pair with this code (cancelled before dispatch)
    tool.synthetic = error === 'ABORTED_BEFORE_DISPATCH' && tool.start === seq - 1
    this.#laneUse[tool.lane] = null
    tool.group.open--
    if (tool.group.open === 0) tool.group.end = seq
    return tool.uid
  }

  /** A call result that names the child it ran (`meta.subagent`): link it, and count the child's tokens. */
  #subagentResult(callId: string, meta: unknown): void {
    const record = isObject(meta) && isObject(meta.subagent) ? meta.subagent : null
    if (!record || typeof record.sessionId !== 'string') return
    const link = this.link(callId, record.sessionId)
    link.end = str(record.end, 'unknown')
    link.steps = num(record.steps)
    const usage = isObject(record.usage) ? record.usage : null
    link.tokens = usage ? (num(usage.totalTokens) ?? (num(usage.inputTokens) ?? 0) + (num(usage.outputTokens) ?? 0)) : null
    this.#count(usage, true)
  }

  /** Add tokens to the totals; a child's are counted in them and apart. */
  #count(usage: Record<string, unknown> | null, child: boolean): void {
    if (!usage) return
    const input = num(usage.inputTokens) ?? 0
    const output = num(usage.outputTokens) ?? 0
    const total = num(usage.totalTokens) ?? input + output
    this.usage.inputTokens += input
    this.usage.outputTokens += output
    this.usage.totalTokens += total
    if (child) {
      this.usage.subagentTokens += total
      this.usage.subagents++
    }
  }

  #splice(seq: number, data: Record<string, unknown>): number {
    const target = data.target === 'next-turn' ? 'next-turn' : 'next-step'
    const list = this.#pending[target]
    const start = Math.max(0, Math.min(num(data.start) ?? 0, list.length))
    const removedCount = Math.max(0, num(data.removedCount) ?? 0)
    const inserted: Arrival[] = (Array.isArray(data.inserted) ? data.inserted : []).map((m: unknown) => {
      const message = isObject(m) ? m : {}
      const arrival = this.#add<Arrival>({
        uid: this.#next(),
        kind: 'arrival',
        messageId: str(message.id),
        target,
        wakeup: typeof data.wakeup === 'boolean' ? data.wakeup : null,
        source: isObject(message.source) ? str(message.source.kind, 'user') : 'user',
        text: textOf(message.content),
        start: seq,
        end: null,
        claimedAt: null,
        claimedBy: null,
        enteredAt: null,
        discardedAt: null,
      })
      this.arrivals.push(arrival)
      this.#byMessage.set(arrival.messageId, arrival)
      return arrival
    })
    const removed = list.splice(start, removedCount, ...inserted)
    const canceled = data.outcome === 'canceled'
    for (const arrival of removed) {
      if (canceled) arrival.discardedAt = seq
      else {
        arrival.claimedAt = seq
        arrival.claimedBy = this.#turn?.turn ?? null
      }
      arrival.end = seq
    }
    return (inserted[0] ?? removed[0])?.uid ?? this.#innermost()
  }
}

// Turn results and token totals, read from the session log (the source of
// truth): what `agent.run()` resolves with and what `agent.usage` reports.
// Both are derived lazily, so the per-chunk hot path pays nothing for them.
import type { OutputSchemas } from '../request/options.js'
import { describeIssues } from '../request/schema.js'
import type { AssistantMessage, ContentBlock, SessionEvent, SessionEventOf, TokenUsage, TurnEndReason } from '../session/schemas.js'
import { firstInMemory, type Session } from '../session/session.js'
import { countBelow } from '../values/sorted.js'

/** Token counts summed over attempts; the parts are disjoint, `totalTokens` is their sum. */
export interface UsageTotals {
  inputTokens: number
  outputTokens: number
  cacheReadTokens: number
  cacheWriteTokens: number
  reasoningTokens: number
  totalTokens: number
}

/** What `agent.run(input)` resolves with once the turn that took `input` has ended. */
export interface TurnResult<T = unknown> {
  /** The turn number the input opened. */
  turn: number
  /** The logged `turn/end` reason: `completed`, `max-tokens`, `max-steps` (with the limit), `blocked`, `error` (with the failure), `aborted`. */
  end: TurnEndReason
  /** The text blocks of `message`, joined ('' when there is none). */
  text: string
  /** The turn's last `assistant/message` (an interrupted prefix after a cancel), if any. */
  message: AssistantMessage | undefined
  /** Tokens of every attempt of the turn, failed ones included, and of the subagents its tool calls ran. */
  usage: UsageTotals
  /** How much of `usage` the turn's subagents (agentTool) spent; absent when it ran none. */
  subagentUsage?: UsageTotals
  /** Steps the turn entered. */
  steps: number
  /** With a JSON response format: the parsed answer, validated when its schema came with a check. */
  object?: T
  /** With a JSON response format: why the answer could not be parsed or validated. */
  objectError?: string
}

/**
 * What `agent.run(input)` resolves with when `input` never reached a turn:
 * `discarded` when a cancel or an inbox edit removed it (`seq` is that
 * splice), `parked` when the agent went idle (or was disposed) with it still
 * queued, e.g. after an earlier turn ended `error`, `blocked` or `aborted`
 * (PH-5). A parked input stays in the inbox and runs on the next waking send.
 */
export interface UnrunResult {
  turn: null
  end: { kind: 'discarded'; seq: number } | { kind: 'parked' }
  text: ''
  message: undefined
  usage: UsageTotals
  steps: 0
  object?: undefined
  objectError?: undefined
}

/**
 * What `agent.run(input)` resolves with when the agent was disposed while the input's turn waited for a person's
 * approval (docs/approvals.md): the turn is still open in the log, with the question pending; the agent that
 * reopens the session answers it and finishes the turn.
 */
export interface AwaitingApprovalResult {
  turn: number
  end: { kind: 'awaiting-approval'; callId: string }
  text: ''
  message: undefined
  usage: UsageTotals
  steps: 0
  subagentUsage?: undefined
  object?: undefined
  objectError?: undefined
}

export type RunResult<T = unknown> = TurnResult<T> | UnrunResult | AwaitingApprovalResult

export const zeroUsage = (): UsageTotals => ({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, totalTokens: 0 })

function addUsage(totals: UsageTotals, usage: TokenUsage): void {
  const cacheRead = usage.cacheReadTokens ?? 0
  const cacheWrite = usage.cacheWriteTokens ?? 0
  const reasoning = usage.reasoningTokens ?? 0
  totals.inputTokens += usage.inputTokens
  totals.outputTokens += usage.outputTokens
  totals.cacheReadTokens += cacheRead
  totals.cacheWriteTokens += cacheWrite
  totals.reasoningTokens += reasoning
  totals.totalTokens += usage.inputTokens + usage.outputTokens + cacheRead + cacheWrite + reasoning
}

const USAGE_KEYS = ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens', 'totalTokens'] as const

function addTotals(totals: UsageTotals, more: UsageTotals): void {
  for (const key of USAGE_KEYS) totals[key] += more[key]
}

/** A subagent's totals as agentTool records them in its call's result meta; anything else there is not usage. */
function subagentUsage(meta: unknown): UsageTotals | undefined {
  const usage = (meta as { subagent?: { usage?: Record<string, unknown> } } | undefined)?.subagent?.usage
  if (typeof usage !== 'object' || usage === null) return undefined
  for (const key of USAGE_KEYS) if (!Number.isSafeInteger(usage[key]) || (usage[key] as number) < 0) return undefined
  return usage as unknown as UsageTotals
}

/**
 * Sums the usage of every attempt, in log order. An attempt's usage is its
 * last `usage` chunk (what its anchor records); attempts that failed have no
 * anchor but were billed all the same, so chunks are what is counted, and an
 * anchor's own `usage` only when its attempt logged no usage chunk.
 */
class UsageCounter {
  readonly totals = zeroUsage()
  /** The part of `totals` that subagents spent (their calls' `tool/result` `meta.subagent.usage`). */
  subagents: UsageTotals | undefined
  /** The last usage chunk of the attempt being read, not yet added. */
  #pending: TokenUsage | undefined
  /** The attempt being read has logged its finish: the next chunk starts another attempt. */
  #finished = false

  visit(event: SessionEvent): void {
    if (event.type === 'assistant/chunk') {
      if (this.#finished) this.#flush()
      const { chunk } = event.data
      if (chunk.type === 'usage') this.#pending = chunk.usage
      else if (chunk.type === 'finish') this.#finished = true
      return
    }
    if (event.type === 'assistant/message' && this.#pending === undefined && event.data.usage !== undefined) addUsage(this.totals, event.data.usage)
    this.#flush()
    if (event.type === 'tool/result') {
      const spent = subagentUsage(event.data.meta)
      if (spent === undefined) return
      addTotals(this.totals, spent)
      addTotals((this.subagents ??= zeroUsage()), spent)
    }
  }

  /** The totals including the attempt still being read. */
  current(): UsageTotals {
    const out = { ...this.totals }
    if (this.#pending !== undefined) addUsage(out, this.#pending)
    return out
  }

  #flush(): void {
    if (this.#pending !== undefined) addUsage(this.totals, this.#pending)
    this.#pending = undefined
    this.#finished = false
  }
}

/** Where the turn results look things up, advanced lazily over new events. */
export class LogIndex {
  readonly #session: Session
  /** Where the headers are read up to: from the events in memory on (a stored session's older ones are closed turns). */
  #cursor: number
  /** Where the usage totals are read up to: from the first event (a stored session reads its older ones through its store once). */
  #usageCursor = 0
  readonly #usage = new UsageCounter()
  /** Seqs of `request/header` events, ascending. */
  readonly #headers: number[] = []

  constructor(session: Session) {
    this.#session = session
    this.#cursor = firstInMemory(session)
  }

  /** Token totals over the whole log, seeded history included. */
  usage(): UsageTotals {
    this.#advance()
    this.#advanceUsage()
    return this.#usage.current()
  }

  /** Reads what was appended; the store writer calls it before committed events leave memory. */
  catchUp(): void {
    this.#advance()
    // totals never asked for over a stored session are left to the first usage() call
    if (this.#usageCursor >= firstInMemory(this.#session)) this.#advanceUsage()
  }

  /** The result of `turn`, whose `turn/end` is at `endSeq`. */
  turnResult<T>(turn: number, endSeq: number, schemas: OutputSchemas): TurnResult<T> {
    this.#advance()
    const session = this.#session
    const end = session.at(endSeq) as SessionEventOf<'turn/end'>
    const start = this.#turnStart(turn, endSeq)
    const counter = new UsageCounter()
    let steps = 0
    let anchorSeq = -1
    for (let seq = start; seq <= endSeq; seq++) {
      const event = session.at(seq)!
      counter.visit(event)
      if (event.type === 'step/start') steps++
      else if (event.type === 'assistant/message') anchorSeq = seq
    }
    const message = anchorSeq >= 0 ? (session.at(anchorSeq) as SessionEventOf<'assistant/message'>).data.message : undefined
    const text = message === undefined ? '' : textOf(message.content)
    const result: TurnResult<T> = { turn, end: end.data.reason, text, message, usage: counter.current(), steps }
    if (counter.subagents !== undefined) result.subagentUsage = counter.subagents
    const kind = end.data.reason.kind
    if (message !== undefined && (kind === 'completed' || kind === 'max-tokens')) this.#structured(result, anchorSeq, schemas)
    return result
  }

  /** With a JSON response format in the config that produced the answer: the parsed (and checked) object. */
  #structured<T>(result: TurnResult<T>, anchorSeq: number, schemas: OutputSchemas): void {
    const headerSeq = this.#headerBefore(anchorSeq)
    if (headerSeq === undefined) return
    const format = (this.#session.at(headerSeq) as SessionEventOf<'request/header'>).data.header.config.responseFormat
    if (format?.type !== 'json') return
    let parsed: unknown
    try {
      parsed = JSON.parse(result.text)
    } catch (error) {
      result.objectError = `the answer is not JSON: ${(error as Error).message}`
      return
    }
    const checked = format.schema === undefined ? undefined : schemas.lookup(format.schema)
    if (checked === undefined) {
      result.object = parsed as T
      return
    }
    let outcome: ReturnType<typeof checked.check>
    try {
      outcome = checked.check(parsed)
    } catch (error) {
      result.objectError = `the response schema's check threw: ${(error as Error)?.message ?? String(error)}`
      return
    }
    if (outcome instanceof Promise) {
      // an async refinement, or one that threw (zod then retries asynchronously): the result is read synchronously
      outcome.catch(() => {})
      result.objectError = 'the response schema cannot be checked synchronously (an async refinement, or one that threw); check the parsed answer yourself'
      return
    }
    if (outcome.ok) result.object = outcome.value as T
    else result.objectError = `the answer does not match the response schema: ${describeIssues(outcome.issues)}`
  }

  /** The seq of `turn`'s `turn/start`, found back from its end (a turn's events are together, and the newest in memory). */
  #turnStart(turn: number, endSeq: number): number {
    const session = this.#session
    for (let seq = endSeq; seq >= 0; seq--) {
      const event = session.at(seq)!
      if (event.type === 'turn/start' && event.data.turn === turn) return seq
    }
    return endSeq
  }

  /** The latest `request/header` before `seq`: the config the request at `seq` was made with. */
  #headerBefore(seq: number): number | undefined {
    const below = countBelow(this.#headers, seq)
    return below === 0 ? undefined : this.#headers[below - 1]
  }

  #advance(): void {
    const session = this.#session
    for (; this.#cursor < session.length; this.#cursor++) {
      const event = session.at(this.#cursor)!
      if (event.type === 'request/header') this.#headers.push(event.seq)
    }
  }

  #advanceUsage(): void {
    const session = this.#session
    // events no longer in memory are read through the store in one pass
    const older = this.#usageCursor < firstInMemory(session) ? session.events : undefined
    for (; this.#usageCursor < session.length; this.#usageCursor++) this.#usage.visit(older?.[this.#usageCursor] ?? session.at(this.#usageCursor)!)
  }
}

/** The text blocks of a message, joined as streamed. */
function textOf(content: readonly ContentBlock[]): string {
  let text = ''
  for (const block of content) if (block.type === 'text') text += block.text
  return text
}

// Invariants every session log the loop writes must satisfy (BEHAVIOURS 1.2,
// SS-1..SS-6, SS-12, ST-3, ST-6..ST-9, CX-7, TU-5/6, TU-12, TL-6..TL-17, RS-4/5).
// What each rule checks is listed at SessionInvariantRule.
//
// Violations name the offending event by its position in the log (its seq in a
// contiguous log); a non-array input is reported as `shape` at seq -1. A malformed
// event is reported once as `shape` and otherwise ignored, so events that depended
// on it may report further violations. The log itself cannot show where a
// proposal was rejected, so `no-step-after-reject` checks the boundary shape only.
// A check can resume after a safe point from the state a checkpoint gives (CheckStart).
import {
  EventDataSchemas,
  SessionEventEnvelopeSchema,
  SURFACE_TYPES,
  type SessionEvent,
  type SessionEventOf,
  type SessionEventType,
  type ToolCallBlock,
} from './schemas.js'
import { visiblePrefix } from './vocabulary.js'
import { jsonEqual } from '../values/canonical.js'

/** The rules a log is checked against, each with what it checks. */
export type SessionInvariantRule =
  | 'shape' // envelope and per-type data match the schemas (unknown types: envelope only)
  | 'contiguous-seq' // seq === index (SS-1)
  | 'turn-enclosure' // turn/start with no open turn, numbered highest+1 (the first any positive number; before the first session/end-seed only increasing);
  //   turn/end names the open turn and no step is open; step/start inside the open turn, no step open, steps numbered 1, 2, …; step/end names the open step
  //   (SS-12, TU-1, ST-1)
  | 'balanced' // with `complete` (default), the log does not end inside a step or turn (TU-15), unless it ends parked (TL-18): in its open step the last
  //   tool/call waits for approval (a request, no answer, no result) and every earlier call of the step has its result
  | 'event-enclosure' // chunks, tool calls and appended assistant messages, tool results and user messages name the open turn and step; request/header,
  //   request/context, todo/write lie inside a turn (SS-12); replacements (compaction, result rewrites) may come at any time
  | 'step-input-first' // a step's appended user/messages come right after step/start, before anything else (ST-3)
  | 'chunk-citation' // an appended assistant/message cites ascending assistant/chunk seqs of its step, exactly the step's latest chunks since its previous
  //   message; the uncited chunks before them end with a failed finish (earlier failed attempts); finish only last; an anchor never cites a failed finish;
  //   `usage` equals the last cited usage chunk (ST-7, RQ-11)
  | 'call-from-anchor' // a tool/call names a tool-call block of its step's assistant/message, same name and arguments, in model order; every block of the
  //   anchor gets a tool/call or a TOOL_NOT_STARTED result before step/end, unless the turn ends error (TL-6, TL-14, TL-17, RS-5)
  | 'call-result-pairing' // an appended tool/result follows a tool/call with its call id in the same step and cites exactly [that seq] (repair's uncited
  //   TOOL_NOT_STARTED result excepted); at most one result per call; no duplicate call ids in a step; every call has a result by step/end unless the turn
  //   ends error (TL-8, TL-17, RS-4/5)
  | 'no-step-after-reject' // turn/end{blocked} sits at a proposal boundary: the last event before it (inbox splices and unknown types aside) is its
  //   turn/start or a step/end, so nothing ran after the reject (TU-5/6)
  | 'surface-metadata' // only surface types carry surfaceOp/sourceEventSeqs and they always carry surfaceOp; citations are earlier seqs without duplicates,
  //   non-empty except on assistant/message; replace ranges are current surface nodes in order and cited; a tool/result replace shadows one result of the same
  //   call (SS-3..SS-6)
  | 'no-tool-call-in-max-tokens-step' // an anchor whose cited finish is max-tokens has no tool-call block and no tool/call follows it in its step (ST-9)
  | 'interrupted-prefix' // an interrupted assistant/message has no tool-call block, holds non-whitespace text or reasoning, and its turn ends aborted (or
  //   interrupted by repair) (CX-5, CX-7, RS-4)
  | 'max-steps' // turn/end{max-steps, limit} sits at a step boundary (the last event before it, inbox splices and unknown types aside, is a step/end) after
  //   at least `limit` steps (TU-16)
  | 'retry-sequence' // llm/retry (in its step, numbered 1, 2, … per step) follows a failed finish of the step; the next attempt starts only after
  //   llm/retry-started names that retry; a retry left waiting at step/end means the turn ends aborted (cancelled during the backoff) (RQ-10, RQ-12, RQ-14)
  | 'approval-sequence' // tool/approval-request names a logged, unanswered tool/call of the open step, once per call; tool/approval-answer names a call whose
  //   request is still open, once; neither comes after the call's tool/result (TL-18)
  | 'compaction-record' // a compaction summary (a user/message from the `compaction` plugin replacing a range) is followed at once by its
  //   compaction/completed, which names its message id and range; a compaction/completed follows nothing else (CP-2)
  | 'sticky-max-tokens' // a turn with a max-tokens anchor never ends completed; a turn ending max-tokens has one (TU-12)

export interface SessionInvariantViolation {
  readonly rule: SessionInvariantRule
  /** Position of the offending event (its seq when the log is contiguous). */
  readonly seq: number
  readonly message: string
}

export interface CheckSessionInvariantsOptions {
  /** The log is at rest (default true): ending inside a turn or step is a violation. */
  complete?: boolean
}

/** An envelope-valid event; `type` may be one the catalogue does not know. */
interface LooseEvent {
  seq: number
  time: number
  type: string
  data: unknown
  surfaceOp?: SessionEvent['surfaceOp']
  sourceEventSeqs?: readonly number[]
  ignorable?: true
}

interface StepState {
  readonly turn: number
  readonly step: number
  /** assistant/chunk seqs since step/start or the step's previous assistant/message. */
  chunks: number[]
  /** Position of step/start or of the step's previous assistant/message: citations must come after it. */
  floorSeq: number
  /** Tool-call blocks of the step's latest assistant/message. */
  anchorCalls: ToolCallBlock[]
  /** Index into anchorCalls that the next tool/call must not precede (model order). */
  nextBlock: number
  maxTokens: boolean
  calls: Map<string, { seq: number; answered: boolean }>
  notStarted: Set<string>
  /** Something other than step input happened in this step. */
  pastInput: boolean
  /** Retries started in this step. */
  retries: number
  /** An llm/retry whose llm/retry-started has not come yet. */
  waitingRetry: { retryId: string; retry: number } | undefined
  /** Calls that asked for approval: waiting for the answer, or answered (TL-18). */
  approvals: Map<string, 'waiting' | 'answered'>
}

interface TurnState {
  readonly turn: number
  lastStep: number
  step: StepState | undefined
  /** Violations excused if the turn ends error (TL-17). */
  deferred: SessionInvariantViolation[]
  maxTokens: boolean
  interruptedIndex: number | undefined
  /** Position of a step/end that closed a step with a retry still waiting: the turn must end aborted. */
  abandonedRetryIndex: number | undefined
  /** Type of the latest catalogue event of the turn, splices aside. */
  lastType: SessionEventType
}

const SURFACE = new Set<string>(SURFACE_TYPES)
const KNOWN = new Set<string>(Object.keys(EventDataSchemas))

/**
 * Checks a session log against the loop's invariants and returns every violation.
 * Why: one oracle for hand-written tests, runtime tests and graph-generated
 * traces alike; it never throws, so garbage input yields `shape` violations.
 */
export function checkSessionInvariants(
  events: readonly SessionEvent[] | readonly unknown[],
  options: CheckSessionInvariantsOptions = {},
): SessionInvariantViolation[] {
  return check(events, options.complete !== false, false)
}

/**
 * The rules a log must keep for a new agent instance to continue it: enclosure,
 * numbering, call/result pairing and citations. The others describe what the
 * loop decided (sticky max-tokens, where a reject fell) and cannot mislead a resume.
 */
export const SEED_RULES: ReadonlySet<SessionInvariantRule> = new Set<SessionInvariantRule>([
  'shape',
  'contiguous-seq',
  'turn-enclosure',
  'event-enclosure',
  'call-result-pairing',
  'chunk-citation',
  'surface-metadata',
  'approval-sequence',
])

/**
 * The violations that make a log unfit to seed a session (SEED_RULES). A log
 * that is only cut short (a crash left a turn or step open) is not broken:
 * repair closes it (RS-4). Why: resume must refuse a damaged log by name
 * instead of continuing it into a worse one.
 */
export function seedViolations(events: readonly SessionEvent[] | readonly unknown[]): SessionInvariantViolation[] {
  return check(events, false, false).filter((v) => SEED_RULES.has(v.rule))
}

/** Where a check resumes: a safe point `base` (no turn open) and what a checkpoint says of the log before it. */
export interface CheckStart {
  readonly base: number
  /** The surface node seqs at `base`, in surface order. */
  readonly surface: readonly number[]
  /** The highest turn/start turn before `base` (0 for none), and whether a session/end-seed came before it. */
  readonly lastTurn: number
  readonly endSeed: boolean
  /** An event before `base` by seq (what the tail cites or replaces; `base - 1` may be a summary awaiting its record). */
  readonly at: (seq: number) => SessionEvent | undefined
}

/** seedViolations over events the session already validated (SS-10); with `start`, over the log from `start.base` on. */
export function validatedSeedViolations(events: readonly SessionEvent[], start?: CheckStart): SessionInvariantViolation[] {
  return check(events, false, true, start).filter((v) => SEED_RULES.has(v.rule))
}

/** Every violation of a log; one that is not an array is one `shape` violation. */
function check(events: readonly unknown[], complete: boolean, validated: boolean, start?: CheckStart): SessionInvariantViolation[] {
  if (!Array.isArray(events)) return [{ rule: 'shape', seq: -1, message: 'events is not an array' }]
  return new Checker(events, complete, validated, start).run()
}

/** The step stops parked (TL-18): its last tool/call waits for approval and every other call has its result. */
function parked(step: StepState): boolean {
  const waiting = [...step.approvals].filter(([, state]) => state === 'waiting').map(([callId]) => callId)
  if (waiting.length !== 1 || step.waitingRetry !== undefined) return false
  const calls = [...step.calls]
  const last = calls.at(-1)
  if (last === undefined || last[0] !== waiting[0] || last[1].answered) return false
  return calls.slice(0, -1).every(([, call]) => call.answered)
}

class Checker {
  readonly #out: SessionInvariantViolation[] = []
  readonly #bySeq = new Map<number, SessionEvent>()
  /** Surface node seqs, in surface order. */
  readonly #surface: number[] = []
  #turn: TurnState | undefined
  #highestTurn: number | undefined
  #firstEndSeed = -1
  /** A compaction summary waiting for its compaction/completed (the very next event). */
  #summary: { index: number; messageId: string; start: number; end: number } | undefined

  constructor(
    readonly events: readonly unknown[],
    readonly complete: boolean,
    /** The events were validated by the session already: skip the schema pass. */
    readonly validated: boolean,
    /** The events start at `start.base`, after a safe point. */
    readonly start?: CheckStart,
  ) {}

  run(): SessionInvariantViolation[] {
    const base = this.start?.base ?? 0
    const firstEndSeed = this.events.findIndex((e) => typeof e === 'object' && e !== null && (e as { type?: unknown }).type === 'session/end-seed')
    this.#firstEndSeed = this.start?.endSeed === true || firstEndSeed < 0 ? -1 : base + firstEndSeed
    if (this.start !== undefined) {
      this.#surface.push(...this.start.surface)
      this.#highestTurn = this.start.lastTurn > 0 ? this.start.lastTurn : undefined
      const last = this.start.at(base - 1)
      this.#summary = last === undefined ? undefined : summaryOf(last, base - 1)
    }
    this.events.forEach((raw, i) => {
      const index = base + i
      try {
        const event = this.#parse(raw, index)
        if (event !== undefined) this.#visit(event, index)
      } catch (error) {
        this.#add('shape', index, `event could not be checked: ${String(error)}`)
      }
    })
    this.#finish()
    // sort is stable: violations at one seq keep the order they were found in
    return this.#out.sort((a, b) => a.seq - b.seq)
  }

  #add(rule: SessionInvariantRule, seq: number, message: string): void {
    this.#out.push({ rule, seq, message })
  }

  /** A checked event by seq; one before a resumed check's base is read from what the check started from. */
  #event(seq: number): SessionEvent | undefined {
    const start = this.start
    return this.#bySeq.get(seq) ?? (start !== undefined && seq < start.base ? start.at(seq) : undefined)
  }

  /** The event, or undefined (reported as `shape`) when it fails the schemas; validated events skip them. */
  #parse(raw: unknown, index: number): LooseEvent | undefined {
    const envelope = this.validated ? undefined : SessionEventEnvelopeSchema.safeParse(raw)
    if (envelope?.success === false) return void this.#add('shape', index, `bad envelope: ${firstIssue(envelope.error)}`)
    const event = (envelope === undefined ? raw : envelope.data) as LooseEvent
    if (event.seq !== index) this.#add('contiguous-seq', index, `event at index ${index} has seq ${event.seq}`)
    if (!KNOWN.has(event.type)) return event
    const data = this.validated ? undefined : EventDataSchemas[event.type as SessionEventType].safeParse(event.data)
    if (data?.success === false) return void this.#add('shape', index, `bad ${event.type} data: ${firstIssue(data.error)}`)
    if (!this.#bySeq.has(event.seq)) this.#bySeq.set(event.seq, event as SessionEvent)
    return event
  }

  #visit(event: LooseEvent, index: number): void {
    this.#surfaceMetadata(event, index)
    this.#compactionRecord(event, index)
    if (!KNOWN.has(event.type)) return
    const e = event as SessionEvent
    const turn = this.#turn
    const step = turn?.step
    switch (e.type) {
      case 'turn/start':
        this.#turnStart(e, index)
        return
      case 'turn/end':
        this.#turnEnd(e, index)
        return
      case 'step/start':
        this.#stepStart(e, index)
        break
      case 'step/end':
        this.#stepEnd(e, index)
        break
      case 'user/message':
        if (e.surfaceOp === 'append' && this.#enclosed(step, e, index) && step.pastInput)
          this.#add('step-input-first', index, 'user/message after the step already moved past its input')
        break
      case 'assistant/chunk':
        // a chunk naming another step is reported, and kept out of this step's attempt
        if (this.#enclosed(step, e, index, e.data) && e.data.step === step.step && e.data.turn === step.turn) {
          if (step.waitingRetry !== undefined)
            this.#add('retry-sequence', index, `a new attempt streams before llm/retry-started{${step.waitingRetry.retryId}}`)
          step.chunks.push(e.seq)
        }
        break
      case 'assistant/message':
        // a replacement (a compaction summary) cites the nodes it shadows, checked with the surface
        if (e.surfaceOp !== 'append') break
        if (step?.waitingRetry !== undefined) this.#add('retry-sequence', index, 'assistant/message while a retry waits in its backoff')
        this.#assistantMessage(e, index, this.#enclosed(step, e, index, e.data) ? step : undefined)
        break
      case 'llm/retry':
        if (this.#enclosed(step, e, index, e.data)) this.#retry(e, index, step)
        break
      case 'llm/retry-started':
        if (this.#enclosed(step, e, index, e.data)) this.#retryStarted(e, index, step)
        break
      case 'tool/call':
        if (this.#enclosed(step, e, index, e.data)) this.#toolCall(e, index, step)
        break
      case 'tool/result':
        if (e.surfaceOp === 'append' && this.#enclosed(step, e, index, e.data)) this.#toolResult(e, index, step)
        break
      case 'tool/approval-request':
      case 'tool/approval-answer':
        if (this.#enclosed(step, e, index, e.data)) this.#approval(e, index, step)
        break
      case 'request/header':
      case 'request/context':
      case 'todo/write':
        if (turn === undefined) this.#add('event-enclosure', index, `${e.type} outside a turn`)
        break
      case 'agent/inbox/spliced':
      case 'session/end-seed':
        return
    }
    if (step !== undefined && e.type !== 'user/message' && e.type !== 'step/start') step.pastInput = true
    if (this.#turn !== undefined) this.#turn.lastType = e.type
  }

  /** True when a step is open (`step`, the open step) and `data` (if given) names it; reports event-enclosure otherwise. */
  #enclosed(step: StepState | undefined, e: SessionEvent, index: number, data?: { turn: number; step: number }): step is StepState {
    if (step === undefined) {
      this.#add('event-enclosure', index, `${e.type} outside an open step`)
      return false
    }
    if (data !== undefined && (data.turn !== step.turn || data.step !== step.step)) {
      this.#add('event-enclosure', index, `${e.type} names turn ${data.turn} step ${data.step}, open is turn ${step.turn} step ${step.step}`)
    }
    return true
  }

  #turnStart(e: SessionEventOf<'turn/start'>, index: number): void {
    const n = e.data.turn
    if (this.#turn !== undefined) {
      this.#add('turn-enclosure', index, `turn/start{${n}} while turn ${this.#turn.turn} is open`)
      this.#closeTurn(this.#turn, index, false)
    }
    const highest = this.#highestTurn
    if (highest !== undefined) {
      const seeded = index < this.#firstEndSeed
      if (seeded ? n <= highest : n !== highest + 1)
        this.#add('turn-enclosure', index, `turn/start{${n}} after turn ${highest}: expected ${seeded ? 'a higher number' : highest + 1}`)
    }
    this.#highestTurn = highest === undefined ? n : Math.max(highest, n)
    this.#turn = {
      turn: n,
      lastStep: 0,
      step: undefined,
      deferred: [],
      maxTokens: false,
      interruptedIndex: undefined,
      abandonedRetryIndex: undefined,
      lastType: 'turn/start',
    }
  }

  #turnEnd(e: SessionEventOf<'turn/end'>, index: number): void {
    const turn = this.#turn
    const { reason } = e.data
    if (turn === undefined) {
      this.#add('turn-enclosure', index, `turn/end{${e.data.turn}} with no open turn`)
      return
    }
    if (e.data.turn !== turn.turn) this.#add('turn-enclosure', index, `turn/end{${e.data.turn}} but turn ${turn.turn} is open`)
    if (turn.step !== undefined) this.#add('turn-enclosure', index, `turn/end while step ${turn.step.step} is open`)
    else if (reason.kind === 'blocked' && turn.lastType !== 'turn/start' && turn.lastType !== 'step/end')
      this.#add('no-step-after-reject', index, `turn/end{blocked} follows ${turn.lastType}, not a proposal boundary`)
    if (turn.maxTokens && reason.kind === 'completed') this.#add('sticky-max-tokens', index, 'turn had a max-tokens step but ends completed')
    if (!turn.maxTokens && reason.kind === 'max-tokens') this.#add('sticky-max-tokens', index, 'turn ends max-tokens without a max-tokens step')
    if (reason.kind === 'max-steps' && turn.step === undefined) {
      if (turn.lastType !== 'step/end') this.#add('max-steps', index, `turn/end{max-steps} follows ${turn.lastType}, not a step/end`)
      else if (turn.lastStep < reason.limit) this.#add('max-steps', index, `turn/end{max-steps, limit ${reason.limit}} after ${turn.lastStep} steps`)
    }
    // cancellation ends the turn aborted; a crash right after the prefix leaves repair's interrupted
    const stopped = reason.kind === 'aborted' || reason.kind === 'interrupted'
    if (turn.abandonedRetryIndex !== undefined && !stopped)
      this.#add('retry-sequence', index, `a retry left waiting at step/end (seq ${turn.abandonedRetryIndex}), yet the turn ends ${reason.kind}, not aborted`)
    if (turn.interruptedIndex !== undefined && !stopped)
      this.#add('interrupted-prefix', index, `turn with an interrupted message (seq ${turn.interruptedIndex}) ends ${reason.kind}, not aborted`)
    this.#closeTurn(turn, index, reason.kind === 'error')
  }

  #closeTurn(turn: TurnState, index: number, errored: boolean): void {
    if (turn.step !== undefined) this.#closeStep(turn, turn.step, index)
    if (!errored) this.#out.push(...turn.deferred)
    this.#turn = undefined
  }

  #stepStart(e: SessionEventOf<'step/start'>, index: number): void {
    const turn = this.#turn
    const { turn: t, step: s } = e.data
    if (turn === undefined) {
      this.#add('turn-enclosure', index, `step/start{${t},${s}} outside a turn`)
      return
    }
    if (t !== turn.turn) this.#add('turn-enclosure', index, `step/start names turn ${t}, open is turn ${turn.turn}`)
    if (turn.step !== undefined) {
      this.#add('turn-enclosure', index, `step/start while step ${turn.step.step} is open`)
      this.#closeStep(turn, turn.step, index)
    }
    if (s !== turn.lastStep + 1) this.#add('turn-enclosure', index, `step/start{${t},${s}}: expected step ${turn.lastStep + 1}`)
    turn.lastStep = s
    turn.step = {
      turn: t,
      step: s,
      chunks: [],
      floorSeq: index,
      anchorCalls: [],
      nextBlock: 0,
      maxTokens: false,
      calls: new Map(),
      notStarted: new Set(),
      pastInput: false,
      retries: 0,
      waitingRetry: undefined,
      approvals: new Map(),
    }
  }

  #stepEnd(e: SessionEventOf<'step/end'>, index: number): void {
    const turn = this.#turn
    const step = turn?.step
    if (turn === undefined || step === undefined) {
      this.#add('turn-enclosure', index, `step/end{${e.data.turn},${e.data.step}} with no open step`)
      return
    }
    if (e.data.turn !== step.turn || e.data.step !== step.step)
      this.#add('turn-enclosure', index, `step/end{${e.data.turn},${e.data.step}} but step {${step.turn},${step.step}} is open`)
    this.#closeStep(turn, step, index)
  }

  /** Closes a step; unanswered calls and unstarted anchor blocks wait for the turn's end (TL-17). */
  #closeStep(turn: TurnState, step: StepState, index: number): void {
    for (const [callId, call] of step.calls) {
      if (!call.answered) {
        turn.deferred.push({ rule: 'call-result-pairing', seq: index, message: `step closed with tool/call ${callId} (seq ${call.seq}) unanswered` })
      }
    }
    if (!step.maxTokens) {
      for (const block of step.anchorCalls) {
        if (!step.calls.has(block.id) && !step.notStarted.has(block.id)) {
          turn.deferred.push({ rule: 'call-from-anchor', seq: index, message: `step closed without starting tool call ${block.id}` })
        }
      }
    }
    if (step.waitingRetry !== undefined && turn.abandonedRetryIndex === undefined) turn.abandonedRetryIndex = index
    turn.step = undefined
  }

  /** RQ-14: a retry follows its failed attempt, numbered after the step's earlier retries. */
  #retry(e: SessionEventOf<'llm/retry'>, index: number, step: StepState): void {
    const { retryId, retry } = e.data
    if (step.waitingRetry !== undefined) this.#add('retry-sequence', index, `llm/retry while retry ${step.waitingRetry.retryId} still waits`)
    if (retry !== step.retries + 1) this.#add('retry-sequence', index, `llm/retry numbered ${retry}, expected ${step.retries + 1}`)
    const last = step.chunks.at(-1)
    if (last === undefined || !isFailedFinish(this.#event(last))) this.#add('retry-sequence', index, 'llm/retry does not follow a failed finish of its step')
    step.waitingRetry = { retryId, retry }
  }

  #retryStarted(e: SessionEventOf<'llm/retry-started'>, index: number, step: StepState): void {
    const waiting = step.waitingRetry
    if (waiting === undefined || waiting.retryId !== e.data.retryId || waiting.retry !== e.data.retry) {
      this.#add('retry-sequence', index, `llm/retry-started{${e.data.retryId}, ${e.data.retry}} names no waiting llm/retry of the step`)
    }
    step.retries = Math.max(step.retries, e.data.retry)
    step.waitingRetry = undefined
  }

  #assistantMessage(e: SessionEventOf<'assistant/message'>, index: number, step: StepState | undefined): void {
    const { message, interrupted } = e.data
    const content = message.content
    const hasToolCall = content.some((b) => b.type === 'tool-call')
    if (interrupted === true) {
      if (hasToolCall) this.#add('interrupted-prefix', index, 'interrupted message keeps tool-call blocks')
      if (visiblePrefix(content) === null) this.#add('interrupted-prefix', index, 'interrupted message holds no visible text or reasoning')
      if (this.#turn !== undefined && this.#turn.interruptedIndex === undefined) this.#turn.interruptedIndex = index
    }
    if (step === undefined) return
    const finish = e.sourceEventSeqs === undefined ? undefined : this.#citations(e, index, step)
    if (finish === 'max-tokens' && interrupted !== true) {
      step.maxTokens = true
      if (this.#turn !== undefined) this.#turn.maxTokens = true
      if (hasToolCall) this.#add('no-tool-call-in-max-tokens-step', index, 'max-tokens anchor keeps tool-call blocks')
    }
    // an interrupted prefix runs no tools (its tool-call blocks are reported above)
    step.anchorCalls = interrupted === true ? [] : content.filter((b): b is ToolCallBlock => b.type === 'tool-call')
    step.nextBlock = 0
    step.floorSeq = index
    step.chunks = []
  }

  /** Checks an assistant/message's chunk citations; returns the kind of its cited finish, if any. */
  #citations(e: SessionEventOf<'assistant/message'>, index: number, step: StepState): string | undefined {
    const cited = e.sourceEventSeqs ?? []
    let sound = true
    const unsound = (message: string) => {
      this.#add('chunk-citation', index, message)
      sound = false
    }
    cited.forEach((seq, k) => {
      const target = this.#event(seq)
      if (target === undefined || target.type !== 'assistant/chunk' || target.data.turn !== step.turn || target.data.step !== step.step)
        unsound(`cites seq ${seq}, not an assistant/chunk of turn ${step.turn} step ${step.step}`)
      else if (seq <= step.floorSeq) unsound(`cites chunk ${seq} from before the step's previous assistant/message`)
      if (k > 0 && seq <= cited[k - 1]) unsound('sourceEventSeqs are not ascending')
    })
    if (!sound) return undefined
    const pending = step.chunks
    const cut = pending.length - cited.length
    if (cut < 0 || cited.some((seq, k) => pending[cut + k] !== seq)) {
      this.#add('chunk-citation', index, "does not cite exactly its attempt's chunks (the step's latest chunks)")
      return undefined
    }
    if (cut > 0 && !isFailedFinish(this.#event(pending[cut - 1])))
      this.#add('chunk-citation', index, `uncited chunks ${pending[0]}..${pending[cut - 1]} do not end with a failed finish`)
    const chunks = cited.map((seq) => (this.#event(seq) as SessionEventOf<'assistant/chunk'>).data.chunk)
    let finish: string | undefined
    let usage: unknown
    chunks.forEach((chunk, k) => {
      if (chunk.type === 'usage') usage = chunk.usage
      if (chunk.type !== 'finish') return
      finish = chunk.reason.kind
      if (k !== chunks.length - 1) this.#add('chunk-citation', index, `cited chunk ${cited[k + 1]} follows a finish`)
    })
    if (e.data.interrupted !== true && (finish === 'error' || finish === 'aborted'))
      this.#add('chunk-citation', index, `anchor of a failed attempt (finish ${finish})`)
    if (!jsonEqual(e.data.usage, usage)) this.#add('chunk-citation', index, 'usage differs from the last cited usage chunk')
    return finish
  }

  #toolCall(e: SessionEventOf<'tool/call'>, index: number, step: StepState): void {
    const { callId, name } = e.data
    if (step.calls.has(callId)) this.#add('call-result-pairing', index, `duplicate tool/call ${callId} in the step`)
    else step.calls.set(callId, { seq: e.seq, answered: false })
    if (step.maxTokens) {
      this.#add('no-tool-call-in-max-tokens-step', index, `tool/call ${callId} after a max-tokens anchor`)
      return
    }
    const k = step.anchorCalls.findIndex((b) => b.id === callId)
    if (k < 0) {
      this.#add('call-from-anchor', index, `tool/call ${callId} names no tool-call block of the step's assistant/message`)
      return
    }
    const block = step.anchorCalls[k]
    if (block.name !== name || block.arguments !== e.data.arguments)
      this.#add('call-from-anchor', index, `tool/call ${callId} differs from its block in name or arguments`)
    if (k < step.nextBlock) this.#add('call-from-anchor', index, `tool/call ${callId} is out of model order`)
    step.nextBlock = Math.max(step.nextBlock, k + 1)
  }

  /** TL-18: a question follows its logged call, and its one answer follows the question, both before the result. */
  #approval(e: SessionEventOf<'tool/approval-request' | 'tool/approval-answer'>, index: number, step: StepState): void {
    const { callId } = e.data
    const call = step.calls.get(callId)
    const state = step.approvals.get(callId)
    if (call === undefined) return this.#add('approval-sequence', index, `${e.type} for ${callId}, which is no tool/call of the step`)
    if (call.answered) return this.#add('approval-sequence', index, `${e.type} for ${callId} after its tool/result`)
    if (e.type === 'tool/approval-request') {
      if (state !== undefined) this.#add('approval-sequence', index, `second tool/approval-request for ${callId}`)
      step.approvals.set(callId, 'waiting')
      return
    }
    if (state !== 'waiting') this.#add('approval-sequence', index, `tool/approval-answer for ${callId}, which has no open approval request`)
    step.approvals.set(callId, 'answered')
  }

  #toolResult(e: SessionEventOf<'tool/result'>, index: number, step: StepState): void {
    const callId = e.data.message.source.callId
    const call = step.calls.get(callId)
    if (call === undefined) {
      const notStarted = e.data.error?.code === 'TOOL_NOT_STARTED' && e.sourceEventSeqs === undefined
      if (!notStarted) this.#add('call-result-pairing', index, `tool/result for ${callId} follows no tool/call of the step`)
      else if (step.notStarted.has(callId)) this.#add('call-result-pairing', index, `second result for unstarted call ${callId}`)
      else if (!step.anchorCalls.some((b) => b.id === callId))
        this.#add('call-result-pairing', index, `not-started result for ${callId}, which the step's assistant/message never called`)
      else step.notStarted.add(callId)
      return
    }
    if (call.answered) this.#add('call-result-pairing', index, `second tool/result for call ${callId}`)
    call.answered = true
    const cites = e.sourceEventSeqs
    if (cites === undefined || cites.length !== 1 || cites[0] !== call.seq)
      this.#add('call-result-pairing', index, `tool/result for ${callId} must cite [${call.seq}]`)
  }

  #surfaceMetadata(e: LooseEvent, index: number): void {
    const { surfaceOp: op, sourceEventSeqs: cites } = e
    if (!SURFACE.has(e.type)) {
      if (op !== undefined || cites !== undefined) this.#add('surface-metadata', index, `${e.type} is not a surface type but carries surface metadata`)
      return
    }
    if (op === undefined) {
      this.#add('surface-metadata', index, `${e.type} carries no surfaceOp`)
      return
    }
    if (cites !== undefined) {
      if (cites.some((seq) => seq >= e.seq)) this.#add('surface-metadata', index, 'sourceEventSeqs cite a seq that is not earlier')
      if (new Set(cites).size !== cites.length) this.#add('surface-metadata', index, 'sourceEventSeqs hold duplicates')
      if (cites.length === 0 && e.type !== 'assistant/message') this.#add('surface-metadata', index, `${e.type} has empty sourceEventSeqs`)
    }
    if (op === 'append') {
      this.#surface.push(e.seq)
      return
    }
    const from = this.#surface.indexOf(op.start)
    const to = this.#surface.indexOf(op.end)
    if (from < 0 || to < 0 || from > to) {
      this.#add('surface-metadata', index, `replace range ${op.start}..${op.end} is not a current surface range`)
      return
    }
    const shadowed = this.#surface.slice(from, to + 1)
    if (shadowed.some((seq) => !cites?.includes(seq))) this.#add('surface-metadata', index, 'replace does not cite every shadowed node')
    if (e.type === 'tool/result') {
      const old = this.#event(op.start)
      const callId = (e.data as { message?: { source?: { callId?: unknown } } } | undefined)?.message?.source?.callId
      if (from !== to || old?.type !== 'tool/result' || old.data.message.source.callId !== callId)
        this.#add('surface-metadata', index, 'a tool/result replace must shadow exactly one result of the same call')
    }
    this.#surface.splice(from, to - from + 1, e.seq)
  }

  /** CP-2: a summary and its record come as a pair, in that order, with the same message id and range. */
  #compactionRecord(event: LooseEvent, index: number): void {
    const summary = this.#summary
    this.#summary = undefined
    if (event.type === 'compaction/completed') {
      const data = event.data as { messageId?: unknown; start?: unknown; end?: unknown }
      if (summary === undefined) this.#add('compaction-record', index, 'compaction/completed does not follow a compaction summary')
      else if (data.messageId !== summary.messageId || data.start !== summary.start || data.end !== summary.end) {
        this.#add('compaction-record', index, `compaction/completed names another summary or range than seq ${summary.index}`)
      }
      return
    }
    if (summary !== undefined) this.#add('compaction-record', summary.index, 'compaction summary not followed at once by its compaction/completed')
    this.#summary = summaryOf(event, index)
  }

  #finish(): void {
    if (this.#summary !== undefined && this.complete)
      this.#add('compaction-record', this.#summary.index, 'compaction summary not followed by its compaction/completed')
    const turn = this.#turn
    if (turn === undefined || !this.complete) return
    const last = (this.start?.base ?? 0) + this.events.length - 1
    // a disposal parked the approval wait: the log rests inside the step, for another instance to answer (TL-18)
    if (turn.step !== undefined && parked(turn.step)) turn.step = undefined
    else {
      if (turn.step !== undefined) this.#add('balanced', last, `log ends inside turn ${turn.turn} step ${turn.step.step}`)
      this.#add('balanced', last, `log ends inside turn ${turn.turn}`)
    }
    this.#closeTurn(turn, last, false)
  }
}

/** The compaction summary `event` is (a user/message from the `compaction` plugin replacing a range), if it is one. */
function summaryOf(event: LooseEvent, index: number): { index: number; messageId: string; start: number; end: number } | undefined {
  const op = event.surfaceOp
  const message = event.data as { id?: unknown; source?: { kind?: unknown; plugin?: unknown } } | undefined
  if (event.type !== 'user/message' || op === undefined || op === 'append' || message?.source?.kind !== 'plugin' || message.source.plugin !== 'compaction')
    return undefined
  return { index, messageId: String(message.id), start: op.start, end: op.end }
}

function isFailedFinish(event: SessionEvent | undefined): boolean {
  if (event?.type !== 'assistant/chunk') return false
  const chunk = event.data.chunk
  return chunk.type === 'finish' && (chunk.reason.kind === 'error' || chunk.reason.kind === 'aborted')
}

function firstIssue(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0]
  if (issue === undefined) return 'invalid'
  const path = issue.path.map(String).join('.')
  return path === '' ? issue.message : `${path}: ${issue.message}`
}

// A deliberately minimal agent loop, independent of agentchart: a plain
// async loop over an in-memory log, written from docs/conformance.md and
// the behaviour catalogue (entry ids in comments). No XState, nothing
// imported from agentchart. It exists to prove the conformance suite can be
// passed from its documentation alone, and, through `mutation`, that the
// suite catches a broken loop.

// ---- values ---------------------------------------------------------------------------

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
export interface Message {
  id: string
  role: 'user'
  content: Json[]
  source: { kind: string; [key: string]: Json }
}
export type Target = 'next-turn' | 'next-step'
export type Cause = { kind: string; reason?: string }
export interface Failure {
  message: string
  code: string
  [key: string]: Json
}
export type EndReason =
  | { kind: 'completed' | 'blocked' | 'max-tokens' | 'interrupted' }
  | { kind: 'max-steps'; limit: number }
  | { kind: 'error'; error: Failure }
  | { kind: 'aborted'; reason: Cause }
export type SurfaceOp = 'append' | { op: 'replace'; start: number; end: number }
export interface Event {
  seq: number
  time: number
  type: string
  data: Json
  surfaceOp?: SurfaceOp
  sourceEventSeqs?: number[]
}
export type Chunk = { type: string; index?: number; [key: string]: Json | undefined }

export interface ToolSpec {
  name: string
  description: string
  inputSchema: Json
  parallel: boolean
  /** Returns the result text, or `{content, concludesTurn?, additionalContexts?}`; throws to fail. */
  execute(
    args: Json,
    context: { callId: string; signal: AbortSignal },
  ): Promise<string | { content: string; concludesTurn?: boolean; additionalContexts?: Message[] }>
}

export interface ModelSpec {
  provider: string
  model: string
  stream(request: { signal: AbortSignal }): AsyncIterable<Chunk>
}

import type { Mutation } from './mutants.js'
export type { Mutation } from './mutants.js'

export interface LoopOptions {
  model: ModelSpec
  tools: ToolSpec[]
  maxParallelToolCalls: number
  seed?: Event[]
  /** Store failures armed before the agent is created. */
  faults?: Array<{ eventType: string; message: string }>
  /** A deliberate bug (./mutants.ts): the loop deviates from one rule where it tests this name. */
  mutation?: Mutation
  /** Waits out a retry's backoff (RQ-14): resolves when it is over. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>
  /** An approver is configured: an `ask` waits for answerApproval (spec 7.7); without one it is a deny. */
  approvals?: boolean
  /** This session's id: a fork's marker names it as the parent (spec 5.17). */
  sessionId: string
  /** The ids of the sessions that have a live agent in this process; the agent adds its own. */
  sessions: Set<string>
  /** The most steps a turn runs (spec 7.2, format 6); absent: no limit. */
  maxSteps?: number
  /** Compaction on (spec 7.10): the policy, and the summariser, which resolves to the summary text or throws. */
  compaction?: CompactionSpec
}

/** A fork that cannot be made (spec 5.17), with the code that says why. */
export class ForkRefused extends Error {
  constructor(
    readonly code: 'FORK_UNKNOWN_SEQ' | 'FORK_INSIDE_TURN' | 'FORK_ID_TAKEN',
    message: string,
  ) {
    super(message)
  }
}

export interface CompactionSpec {
  contextWindow: number
  threshold: number
  keepRecent: number
  auto: boolean
  baseTokens: number
  summarise(signal: AbortSignal): Promise<string>
}

/** The range a compaction replaces (spec 7.10). */
interface Plan {
  start: number
  end: number
  sources: number[]
  tokensBefore: number
  rangeTokens: number
}
type CompactionReason = 'auto' | 'overflow' | 'manual'

/** The text a summary message carries (spec 7.10). */
const SUMMARY_MARKER = '[Summary of the earlier conversation, compacted to fit the context window]'
const IMAGE_CHARACTERS = 3000

/** Spec 7.10: the estimate of one message, 4 plus a quarter (rounded up) of the characters it carries. */
function estimate(message: any): number {
  let chars = 0
  for (const block of message.content as any[]) {
    if (block.type === 'text' || block.type === 'reasoning') chars += block.text.length
    else if (block.type === 'tool-call') chars += block.name.length + block.arguments.length
    else if (block.type === 'image') chars += IMAGE_CHARACTERS
    else if (block.type === 'tool-result') {
      if (typeof block.content === 'string') chars += block.content.length
      else for (const part of block.content) chars += part.type === 'text' ? part.text.length : IMAGE_CHARACTERS
    }
  }
  return 4 + Math.ceil(chars / 4)
}

type Listener = (payload: any, next: () => Promise<any>) => any
type Outcome = { isError: boolean; content: string; error?: { name: string; code: string }; additionalContexts?: Message[]; concludesTurn?: boolean }
type StepOutcome = 'completed' | 'max-tokens' | 'continue' | 'aborted' | 'error'

const ABORTED_BEFORE_DISPATCH: Outcome = {
  isError: true,
  content: 'Error: tool call aborted before dispatch',
  error: { name: 'AbortError', code: 'ABORTED_BEFORE_DISPATCH' },
}
const ABORTED_WHILE_RUNNING: Outcome = { isError: true, content: 'Error: tool call aborted', error: { name: 'AbortError', code: 'ABORTED' } }
const CANCELLED = Symbol('cancelled')

const failureOf = (error: unknown): Failure => ({ message: error instanceof Error ? error.message : String(error), code: 'UNKNOWN' })
const errorOutcome = (message: string, error?: Outcome['error']): Outcome => ({ isError: true, content: `Error: ${message}`, ...(error ? { error } : {}) })
const key = (value: unknown) => JSON.stringify(value)
const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T

/** Race a promise with a signal: CANCELLED when the signal aborts first (CX-16). */
function race<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof CANCELLED> {
  if (signal.aborted) return Promise.resolve(CANCELLED)
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(CANCELLED)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (e) => {
        signal.removeEventListener('abort', onAbort)
        reject(e)
      },
    )
  })
}

// ---- the agent -------------------------------------------------------------------------

export class IndependentAgent {
  readonly log: Event[] = []
  #faults = new Map<string, Error[]>()
  #listeners = new Map<string, Listener[]>()
  #phase: 'idle' | 'running' | 'maintenance' | 'compacting' | 'disposed' = 'idle'
  #nextTurn: Message[] = []
  #nextStep: Message[] = []
  #latch = false
  #cause: Cause | null = null
  #disposing = false
  /** A disposal came while a call waited for approval: the question stays open for another instance (spec 7.8). */
  #parked = false
  #controller = new AbortController()
  #jobController: AbortController | null = null
  #inCallback = 0
  #deferred: Array<() => void> = []
  #idleWaiters: Array<() => void> = []
  // turn and request book-keeping
  #turn = 0
  #step = 0
  #sticky = false
  #lastStep: 'none' | 'terminal' | 'continue' = 'none'
  #requests = 0
  #priorHeader = false
  #headerKey: string | null = null
  #contextKey: string | null = null
  #config: { provider: string; model: string }
  /** The step whose CONTEXT_WINDOW_EXCEEDED was already met with a compaction (once per step, spec 7.10). */
  #overflowAt: string | null = null
  #ids = 0
  readonly #prefix = Math.random().toString(36).slice(2, 8)

  /** Whether the deliberate bug `name` is planted (./mutants.ts). */
  mutated(name: Mutation): boolean {
    return this.options.mutation === name
  }

  constructor(readonly options: LoopOptions) {
    this.#config = { provider: options.model.provider, model: options.model.model }
    options.sessions.add(options.sessionId)
    for (const fault of options.faults ?? []) this.failNextAppend(fault.eventType, new Error(fault.message))
    if (options.seed && options.seed.length > 0) this.#loadSeed(options.seed)
  }

  // ---- forks (SS-14, spec 5.17) ---------------------------------------------------------------

  /** The stored log of a fork of this session: events 0..upTo as they are, then the marker with the lineage. */
  fork(upTo: number, id: string): Event[] {
    if (!Number.isInteger(upTo) || upTo < 0 || upTo >= this.log.length) throw new ForkRefused('FORK_UNKNOWN_SEQ', `no seq ${upTo}`)
    const prefix = this.log.slice(0, upTo + 1)
    const open = prefix.reduce((at, e) => (e.type === 'turn/start' ? e.seq : e.type === 'turn/end' ? -1 : at), -1)
    if (open >= 0 && !this.mutated('fork-inside-turn')) throw new ForkRefused('FORK_INSIDE_TURN', `the turn opened at seq ${open} is still open at seq ${upTo}`)
    if (this.options.sessions.has(id)) throw new ForkRefused('FORK_ID_TAKEN', `session ${id} exists`)
    const lineage = { parent: this.options.sessionId, upTo, seedLength: this.mutated('fork-seed-length') ? upTo + 1 : upTo + 2 }
    return [...prefix.map(clone), { seq: upTo + 1, time: Date.now(), type: 'session/end-seed', data: { fork: lineage } }]
  }

  // ---- the store ---------------------------------------------------------------------

  /** The next append of `type` throws `error` (the `fail-append` input). */
  failNextAppend(type: string, error: Error): void {
    this.#faults.set(type, [...(this.#faults.get(type) ?? []), error])
  }

  #append(type: string, data: unknown, extra: { surfaceOp?: SurfaceOp; sourceEventSeqs?: number[]; time?: number } = {}): Event {
    const queue = this.#faults.get(type)
    if (queue && queue.length > 0) throw queue.shift()!
    const event: Event = { seq: this.log.length, time: extra.time ?? Date.now(), type, data: clone(data) as Json }
    if (extra.surfaceOp) event.surfaceOp = clone(extra.surfaceOp)
    if (extra.sourceEventSeqs) event.sourceEventSeqs = [...extra.sourceEventSeqs]
    this.log.push(event)
    this.#callback(() => {
      for (const observer of this.#listeners.get('session/event') ?? []) observer({ event }, async () => undefined)
    })
    return event
  }

  /** Observers and notification listeners run here; a cancel they make is deferred (SS-11, spec 4.4). */
  #callback(run: () => void): void {
    this.#inCallback++
    try {
      run()
    } catch {
      // contained (HK-3)
    } finally {
      this.#inCallback--
    }
  }

  #notify(name: string, payload: unknown): void {
    for (const listener of this.#listeners.get(name) ?? []) this.#callback(() => listener(payload, async () => undefined))
  }

  // ---- seed and repair (SS-9, RS-1..RS-4, IN-14) -------------------------------------------

  #loadSeed(seed: Event[]): void {
    for (const event of seed) this.log.push(clone(event))
    if (this.log[this.log.length - 1].type !== 'session/end-seed') this.log.push({ seq: this.log.length, time: Date.now(), type: 'session/end-seed', data: {} })
    let open: { turn: number; step: number | null } | null = null
    // IN-14: splices inherited through a fork (before the latest fork marker) are not the inbox's
    // (the mutation replays them all, as if the fork's seed were the parent's own log)
    const fork = this.mutated('inherited-splices') ? -1 : this.log.findLastIndex((e) => e.type === 'session/end-seed' && (e.data as any).fork !== undefined)
    for (const e of this.log) {
      const d = e.data as any
      if (e.type === 'turn/start') {
        this.#turn = Math.max(this.#turn, d.turn)
        open = { turn: d.turn, step: null }
      }
      if (e.type === 'turn/end') open = null
      if (e.type === 'step/start' && open) open.step = d.step
      if (e.type === 'step/end' && open) open.step = null
      if (e.type === 'request/header') this.#priorHeader = !this.mutated('resume-header-initial')
      if (e.type === 'request/context') this.#contextKey = key({ provider: d.provider, model: d.model })
      if (e.type === 'agent/inbox/spliced' && e.seq > fork) {
        const list = d.target === 'next-turn' ? this.#nextTurn : this.#nextStep
        list.splice(d.start, d.removedCount ?? 0, ...d.inserted)
      }
    }
    if (!open) return
    // RS-4: close the open turn (tool calls of the open step first), at the crash's time
    const time = seed[seed.length - 1].time
    try {
      if (open.step !== null) {
        // spec 3: the calls of the open step without a result, in the order of its last whole anchor, then logged calls it does not name
        const stepStart = this.log.findLastIndex((e) => e.type === 'step/start' && (e.data as any).turn === open!.turn)
        const inStep = this.log.slice(stepStart + 1)
        const results = new Set(inStep.filter((e) => e.type === 'tool/result').map((e) => (e.data as any).message.source.callId))
        const logged = new Map(inStep.filter((e) => e.type === 'tool/call').map((e) => [(e.data as any).callId as string, e.seq]))
        const anchor = inStep.findLast((e) => e.type === 'assistant/message' && !(e.data as any).interrupted)
        const named = anchor ? ((anchor.data as any).message.content as any[]).filter((b) => b.type === 'tool-call').map((b) => b.id as string) : []
        for (const callId of new Set([...named, ...logged.keys()])) {
          if (results.has(callId) || this.mutated('repair-no-results')) continue
          const seq = logged.get(callId)
          const started = seq !== undefined || this.mutated('repair-all-unknown')
          const content = started
            ? 'Error: the outcome of this tool call is unknown: the session was interrupted while it ran. Retry it blindly only if the call is safe to repeat.'
            : 'Error: this tool call was never started: the session was interrupted before it ran. You may retry it.'
          const message = {
            id: `repair-${callId}`,
            role: 'user',
            source: { kind: 'tool', callId },
            content: [{ type: 'tool-result', toolCallId: callId, content, isError: true }],
          }
          const error = started ? { name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' } : { name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' }
          this.#append(
            'tool/result',
            { turn: open.turn, step: open.step, message, error },
            { surfaceOp: 'append', ...(seq !== undefined ? { sourceEventSeqs: [seq] } : {}), time },
          )
        }
        try {
          this.#append('step/end', { turn: open.turn, step: open.step }, { time })
        } catch (error) {
          if (!this.mutated('repair-refusal-goes-on')) throw error
        }
      }
      this.#append('turn/end', { turn: open.turn, reason: { kind: this.mutated('repair-completes') ? 'completed' : 'interrupted' } }, { time })
    } catch {
      // a refused closer: the rest are not appended; the agent starts idle
    }
  }

  // ---- public API -------------------------------------------------------------------

  on(name: string, listener: Listener): void {
    this.#listeners.set(name, [...(this.#listeners.get(name) ?? []), listener])
  }

  /** IN-1: insert at the end of `target`, waking an idle agent when asked (PH-2). */
  send(message: Message, target: Target, wakeup: boolean): void {
    if (this.#phase === 'disposed') throw new Error('disposed')
    if (this.#pending(message.id) && !this.mutated('send-duplicate-accepted')) throw new Error(`message ${message.id} is already pending`)
    // the mutation: a steer that arrives while a turn runs is dropped
    if (this.mutated('lost-steer') && this.#phase === 'running' && this.#cause === null && target === 'next-step' && wakeup) return
    // CX-12 / MT-5: once the activity is cancelled, a waking send waits for the next turn
    const to: Target = wakeup && this.#cause !== null && !this.mutated('waking-send-keeps-target') ? 'next-turn' : target
    const list = to === 'next-turn' ? this.#nextTurn : this.#nextStep
    this.#append('agent/inbox/spliced', {
      target: to,
      start: this.mutated('send-start-zero') ? 0 : list.length,
      inserted: [message],
      ...(to === 'next-step' ? { wakeup } : {}),
    })
    list.push(clone(message))
    this.#notify('agent/inbox/inserted', { message })
    if (!wakeup || this.#disposing) return
    if (this.#phase === 'idle') this.#startActivity()
    else if ((this.#cause !== null && !this.mutated('cancel-latch-lost')) || this.#phase === 'maintenance' || this.#phase === 'compacting') this.#latch = true
  }

  steer(message: Message): void {
    this.send(message, 'next-step', true)
  }

  /** CX-1..CX-4, MT-5; from inside an observer or notification listener it lands later (spec 4.4). */
  cancel(cause: Cause, options: { keepInbox?: boolean } = {}): void {
    if (this.#phase === 'disposed') return
    // the mutants: keepInbox read the other way round, or the cause stripped of its kind or reason
    const keepInbox = this.mutated('keep-inbox-ignored') ? false : this.mutated('cancel-keeps-inbox') ? true : options.keepInbox === true
    if (this.mutated('cause-always-user')) cause = { kind: 'user' }
    if (this.mutated('cause-reason-dropped')) cause = { kind: cause.kind }
    if (this.#inCallback > 0) {
      this.#deferred.push(() => this.#cancelNow(cause, keepInbox))
      return
    }
    this.#cancelNow(cause, keepInbox)
  }

  #cancelNow(cause: Cause, keepInbox: boolean): void {
    if (cause.kind === 'disposed') this.#disposing = true
    // TL-18: the first cancel of a turn that waits for a person, a disposal's, aborts nothing: it parks the wait
    if (cause.kind === 'disposed' && this.#phase === 'running' && this.#cause === null && this.approvalWaits.size > 0) {
      this.#parked = true
      if (!keepInbox) this.#clear()
      return this.onPark()
    }
    if (this.#phase === 'running' || this.#phase === 'maintenance' || this.#phase === 'compacting') {
      if (this.#cause === null || this.mutated('later-cause-wins')) {
        this.#cause = cause
        this.#controller.abort(cause)
        this.#jobController?.abort(cause)
      }
    }
    if (!keepInbox) this.#clear()
  }

  #applyDeferred(): void {
    const deferred = this.#deferred
    this.#deferred = []
    for (const apply of deferred) apply()
  }

  /** A checkpoint: deferred cancels land here; true when the activity is cancelled. */
  #checkpoint(): boolean {
    this.#applyDeferred()
    return this.#cause !== null
  }

  /** Wait for the outside world, raced with the turn's signal (CX-16); a deferred cancel lands first (spec 4.4). */
  #wait<T>(promise: () => Promise<T>): Promise<T | typeof CANCELLED> {
    this.#applyDeferred()
    return race(promise(), this.#controller.signal)
  }

  remove(id: string): boolean {
    const found = this.#find(id)
    if (!found) return false
    const [target, index, list] = found
    this.#append('agent/inbox/spliced', {
      target,
      start: index,
      removedCount: 1,
      inserted: [],
      ...(this.mutated('remove-without-outcome') ? {} : { outcome: 'canceled' }),
    })
    const [gone] = list.splice(index, 1)
    this.#notify('agent/inbox/discarded', { message: gone })
    return true
  }

  replace(id: string, message: Message): boolean {
    const found = this.#find(id)
    if (!found) return false
    const [target, index, list] = found
    if (message.id !== id && this.#pending(message.id) && !this.mutated('replace-duplicate-accepted'))
      throw new Error(`message ${message.id} is already pending`)
    this.#append('agent/inbox/spliced', { target, start: index, removedCount: 1, inserted: [message], outcome: 'canceled' })
    list.splice(index, 1, clone(message))
    return true
  }

  /** IN-3: Array-style splice of one list; removals are canceled. */
  splice(target: Target, start: number, deleteCount: number, ...insert: Message[]): void {
    const list = target === 'next-turn' ? this.#nextTurn : this.#nextStep
    const at = start < 0 ? Math.max(this.mutated('splice-negative-from-zero') ? 0 : list.length + start, 0) : Math.min(start, list.length)
    const count = Math.min(Math.max(deleteCount, 0), list.length - at)
    if (count === 0 && insert.length === 0) return
    const remaining = [...this.#nextTurn, ...this.#nextStep].filter((m) => !list.slice(at, at + count).includes(m)).map((m) => m.id)
    const ids = [...remaining, ...insert.map((m) => m.id)]
    if (new Set(ids).size !== ids.length) throw new Error('a message would be pending twice')
    this.#append('agent/inbox/spliced', { target, start: at, ...(count > 0 ? { removedCount: count, outcome: 'canceled' } : {}), inserted: insert })
    list.splice(at, count, ...clone(insert))
  }

  clear(): void {
    this.#clear()
  }

  /** MT-1: a job from true idle; status stays idle. */
  runMaintenance(job: (signal: AbortSignal) => Promise<unknown>): Promise<unknown> {
    if (this.#phase !== 'idle') throw new Error('busy')
    this.#phase = 'maintenance'
    this.#cause = null
    this.#jobController = new AbortController()
    if (this.mutated('maintenance-running')) {
      this.#notify('agent/status', { status: 'running' })
      this.#applyDeferred() // (as for an activity: a listener cancel on running lands before the job starts)
    }
    const settled = Promise.resolve().then(() => job(this.#jobController!.signal))
    const done = () => {
      this.#jobController = null
      this.#phase = 'idle'
      this.#cause = null
      this.#converge()
    }
    settled.then(done, done)
    return settled
  }

  /** CP-4 (spec 5.17): compact now, from idle only; the status stays idle and waking sends latch, as during a job. */
  compact(): void {
    if (!this.options.compaction) throw new Error('compaction is off')
    if (this.#phase !== 'idle') throw new Error('busy')
    this.#phase = 'compacting'
    this.#cause = null
    this.#controller = new AbortController()
    const done = () => {
      this.#phase = 'idle'
      this.#cause = null
      this.#converge()
    }
    // a refused append ends it: nothing more is logged (spec 7.9)
    this.#compaction('manual', []).then(done, done)
  }

  /** CX-17: a disposed cancel, then deregistration at rest. */
  async dispose(): Promise<void> {
    this.cancel({ kind: 'disposed' }, { keepInbox: this.mutated('dispose-keeps-inbox') })
    if (this.#phase !== 'idle') await new Promise<void>((resolve) => this.#idleWaiters.push(resolve))
    this.#phase = 'disposed'
  }

  // ---- inbox helpers ---------------------------------------------------------------------

  #pending(id: string): boolean {
    return this.#find(id) !== null
  }

  #find(id: string): [Target, number, Message[]] | null {
    let index = this.#nextStep.findIndex((m) => m.id === id)
    if (index >= 0) return ['next-step', index, this.#nextStep]
    index = this.#nextTurn.findIndex((m) => m.id === id)
    if (index >= 0) return ['next-turn', index, this.#nextTurn]
    return null
  }

  /** IN-5 / CX-3: next-step first, then next-turn, each only if non-empty; the latch goes too. */
  #clear(): void {
    for (const target of this.mutated('clear-next-turn-first') ? (['next-turn', 'next-step'] as const) : (['next-step', 'next-turn'] as const)) {
      const list = target === 'next-turn' ? this.#nextTurn : this.#nextStep
      if (list.length === 0) continue
      this.#append('agent/inbox/spliced', { target, start: 0, removedCount: list.length, inserted: [], outcome: 'canceled' })
      const gone = list.splice(0, list.length)
      for (const message of gone) this.#notify('agent/inbox/discarded', { message })
    }
    this.#latch = false
  }

  #hasPending(): boolean {
    return this.#nextTurn.length > 0 || this.#nextStep.length > 0
  }

  // ---- activities (PH-2..PH-6) -------------------------------------------------------------

  #startActivity(): void {
    this.#phase = 'running'
    this.#cause = null
    this.#latch = false
    this.#controller = new AbortController()
    this.#notify('agent/status', { status: 'running' })
    void this.#runActivity()
  }

  async #runActivity(): Promise<void> {
    for (;;) {
      // TU-3: cancelled before the turn opens (e.g. from the running-status listener)
      if (!this.mutated('no-checkpoint-before-turn-start') && this.#checkpoint()) break
      const end = await this.#runTurn()
      // PH-4: a completed turn goes straight on to pending work
      const goesOn =
        end !== null &&
        (end.kind === 'completed' ||
          (end.kind === 'max-tokens' && !this.mutated('no-go-on-after-max-tokens')) ||
          end.kind === 'max-steps' ||
          (end.kind === 'error' && this.mutated('goes-on-after-error'))) &&
        this.#cause === null &&
        !this.#disposing &&
        this.#hasPending()
      if (!goesOn) break
      this.#controller = new AbortController()
      this.#latch = false
    }
    this.#phase = 'idle'
    this.#notify('agent/status', { status: 'idle' })
    this.#cause = null
    this.#converge()
  }

  /** CX-13 / MT-3: a latched wake replays at convergence if work is pending. */
  #converge(): void {
    if (this.#latch && !this.#disposing && this.#hasPending()) return this.#startActivity()
    this.#latch = false
    const waiters = this.#idleWaiters
    this.#idleWaiters = []
    for (const resolve of waiters) resolve()
  }

  // ---- hooks ---------------------------------------------------------------------------

  /** A waterfall: each listener gets `next()`, the last `next()` gives the default (HK-1). */
  #waterfall(name: string, payload: unknown, fallback: unknown): Promise<any> {
    const listeners = this.#listeners.get(name) ?? []
    const call = (i: number): Promise<any> =>
      i >= listeners.length ? Promise.resolve(fallback) : Promise.resolve().then(() => listeners[i](payload, () => call(i + 1)))
    return call(0)
  }

  // ---- a turn ---------------------------------------------------------------------------

  /** One turn: turn/start, claims and proposals, steps, turn-stopping, turn/end. Null when turn/start or turn/end was refused. */
  async #runTurn(): Promise<EndReason | null> {
    const turn = this.#turn + 1
    try {
      this.#append('turn/start', { turn })
    } catch {
      if (this.mutated('turn-start-refused-number-used')) this.#turn = turn
      return null // TU-4: nothing claimed, the turn number not used up
    }
    this.#turn = turn
    this.#step = 0
    this.#sticky = false
    this.#lastStep = 'none'
    const signal = this.#controller.signal
    // CX-6: a cancel landing right after turn/start opens no proposal
    if (!this.mutated('no-checkpoint-after-turn-start') && this.#checkpoint()) return this.#close(this.#aborted())
    for (;;) {
      const batch = this.#claim(this.#step === 0)
      if (this.#checkpoint()) return this.#close(this.#aborted())
      let decision: any
      try {
        decision = await this.#wait(() =>
          this.#waterfall('agent/pre-step', { messages: batch, turn, step: this.#step + 1, signal }, { kind: 'enter', messages: batch }),
        )
      } catch (error) {
        return this.#close({ kind: 'error', error: this.#listenerFailure(error) }) // HK-4
      }
      if (decision === CANCELLED) return this.#close(this.#aborted())
      if (decision.kind === 'reject') {
        if (!this.mutated('step-after-reject')) return this.#close({ kind: this.mutated('reject-completes') ? 'completed' : 'blocked' }) // TU-5, TU-6
        decision = { kind: 'enter', messages: batch }
      }
      if (decision.messages.length === 0 && (this.#lastStepKind() !== 'continue' || this.mutated('empty-after-continue-ends')))
        return this.#close(this.#standing()) // TU-7, TU-8
      // CP-1: the policy is checked with the entering input, before the step opens (spec 7.10)
      if (this.options.compaction?.auto) {
        try {
          await this.#compaction('auto', decision.messages)
        } catch (error) {
          return this.#close({ kind: 'error', error: failureOf(error) }) // a refused append: no step
        }
        if (this.#checkpoint()) return this.#close(this.#aborted()) // CP-5
      }
      const outcome = await this.#runStep(decision.messages)
      if (outcome.stepEndRefused) return null
      // after step/end: a cancel ends the turn, even one that met a refused append (CX-5, CX-6; spec 7.9)
      const cancelled = this.mutated('no-checkpoint-after-step-end') ? outcome.kind === 'aborted' : this.#checkpoint() || outcome.kind === 'aborted'
      // (the mutant error-beats-cancel: a step that failed after the cancel ends the turn error)
      if (cancelled && !(outcome.kind === 'error' && this.mutated('error-beats-cancel'))) return this.#close(this.#aborted())
      if (outcome.kind === 'error') return this.#close({ kind: 'error', error: outcome.failure })
      // tools or waiting input go on (TU-9, TU-10), unless the turn has run its last allowed step (TU-16)
      if (outcome.kind === 'continue' || (this.#nextStep.length > 0 && !this.mutated('turn-stopping-with-next-step'))) {
        if (this.#limitReached()) return this.#close(this.#maxSteps())
        continue
      }
      let stopping: unknown
      try {
        stopping = await this.#wait(() => this.#waterfall('agent/turn-stopping', { turn, signal }, undefined))
      } catch (error) {
        if (this.mutated('turn-stopping-throw-completes')) return this.#close(this.#standing())
        return this.#close({ kind: 'error', error: this.#listenerFailure(error) }) // HK-5
      }
      if (stopping === CANCELLED) return this.#close(this.#aborted())
      if (this.#nextStep.length === 0 || this.mutated('steer-ignored-at-stop')) return this.#close(this.#standing())
      if (this.#limitReached()) return this.#close(this.#maxSteps())
    }
  }

  /** TU-16: the turn has run `maxSteps` steps, so it would go on to one too many. */
  #limitReached(): boolean {
    return this.options.maxSteps !== undefined && this.#step >= this.options.maxSteps + (this.mutated('max-steps-one-late') ? 1 : 0)
  }

  /** TU-16: the reason of a turn that ran its last allowed step. */
  #maxSteps(): EndReason {
    return this.mutated('max-steps-without-limit') ? ({ kind: 'max-steps' } as EndReason) : { kind: 'max-steps', limit: this.options.maxSteps! }
  }

  /** HK-4: a listener that throws, as turn/end records it. */
  #listenerFailure(error: unknown): Failure {
    return { ...failureOf(error), ...(this.mutated('listener-code-wrong') ? { code: 'LISTENER' } : {}) }
  }

  /** What the last step of this turn was (read through a method: it changes across awaits). */
  #lastStepKind(): 'none' | 'terminal' | 'continue' {
    return this.#lastStep
  }

  #aborted(): EndReason {
    return { kind: 'aborted', reason: this.#cause ?? { kind: 'user' } }
  }

  /** TU-12: max-tokens is sticky within the turn. */
  #standing(): EndReason {
    return this.#sticky && !this.mutated('max-tokens-not-sticky') ? { kind: 'max-tokens' } : { kind: 'completed' }
  }

  #close(reason: EndReason): EndReason | null {
    try {
      this.#append('turn/end', { turn: this.#turn, reason })
      return reason
    } catch {
      return null // TU-15: not retried
    }
  }

  /** IN-9: all of next-step, then at a turn boundary the first prompt. */
  #claim(turnBoundary: boolean): Message[] {
    const batch: Message[] = []
    const claimStep = () => {
      if (this.#nextStep.length === 0) return
      this.#append('agent/inbox/spliced', { target: 'next-step', start: 0, removedCount: this.#nextStep.length, inserted: [] })
      batch.push(...this.#nextStep.splice(0))
    }
    if (!this.mutated('claim-prompt-first')) claimStep()
    if (turnBoundary && this.#nextTurn.length > 0) {
      const count = this.mutated('claim-all-prompts') ? this.#nextTurn.length : 1
      this.#append('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: count, inserted: [] })
      batch.push(...this.#nextTurn.splice(0, count))
    }
    if (this.mutated('claim-prompt-first')) claimStep()
    for (const message of batch) this.#notify('agent/inbox/claimed', { message, turn: this.#turn })
    return batch
  }

  // ---- a step ---------------------------------------------------------------------------

  async #runStep(entering: Message[]): Promise<{ kind: StepOutcome; failure: Failure; stepEndRefused?: true }> {
    const turn = this.#turn
    const step = this.#step + 1
    try {
      this.#append('step/start', { turn, step })
    } catch (error) {
      return { kind: 'error', failure: failureOf(error) } // TU-14: no step events
    }
    this.#step = step
    let outcome: StepOutcome
    let failure: Failure | null = null
    try {
      // the mutant: a cancel on step/start lands before the step's messages
      if (this.mutated('cancel-before-messages') && this.#checkpoint()) entering = []
      for (const message of entering) {
        try {
          this.#append('user/message', message, { surfaceOp: 'append' })
        } catch (error) {
          if (!this.mutated('user-message-refused-goes-on')) throw error
        }
      }
      outcome = this.#checkpoint() ? 'aborted' : await this.#attempts()
    } catch (error) {
      outcome = 'error'
      failure = (error as { failure?: Failure }).failure ?? failureOf(error)
    }
    try {
      this.#append('step/end', { turn, step })
    } catch (error) {
      // TU-15 / SS-12 (spec 7.9): no turn/end may follow a refused step/end; the turn stops where its log does
      if (this.mutated('step-end-refused-turn-end')) return { kind: 'error', failure: failureOf(error) }
      return { kind: 'error', failure: failureOf(error), stepEndRefused: true }
    }
    this.#lastStep = outcome === 'completed' || outcome === 'max-tokens' ? 'terminal' : 'continue'
    this.#sticky ||= outcome === 'max-tokens'
    return { kind: outcome, failure: failure! }
  }

  /** Attempts of one step until one succeeds, fails for good, or is cancelled (RQ-1..RQ-13). Throws {failure} to end the turn error. */
  async #attempts(): Promise<StepOutcome> {
    const turn = this.#turn
    const step = this.#step
    const signal = this.#controller.signal
    for (let attempt = 1; ; attempt++) {
      let config: any
      try {
        config = await this.#wait(() => this.#waterfall('agent/request', { turn, step, signal }, { ...this.#config }))
      } catch (error) {
        throw { failure: failureOf(error) }
      }
      if (config === CANCELLED) return 'aborted'
      const noRoute = { failure: { message: 'no provider/model for this request (RQ-3)', code: this.mutated('no-route-code') ? 'UNKNOWN' : 'NO_ADAPTER' } }
      if ((!config.provider || !config.model) && !this.mutated('no-route-logs-records')) throw noRoute
      // RQ-4 / RQ-5: the records, then the checkpoint before the model is called
      const header = {
        config,
        tools: [...this.options.tools]
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
          .map((t) => ({ name: t.name, ...(t.description ? { description: t.description } : {}), inputSchema: t.inputSchema })),
      }
      const first = this.#requests === 0
      if (first || key(header) !== this.#headerKey) {
        this.#append('request/header', { header, reason: !first ? 'change' : this.#priorHeader ? 'resume' : 'initial' })
        this.#headerKey = key(header)
        // the mutant: a cancel on request/header lands before request/context
        if (this.mutated('cancel-before-context') && this.#checkpoint()) return 'aborted'
      }
      const context = { provider: config.provider, model: config.model }
      if (key(context) !== this.#contextKey || this.mutated('context-every-attempt')) {
        this.#append('request/context', context)
        this.#contextKey = key(context)
      }
      if (!config.provider || !config.model) throw noRoute
      this.#requests++
      this.#config = config
      if (this.#checkpoint()) return 'aborted'
      let streamed: { chunks: Chunk[]; seqs: number[]; cancelled: boolean }
      try {
        streamed = await this.#stream(signal)
      } catch (error) {
        // the mutant: a refused chunk goes to recovery like a failed request
        if (!this.mutated('chunk-refusal-recovered')) throw error
        streamed = { chunks: [{ type: 'finish', reason: { kind: 'error', failure: (error as { failure: Json }).failure } }], seqs: [], cancelled: false }
      }
      const { chunks, seqs, cancelled } = streamed
      const response = assemble(chunks, this.options.mutation)
      if (cancelled) {
        // CX-7: the visible prefix survives
        const kept = (b: any) =>
          this.mutated('interrupted-keeps-calls') || b.type === 'text' || (b.type === 'reasoning' && !this.mutated('interrupted-text-only'))
        const visible = response.content.filter((b: any) => kept(b) && (b.text !== '' || this.mutated('interrupted-keeps-empty')))
        const shows = (b: any) => (b.type === 'text' || (b.type === 'reasoning' && !this.mutated('reasoning-not-shown'))) && /\S/.test(b.text)
        if ((visible.some(shows) || (this.mutated('whitespace-shown') && visible.length > 0)) && !this.mutated('no-visible-prefix')) {
          const flag = this.mutated('no-interrupted-flag') ? {} : { interrupted: true }
          const message = {
            id: this.#id('a'),
            role: 'assistant',
            content: visible,
            source: { kind: 'model', ...context },
            ...(this.mutated('interrupted-inside-message') ? flag : {}),
          }
          const data = {
            turn,
            step,
            message,
            ...(response.usage ? { usage: response.usage } : {}),
            ...(this.mutated('interrupted-inside-message') ? {} : flag),
          }
          this.#append('assistant/message', data, { surfaceOp: 'append', sourceEventSeqs: seqs })
        }
        return 'aborted'
      }
      if (response.finish.kind === 'error' || response.finish.kind === 'aborted') {
        // CP-6: a request refused for its size is met with one compaction per step; compacted, a new attempt follows
        const where = key([turn, step])
        // the mutation: an overflow goes straight to request recovery, as if compaction were off
        const recovers = this.options.compaction !== undefined && !this.mutated('overflow-unrecovered')
        if (recovers && response.finish.failure?.code === 'CONTEXT_WINDOW_EXCEEDED' && (this.#overflowAt !== where || this.mutated('overflow-every-attempt'))) {
          this.#overflowAt = where
          const result = await this.#compaction('overflow', [])
          if (result === 'none' && this.mutated('nothing-to-compact-not-counted')) this.#overflowAt = null
          if (result === 'cancelled') return 'aborted'
          if (result === 'compacted') continue
        }
        let action: any
        try {
          action = await this.#wait(() =>
            this.#waterfall('agent/request-error', { turn, step, provider: config.provider, failure: response.finish.failure, signal }, undefined),
          )
        } catch (error) {
          throw { failure: failureOf(error) } // RQ-13
        }
        if (action === CANCELLED) return 'aborted' // RQ-12, CX-8
        if (action?.kind === 'retry' && typeof action.delayMs === 'number') {
          // RQ-14: the retry and its delay are logged, the backoff is waited out (a cancel ends it), then the retry starts
          const retryId = this.#id('r')
          this.#append('llm/retry', {
            turn,
            step,
            retryId,
            provider: config.provider,
            retry: this.mutated('retry-numbered-from-zero') ? attempt - 1 : attempt,
            delayMs: action.delayMs,
            failure: response.finish.failure,
          })
          if ((await this.#wait(() => this.options.sleep(action.delayMs, signal))) === CANCELLED) return 'aborted'
          if (!this.mutated('retry-later-not-started')) this.#append('llm/retry-started', { turn, step, retryId, retry: attempt })
        }
        if (action?.kind === 'retry') continue // RQ-10
        if (this.mutated('failed-attempt-anchored'))
          this.#append('assistant/message', {
            turn,
            step,
            message: { id: this.#id('a'), role: 'assistant', content: [], source: { kind: 'model', ...context } },
          })
        throw { failure: this.mutated('give-up-code-unknown') ? { ...response.finish.failure, code: 'UNKNOWN' } : response.finish.failure } // RQ-9
      }
      // ST-7..ST-10: the anchor, then the tools it asks for
      const maxTokens = response.finish.kind === 'max-tokens'
      const content = maxTokens && !this.mutated('max-tokens-keeps-calls') ? response.content.filter((b: any) => b.type !== 'tool-call') : response.content
      const message = { id: this.#id('a'), role: 'assistant', content, source: { kind: 'model', ...context } }
      if (content.length > 0 || !this.mutated('empty-anchor-skipped'))
        this.#append(
          'assistant/message',
          { turn, step, message, ...(response.usage ? { usage: response.usage } : {}) },
          { surfaceOp: 'append', sourceEventSeqs: seqs },
        )
      if (maxTokens && !this.mutated('max-tokens-runs-calls')) return 'max-tokens'
      const calls = (maxTokens ? response.content : content).filter((b: any) => b.type === 'tool-call') as Array<{
        id: string
        name: string
        arguments: string
      }>
      if (calls.length === 0 && this.mutated('tool-calls-finish-continues') && response.finish.kind === 'tool-calls') return 'continue'
      if (calls.length === 0 || (this.mutated('stop-finish-ignores-calls') && response.finish.kind === 'stop')) return 'completed'
      const tools = await new ToolBatch(this, calls).run()
      if (tools.failure) throw { failure: tools.failure } // TL-17
      return tools.outcome
    }
  }

  /** ST-6: each chunk is logged as it arrives, unless the signal aborted first. */
  async #stream(signal: AbortSignal): Promise<{ chunks: Chunk[]; seqs: number[]; cancelled: boolean }> {
    const chunks: Chunk[] = []
    const seqs: number[] = []
    if (signal.aborted) return { chunks, seqs, cancelled: true }
    const iterator = this.options.model.stream({ signal })[Symbol.asyncIterator]()
    for (;;) {
      const next = await this.#wait(() => iterator.next())
      if (next === CANCELLED || signal.aborted) {
        void iterator.return?.()
        return { chunks, seqs, cancelled: true }
      }
      if (next.done) return { chunks, seqs, cancelled: false }
      let event: Event
      try {
        event = this.#append('assistant/chunk', { turn: this.#turn, step: this.#step, chunk: next.value })
      } catch (error) {
        void iterator.return?.()
        throw { failure: failureOf(error) } // RQ-7: not offered to recovery
      }
      seqs.push(event.seq)
      chunks.push(next.value)
    }
  }

  // ---- compaction (spec 7.10) ------------------------------------------------------------

  /** The current surface: each node's seq, event type and model-visible message (none for an empty answer). */
  #surface(): Array<{ seq: number; type: string; message: any }> {
    const nodes: Array<{ seq: number; type: string; message: any }> = []
    for (const event of this.log) {
      if (event.surfaceOp === undefined) continue
      const message: any = event.type === 'user/message' ? event.data : (event.data as any).message
      const node = { seq: event.seq, type: event.type, message: message.role === 'assistant' && message.content.length === 0 ? undefined : message }
      if (event.surfaceOp === 'append') nodes.push(node)
      else {
        const { start, end } = event.surfaceOp
        const from = nodes.findIndex((n) => n.seq === start)
        const to = nodes.findIndex((n) => n.seq === end)
        nodes.splice(from, to - from + 1, node)
      }
    }
    return nodes
  }

  /** The range to replace, or null: under the threshold (auto only), nothing before the tail, or only an earlier summary. */
  #plan(reason: CompactionReason, entering: Message[]): Plan | null {
    const policy = this.options.compaction!
    const nodes = this.#surface()
    const tokens = nodes.map((n) => (n.message === undefined ? 0 : estimate(n.message)))
    const enteringTokens = this.mutated('auto-ignores-entering') ? 0 : entering.reduce((sum, m) => sum + estimate(m), 0)
    const tokensBefore = policy.baseTokens + tokens.reduce((a, b) => a + b, 0) + enteringTokens
    const threshold = policy.threshold * policy.contextWindow
    if (reason === 'auto' && (this.mutated('auto-threshold-strict') ? tokensBefore < threshold : tokensBefore <= threshold)) return null
    const keep = policy.keepRecent * policy.contextWindow
    let tail = nodes.length
    let kept = enteringTokens
    while (tail > 0 && kept + tokens[tail - 1] <= keep) kept += tokens[--tail]
    // the tail never starts with a tool result: it reaches back to the answer that made the call
    while (tail > 0 && tail < nodes.length && nodes[tail].type === 'tool/result' && !this.mutated('tail-starts-at-result')) tail--
    if (tail === 0) return null
    const range = nodes.slice(0, tail)
    const source = range[0].message?.source
    if (range.length === 1 && range[0].type === 'user/message' && source?.kind === 'plugin' && source.plugin === 'compaction') return null
    return {
      start: range[0].seq,
      end: range[range.length - 1].seq,
      sources: range.map((n) => n.seq),
      tokensBefore,
      rangeTokens: tokens.slice(0, tail).reduce((a, b) => a + b, 0),
    }
  }

  /** Measure, ask the summariser, log the summary and its record (or the failure). Appends throw when the store refuses. */
  async #compaction(reason: CompactionReason, entering: Message[]): Promise<'none' | 'compacted' | 'failed' | 'cancelled'> {
    const policy = this.options.compaction!
    const plan = this.#plan(reason, entering)
    if (plan === null) return this.#cause !== null ? 'cancelled' : 'none'
    const signal = this.#controller.signal
    const answer = await this.#wait(() =>
      policy.summarise(signal).then(
        (summary) => ({ summary }),
        (error: unknown) => ({ summary: '', failure: failureOf(error) }),
      ),
    )
    if (answer === CANCELLED) return 'cancelled'
    const range = { start: plan.start, end: plan.end }
    // CP-3: a throwing summariser, or one with no text, replaces nothing
    const failure =
      'failure' in answer
        ? answer.failure
        : (this.mutated('empty-summary-accepted') ? answer.summary === '' : answer.summary.trim() === '')
          ? { message: 'the compaction summariser returned no summary text', code: 'EMPTY_RESPONSE' }
          : null
    if (failure !== null) {
      this.#append('compaction/failed', { compactionId: this.#id('c'), reason, ...range, failure })
      return 'failed'
    }
    const message = {
      id: this.#id('m'),
      role: 'user',
      content: [{ type: 'text', text: this.mutated('summary-without-marker') ? answer.summary : `${SUMMARY_MARKER}\n\n${answer.summary}` }],
      source: { kind: 'plugin', plugin: 'compaction' },
    }
    this.#append('user/message', message, { surfaceOp: { op: 'replace', ...range }, sourceEventSeqs: plan.sources })
    const tokensAfter = Math.max(0, plan.tokensBefore - plan.rangeTokens + (this.mutated('tokens-after-ignores-summary') ? 0 : estimate(message)))
    this.#append('compaction/completed', {
      compactionId: this.#id('c'),
      reason,
      messageId: message.id,
      ...range,
      tokensBefore: plan.tokensBefore,
      tokensAfter,
      contextWindow: policy.contextWindow,
    })
    return 'compacted'
  }

  #id(kind: string): string {
    return `${this.#prefix}-${kind}${++this.#ids}`
  }

  // what the tool batch needs from the agent
  get signal(): AbortSignal {
    return this.#controller.signal
  }
  get cancelled(): boolean {
    return this.#cause !== null
  }
  get parked(): boolean {
    return this.#parked
  }
  /** Set by the running tool batch: it looks again whether it can stop. */
  onPark: () => void = () => {}
  /** The parked batch has committed every call before the waiting one: this instance stops inside the turn. */
  stopParked(): void {
    this.approvalWaits.clear()
    this.#phase = 'disposed'
    const waiters = this.#idleWaiters
    this.#idleWaiters = []
    for (const resolve of waiters) resolve()
  }
  get turnStep(): { turn: number; step: number } {
    return { turn: this.#turn, step: this.#step }
  }
  checkpoint(): boolean {
    return this.#checkpoint()
  }
  /** The tool batch is about to wait for a hook or a body: deferred cancels land now. */
  waitPoint(): void {
    this.#applyDeferred()
  }
  append(type: string, data: unknown, extra?: { surfaceOp?: 'append'; sourceEventSeqs?: number[] }): Event {
    return this.#append(type, data, extra)
  }
  notify(name: string, payload: unknown): void {
    this.#notify(name, payload)
  }
  waterfall(name: string, payload: unknown, fallback: unknown): Promise<any> {
    return this.#waterfall(name, payload, fallback)
  }
  messageId(): string {
    return this.#id('r')
  }
  /** Calls waiting for a person's answer, by call id (TL-18). */
  readonly approvalWaits = new Map<string, (answer: { approved: boolean; reason?: string }) => void>()
  /** A person answers; false when no call waits under that id. */
  answerApproval(callId: string, answer: { approved: boolean; reason?: string }): boolean {
    const resolve = this.approvalWaits.get(callId)
    if (!resolve) return false
    this.approvalWaits.delete(callId)
    resolve(answer)
    return true
  }
  insertNextStep(messages: Message[]): void {
    if (messages.length === 0 || this.mutated('contexts-dropped')) return
    const list = this.mutated('contexts-to-next-turn') ? this.#nextTurn : this.#nextStep
    this.#append('agent/inbox/spliced', { target: list === this.#nextTurn ? 'next-turn' : 'next-step', start: list.length, inserted: messages })
    list.push(...clone(messages))
  }
}

// ---- the tool batch (TL-1..TL-17) -------------------------------------------------------

class ToolBatch {
  readonly #outcomes: Array<Outcome | null>
  readonly #started: boolean[]
  readonly #skipPost: boolean[]
  readonly #callSeqs: number[] = []
  #nextStart = 0
  #nextCommit = 0
  #inFlight = 0
  #pool = false
  #barrier = false
  #preRunning = false
  /** The call that waits for a person's answer, or -1. */
  #asking = -1
  #postRunning = false
  #dispatchDone = false
  #commitDone = false
  #concluded = false
  #failure: Failure | null = null
  #resolve!: (result: { outcome: StepOutcome; failure?: Failure }) => void

  constructor(
    readonly agent: IndependentAgent,
    readonly calls: Array<{ id: string; name: string; arguments: string }>,
  ) {
    this.#outcomes = calls.map(() => null)
    this.#started = calls.map(() => false)
    this.#skipPost = calls.map(() => false)
  }

  run(): Promise<{ outcome: StepOutcome; failure?: Failure }> {
    return new Promise((resolve) => {
      const signal = this.agent.signal
      const onAbort = () => queueMicrotask(() => this.#pump())
      signal.addEventListener('abort', onAbort, { once: true })
      this.agent.onPark = () => queueMicrotask(() => this.#pump())
      this.#resolve = (result) => {
        signal.removeEventListener('abort', onAbort)
        resolve(result)
      }
      this.#pump()
    })
  }

  get #finished(): boolean {
    return this.#dispatchDone && this.#commitDone && this.#inFlight === 0 && !this.#preRunning && !this.#postRunning
  }
  get #halted(): boolean {
    return this.agent.cancelled || this.#failure !== null
  }
  get #drained(): boolean {
    return this.#nextCommit >= this.#nextStart && this.#inFlight === 0
  }
  get #poolRoom(): boolean {
    return this.#pool && (this.#inFlight < this.agent.options.maxParallelToolCalls || this.agent.mutated('pool-unbounded'))
  }
  get #commitBusy(): boolean {
    return this.#postRunning || (this.#nextCommit < this.calls.length && this.#outcomes[this.#nextCommit] !== null)
  }

  #tool(name: string): ToolSpec | undefined {
    return this.agent.options.tools.find((t) => t.name === name)
  }

  /** Advance both sides as far as they can go without waiting. */
  #pump(): void {
    for (;;) {
      while (this.#dispatch() || this.#commit()) {
        // keep going
      }
      if (this.#finished) break
      // a parked wait stops the turn once every earlier call has committed: nothing more is logged
      if (this.agent.parked && this.#asking >= 0 && this.#nextCommit === this.#asking && this.#inFlight === 1 && !this.#postRunning) {
        this.#resolve = () => {}
        return this.agent.stopParked()
      }
      // the batch waits for a hook or a body now: a cancel deferred by an observer lands first
      const before = this.agent.cancelled
      this.agent.waitPoint()
      if (this.agent.cancelled === before) break
    }
    // done when both sides are done and no body runs (TL-15, TL-17: no turn/end before the drain)
    if (this.#finished) {
      const outcome: StepOutcome = this.#failure ? 'error' : this.agent.cancelled ? 'aborted' : this.#concluded ? 'completed' : 'continue'
      this.#resolve({ outcome, ...(this.#failure ? { failure: this.#failure } : {}) })
      this.#resolve = () => {}
    }
  }

  #fail(error: unknown): void {
    this.#failure ??= failureOf(error)
  }

  /** The dispatch side: classify and start the next call when there is room (spec 7.7). */
  #dispatch(): boolean {
    if (this.#dispatchDone || this.#preRunning) return false
    if (this.#nextStart >= this.calls.length || this.#halted) {
      this.#dispatchDone = true
      return true
    }
    if (this.#barrier) {
      if (!this.#drained) return false
      this.#barrier = false
      this.#start()
      return true
    }
    if (this.#commitBusy || !(this.#drained || this.#poolRoom)) return false
    // before a call starts: a deferred cancel lands here (TL-14)
    if ((!this.agent.mutated('no-checkpoint-before-call') && this.agent.checkpoint()) || this.#halted) {
      this.#dispatchDone = true
      return true
    }
    const declared = this.#tool(this.calls[this.#nextStart].name)?.parallel === true
    const parallel = this.agent.mutated('parallel-as-exclusive') ? false : this.agent.mutated('exclusive-as-parallel') ? true : declared
    if (this.#drained) {
      this.#pool = parallel
      this.#start()
    } else if (parallel && this.#poolRoom) {
      this.#start()
    } else {
      this.#pool = false
      this.#barrier = true
    }
    return true
  }

  #start(): void {
    const i = this.#nextStart
    const call = this.calls[i]
    const { turn, step } = this.agent.turnStep
    try {
      this.#callSeqs[i] = this.agent.append('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments }).seq
    } catch (error) {
      this.#fail(error) // TL-17
      if (this.agent.mutated('scheduler-failure-goes-on')) this.#failure = null
      this.#dispatchDone = true
      return
    }
    this.#started[i] = true
    this.#inFlight++
    this.#preRunning = true
    const execution = { turn, step, callId: call.id, name: call.name, arguments: parseArguments(call.arguments), signal: this.agent.signal }
    this.agent.waterfall('tools/pre-execute', execution, { kind: 'allow' }).then(
      (decision) => {
        this.#preRunning = false
        this.#nextStart = i + 1
        if (this.#failure) return this.#endWithoutBody(i, ABORTED_BEFORE_DISPATCH, true)
        const denies = decision?.kind === 'deny' && this.agent.mutated('deny-after-abort-denied')
        if (this.agent.cancelled && !denies) return this.#endWithoutBody(i, ABORTED_BEFORE_DISPATCH) // TL-16
        if (decision?.kind === 'ask' && this.agent.mutated('ask-without-approver-runs') && !this.agent.options.approvals) decision = { kind: 'allow' }
        if (decision?.kind === 'ask' && !this.agent.options.approvals) {
          const reason = `approval required, and no approver is configured: ${String(decision.reason)}`
          return this.#endWithoutBody(i, errorOutcome(reason, this.#denied()))
        }
        if (decision?.kind === 'ask') return this.#ask(i, execution, String(decision.reason))
        if (decision?.kind === 'deny')
          return this.#endWithoutBody(i, errorOutcome(String(decision.reason), this.#denied()), this.agent.mutated('deny-skips-post'))
        this.#runBody(i, execution)
        this.#pump()
      },
      (error) => {
        this.#preRunning = false
        this.#nextStart = i + 1
        if (this.agent.cancelled && this.agent.mutated('pre-throw-after-abort-aborted')) return this.#endWithoutBody(i, ABORTED_BEFORE_DISPATCH)
        this.#endWithoutBody(i, errorOutcome(failureOf(error).message), !this.agent.mutated('pre-throw-runs-post')) // TL-10: post-execute skipped
      },
    )
  }

  /** TL-18: the call waits for a person; nothing else starts meanwhile; a cancel closes it as not started. */
  #ask(i: number, execution: { callId: string; signal: AbortSignal; arguments: unknown }, reason: string): void {
    const { turn, step } = this.agent.turnStep
    const call = this.calls[i]
    try {
      this.agent.append('tool/approval-request', { turn, step, callId: call.id, name: call.name, reason })
    } catch (error) {
      this.#fail(error) // TL-17: the call never reaches its body
      return this.#endWithoutBody(i, ABORTED_BEFORE_DISPATCH, true)
    }
    this.#preRunning = true // dispatch waits for the answer
    this.#asking = i
    const signal = this.agent.signal
    const onAbort = () => {
      this.agent.approvalWaits.delete(call.id)
      this.#asking = -1
      this.#preRunning = false
      this.#endWithoutBody(i, ABORTED_BEFORE_DISPATCH, this.agent.mutated('approval-cancel-skips-post'))
    }
    signal.addEventListener('abort', onAbort, { once: true })
    this.agent.approvalWaits.set(call.id, ({ approved, reason: why }) => {
      signal.removeEventListener('abort', onAbort)
      this.#asking = -1
      this.#preRunning = false
      const answer = approved
        ? { decision: 'approve' }
        : this.agent.mutated('approval-deny-reason-lost')
          ? { decision: 'deny' }
          : { decision: 'deny', reason: why ?? 'denied' }
      try {
        this.agent.append('tool/approval-answer', { turn, step, callId: call.id, ...answer })
      } catch (error) {
        this.#fail(error)
        return this.#endWithoutBody(i, ABORTED_BEFORE_DISPATCH, true)
      }
      if (!approved) return this.#endWithoutBody(i, errorOutcome(why ?? 'denied', this.#denied()))
      this.#runBody(i, execution)
      this.#pump()
    })
    this.#pump()
  }

  /** The error of a denied call (TL-9, TL-18). */
  #denied(): Outcome['error'] {
    return { name: 'ToolDeniedError', code: this.agent.mutated('deny-code-wrong') ? 'DENIED_BY_HOOK' : 'DENIED' }
  }

  #endWithoutBody(i: number, outcome: Outcome, skipPost = false): void {
    this.#outcomes[i] = outcome
    this.#skipPost[i] = skipPost
    this.#inFlight--
    this.#pump()
  }

  #runBody(i: number, execution: { callId: string; signal: AbortSignal; arguments: unknown }): void {
    const tool = this.#tool(this.calls[i].name)
    const body = tool
      ? Promise.resolve().then(() => tool.execute(execution.arguments as Json, { callId: execution.callId, signal: execution.signal }))
      : Promise.reject(Object.assign(new Error(`unknown tool ${this.calls[i].name}`), { code: 'UNKNOWN_TOOL' }))
    body.then(
      (value) => {
        const outcome: Outcome =
          typeof value === 'string'
            ? { isError: false, content: value }
            : {
                isError: false,
                content: value.content,
                ...(value.concludesTurn && !this.agent.mutated('concludes-ignored') ? { concludesTurn: true } : {}),
                ...(value.additionalContexts?.length ? { additionalContexts: value.additionalContexts } : {}),
              }
        // TL-15: a body that succeeds after the abort is recorded as aborted, keeping its contexts
        this.#settleBody(
          i,
          this.agent.cancelled && !this.agent.mutated('after-abort-kept')
            ? {
                ...ABORTED_WHILE_RUNNING,
                ...(outcome.additionalContexts && !this.agent.mutated('after-abort-drops-contexts') ? { additionalContexts: outcome.additionalContexts } : {}),
              }
            : outcome,
        )
      },
      (error) => this.#settleBody(i, this.agent.cancelled && this.agent.mutated('thrown-after-abort-aborted') ? ABORTED_WHILE_RUNNING : this.#thrown(error)),
    )
  }

  /** TL-8: a body that throws. */
  #thrown(error: unknown): Outcome {
    const message = failureOf(error).message
    if (this.agent.mutated('thrown-without-prefix')) return { isError: true, content: message }
    return { ...errorOutcome(message), ...(this.agent.mutated('thrown-not-error') ? { isError: false } : {}) }
  }

  #settleBody(i: number, outcome: Outcome): void {
    this.#outcomes[i] = outcome
    this.#inFlight--
    this.#pump()
  }

  /** The commit side: post-execute, notification, tool/result, contexts; synthetic pairs after an abort (TL-14). */
  #commit(): boolean {
    if (this.#commitDone || this.#postRunning) return false
    if (this.#nextCommit >= this.calls.length || this.#failure) {
      this.#commitDone = true
      return true
    }
    const i = this.#nextCommit
    const call = this.calls[i]
    if (this.agent.cancelled && !this.#started[i] && (this.#dispatchDone || !this.#preRunning)) {
      if (!this.#dispatchDone) return false
      if (this.agent.mutated('no-synthetic-pairs')) {
        this.#nextCommit++
        return true
      }
      const { turn, step } = this.agent.turnStep
      try {
        const seq = this.agent.append('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments }).seq
        this.#callSeqs[i] = seq
        this.#log(
          i,
          this.agent.mutated('synthetic-code-wrong') ? { ...ABORTED_BEFORE_DISPATCH, error: { name: 'AbortError', code: 'ABORTED' } } : ABORTED_BEFORE_DISPATCH,
        )
      } catch (error) {
        this.#fail(error)
      }
      this.#nextCommit++
      return true
    }
    const outcome = this.#outcomes[i]
    if (outcome === null) return false
    if (this.#skipPost[i]) {
      this.#commitOne(i, outcome)
      return true
    }
    this.#postRunning = true
    const { turn, step } = this.agent.turnStep
    const execution = { turn, step, callId: call.id, name: call.name, arguments: parseArguments(call.arguments), signal: this.agent.signal, outcome }
    this.agent.waterfall('tools/post-execute', execution, { kind: 'accept' }).then(
      (decision) => {
        this.#postRunning = false
        this.#commitOne(i, applyPost(outcome, decision, this.agent))
        this.#pump()
      },
      (error) => {
        this.#postRunning = false
        this.#commitOne(i, this.agent.mutated('post-throw-keeps-outcome') ? outcome : errorOutcome(failureOf(error).message))
        this.#pump()
      },
    )
    return true
  }

  #commitOne(i: number, outcome: Outcome): void {
    const { turn, step } = this.agent.turnStep
    const call = this.calls[i]
    this.#nextCommit = i + 1
    try {
      this.agent.notify('tools/result', { turn, step, callId: call.id, outcome })
      this.#log(i, outcome)
      // TL-12: contexts wait in next-step
      this.agent.insertNextStep(outcome.additionalContexts ?? [])
    } catch (error) {
      this.#fail(error)
      return
    }
    if (outcome.concludesTurn && !outcome.isError) this.#concluded = true
    if (this.agent.mutated('concludes-despite-block') && this.#outcomes[i]?.concludesTurn === true) this.#concluded = true
  }

  #log(i: number, outcome: Outcome): void {
    const { turn, step } = this.agent.turnStep
    const callId = this.calls[i].id
    const message = {
      id: this.agent.messageId(),
      role: 'user',
      source: { kind: 'tool', callId },
      content: [{ type: 'tool-result', toolCallId: callId, content: outcome.content, isError: outcome.isError }],
    }
    const data = { turn, step, message, ...(outcome.error ? { error: outcome.error } : {}) }
    this.agent.append('tool/result', data, {
      surfaceOp: 'append',
      ...(this.agent.mutated('result-cites-nothing') ? {} : { sourceEventSeqs: [this.#callSeqs[i]] }),
    })
  }
}

/** TL-10: accept (optionally replacing content) or block with feedback. */
function applyPost(outcome: Outcome, decision: any, agent: IndependentAgent): Outcome {
  if (decision?.kind === 'block') {
    if (agent.mutated('block-keeps-content')) return { ...outcome, isError: true }
    if (agent.mutated('block-keeps-contexts')) return { ...outcome, isError: true, content: String(decision.feedback ?? ''), error: undefined }
    return { isError: !agent.mutated('block-not-error'), content: String(decision.feedback ?? '') }
  }
  if (typeof decision?.content === 'string' && !agent.mutated('replace-ignored'))
    return { ...outcome, content: decision.content, ...(agent.mutated('replace-clears-error') ? { isError: false } : {}) }
  return outcome
}

/** TL-1: empty is {}, valid JSON its value, anything else the raw text. */
function parseArguments(raw: string): unknown {
  if (raw.trim() === '') return {}
  try {
    return JSON.parse(raw)
  } catch {
    return raw
  }
}

// ---- stream assembly (BEHAVIOURS 1.4) -------------------------------------------------

interface Slot {
  kind: string
  text: string
  id?: string
  name?: string
  closed?: Json
}

/** Blocks in first-seen order; block-end is authoritative; deltas assemble unclosed blocks; last usage wins. */
export function assemble(chunks: Chunk[], mutation?: Mutation): { content: any[]; finish: any; usage?: Json } {
  const mutated = (name: Mutation) => mutation === name
  const slots = new Map<number, Slot>()
  let finish: any = mutated('no-finish-is-error')
    ? { kind: 'error', failure: { message: 'the stream ended with no finish', code: 'UNKNOWN' } }
    : { kind: 'stop' }
  let usage: Json | undefined
  for (const chunk of chunks) {
    const c = chunk as any
    if (c.type === 'finish') {
      finish = c.reason
      break
    }
    if (c.type === 'usage') {
      if (usage === undefined || !mutated('first-usage-wins')) usage = c.usage
      continue
    }
    const kind =
      c.type === 'block-start'
        ? c.blockType
        : c.type === 'text-delta'
          ? 'text'
          : c.type === 'reasoning-delta'
            ? 'reasoning'
            : c.type === 'tool-call-delta'
              ? 'tool-call'
              : c.block?.type
    let slot = slots.get(c.index)
    if (!slot) {
      slot = { kind, text: '' }
      slots.set(c.index, slot)
    }
    if (slot.closed !== undefined) {
      // the mutants: a second block-end replaces the first; a delta after the close extends it
      const closed = slot.closed as any
      if (mutated('second-close-wins') && c.type === 'block-end') slot.closed = c.block
      else if (mutated('deltas-after-close') && typeof c.text === 'string' && typeof closed.text === 'string')
        slot.closed = { ...closed, text: closed.text + c.text }
      continue
    }
    if (c.type === 'block-end') slot.closed = mutated('block-end-not-authoritative') ? undefined : c.block
    else if (c.type === 'text-delta' || c.type === 'reasoning-delta') slot.text += c.text
    else if (c.type === 'tool-call-delta') {
      slot.text += c.argumentsDelta
      slot.id ||= c.id
      slot.name ||= c.name
    }
  }
  const entries = [...slots.entries()]
  if (mutated('blocks-by-index')) entries.sort(([a], [b]) => a - b)
  const content = entries.flatMap(([index, slot]) => {
    if (slot.closed !== undefined) return [slot.closed]
    if (slot.kind === 'text' || slot.kind === 'reasoning') return [{ type: slot.kind, text: slot.text }]
    if (slot.kind === 'tool-call') return [{ type: 'tool-call', id: slot.id ?? `call-${index}`, name: slot.name ?? '', arguments: slot.text }]
    return []
  })
  return { content, finish, ...(usage !== undefined ? { usage } : {}) }
}

// agent.run(input): follow one queued prompt through the log until the turn
// that claimed it ends, or until it is discarded or left parked, so every run
// settles.
import type { InboxLists } from '../machines/types.js'
import type { OutputSchemas } from '../request/options.js'
import { zeroUsage, type LogIndex, type RunResult, type UnrunResult } from './results.js'
import type { SessionEvent, SessionEventOf } from '../session/schemas.js'

interface PendingRun {
  readonly id: string
  /** The turn that claimed the input, once it has. */
  turn: number | null
  readonly resolve: (result: RunResult<any> | Promise<RunResult<any>>) => void
}

interface RunTrackerOptions {
  index: LogIndex
  schemas: OutputSchemas
  /** The inbox before the splice being published (IN-2: observers read the pre-mutation lists). */
  lists: () => InboxLists
  /** Resolves once the agent rests idle (or is disposed). */
  whenIdle: () => Promise<void>
  /** Whether an activity runs now. */
  running: () => boolean
  /** The call of `turn` whose question a disposal left pending, if any (docs/approvals.md). */
  awaiting: (turn: number) => string | undefined
  /** Agents over a store: resolves once every event appended so far is committed; never rejects. */
  committed?: () => Promise<void>
}

const unrun = (end: UnrunResult['end']): UnrunResult => ({ turn: null, end, text: '', message: undefined, usage: zeroUsage(), steps: 0 })

/** Tracks the inputs of pending `agent.run()` calls by message id, from the events the runtime appends. */
export class RunTracker {
  readonly #options: RunTrackerOptions
  /** In call order; an id may recur once its earlier run was claimed (IN-6). */
  #pending: PendingRun[] = []
  /** The turn whose `turn/start` was seen last: a next-turn claim belongs to it. */
  #openTurn = 0

  constructor(options: RunTrackerOptions) {
    this.#options = options
  }

  /**
   * Starts following message `id`; `send` queues it (and may throw, which
   * then propagates with nothing left behind). Why: the observer must be in
   * place before a waking send claims the input synchronously (PH-2).
   */
  follow<T>(id: string, send: () => void): Promise<RunResult<T>> {
    let resolve!: (result: RunResult<any> | Promise<RunResult<any>>) => void
    const promise = new Promise<RunResult<T>>((r) => (resolve = r))
    const run: PendingRun = { id, turn: null, resolve }
    this.#pending.push(run)
    try {
      send()
    } catch (error) {
      this.#settle(run)
      throw error
    }
    this.#watchIdle(run)
    return promise
  }

  /** Sees each event the runtime appended, before the inbox view moves past it (IN-2). */
  onAppend(event: SessionEvent): void {
    switch (event.type) {
      case 'turn/start':
        this.#openTurn = event.data.turn
        return
      case 'agent/inbox/spliced':
        return this.#pending.length > 0 ? this.#onSplice(event) : undefined
      case 'turn/end':
        return this.#onTurnEnd(event)
    }
  }

  /** A claim gives a pending input its turn; a canceled splice that does not put it back discards it. */
  #onSplice(event: SessionEventOf<'agent/inbox/spliced'>): void {
    const { target, start, removedCount, inserted, outcome } = event.data
    if (!removedCount) return
    const list = target === 'next-turn' ? this.#options.lists().nextTurn : this.#options.lists().nextStep
    for (const message of list.slice(start, start + removedCount)) {
      const run = this.#pending.find((r) => r.id === message.id && r.turn === null)
      if (run === undefined) continue
      if (outcome !== 'canceled') run.turn = this.#openTurn
      else if (!inserted.some((m) => m.id === run.id)) this.#finish(run, unrun({ kind: 'discarded', seq: event.seq }))
    }
  }

  #onTurnEnd(event: SessionEventOf<'turn/end'>): void {
    const { index, schemas } = this.#options
    for (const run of this.#pending.filter((r) => r.turn === event.data.turn)) this.#finish(run, index.turnResult(event.data.turn, event.seq, schemas))
  }

  /** When the agent rests idle, an input still queued is parked; a claimed one without `turn/end` lost that append (TU-15). */
  #watchIdle(run: PendingRun): void {
    void this.#options.whenIdle().then(() => {
      if (!this.#pending.includes(run)) return
      if (this.#options.running()) return this.#watchIdle(run) // a latched wake started another activity meanwhile
      if (run.turn === null) return this.#finish(run, unrun({ kind: 'parked' }))
      const callId = this.#options.awaiting(run.turn)
      if (callId !== undefined) {
        const end = { kind: 'awaiting-approval' as const, callId }
        return this.#finish(run, { turn: run.turn, end, text: '', message: undefined, usage: zeroUsage(), steps: 0 })
      }
      const message = `turn ${run.turn} has no logged turn/end (appending it failed; agent/error reported why)`
      this.#finish(run, {
        turn: run.turn,
        end: { kind: 'error', error: { message, code: 'TURN_END_NOT_LOGGED' } },
        text: '',
        message: undefined,
        usage: zeroUsage(),
        steps: 0,
      })
    })
  }

  #finish(run: PendingRun, result: RunResult<any>): void {
    this.#settle(run)
    // over a store the result is an acknowledgement, and acknowledged means committed: resolve once the events
    // that decided it are stored (after the publish in progress, so no commit runs inside an observer)
    const { committed } = this.#options
    run.resolve(
      committed === undefined
        ? result
        : Promise.resolve()
            .then(committed)
            .then(() => result),
    )
  }

  #settle(run: PendingRun): void {
    this.#pending = this.#pending.filter((r) => r !== run)
  }
}

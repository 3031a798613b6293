// Options of one turn: `agent.run(input, options)` and `agent.followup(input,
// options)`. Checked at the call (a bad one throws before anything is queued),
// handed to the machine with the prompt, and followed through the log so an
// aborted signal reaches only the turn it was given for.
import { ConfigError } from '../errors.js'
import { describeValue, isRecordLike } from '../values/foreign.js'
import type { InboxLists, TurnOptions } from '../machines/types.js'
import { toLoggedConfig, type OutputSchemas, type RequestOptions } from '../request/options.js'
import { AgentCancelCauseSchema, type AgentCancelCause, type SessionEvent } from '../session/schemas.js'

/** What one turn may change: its requests' options, its step limit, and a signal that cancels it. */
export interface RunOptions {
  /**
   * Request options of this turn's requests only, merged over the agent's (createAgent's `request` and whatever an
   * `agent/request` listener made the seed): `responseFormat`, `providerOptions`, `temperature`, `toolChoice`, ...
   * They are logged in the turn's request headers; the next turn's requests go without them.
   */
  request?: RequestOptions
  /** This turn's step limit instead of createAgent's `maxSteps` (a positive integer, or `Infinity`). */
  maxSteps?: number
  /**
   * Aborting it cancels this turn (the cause is the signal's reason when that is an AgentCancelCause, else
   * `{ kind: 'user' }`; queued input is kept), or discards the input while it is still queued.
   */
  signal?: AbortSignal
}

const KEYS = new Set(['request', 'maxSteps', 'signal'])

/** The checked options as the machine takes them, and the signal; throws a ConfigError naming the bad option. */
export function checkRunOptions(options: unknown, schemas: OutputSchemas): { turn: TurnOptions | undefined; signal: AbortSignal | undefined } {
  if (options === undefined) return { turn: undefined, signal: undefined }
  if (!isRecordLike(options)) throw new ConfigError(`run options must be an object, got ${describeValue(options)}`, { path: 'options' })
  for (const key of Object.keys(options)) {
    if (!KEYS.has(key))
      throw new ConfigError(`unknown run option ${JSON.stringify(key)}; the options are request, maxSteps, signal`, { path: `options.${key}` })
  }
  const { request, maxSteps, signal } = options as RunOptions
  const turn: { request?: TurnOptions['request']; maxSteps?: number | null } = {}
  if (request !== undefined) {
    if (!isRecordLike(request)) throw new ConfigError(`options.request must be an object, got ${describeValue(request)}`, { path: 'options.request' })
    if ('provider' in request || 'model' in request) {
      throw new ConfigError('options.request cannot set provider or model (they come from the model adapter)', { path: 'options.request' })
    }
    const { provider: _p, model: _m, ...layer } = toLoggedConfig(request, schemas, 'options.request', true)
    turn.request = layer
  }
  if (maxSteps !== undefined) {
    if (maxSteps !== Infinity && (typeof maxSteps !== 'number' || !Number.isSafeInteger(maxSteps) || maxSteps <= 0)) {
      throw new ConfigError(`options.maxSteps must be a positive safe integer or Infinity, got ${describeValue(maxSteps)}`, { path: 'options.maxSteps' })
    }
    turn.maxSteps = maxSteps === Infinity ? null : maxSteps
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ConfigError(`options.signal must be an AbortSignal, got ${describeValue(signal)}`, { path: 'options.signal' })
  }
  return { turn: turn.request !== undefined || turn.maxSteps !== undefined ? turn : undefined, signal }
}

/**
 * The cancel cause an aborted signal stands for: its reason when that is a cause other than disposal (which is
 * dispose()'s alone), else the user's. Never throws: a reason whose reads throw is not a cause.
 */
function causeOf(signal: AbortSignal): AgentCancelCause {
  try {
    const parsed = AgentCancelCauseSchema.safeParse(signal.reason)
    if (parsed.success && parsed.data.kind !== 'disposed') return parsed.data
  } catch {
    // a getter or proxy trap that throws
  }
  return { kind: 'user' }
}

/** What an aborted turn signal does to the agent: discard its queued input, or cancel the turn running it. */
interface TurnSignalTarget {
  lists: () => InboxLists
  /** Removes a queued message; false when it is not pending. */
  remove: (id: string) => boolean
  /** The turn running now, or null. */
  runningTurn: () => number | null
  cancel: (cause: AgentCancelCause) => void
}

/** The prompts given a signal, until their turn ends or they are discarded: which turn claimed each (from the log). */
export class TurnSignals {
  readonly #target: TurnSignalTarget
  readonly #watched = new Map<string, { turn: number | null; stop: () => void }>()
  #openTurn = 0

  constructor(target: TurnSignalTarget) {
    this.#target = target
  }

  /** Follows prompt `id` until its turn ends; an abort of `signal` then cancels that turn only. */
  watch(id: string, signal: AbortSignal): () => void {
    this.#watched.get(id)?.stop()
    const onAbort = () => this.#aborted(id, signal)
    const stop = () => {
      signal.removeEventListener('abort', onAbort)
      if (this.#watched.get(id)?.stop === stop) this.#watched.delete(id)
    }
    this.#watched.set(id, { turn: null, stop })
    signal.addEventListener('abort', onAbort, { once: true })
    return stop
  }

  /** Sees each event the runtime appended, before the inbox view moves past it. */
  onAppend(event: SessionEvent): void {
    if (this.#watched.size === 0) {
      if (event.type === 'turn/start') this.#openTurn = event.data.turn
      return
    }
    if (event.type === 'turn/start') this.#openTurn = event.data.turn
    else if (event.type === 'turn/end') {
      for (const entry of [...this.#watched.values()]) if (entry.turn === event.data.turn) entry.stop()
    } else if (event.type === 'agent/inbox/spliced' && event.data.target === 'next-turn' && event.data.removedCount) {
      const { start, removedCount, inserted, outcome } = event.data
      for (const message of this.#target.lists().nextTurn.slice(start, start + removedCount)) {
        const entry = this.#watched.get(message.id)
        if (entry === undefined || entry.turn !== null) continue
        // a claim gives the prompt its turn; a discard that does not put it back ends the watch
        if (outcome !== 'canceled') entry.turn = this.#openTurn
        else if (!inserted.some((m) => m.id === message.id)) entry.stop()
      }
    }
  }

  #aborted(id: string, signal: AbortSignal): void {
    const entry = this.#watched.get(id)
    if (!entry) return
    if (entry.turn === null) {
      entry.stop()
      this.#target.remove(id)
    } else if (this.#target.runningTurn() === entry.turn) {
      this.#target.cancel(causeOf(signal))
    }
  }
}

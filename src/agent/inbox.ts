// The Inbox handle (agent.inbox) over the machine's pending lists (stores/checkpoint.ts rebuilds them from the log).
import { ConfigError, InboxError } from '../errors.js'
import { describeValue } from '../values/foreign.js'
import { hasPending } from '../machines/inbox.js'
import { toInboxMessage } from '../request/messages.js'
import type { Runtime } from '../runtime/runtime.js'
import type { InboxTarget, UserMessage } from '../session/schemas.js'

/** The pending lists, a read-only projection of the log's splices plus the mutations users may make. */
export class Inbox {
  readonly #runtime: () => Runtime
  readonly #guard: () => void
  constructor(runtime: () => Runtime, guard: () => void) {
    this.#runtime = runtime
    this.#guard = guard
  }
  get nextTurn(): readonly UserMessage[] {
    return this.#runtime().lists.nextTurn
  }
  get nextStep(): readonly UserMessage[] {
    return this.#runtime().lists.nextStep
  }
  get hasPending(): boolean {
    return hasPending(this.#runtime().lists)
  }
  /** Remove a pending message by id; false (and nothing logged) when it is not pending (IN-5). */
  remove(id: string): boolean {
    this.#guard()
    return pendingAnswer(() => this.#runtime().dispatch({ type: 'inbox.remove', id }))
  }
  /** Replace a pending message in place with one canceled splice (IN-4); false when `id` is not pending. */
  replace(id: string, message: UserMessage | string): boolean {
    this.#guard()
    const next = toInboxMessage(message)
    return pendingAnswer(() => this.#runtime().dispatch({ type: 'inbox.replace', id, message: next }))
  }
  /**
   * Array-style splice of one list (IN-3): `start` and `deleteCount` normalize like Array.prototype.splice
   * (an omitted deleteCount with nothing to insert removes to the end); removals are canceled; it never wakes.
   */
  splice(target: InboxTarget, start: number, deleteCount?: number, ...messages: Array<UserMessage | string>): void {
    this.#guard()
    if (target !== 'next-turn' && target !== 'next-step')
      throw new ConfigError(`target must be 'next-turn' or 'next-step', got ${describeValue(target)}`, { path: 'target' })
    const inserted = messages.map((message) => toInboxMessage(message))
    this.#runtime().dispatch({ type: 'inbox.splice', target, start, deleteCount, messages: inserted })
  }
  /** Discard everything pending: next-step first, then next-turn (IN-5). */
  clear(): void {
    this.#guard()
    this.#runtime().dispatch({ type: 'inbox.clear' })
  }
}

/** True when the machine took an inbox request that names a pending id; false when it refused it as not pending (IN-5). */
function pendingAnswer(dispatch: () => void): boolean {
  try {
    dispatch()
    return true
  } catch (error) {
    if (error instanceof InboxError && error.code === 'NOT_PENDING') return false
    throw error
  }
}

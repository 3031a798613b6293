// The durability gate: with a store, work that leaves the process (a listened
// hook, the model request, a tool body, a maintenance job) starts only once
// every event appended before it is committed, so nothing outside ever acts
// on a log the store could lose. Notices a person acts on (an approval
// question) wait the same way, so nobody answers a question the store lost. A failed commit is reported once, as the
// refused append of the earliest uncommitted event; the session is halted by
// then, so whatever the machine appends next is refused too and the stored
// log stays a prefix a resume can repair.
import type { Effect } from '../machines/types.js'
import type { SessionEventType } from '../session/schemas.js'
import type { Durability } from '../stores/writer.js'

/** Effects with an id that start work outside the machine. */
export type WorkEffect = Extract<Effect, { type: 'fx.hook' | 'fx.prepare' | 'fx.model' | 'fx.tool' | 'fx.job' | 'fx.wait' | 'fx.summarise' }>

interface GateOptions {
  durability: Durability
  /** How many events the log holds now: held work waits until the store holds that many. */
  logLength: () => number
  /** Whether the effect runs outside the process (a hook nobody listens to decides in-process and passes). */
  reachesOut: (effect: WorkEffect) => boolean
  /** Starts work the gate let through. */
  start: (effect: WorkEffect) => void
  /** The store failed: `eventType` is the earliest event it did not take (null once it had failed already); `held` never started. */
  failed: (error: unknown, eventType: SessionEventType | null, held: readonly WorkEffect[]) => void
}

/** What waits at the gate: work the machine hears back from, or a notice that is simply dropped if the store fails. */
type Held = { effect: WorkEffect; through: number } | { notice: () => void; through: number }

export class DurabilityGate {
  /** Outside work and notices waiting for the store, each with the log length it must see committed; released in order. */
  #held: Held[] = []
  #state: 'open' | 'draining' | 'waiting' = 'open'

  constructor(readonly options: GateOptions) {}

  /** Holds `effect` until the store has caught up (or refuses it once the store failed); false when it may start now. */
  holds(effect: WorkEffect): boolean {
    const { durability } = this.options
    if (durability.fault !== null) {
      this.options.failed(durability.fault, null, [effect])
      return true
    }
    if (this.#held.length === 0 && (!durability.pending || !this.options.reachesOut(effect))) return false
    this.#held.push({ effect, through: this.options.logLength() })
    if (this.#state === 'open') this.#drain()
    return true
  }

  /**
   * Runs `notice` once every event appended so far is committed: at once when nothing waits, never when the
   * store fails (the machine then hears of the failure, even if no work was waiting to tell it).
   */
  afterCommit(notice: () => void): void {
    const { durability } = this.options
    if (durability.fault !== null) return
    if (this.#held.length === 0 && !durability.pending) return notice()
    this.#held.push({ notice, through: this.options.logLength() })
    if (this.#state === 'open') this.#drain()
  }

  /** Starts held work in order as the commits it waits for complete. */
  #drain(): void {
    const { durability } = this.options
    this.#state = 'draining'
    while (this.#held.length > 0) {
      const held = this.#held[0]
      const { through } = held
      let waiting: Promise<void> | undefined
      try {
        waiting = durability.commitThrough(through)
      } catch (error) {
        return this.#storeFailed(error)
      }
      if (waiting !== undefined) {
        this.#state = 'waiting'
        waiting.then(
          () => this.#drain(),
          (error: unknown) => this.#storeFailed(error),
        )
        return
      }
      this.#held.shift()
      if ('effect' in held) this.options.start(held.effect)
      else held.notice()
    }
    this.#state = 'open'
  }

  #storeFailed(error: unknown): void {
    // notices of events the store did not take are dropped: what they announce is not in the log
    const held = this.#held.flatMap((h) => ('effect' in h ? [h.effect] : []))
    this.#held = []
    this.#state = 'open'
    this.options.failed(error, this.options.durability.failedType ?? null, held)
  }
}

// The runtime's clocks: a retry's backoff, the grace periods of cancels, and
// the count of steps run without a turn of the event loop (CX-16).

import { MAX_TIMER_MS } from '../values/timer.js'

/** How many steps may follow each other without the event loop turning before a step boundary yields to it. */
const STEPS_PER_YIELD = 16

export class Timers {
  /** Grace periods of cancels (`cancel({ graceMs })`) still counting; ended when the machine rests. */
  readonly #graces = new Set<ReturnType<typeof setTimeout>>()
  #stepsWithoutYield = 0
  #loopWatch = false

  constructor(readonly logger: { error(message: string, error: unknown): void }) {}

  /**
   * Before a model request (CX-16): true once STEPS_PER_YIELD requests started with no turn of the event loop
   * between them. Why: a model and tools that never wait for I/O would starve timers (a cancel from
   * a setTimeout); a turn whose steps wait for I/O anyway keeps its exact ordering.
   */
  mustYield(): boolean {
    if (!this.#loopWatch) {
      this.#loopWatch = true
      setImmediate(() => {
        this.#loopWatch = false
        this.#stepsWithoutYield = 0
      })
    }
    if (++this.#stepsWithoutYield < STEPS_PER_YIELD) return false
    this.#stepsWithoutYield = 0
    return true
  }

  /** Run `lapse` `graceMs` from now unless the graces end first (`endGraces`). */
  grace(graceMs: number, lapse: () => void): void {
    const timer = setTimeout(
      () => {
        this.#graces.delete(timer)
        lapse()
      },
      Math.min(graceMs, MAX_TIMER_MS),
    )
    this.#graces.add(timer)
  }

  endGraces(): void {
    if (this.#graces.size === 0) return
    for (const timer of this.#graces) clearTimeout(timer)
    this.#graces.clear()
  }

  /**
   * A retry's backoff (RQ-14): `elapsed` runs after `ms`, unless the turn was cancelled meanwhile (the machine
   * left the backoff at once then). A `sleep` that throws is logged and the retry starts without its wait: a
   * broken clock must not leave the turn waiting forever.
   */
  backoff(sleep: (ms: number, signal: AbortSignal) => Promise<void>, signal: AbortSignal, ms: number, elapsed: () => void): void {
    const done = () => {
      if (!signal.aborted) elapsed()
    }
    new Promise<void>((resolve) => resolve(sleep(ms, signal))).then(done, (error: unknown) => {
      this.logger.error('agentchart: the sleep of a retry backoff failed; the retry starts now', error)
      done()
    })
  }
}

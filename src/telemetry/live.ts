// Live spans of an agent: after each append the runtime makes, the new events of the session go through the
// same derivation a stored log does (derive.ts), so what a tracer receives live is what an export would give.
import type { HookLogger } from '../runtime/hooks.js'
import type { Session } from '../session/session.js'
import { SpanDeriver } from './derive.js'
import { SpanWriter, type TelemetryOptions } from './tracer.js'

export class LiveTelemetry {
  readonly #session: Session
  readonly #deriver: SpanDeriver
  readonly #writer: SpanWriter
  readonly #logger: HookLogger
  #cursor: number
  #failed = false

  constructor(session: Session, options: TelemetryOptions, logger: HookLogger) {
    this.#session = session
    this.#logger = logger
    this.#deriver = new SpanDeriver({ sessionId: session.id, captureContent: options.captureContent === true })
    this.#writer = new SpanWriter(options)
    // the seed was exported by whoever ran it: read it for state, and reopen only what it leaves open (a resumed turn)
    const seed = session.events
    const reopened = this.#deriver.replay(seed)
    this.#cursor = seed.length
    this.#guarded(() => {
      for (const op of reopened) this.#writer.apply(op)
    })
  }

  /** Derive and write the spans of every event committed since the last call. */
  catchUp(): void {
    this.#guarded(() => {
      const session = this.#session
      while (this.#cursor < session.length) {
        const event = session.at(this.#cursor++)
        if (event !== undefined) for (const op of this.#deriver.push(event)) this.#writer.apply(op)
      }
    })
  }

  /** A failing tracer must not fail an append: reported once, and the agent goes on without spans. */
  #guarded(run: () => void): void {
    if (this.#failed) return
    try {
      run()
    } catch (error) {
      this.#failed = true
      this.#logger.error('agentchart: the telemetry tracer threw; no further spans are written for this agent', error)
    }
  }
}

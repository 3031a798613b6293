// Live spans of an agent: after each append the runtime makes, the new events of the session go through the
// same derivation a stored log does (derive.ts), so what a tracer receives live is what an export would give.
import type { HookLogger } from '../runtime/hooks.js'
import type { Session } from '../session/session.js'
import { causeAttributes, SpanDeriver, toolSpanId, type SpanAttributes } from './derive.js'
import { errorTypeOf, SpanWriter, type TelemetryContext, type TelemetryOptions } from './tracer.js'

export class LiveTelemetry {
  readonly #session: Session
  readonly #deriver: SpanDeriver
  readonly #writer: SpanWriter
  readonly #logger: HookLogger
  #cursor: number
  #failed = false
  #jobs = 0

  constructor(
    session: Session,
    readonly options: TelemetryOptions,
    logger: HookLogger,
  ) {
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

  /** The Context of the open span of tool call `callId`: a subagent's turns start under it. */
  contextOfCall(callId: string): TelemetryContext | null {
    if (this.#failed) return null
    this.catchUp()
    return this.#writer.contextOf(toolSpanId(callId))
  }

  /**
   * The job wrapped in a `maintenance` span from its start to its settling. Why: a job is not logged, so only the live
   * agent can draw it; its times come from the log's clock so it sits on the turns' timeline.
   */
  maintenance<T>(job: (signal: AbortSignal) => Promise<T>): (signal: AbortSignal) => Promise<T> {
    return (signal) => {
      const id = `maintenance:${++this.#jobs}`
      const state = { 'agentchart.state': 'maintenance', ...(this.#session.id ? { 'gen_ai.conversation.id': this.#session.id } : {}) }
      this.#guarded(() =>
        this.#writer.apply({ op: 'start', id, parent: null, name: 'maintenance', kind: 'internal', time: this.#session.now(), attributes: state }),
      )
      const end = (error?: unknown) => {
        const attributes: SpanAttributes = {}
        if (signal.aborted) Object.assign(attributes, { 'agentchart.cancelled': true, ...causeOf(signal.reason) })
        const failure = error === undefined ? undefined : { type: errorTypeOf(error), ...(error instanceof Error ? { message: error.message } : {}) }
        this.#guarded(() => this.#writer.apply({ op: 'end', id, time: this.#session.now(), attributes, ...(failure ? { error: failure } : {}) }))
      }
      let running: Promise<T>
      try {
        running = Promise.resolve(job(signal))
      } catch (error) {
        end(error)
        throw error
      }
      running.then(
        () => end(),
        (error: unknown) => end(error ?? new Error('the maintenance job rejected')),
      )
      return running
    }
  }

  /** A failing tracer must not fail an append: reported once, the spans it started are ended, and the agent goes on without spans. */
  #guarded(run: () => void): void {
    if (this.#failed) return
    try {
      run()
    } catch (error) {
      this.#failed = true
      this.#writer.abandon()
      this.#logger.error('agentchart: the telemetry tracer threw; no further spans are written for this agent', error)
    }
  }
}

/** The cancel cause a job's signal carries, as the turn spans record one. */
function causeOf(reason: unknown): SpanAttributes {
  const cause = typeof reason === 'object' && reason !== null && typeof (reason as { kind?: unknown }).kind === 'string' ? reason : null
  return cause ? causeAttributes(cause as Parameters<typeof causeAttributes>[0]) : {}
}

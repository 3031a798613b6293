// Hands derived span operations to an @opentelemetry/api Tracer. Only the API's types are imported: the
// Tracer the application passes does the work, so agentchart never loads the OpenTelemetry packages itself.
import type { Context, HrTime, Span, SpanKind, SpanStatusCode, Tracer } from '@opentelemetry/api'
import { ConfigError } from '../errors.js'
import { describeValue, isRecordLike } from '../foreign.js'
import type { SpanOp } from './derive.js'

/** What spans are written to, and what they may carry. */
export interface TelemetryOptions {
  /** The `Tracer` of `@opentelemetry/api` the spans are started on (e.g. `trace.getTracer('my-app')`). */
  tracer: Tracer
  /** Record message content (prompts, answers, tool arguments and results) as GenAI attributes; default false. */
  captureContent?: boolean
  /** The context whose span the root spans (turns, compactions from idle) are children of; default: each turn its own trace. */
  context?: Context
}

// the API's own key for the span a context carries: it is created with Symbol.for so every copy of the API agrees on it
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN')
// numeric values of the API's SpanKind and SpanStatusCode enums (only their types are imported)
const KIND = { internal: 0 as SpanKind, client: 2 as SpanKind }
const STATUS_ERROR = 2 as SpanStatusCode

/** An immutable Context as the API defines it, for parenting spans when the application gave none. */
class SpanContextCarrier implements Context {
  readonly #values: ReadonlyMap<symbol, unknown>
  constructor(values: ReadonlyMap<symbol, unknown> = new Map()) {
    this.#values = values
  }
  getValue(key: symbol): unknown {
    return this.#values.get(key)
  }
  setValue(key: symbol, value: unknown): Context {
    return new SpanContextCarrier(new Map(this.#values).set(key, value))
  }
  deleteValue(key: symbol): Context {
    const next = new Map(this.#values)
    next.delete(key)
    return new SpanContextCarrier(next)
  }
}

const ROOT = new SpanContextCarrier()

/** Epoch milliseconds as the API's [seconds, nanoseconds], so no SDK has to guess what a bare number means. */
export function hrTimeOf(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000)
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)]
}

/** The options checked, with a clear error naming the wrong one (RQ-3). */
export function checkTelemetryOptions(value: unknown, path = 'telemetry'): TelemetryOptions {
  if (!isRecordLike(value)) throw new ConfigError(`${path} must be an object { tracer, captureContent?, context? }, got ${describeValue(value)}`, { path })
  const { tracer, captureContent, context } = value
  if (!isRecordLike(tracer) || typeof tracer.startSpan !== 'function') {
    throw new ConfigError(`${path}.tracer must be a Tracer of @opentelemetry/api (with startSpan), got ${describeValue(tracer)}`, { path: `${path}.tracer` })
  }
  if (captureContent !== undefined && typeof captureContent !== 'boolean') {
    throw new ConfigError(`${path}.captureContent must be true or false, got ${describeValue(captureContent)}`, { path: `${path}.captureContent` })
  }
  if (context !== undefined && !(isRecordLike(context) && typeof context.getValue === 'function' && typeof context.setValue === 'function')) {
    throw new ConfigError(`${path}.context must be a Context of @opentelemetry/api, got ${describeValue(context)}`, { path: `${path}.context` })
  }
  return value as unknown as TelemetryOptions
}

/** Starts, annotates and ends real spans as the operations say; our span ids map to the tracer's spans. */
export class SpanWriter {
  readonly #tracer: Tracer
  readonly #base: Context
  readonly #spans = new Map<string, Span>()
  /** How many spans were ended. */
  ended = 0

  constructor(options: TelemetryOptions) {
    this.#tracer = options.tracer
    this.#base = options.context ?? ROOT
  }

  apply(op: SpanOp): void {
    switch (op.op) {
      case 'start': {
        const parent = op.parent === null ? undefined : this.#spans.get(op.parent)
        const context = parent === undefined ? this.#base : this.#base.setValue(SPAN_KEY, parent)
        const span = this.#tracer.startSpan(op.name, { kind: KIND[op.kind], startTime: hrTimeOf(op.time), attributes: op.attributes }, context)
        this.#spans.set(op.id, span)
        break
      }
      case 'event':
        this.#spans.get(op.id)?.addEvent(op.name, op.attributes, hrTimeOf(op.time))
        break
      case 'end': {
        const span = this.#spans.get(op.id)
        if (span === undefined) return
        this.#spans.delete(op.id)
        span.setAttributes(op.attributes)
        if (op.error) {
          span.setAttribute('error.type', op.error.type)
          span.setStatus({ code: STATUS_ERROR, ...(op.error.message !== undefined ? { message: op.error.message } : {}) })
        }
        span.end(hrTimeOf(op.time))
        this.ended++
        break
      }
    }
  }
}

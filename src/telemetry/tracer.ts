// Hands derived span operations to an OpenTelemetry Tracer. agentchart imports nothing of @opentelemetry/api, not
// even its types: the interfaces below are the part of the API's Tracer, Span and Context the spans use, so any
// Tracer of the API fits, the Tracer the application passes does the work, and a project without the API still
// type-checks agentchart's declarations.
import { ConfigError } from '../errors.js'
import { describeValue, isInstance, isRecordLike, peek } from '../values/foreign.js'
import type { SpanAttributes, SpanOp } from './derive.js'

/** A time as the API's HrTime: [seconds, nanoseconds] since the epoch. */
export type TelemetryTime = [number, number]

/** The part of an `@opentelemetry/api` Context the spans use (an API Context is one). */
export interface TelemetryContext {
  getValue(key: symbol): unknown
  setValue(key: symbol, value: unknown): TelemetryContext
  deleteValue(key: symbol): TelemetryContext
}

/** The part of an `@opentelemetry/api` Span the spans use. */
export interface TelemetrySpan {
  setAttribute(key: string, value: string | number | boolean | string[]): unknown
  setAttributes(attributes: SpanAttributes): unknown
  addEvent(name: string, attributes?: SpanAttributes, time?: TelemetryTime): unknown
  setStatus(status: { code: number; message?: string }): unknown
  end(endTime?: TelemetryTime): void
}

/** The part of an `@opentelemetry/api` Tracer the spans use: `trace.getTracer(name)` gives one. */
export interface TelemetryTracer {
  startSpan(name: string, options?: { kind?: number; startTime?: TelemetryTime; attributes?: SpanAttributes }, context?: TelemetryContext): TelemetrySpan
}

/** What spans are written to, and what they may carry. */
export interface TelemetryOptions {
  /** A `Tracer` of `@opentelemetry/api` the spans are started on (e.g. `trace.getTracer('my-app')`). */
  tracer: TelemetryTracer
  /** Record message content (prompts, answers, tool arguments and results) as GenAI attributes; default false. */
  captureContent?: boolean
  /** A Context whose span the root spans (turns, compactions from idle) are children of; default: each turn its own trace. */
  context?: TelemetryContext
}

// the API's own key for the span a context carries: it is created with Symbol.for so every copy of the API agrees on it
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN')
// the values of the API's SpanKind (INTERNAL, CLIENT) and SpanStatusCode (ERROR) enums
const KIND = { internal: 0, client: 2 }
const STATUS_ERROR = 2

/** An immutable Context as the API defines it, for parenting spans when the application gave none. */
class SpanContextCarrier implements TelemetryContext {
  readonly #values: ReadonlyMap<symbol, unknown>
  constructor(values: ReadonlyMap<symbol, unknown> = new Map()) {
    this.#values = values
  }
  getValue(key: symbol): unknown {
    return this.#values.get(key)
  }
  setValue(key: symbol, value: unknown): TelemetryContext {
    return new SpanContextCarrier(new Map(this.#values).set(key, value))
  }
  deleteValue(key: symbol): TelemetryContext {
    const next = new Map(this.#values)
    next.delete(key)
    return new SpanContextCarrier(next)
  }
}

const ROOT = new SpanContextCarrier()

/** Epoch milliseconds as the API's [seconds, nanoseconds], so no SDK has to guess what a bare number means. */
export function hrTimeOf(ms: number): TelemetryTime {
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

/** error.type of a failure that is not the log's: an agentchart error's code, else the error's class name. */
export function errorTypeOf(error: unknown): string {
  const code = peek(error, 'code')
  if (typeof code === 'string' && code.length > 0) return code
  return isInstance(error, Error) ? error.name : 'error'
}

const SPAN_METHODS = ['setAttribute', 'setAttributes', 'addEvent', 'setStatus', 'end'] as const

/** Starts, annotates and ends real spans as the operations say; our span ids map to the tracer's spans. */
export class SpanWriter {
  readonly #tracer: TelemetryTracer
  readonly #base: TelemetryContext
  readonly #path: string
  readonly #spans = new Map<string, TelemetrySpan>()
  /** The time of the last operation: where `abandon` ends what is still open. */
  #last = 0
  /** How many spans were ended. */
  ended = 0

  /** `path` names the options the tracer came in (`telemetry` of an agent, `options` of an export) in a ConfigError. */
  constructor(options: TelemetryOptions, path = 'telemetry') {
    this.#tracer = options.tracer
    this.#base = options.context ?? ROOT
    this.#path = path
  }

  /** A Context whose span is the open span `id` (for spans started outside this writer, such as a subagent's), or null. */
  contextOf(id: string): TelemetryContext | null {
    const span = this.#spans.get(id)
    return span === undefined ? null : this.#base.setValue(SPAN_KEY, span)
  }

  apply(op: SpanOp): void {
    this.#last = op.time
    switch (op.op) {
      case 'start': {
        const context = (op.parent !== null ? this.contextOf(op.parent) : null) ?? this.#base
        const span: unknown = this.#tracer.startSpan(op.name, { kind: KIND[op.kind], startTime: hrTimeOf(op.time), attributes: op.attributes }, context)
        if (!SPAN_METHODS.every((method) => typeof peek(span, method) === 'function')) throw this.#notASpan(span)
        this.#spans.set(op.id, span as TelemetrySpan)
        break
      }
      case 'event':
        this.#spans.get(op.id)?.addEvent(op.name, op.attributes, hrTimeOf(op.time))
        break
      case 'end': {
        const span = this.#spans.get(op.id)
        if (span === undefined) return
        span.setAttributes(op.attributes)
        if (op.error) {
          span.setAttribute('error.type', op.error.type)
          span.setStatus({ code: STATUS_ERROR, ...(op.error.message !== undefined ? { message: op.error.message } : {}) })
        }
        // still open (for abandon) until here: a tracer that throws above leaves the span to be ended incomplete
        this.#spans.delete(op.id)
        span.end(hrTimeOf(op.time))
        this.ended++
        break
      }
    }
  }

  /**
   * Ends every span still open at the last operation's time, marked incomplete, children first: after a failure, so
   * the SDK still exports what was started (it never exports a span left open). Each span on its own, so one that
   * throws does not keep the others open.
   */
  abandon(): void {
    const time = hrTimeOf(this.#last)
    const open = [...this.#spans.values()].reverse()
    this.#spans.clear()
    for (const span of open) {
      try {
        span.setAttribute('agentchart.incomplete', true)
      } catch {
        // a span whose attribute the tracer refuses still ends
      }
      try {
        span.end(time)
        this.ended++
      } catch {
        // the tracer's own failure: the remaining spans still end
      }
    }
  }

  /** The ConfigError for what startSpan gave instead of a span; ended first if it can be, so nothing is left open. */
  #notASpan(value: unknown): ConfigError {
    const end = peek(value, 'end')
    try {
      if (typeof end === 'function') end.call(value, hrTimeOf(this.#last))
    } catch {
      // it is refused either way
    }
    return new ConfigError(
      `${this.#path}.tracer.startSpan must return a Span of @opentelemetry/api (with ${SPAN_METHODS.join(', ')}), got ${describeValue(value)}`,
      { path: `${this.#path}.tracer` },
    )
  }
}

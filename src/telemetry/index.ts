// agentchart/telemetry: OpenTelemetry spans of a stored session log, the same tree a live agent writes with
// createAgent({ telemetry: { tracer } }) (docs/telemetry.md).
import { ConfigError } from '../errors.js'
import { describeValue, isArrayLike } from '../foreign.js'
import { forkLineageOf } from '../session/fork.js'
import { createSession } from '../session/session.js'
import { deriveSpans } from './derive.js'
import { checkTelemetryOptions, SpanWriter, type TelemetryOptions } from './tracer.js'

export type { TelemetryOptions, TelemetryTracer, TelemetrySpan, TelemetryContext, TelemetryTime } from './tracer.js'
export type { SpanAttributes, SpanAttributeValue } from './derive.js'

export interface ExportSpansOptions extends TelemetryOptions {
  /** The log's session id, recorded as `gen_ai.conversation.id` (a stored log's events do not carry it). */
  sessionId?: string
}

/**
 * Writes the spans of a logged session to `tracer` after the fact: the log is validated like a seed, then derived
 * exactly as a live agent derives it, so the tree, attributes and times match the live run's. A fork's inherited
 * history is left to its parent's export. Spans the log leaves open (a crash mid-turn) end at its last event with
 * `agentchart.incomplete`. Returns how many spans it wrote.
 */
export function exportSessionSpans(events: readonly unknown[], options: ExportSpansOptions): number {
  if (!isArrayLike(events)) throw new ConfigError(`exportSessionSpans needs the log's events (an array), got ${describeValue(events)}`, { path: 'events' })
  const checked = checkTelemetryOptions(options, 'options')
  const { sessionId } = options
  if (sessionId !== undefined && (typeof sessionId !== 'string' || sessionId.length === 0)) {
    throw new ConfigError(`options.sessionId must be a non-empty string, got ${describeValue(sessionId)}`, { path: 'options.sessionId' })
  }
  // the session's own checks (SS-10): every event is refused by seq and field, as a seed would be; broken structure is kept
  const log = createSession({ seed: events, checkSeed: false, ...(sessionId !== undefined ? { id: sessionId } : {}) }).events
  const writer = new SpanWriter(checked)
  // a fork's copy of its parent's history is the parent's to export: it is read for state only
  const inherited = (forkLineageOf(log)?.seq ?? -1) + 1
  const ops = deriveSpans(log, { ...(sessionId !== undefined ? { sessionId } : {}), captureContent: checked.captureContent === true }, inherited)
  for (const op of ops) writer.apply(op)
  return writer.ended
}

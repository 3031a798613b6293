// agentchart/telemetry: OpenTelemetry spans of a stored session log, the same tree a live agent writes with
// createAgent({ telemetry: { tracer } }) (docs/telemetry.md).
import { ConfigError } from '../errors.js'
import { describeValue, isArrayLike } from '../values/foreign.js'
import { forkLineageOf } from '../session/fork.js'
import { createSession } from '../session/session.js'
import type { SessionEvent } from '../session/schemas.js'
import { deriveSpans, toolSpanId } from './derive.js'
import { checkTelemetryOptions, SpanWriter, type TelemetryOptions } from './tracer.js'

export type { TelemetryOptions, TelemetryTracer, TelemetrySpan, TelemetryContext, TelemetryTime } from './tracer.js'
export type { SpanAttributes, SpanAttributeValue } from './derive.js'

export interface ExportSpansOptions extends TelemetryOptions {
  /** The log's session id, recorded as `gen_ai.conversation.id` (a stored log's events do not carry it). */
  sessionId?: string
  /**
   * The stored log of a subagent by its session id (the id a delegating call's result names in `meta.subagent`), or
   * undefined to leave it out: each child's spans nest under the `execute_tool` span of the call that made it, at any depth.
   */
  children?: (sessionId: string) => readonly unknown[] | undefined
}

/**
 * Writes the spans of a logged session to `tracer` after the fact: the log is validated like a seed, then derived
 * exactly as a live agent derives it, so the tree, attributes and times match the live run's. A fork's inherited
 * history is left to its parent's export. Spans the log leaves open (a crash mid-turn) end at its last event with
 * `agentchart.incomplete`. Returns how many spans it wrote.
 */
export function exportSessionSpans(events: readonly unknown[], options: ExportSpansOptions): number {
  const checked = checkExportOptions(options)
  return exportLog(events, checked, new SpanWriter(checked), new Set(checked.sessionId !== undefined ? [checked.sessionId] : []))
}

function checkExportOptions(options: ExportSpansOptions): ExportSpansOptions {
  const checked = checkTelemetryOptions(options, 'options') as ExportSpansOptions
  const { sessionId, children } = checked
  if (sessionId !== undefined && (typeof sessionId !== 'string' || sessionId.length === 0)) {
    throw new ConfigError(`options.sessionId must be a non-empty string, got ${describeValue(sessionId)}`, { path: 'options.sessionId' })
  }
  if (children !== undefined && typeof children !== 'function') {
    throw new ConfigError(`options.children must be a function from a session id to its stored log, got ${describeValue(children)}`, {
      path: 'options.children',
    })
  }
  return checked
}

/** One log's spans through `writer`; a delegating call's child log is written, under the call's span, before the call ends. */
function exportLog(events: readonly unknown[], options: ExportSpansOptions, writer: SpanWriter, seen: Set<string>): number {
  if (!isArrayLike(events)) throw new ConfigError(`exportSessionSpans needs the log's events (an array), got ${describeValue(events)}`, { path: 'events' })
  const { sessionId, children } = options
  // the session's own checks (SS-10): every event is refused by seq and field, as a seed would be; broken structure is kept
  const log = createSession({ seed: events, checkSeed: false, ...(sessionId !== undefined ? { id: sessionId } : {}) }).events
  // a fork's copy of its parent's history is the parent's to export: it is read for state only
  const inherited = (forkLineageOf(log)?.seq ?? -1) + 1
  const ops = deriveSpans(log, { ...(sessionId !== undefined ? { sessionId } : {}), captureContent: options.captureContent === true }, inherited)
  const results = children ? resultsByCall(log) : new Map<string, (string | null)[]>()
  let written = 0
  for (const op of ops) {
    // a call's span ends at its result, or marked incomplete when its step ended without one
    if (op.op === 'end' && children && results.has(op.id) && op.attributes['agentchart.incomplete'] !== true) {
      const childId = results.get(op.id)?.shift() ?? undefined
      const childLog = childId !== undefined && !seen.has(childId) ? children(childId) : undefined
      const context = childLog !== undefined ? writer.contextOf(op.id) : null
      if (childId !== undefined && childLog !== undefined && context !== null) {
        const childOptions = { ...options, sessionId: childId, context }
        written += exportLog(childLog, childOptions, new SpanWriter(childOptions), new Set([...seen, childId]))
      }
    }
    writer.apply(op)
  }
  return written + writer.ended
}

/** For each call's span id, what each of its results (in log order) names as its child session, or null. */
function resultsByCall(log: readonly SessionEvent[]): Map<string, (string | null)[]> {
  const calls = new Map<string, (string | null)[]>()
  for (const event of log) {
    if (event.type !== 'tool/result') continue
    const id = toolSpanId(event.data.message.source.callId)
    calls.set(id, [...(calls.get(id) ?? []), subagentOf(event.data.meta)])
  }
  return calls
}

function subagentOf(meta: unknown): string | null {
  if (typeof meta !== 'object' || meta === null) return null
  const subagent = (meta as { subagent?: unknown }).subagent
  if (typeof subagent !== 'object' || subagent === null) return null
  const id = (subagent as { sessionId?: unknown }).sessionId
  return typeof id === 'string' && id.length > 0 ? id : null
}

// agentchart/telemetry: OpenTelemetry spans of a stored session log, the same tree a live agent writes with
// createAgent({ telemetry: { tracer } }) (docs/telemetry.md).
import { ConfigError, StoredLogError } from '../errors.js'
import { describeValue, isArrayLike, isInstance, peek } from '../values/foreign.js'
import { forkLineageOf } from '../session/fork.js'
import { createSession } from '../session/session.js'
import type { SessionEvent } from '../session/schemas.js'
import { deriveSpans, toolSpanId, type SpanAttributes } from './derive.js'
import { checkTelemetryOptions, errorTypeOf, SpanWriter, type TelemetryOptions } from './tracer.js'

export type { TelemetryOptions, TelemetryTracer, TelemetrySpan, TelemetryContext, TelemetryTime } from './tracer.js'
export type { SpanAttributes, SpanAttributeValue } from './derive.js'

export interface ExportSpansOptions extends TelemetryOptions {
  /** The log's session id, recorded as `gen_ai.conversation.id` (a stored log's events do not carry it). */
  sessionId?: string
  /**
   * The stored log of a subagent by its session id (the id a delegating call's result names in `meta.subagent`), or
   * undefined to leave it out: each child's spans nest under the `execute_tool` span of the call that made it, at any depth.
   * A child whose lookup throws or whose log is invalid is left out too, with an `agentchart.subagent.unreadable` event
   * on the call's span saying why.
   */
  children?: (sessionId: string) => readonly unknown[] | undefined
}

/**
 * Writes the spans of a logged session to `tracer` after the fact: the log is validated like a seed, then derived
 * exactly as a live agent derives it, so the tree, attributes and times match the live run's. A fork's inherited
 * history is left to its parent's export. Spans the log leaves open (a crash mid-turn) end at its last event with
 * `agentchart.incomplete`. Returns how many spans it wrote. When it throws after starting spans (the tracer failed),
 * it ends them first, marked incomplete.
 */
export function exportSessionSpans(events: readonly unknown[], options: ExportSpansOptions): number {
  const checked = checkExportOptions(options)
  if (!isArrayLike(events)) throw new ConfigError(`exportSessionSpans needs the log's events (an array), got ${describeValue(events)}`, { path: 'events' })
  const log = readLog(events, checked.sessionId)
  return exportLog(log, checked, new SpanWriter(checked, 'options'), new Set(checked.sessionId !== undefined ? [checked.sessionId] : []))
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

/** The session's own checks (SS-10): every event is refused by seq and field, as a seed would be; broken structure is kept. */
function readLog(events: readonly unknown[], sessionId: string | undefined): readonly SessionEvent[] {
  return createSession({ seed: events, checkSeed: false, ...(sessionId !== undefined ? { id: sessionId } : {}) }).events
}

/** One log's spans through `writer`; a delegating call's child log is written, under the call's span, before the call ends. */
function exportLog(log: readonly SessionEvent[], options: ExportSpansOptions, writer: SpanWriter, seen: Set<string>): number {
  const { sessionId, children } = options
  // a fork's copy of its parent's history is the parent's to export: it is read for state only
  const inherited = (forkLineageOf(log)?.seq ?? -1) + 1
  const ops = deriveSpans(log, { ...(sessionId !== undefined ? { sessionId } : {}), captureContent: options.captureContent === true }, inherited)
  const results = children ? resultsByCall(log) : new Map<string, (string | null)[]>()
  let written = 0
  try {
    for (const op of ops) {
      // a call's span ends at its result, or marked incomplete when its step ended without one
      if (op.op === 'end' && children && results.has(op.id) && op.attributes['agentchart.incomplete'] !== true) {
        const childId = results.get(op.id)?.shift() ?? undefined
        const context = childId !== undefined && !seen.has(childId) ? writer.contextOf(op.id) : null
        const child = childId !== undefined && context !== null ? readChild(children, childId) : undefined
        if (childId !== undefined && context !== null && child !== undefined) {
          if ('log' in child) {
            const childOptions = { ...options, sessionId: childId, context }
            written += exportLog(child.log, childOptions, new SpanWriter(childOptions, 'options'), new Set([...seen, childId]))
          } else {
            writer.apply({ op: 'event', id: op.id, name: 'agentchart.subagent.unreadable', time: op.time, attributes: unreadable(childId, child.error) })
          }
        }
      }
      writer.apply(op)
    }
  } catch (error) {
    // a span left open is never exported: what this log started ends before the error reaches the parent's log
    writer.abandon()
    throw error
  }
  return written + writer.ended
}

/**
 * A child's log from the lookup, validated, or why it cannot be read (the lookup threw, or what it gave is not a valid
 * log); undefined when the lookup does not know it. A Promise is the option misused, not a bad log: it is thrown.
 */
function readChild(children: NonNullable<ExportSpansOptions['children']>, childId: string): { log: readonly SessionEvent[] } | { error: unknown } | undefined {
  let events: unknown
  try {
    events = children(childId)
  } catch (error) {
    return { error }
  }
  if (events === undefined) return undefined
  if (typeof peek(events, 'then') === 'function') {
    throw new ConfigError(`options.children must return the stored log itself, not a Promise (load the logs first), for session ${childId}`, {
      path: 'options.children',
    })
  }
  if (!isArrayLike(events)) return { error: new StoredLogError(childId, -1, `not an array of events, got ${describeValue(events)}`) }
  try {
    return { log: readLog(events, childId) }
  } catch (error) {
    return { error }
  }
}

/** The event on a call's span whose child was left out: which session, and why. */
function unreadable(childId: string, error: unknown): SpanAttributes {
  const message = isInstance(error, Error) ? error.message : describeValue(error)
  return { 'agentchart.subagent.session_id': childId, 'error.type': errorTypeOf(error), 'agentchart.subagent.error': message }
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

// What "pass" means for one scenario (docs/conformance.md, "Passing"): the
// log equals the expected log event by event and field by field, except
// `time` and the free values, which must be non-empty strings and keep
// message ids unique; then the invariants the scenario names must hold.
import { checkSessionInvariants } from '../invariants.js'
import { checkLifecycleInvariants } from '../model/lifecycle-invariants.js'
import type { ExpectedEvent, Scenario } from './format.js'
import { isRecordLike } from '../../values/foreign.js'

/** One event as a driver hands it back: the envelope the implementation logged. */
export interface LoggedEvent {
  seq: number
  time?: number
  type: string
  data: unknown
  surfaceOp?: unknown
  sourceEventSeqs?: readonly number[]
  [key: string]: unknown
}

/** The first place where a log and its expectation part ways. */
export interface Divergence {
  /** Position in the log of the first event that differs. */
  index: number
  /** JSON Pointer inside that event ('' when the whole event is missing or extra). */
  path: string
  /** What differs there, in a few words. */
  reason: string
  expected: ExpectedEvent | undefined
  actual: LoggedEvent | undefined
}

/** What `session-except-boundaries` leaves out: the rules a refused step/end, turn/end or compaction/completed breaks on purpose. */
const BOUNDARY_RULES = new Set(['balanced', 'turn-enclosure', 'event-enclosure', 'turn-closes-once', 'compaction-record'])

const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1')
const describeValue = (v: unknown) => (v === undefined ? 'nothing' : JSON.stringify(v))

/** The first difference between two JSON values, skipping the pointers in `free`; null when equal. */
function firstDifference(expected: unknown, actual: unknown, path: string, free: ReadonlySet<string>): { path: string; reason: string } | null {
  if (free.has(path)) {
    return typeof actual === 'string' && actual.length > 0 ? null : { path, reason: `a free value must be a non-empty string, got ${describeValue(actual)}` }
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return { path, reason: `expected an array, got ${describeValue(actual)}` }
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      if (i >= expected.length) return { path: `${path}/${i}`, reason: `unexpected extra item ${describeValue(actual[i])}` }
      if (i >= actual.length) return { path: `${path}/${i}`, reason: `missing item ${describeValue(expected[i])}` }
      const d = firstDifference(expected[i], actual[i], `${path}/${i}`, free)
      if (d) return d
    }
    return null
  }
  if (isRecordLike(expected)) {
    if (!isRecordLike(actual)) return { path, reason: `expected an object, got ${describeValue(actual)}` }
    for (const key of Object.keys(expected)) {
      const at = `${path}/${escape(key)}`
      if (!Object.hasOwn(actual, key)) return { path: at, reason: `missing, expected ${describeValue(expected[key])}` }
      const d = firstDifference(expected[key], actual[key], at, free)
      if (d) return d
    }
    for (const key of Object.keys(actual)) {
      if (!Object.hasOwn(expected, key)) return { path: `${path}/${escape(key)}`, reason: `unexpected field ${describeValue(actual[key])}` }
    }
    return null
  }
  return Object.is(expected, actual) ? null : { path, reason: `expected ${describeValue(expected)}, got ${describeValue(actual)}` }
}

/** The log as plain JSON (what a driver in another process would print): undefined fields vanish. */
export function asJson(events: ReadonlyArray<unknown>): LoggedEvent[] {
  return JSON.parse(JSON.stringify(events)) as LoggedEvent[]
}

/** Compare a log with the expected log; the first divergence, or null when they agree. */
export function compareLog(expected: readonly ExpectedEvent[], log: readonly LoggedEvent[]): Divergence | null {
  for (let index = 0; index < Math.max(expected.length, log.length); index++) {
    const want = expected[index]
    const got = log[index]
    if (want === undefined) return { index, path: '', reason: `an extra event ${got.type} after the end of the expected log`, expected: want, actual: got }
    if (got === undefined) return { index, path: '', reason: `the log ends here; expected ${want.type}`, expected: want, actual: got }
    const free = new Set(want.free ?? [])
    const { free: _free, ...envelope } = want
    const { time: _time, ...rest } = got
    const d = firstDifference(envelope, rest, '', free)
    if (d) return { index, ...d, expected: want, actual: got }
  }
  // a message id the implementation chose must identify one message: no other message of the log has it
  const ids = log.map(messageId)
  for (let index = 0; index < log.length; index++) {
    // a compaction summary's id is its data's own id (format 5)
    const path = ['/data/message/id', '/data/id'].find((p) => expected[index].free?.includes(p))
    if (path === undefined) continue
    const twin = ids.findIndex((id, other) => other !== index && id === ids[index])
    if (twin >= 0) {
      const reason = `message id ${JSON.stringify(ids[index])} is also the id of the message at seq ${twin}`
      return { index, path, reason, expected: expected[index], actual: log[index] }
    }
  }
  return null
}

function messageId(event: LoggedEvent): string | undefined {
  const data = event.data as { id?: unknown; message?: { id?: unknown } } | undefined
  if (event.type === 'user/message') return typeof data?.id === 'string' ? data.id : undefined
  if (event.type === 'assistant/message' || event.type === 'tool/result') return typeof data?.message?.id === 'string' ? data.message.id : undefined
  return undefined
}

/** The first broken invariant the scenario names, or null. */
export function brokenInvariant(scenario: Pick<Scenario, 'invariants'>, log: readonly LoggedEvent[]): { rule: string; seq: number; message: string } | null {
  const events = log.map((e) => ({ ...e, time: typeof e.time === 'number' ? e.time : 0 }))
  const named = new Set(scenario.invariants)
  const broken = [
    ...checkSessionInvariants(events as never).filter((v) => named.has('session') || (named.has('session-except-boundaries') && !BOUNDARY_RULES.has(v.rule))),
    ...checkLifecycleInvariants(events).filter((v) => named.has(v.rule) && !(named.has('session-except-boundaries') && BOUNDARY_RULES.has(v.rule))),
  ]
  return broken[0] ?? null
}

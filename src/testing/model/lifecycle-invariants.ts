// Lifecycle invariants checked on every generated trace, beside the
// session-level ones of checkSessionInvariants.
import { openStepOf, pendingApprovals } from '../../session/approvals.js'
import type { SessionEvent } from '../../session/schemas.js'

interface Event {
  seq: number
  type: string
  data: unknown
}

/** The fields of an event's data the rules read (each rule reads them only on the types that have them). */
interface Fields {
  turn: number
  step: number
  reason?: { kind?: string }
  chunk?: { type?: string; reason?: { kind?: string } }
}

export const LIFECYCLE_INVARIANTS = [
  'turn-closes-once',
  'no-step-after-reject',
  'retry-stays-in-step',
  'sticky-max-tokens',
  'no-tool-call-in-max-tokens-step',
] as const

export interface LifecycleViolation {
  rule: (typeof LIFECYCLE_INVARIANTS)[number]
  seq: number
  message: string
}

/** Check a complete log (at rest) against the lifecycle rules. */
export function checkLifecycleInvariants(events: readonly Event[]): LifecycleViolation[] {
  const out: LifecycleViolation[] = []
  const ends = new Map<number, number>()
  const starts = new Map<number, number>()
  let turn: number | null = null
  let lastBoundary = -1 // seq of the last turn/start or step/end of the open turn
  let sawMaxTokens = false
  let stepMaxTokens = false
  let pendingFinish: { seq: number; turn: number; step: number } | null = null
  for (const e of events) {
    const data = e.data as Fields
    switch (e.type) {
      case 'turn/start':
        starts.set(data.turn, e.seq)
        turn = data.turn
        lastBoundary = e.seq
        sawMaxTokens = false
        break
      case 'turn/end': {
        const n = data.turn
        ends.set(n, (ends.get(n) ?? 0) + 1)
        if (ends.get(n)! > 1) out.push({ rule: 'turn-closes-once', seq: e.seq, message: `turn ${n} ended twice` })
        const kind = data.reason?.kind
        if (kind === 'blocked') {
          const stepAfter = events.slice(lastBoundary + 1, e.seq).find((x) => x.type === 'step/start')
          if (stepAfter) out.push({ rule: 'no-step-after-reject', seq: stepAfter.seq, message: 'a step opened after the proposal was rejected' })
        }
        if (sawMaxTokens && kind === 'completed') out.push({ rule: 'sticky-max-tokens', seq: e.seq, message: 'a turn that hit max-tokens ended completed' })
        turn = null
        break
      }
      case 'step/start':
        stepMaxTokens = false
        if (pendingFinish)
          out.push({ rule: 'retry-stays-in-step', seq: e.seq, message: `a step opened inside step ${pendingFinish.step} after its failed attempt` })
        break
      case 'step/end':
        lastBoundary = e.seq
        pendingFinish = null
        break
      case 'assistant/chunk': {
        const chunk = data.chunk
        if (pendingFinish && (data.turn !== pendingFinish.turn || data.step !== pendingFinish.step)) {
          out.push({ rule: 'retry-stays-in-step', seq: e.seq, message: 'a retry streamed under another step' })
        }
        if (chunk?.type === 'finish') {
          const k = chunk.reason?.kind
          pendingFinish = k === 'error' || k === 'aborted' ? { seq: e.seq, turn: data.turn, step: data.step } : null
          if (k === 'max-tokens') {
            sawMaxTokens = true
            stepMaxTokens = true
          }
        }
        break
      }
      case 'assistant/message':
        pendingFinish = null
        break
      case 'tool/call':
        if (stepMaxTokens) out.push({ rule: 'no-tool-call-in-max-tokens-step', seq: e.seq, message: 'a tool call in a step that finished max-tokens' })
        break
    }
  }
  // a log parked in an approval wait (TL-18) rests inside its last turn: that turn ends in a later instance
  const parkedTurn = turn !== null && parkedCallOf(events as readonly SessionEvent[]) !== null ? turn : null
  for (const [n, seq] of starts) {
    if (!ends.has(n) && n !== parkedTurn) out.push({ rule: 'turn-closes-once', seq, message: `turn ${n} never ended` })
  }
  return out
}

/**
 * The call a log stops parked in (TL-18), or null: in the open step the last tool/call waits for approval and every
 * earlier call has its result, as a disposal during the wait leaves it. Why: such a log is at rest, not cut short.
 */
function parkedCallOf(events: readonly SessionEvent[]): string | null {
  const pending = pendingApprovals(events)
  if (pending.length !== 1) return null
  const open = openStepOf(events)!
  const started = [...open.calls.keys()]
  const last = started.at(-1)
  return last === pending[0].callId && started.slice(0, -1).every((callId) => open.results.has(callId)) ? last : null
}

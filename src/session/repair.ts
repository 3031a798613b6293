// Repair: the synthetic closers a crash-truncated log needs before a new
// agent instance may continue it (RS-4..RS-6). Pure: it reads a log and
// returns events to append; the agent machine appends them.
import type { RepairCloser, SessionEvent, TurnEndReason } from './schemas.js'
import { openStepOf } from './approvals.js'
import { NOT_STARTED, UNKNOWN_OUTCOME_RESULT, toolResultMessage } from './vocabulary.js'

export type { RepairCloser }

const NOT_STARTED_ERROR = Object.freeze({ name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' })

/** Where a log stands: the open turn and step, if any. Read from the end, so it costs the open turn, not the log. */
export function openTurnOf(events: readonly SessionEvent[]): { turn: number; step: number | null; turnSeq: number } | null {
  // the step open at the end: the last step boundary after the last turn boundary
  let step: number | null | undefined
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]
    if (e.type === 'turn/end') return null
    if (e.type === 'turn/start') return { turn: e.data.turn, step: step ?? null, turnSeq: e.seq }
    if (step === undefined && e.type === 'step/start') step = e.data.step
    else if (step === undefined && e.type === 'step/end') step = null
  }
  return null
}

/**
 * The closers of a log that ends inside an open turn, in order: an error result
 * for every call of the open step that has none (in call order), `step/end` if
 * a step is open, then `turn/end{interrupted}`. Nothing for an empty or balanced log.
 */
export function repairClosers(events: readonly SessionEvent[]): RepairCloser[] {
  const open = openTurnOf(events)
  if (!open) return []
  // the crash point's time: the last event before any end-seed marker the session added
  const time = (events.findLast((e) => e.type !== 'session/end-seed') ?? events[events.length - 1]).time
  const closers: RepairCloser[] = []
  const { turn, step } = open
  if (step !== null) {
    const { planned, calls, results } = openStepOf(events)!
    // the anchor's blocks give the call order; logged calls it does not name come after
    for (const callId of new Set([...planned.map((b) => b.id), ...calls.keys()])) {
      if (results.has(callId)) continue
      const callSeq = calls.get(callId)
      const started = callSeq !== undefined
      const message = toolResultMessage(`repair-${turn}-${step}-${callId}`, callId, started ? UNKNOWN_OUTCOME_RESULT.content : NOT_STARTED, true)
      closers.push({
        type: 'tool/result',
        data: { turn, step, message, error: started ? UNKNOWN_OUTCOME_RESULT.error : NOT_STARTED_ERROR },
        intent: { surfaceOp: 'append', ...(started ? { sourceEventSeqs: [callSeq] } : {}), time },
      })
    }
    closers.push({ type: 'step/end', data: { turn, step }, intent: { time } })
  }
  const reason: TurnEndReason = { kind: 'interrupted' }
  closers.push({ type: 'turn/end', data: { turn, reason }, intent: { time } })
  return closers
}

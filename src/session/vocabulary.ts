// What the loop itself writes: plain values (no schema library) that the
// machines log and the readers of a log (repair, approvals, compaction,
// viewers) recognise, so both sides share one spelling; and the shape in
// which approvals hand a waiting call they read in a log to the machines.
import type { ContentBlock, ReasoningBlock, TextBlock, ToolResultMessage } from './schemas.js'

/** TL-1: an empty string is `{}`, valid JSON its value, anything else stays the raw text. */
export function parseArguments(raw: string): unknown {
  if (raw.trim() === '') return {}
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return raw
  }
}

/** CX-7: the non-empty text and reasoning blocks of a cancelled stream, or null when none shows non-whitespace text. */
export function visiblePrefix(content: readonly ContentBlock[]): (TextBlock | ReasoningBlock)[] | null {
  const out = content.filter((b): b is TextBlock | ReasoningBlock => (b.type === 'text' || b.type === 'reasoning') && b.text !== '')
  return out.some((b) => /\S/.test(b.text)) ? out : null
}

/** The user-role message that carries one call's result (TL-8), as `tool/result` logs it (a repair closer's too). */
export function toolResultMessage(id: string, callId: string, content: string, isError: boolean): ToolResultMessage {
  return { id, role: 'user', source: { kind: 'tool', callId }, content: [{ type: 'tool-result', toolCallId: callId, content, isError }] }
}

/** RS-5: the result of a call whose outcome was lost when the session stopped while it ran. */
export const UNKNOWN_OUTCOME =
  'Error: the outcome of this tool call is unknown: the session was interrupted while it ran. Retry it blindly only if the call is safe to repeat.'
/** RS-5: the result of a call that never started before the session stopped. */
export const NOT_STARTED = 'Error: this tool call was never started: the session was interrupted before it ran. You may retry it.'
/** RS-5: the result of a call that was running when the session stopped, as repair writes it and a resumed tool batch owes it. */
export const UNKNOWN_OUTCOME_RESULT = Object.freeze({
  isError: true,
  content: UNKNOWN_OUTCOME,
  error: Object.freeze({ name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' }),
})
/** TL-15: the result of a call abandoned while its body ran: UNKNOWN_OUTCOME_RESULT's error, in words that say why. */
export const ABANDONED_RESULT = Object.freeze({
  ...UNKNOWN_OUTCOME_RESULT,
  content: 'Error: the outcome of this tool call is unknown: it was abandoned while it ran. Retry it blindly only if the call is safe to repeat.',
})

/** The source of a compaction summary message; a range that holds only such a message has nothing left to compact. */
export const SUMMARY_SOURCE = Object.freeze({ kind: 'plugin' as const, plugin: 'compaction' })

/** The text a summary message carries: a marker line, then the summary. */
export function summaryText(summary: string): string {
  return `[Summary of the earlier conversation, compacted to fit the context window]\n\n${summary}`
}

/**
 * What the log says of a call that waits for approval: the open turn and step, the anchor's calls in model order,
 * which of them started and which have a result, and the call that waits (the machine resumes from these facts).
 */
export interface ApprovalWait {
  readonly turn: number
  readonly step: number
  readonly maxTokensSeen: boolean
  readonly calls: readonly { callId: string; name: string; arguments: string }[]
  readonly started: readonly string[]
  readonly committed: readonly string[]
  readonly waiting: string
}

// Approvals in the log (TL-18): which questions are still open, and where a
// new instance picks up a tool batch whose call waits for a person's answer.
// Pure: it reads a log; the machines append everything.
import { parseArguments } from '../machines/attempt.js'
import { newToolBatch } from '../machines/context.js'
import type { PlannedCall, ResumeInput, ToolOutcome } from '../machines/types.js'
import { UNKNOWN_OUTCOME } from './repair.js'
import type { SessionEvent, ToolCallBlock } from './schemas.js'

/** A question that waits for `agent.approve(callId)` or `agent.deny(callId, reason)`. */
export interface PendingApproval {
  readonly turn: number
  readonly step: number
  readonly callId: string
  readonly name: string
  /** The arguments as the model sent them, parsed (the raw text when it is not JSON). */
  readonly arguments: unknown
  readonly reason: string
  /** The seq of its `tool/approval-request`. */
  readonly seq: number
}

/** What the open step of a log holds: its anchor's calls and what became of each. */
interface OpenStep {
  turn: number
  step: number
  planned: ToolCallBlock[]
  calls: Map<string, number>
  results: Set<string>
  requests: Map<string, SessionEvent & { type: 'tool/approval-request' }>
  answered: Set<string>
  maxTokensSeen: boolean
}

/** The open step of the log's open turn, read from the end (a turn is short next to a session). */
function openStepOf(events: readonly SessionEvent[]): OpenStep | null {
  let from = events.length - 1
  while (from >= 0 && events[from].type !== 'turn/start' && events[from].type !== 'turn/end') from--
  if (from < 0 || events[from].type !== 'turn/start') return null
  let open: OpenStep | null = null
  let maxTokensSeen = false
  for (let i = from + 1; i < events.length; i++) {
    const e = events[i]
    if (e.type === 'step/start')
      open = { ...e.data, planned: [], calls: new Map(), results: new Set(), requests: new Map(), answered: new Set(), maxTokensSeen }
    else if (e.type === 'step/end') open = null
    else if (e.type === 'assistant/chunk' && e.data.chunk.type === 'finish' && e.data.chunk.reason.kind === 'max-tokens') maxTokensSeen = true
    if (open === null) continue
    if (e.type === 'assistant/message' && e.surfaceOp === 'append' && !e.data.interrupted) {
      open.planned = e.data.message.content.filter((b): b is ToolCallBlock => b.type === 'tool-call')
    } else if (e.type === 'tool/call') open.calls.set(e.data.callId, e.seq)
    else if (e.type === 'tool/result' && e.surfaceOp === 'append') open.results.add(e.data.message.source.callId)
    else if (e.type === 'tool/approval-request') open.requests.set(e.data.callId, e)
    else if (e.type === 'tool/approval-answer') open.answered.add(e.data.callId)
  }
  if (open !== null) open.maxTokensSeen = maxTokensSeen
  return open
}

/** The questions of the open step that nobody answered and no result closed, oldest first. */
export function pendingApprovals(events: readonly SessionEvent[]): PendingApproval[] {
  const open = openStepOf(events)
  if (open === null) return []
  const out: PendingApproval[] = []
  for (const [callId, request] of open.requests) {
    if (open.answered.has(callId) || open.results.has(callId)) continue
    const block = open.planned.find((b) => b.id === callId)
    out.push({
      turn: open.turn,
      step: open.step,
      callId,
      name: request.data.name,
      arguments: block ? parseArguments(block.arguments) : undefined,
      reason: request.data.reason,
      seq: request.seq,
    })
  }
  return out
}

/** The result a call that was running when the process stopped gets once the batch resumes (as repair writes it, RS-5). */
export const OUTCOME_UNKNOWN: ToolOutcome = {
  isError: true,
  content: UNKNOWN_OUTCOME,
  error: { name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' },
}

/** A committed call's slot: the commit lane is past it and never reads it again. */
const COMMITTED: ToolOutcome = { isError: false, content: '' }

/**
 * Where an instance over `events` resumes when the log stops while a call waits for approval, or null when it
 * does not (then repair closes an open turn as usual, RS-4). Calls before the waiting one that started and have
 * no result get OUTCOME_UNKNOWN, committed first in model order; later calls never started (dispatch waits).
 * `callSeqs` names the logged tool/call of each started call, for the results' citations.
 */
export function approvalResume(events: readonly SessionEvent[], cap: number): { input: ResumeInput; callSeqs: Map<string, number> } | null {
  const pending = pendingApprovals(events)
  if (pending.length === 0) return null
  const open = openStepOf(events)!
  const calls: PlannedCall[] = open.planned.map((b) => ({ callId: b.id, name: b.name, arguments: b.arguments, args: parseArguments(b.arguments) }))
  const waiting = calls.findIndex((c) => c.callId === pending[0].callId)
  if (waiting < 0) return null
  const batch = newToolBatch(calls, cap)
  const before = calls.slice(0, waiting)
  const nextCommit = before.findIndex((c) => !open.results.has(c.callId))
  return {
    input: {
      turn: open.turn,
      step: open.step,
      maxTokensSeen: open.maxTokensSeen,
      toolBatch: {
        ...batch,
        nextStart: waiting,
        nextCommit: nextCommit < 0 ? waiting : nextCommit,
        started: calls.map((_, i) => i <= waiting),
        outcomes: calls.map((c, i) => (i >= waiting ? null : open.results.has(c.callId) ? COMMITTED : OUTCOME_UNKNOWN)),
        skipPost: calls.map((_, i) => i < waiting),
        inFlight: 1,
        approval: calls[waiting].callId,
      },
    },
    callSeqs: open.calls,
  }
}

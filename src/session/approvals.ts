// Approvals in the log (TL-18): which questions are still open, and what the
// log says of a tool batch whose call waits for a person's answer.
// Pure: it reads a log; the machines append everything.
import type { SessionEvent, ToolCallBlock } from './schemas.js'
import { parseArguments, type ApprovalWait } from './vocabulary.js'

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
export interface OpenStep {
  turn: number
  step: number
  planned: ToolCallBlock[]
  calls: Map<string, number>
  results: Set<string>
  requests: Map<string, SessionEvent & { type: 'tool/approval-request' }>
  answered: Set<string>
  maxTokensSeen: boolean
}

/** The open step of the log's open turn within its first `length` events, read from the end (a turn is short next to a session). */
export function openStepOf(events: readonly SessionEvent[], length = events.length): OpenStep | null {
  let from = length - 1
  while (from >= 0 && events[from].type !== 'turn/start' && events[from].type !== 'turn/end') from--
  if (from < 0 || events[from].type !== 'turn/start') return null
  let open: OpenStep | null = null
  let maxTokensSeen = false
  for (let i = from + 1; i < length; i++) {
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
  return pendingApprovalsWithin(events, events.length)
}

/**
 * The pending questions of the log's first `length` events (an agent over a store passes its committed length).
 * Why: a question the store could still lose must not be listed to the person who would answer it.
 */
export function pendingApprovalsWithin(events: readonly SessionEvent[], length: number): PendingApproval[] {
  const open = openStepOf(events, Math.min(length, events.length))
  if (open === null) return []
  return [...open.requests.values()]
    .filter(({ data: { callId } }) => !open.answered.has(callId) && !open.results.has(callId))
    .map(({ seq, data: { callId, name, reason } }) => {
      const block = open.planned.find((b) => b.id === callId)
      return { turn: open.turn, step: open.step, callId, name, arguments: block ? parseArguments(block.arguments) : undefined, reason, seq }
    })
}

/**
 * The approval wait an instance over `events` resumes in, or null when the log does not stop in one (then repair
 * closes an open turn as usual, RS-4); `callSeqs` names the logged tool/call of each started call, for citations.
 */
export function approvalWaitOf(events: readonly SessionEvent[]): { wait: ApprovalWait; callSeqs: Map<string, number> } | null {
  const pending = pendingApprovals(events)
  if (pending.length === 0) return null
  const open = openStepOf(events)!
  if (!open.planned.some((b) => b.id === pending[0].callId)) return null
  return {
    wait: {
      turn: open.turn,
      step: open.step,
      maxTokensSeen: open.maxTokensSeen,
      calls: open.planned.map((b) => ({ callId: b.id, name: b.name, arguments: b.arguments })),
      started: [...open.calls.keys()],
      committed: [...open.results],
      waiting: pending[0].callId,
    },
    callSeqs: open.calls,
  }
}

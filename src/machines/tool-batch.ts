// tool batch: runs the calls an anchor asked for. Two regions work side by
// side: `dispatch` starts calls in model order (classify, wait for room,
// tool/call, pre-execute, body): exclusive calls are barriers, parallel-safe
// calls share a rolling pool bounded by the cap. `commit` runs post-execute
// and appends tool/result strictly in model order. Cancellation drains what
// started and writes synthetic pairs for the rest (TL-14, TL-15).
import { and, not, or, stateIn } from 'xstate'
import { activitySetup, asks, awaiting, standaloneOn } from './activity.js'
import type { activityImplementations } from './activity.js'
import { attached } from './attachment.js'
import { UNKNOWN_OUTCOME_RESULT, parseArguments, toolResultMessage } from '../session/vocabulary.js'
import { initialContext, newToolBatch } from './context.js'
import { action, actionOn, guard, guardOn, type Draft, type EventOf, named, labelGuards, type WrittenFor } from './setup.js'
import { clearInbox, insertInbox, type inboxImplementations } from './inbox.js'
import type { AgentContext, RequestedCall, PostExecuteAnswer, ToolBatchContext, ToolOutcome } from './types.js'

const ABORTED_BEFORE_DISPATCH = errorOutcome('tool call aborted before dispatch', { name: 'AbortError', code: 'ABORTED_BEFORE_DISPATCH' })
const ABORTED_WHILE_RUNNING = errorOutcome('tool call aborted', { name: 'AbortError', code: 'ABORTED' })

/** A committed call's slot in a resumed batch: the commit lane is past it and never reads it again. */
const COMMITTED: ToolOutcome = { isError: false, content: '' }

/** An error result of a call, as the model will read it (TL-9). */
export function errorOutcome(message: string, error?: { name: string; code: string }): ToolOutcome {
  return { isError: true, content: `Error: ${message}`, ...(error ? { error } : {}) }
}

// ---- draft steps -----------------------------------------------------------------

const batchOf = (d: Draft) => d.get('toolBatch')
const setAt = <T>(list: readonly T[], i: number, value: T): T[] => list.map((v, j) => (j === i ? value : v))

function settle(d: Draft, i: number, outcome: ToolOutcome, skipPost = false): void {
  const b = batchOf(d)
  d.setToolBatch({ outcomes: setAt(b.outcomes, i, outcome), skipPost: setAt(b.skipPost, i, skipPost) })
}

const executionOf = (d: Draft, call: RequestedCall) => ({
  turn: d.get('turn'),
  step: d.get('step'),
  callId: call.callId,
  name: call.name,
  arguments: call.args,
})

function logCall(d: Draft, call: RequestedCall): void {
  d.append(
    'tool/call',
    { turn: d.get('turn'), step: d.get('step'), callId: call.callId, name: call.name, arguments: call.arguments },
    { key: `call:${call.callId}` },
  )
}

function logResult(d: Draft, call: RequestedCall, outcome: ToolOutcome): void {
  const message = toolResultMessage(`${d.get('instance').id}-r${d.id()}`, call.callId, outcome.content, outcome.isError)
  const data = {
    turn: d.get('turn'),
    step: d.get('step'),
    message,
    ...(outcome.error ? { error: outcome.error } : {}),
    ...(outcome.meta !== undefined ? { meta: outcome.meta } : {}),
  }
  d.append('tool/result', data, { surfaceOp: 'append', citeKeys: [`call:${call.callId}`] })
}

/**
 * Apply a post-execute decision: accept (optionally with new content), or block with feedback (TL-10). The runtime
 * hands the machine the decision as plain checked data (PostExecuteAnswer): a `value` is already its JSON text.
 */
function applyPost(outcome: ToolOutcome, decision: unknown): ToolOutcome {
  const dec = (decision ?? { kind: 'accept' }) as PostExecuteAnswer
  if (dec.kind === 'block') {
    return { isError: true, content: dec.feedback, ...(dec.additionalContexts?.length ? { additionalContexts: [...dec.additionalContexts] } : {}) }
  }
  const contexts = [...(outcome.additionalContexts ?? []), ...(dec.additionalContexts ?? [])]
  const { additionalContexts: _drop, ...rest } = outcome
  return { ...rest, ...(dec.content !== undefined ? { content: dec.content } : {}), ...(contexts.length > 0 ? { additionalContexts: contexts } : {}) }
}

/** Run the next call's body; the next call may start while it runs. */
function startBody(d: Draft): void {
  const b = batchOf(d)
  const i = b.nextStart
  const bodyId = d.id()
  d.setToolBatch({ bodyIds: setAt(b.bodyIds, i, bodyId), nextStart: i + 1, preId: 0 })
  d.emit({ type: 'fx.tool', id: bodyId, turn: d.get('turn'), step: d.get('step'), call: b.calls[i] })
}

/** The call's pre-stage ended without a body: it no longer holds a pool slot. */
function endWithoutBody(d: Draft, outcome: ToolOutcome, skipPost = false): void {
  const b = batchOf(d)
  settle(d, b.nextStart, outcome, skipPost)
  d.setToolBatch({ inFlight: batchOf(d).inFlight - 1, nextStart: b.nextStart + 1, preId: 0 })
}

/** tools/result, then tool/result of the next call in model order; its contexts wait in next-step (TL-10, TL-12, TL-13). */
function commitNext(d: Draft): void {
  const b = batchOf(d)
  const i = b.nextCommit
  const call = b.calls[i]
  const outcome = b.outcomes[i]!
  d.notify('tools/result', { ...executionOf(d, call), outcome })
  logResult(d, call, outcome)
  insertInbox(d, 'next-step', outcome.additionalContexts ?? [])
  const concludes = outcome.concludesTurn === true && !outcome.isError
  d.setToolBatch({ nextCommit: i + 1, postId: 0, concluded: batchOf(d).concluded || concludes })
}

/** A body settled; after the abort a success is recorded as aborted, its own error stays (TL-15). */
function settleBody(d: Draft, e: EventOf<'tool.settled'>): void {
  const b = batchOf(d)
  const i = b.bodyIds.indexOf(e.id)
  if (i < 0 || b.outcomes[i] !== null) return
  const outcome =
    d.get('activity').cancelCause !== null && !e.outcome.isError
      ? { ...ABORTED_WHILE_RUNNING, ...(e.outcome.additionalContexts ? { additionalContexts: e.outcome.additionalContexts } : {}) }
      : e.outcome
  settle(d, i, outcome)
  d.setToolBatch({ inFlight: batchOf(d).inFlight - 1 })
}

// ---- guards' reads -------------------------------------------------------------------

/**
 * The next call's mode as far as it is known: the classifier's answer, else the tool's fixed mode from the facts
 * (an unknown tool is exclusive, TL-2), else null: its mode depends on its arguments, or nothing is known of it.
 */
function modeOfNext(context: AgentContext, b: ToolBatchContext): 'parallel' | 'exclusive' | null {
  if (b.nextMode !== null) return b.nextMode
  const modes = context.facts.modes
  if (modes === null) return null
  const mode = modes[b.calls[b.nextStart]?.name ?? '']
  return mode === undefined ? 'exclusive' : mode === 'per-call' ? null : mode
}

const halted = (context: AgentContext) => context.activity.cancelCause !== null || context.toolBatch.failure !== null
const drained = (b: ToolBatchContext) => b.nextCommit >= b.nextStart && b.inFlight === 0
const poolRoom = (b: ToolBatchContext) => b.pool && b.inFlight < b.cap
const committable = (b: ToolBatchContext) => b.nextCommit < b.calls.length && b.outcomes[b.nextCommit] !== null

// ---- named implementations ---------------------------------------------------------

const toolBatchImplementations = named({
  actions: {
    /**
     * TL-18: the batch as the log leaves it when the instance starts inside an approval wait: earlier calls that
     * started without a result owe UNKNOWN_OUTCOME_RESULT (committed first, in model order), the waiting call keeps its slot,
     * later calls never started.
     */
    restoreApprovalWait: action((d) => {
      const instance = d.get('instance')
      const wait = instance.resume!
      const calls: RequestedCall[] = wait.calls.map((c) => ({ ...c, args: parseArguments(c.arguments) }))
      const waiting = calls.findIndex((c) => c.callId === wait.waiting)
      const committed = new Set(wait.committed)
      const owed = calls.findIndex((c, i) => i < waiting && !committed.has(c.callId))
      d.set({
        instance: { ...instance, resume: null },
        turn: wait.turn,
        step: wait.step,
        maxTokensSeen: wait.maxTokensSeen,
        toolBatch: {
          ...newToolBatch(calls, instance.maxParallelToolCalls),
          nextStart: waiting,
          nextCommit: owed < 0 ? waiting : owed,
          started: calls.map((_, i) => i <= waiting),
          outcomes: calls.map((c, i) => (i >= waiting ? null : committed.has(c.callId) ? COMMITTED : UNKNOWN_OUTCOME_RESULT)),
          skipPost: calls.map((_, i) => i < waiting),
          inFlight: 1,
          approval: wait.waiting,
          asked: [wait.waiting],
        },
      })
    }),
    /** Ask whether the next call may join a parallel pool, right before it would start (TL-2, TL-5): its mode depends on its arguments. */
    classifyNextCall: action((d) => {
      const b = batchOf(d)
      const classifyId = d.id()
      d.setToolBatch({ classifyId, nextMode: null })
      d.emit({ type: 'fx.classify', id: classifyId, call: b.calls[b.nextStart] })
    }),
    /** The classifier's answer for the next call. */
    recordMode: actionOn(['tool.classified'], (d, e) => d.setToolBatch({ nextMode: e.mode, classifyId: 0 })),

    /** No longer parallel-safe: the pool stops filling, drains, and this call is the next barrier (TL-5). */
    closePool: action((d) => d.setToolBatch({ pool: false })),
    /**
     * The next call starts: after a drained group it opens a new one (a pool if the call is parallel-safe, else a
     * barrier; the cap is read now, TL-4), it is logged, and it runs its pre-execute when anyone decides or watches
     * there (one call at a time, TL-7), else its body at once (bodies overlap, TL-6).
     */
    startNextCall: action((d) => {
      const b = batchOf(d)
      if (drained(b)) d.setToolBatch({ pool: modeOfNext(d.context, b) === 'parallel', cap: d.get('instance').maxParallelToolCalls })
      const i = b.nextStart
      const call = b.calls[i]
      logCall(d, call)
      const asked = asks(d.context, 'tools/pre-execute')
      const preId = asked ? d.id() : 0
      d.setToolBatch({ started: setAt(b.started, i, true), inFlight: b.inFlight + 1, preId, nextMode: null })
      if (asked)
        d.emit({ type: 'fx.hook', id: preId, name: 'tools/pre-execute', payload: executionOf(d, call), fallback: { kind: 'allow' }, abandonOnCancel: false })
      else startBody(d)
    }),
    /** TL-17: after a scheduler failure a pending call does not reach its body. */
    skipBodyAfterFailure: action((d) => endWithoutBody(d, ABORTED_BEFORE_DISPATCH, true)),
    /** TL-16: cancelled while pre-execute ran: no body, but the pipeline still runs. */
    skipBodyAfterCancel: action((d) => endWithoutBody(d, ABORTED_BEFORE_DISPATCH)),
    /** A denial is the call's error result (TL-9, TL-10). */
    denyCall: actionOn(['hook.done'], (d, e) => {
      // the runtime hands over a deny as {kind:'deny', reason: string}
      const reason = (e.value as { reason?: string }).reason ?? 'denied'
      endWithoutBody(d, errorOutcome(reason, { name: 'ToolDeniedError', code: 'DENIED' }))
    }),
    /** TL-18: an ask with nobody to answer it is a denial that says so. */
    denyUnanswerable: actionOn(['hook.done'], (d, e) => {
      const question = (e.value as { reason?: string }).reason ?? 'approval required'
      endWithoutBody(d, errorOutcome(`approval required, and no approver is configured: ${question}`, { name: 'ToolDeniedError', code: 'DENIED' }))
    }),
    /**
     * TL-18: pre-execute asked for a person's approval: the call keeps its slot and dispatch waits (approvals are
     * asked one at a time, in model order, like pre-execute itself); the question is logged so it survives a restart.
     */
    requestApproval: actionOn(['hook.done'], (d, e) => {
      const b = batchOf(d)
      const call = b.calls[b.nextStart]
      const reason = (e.value as { reason?: string }).reason ?? 'approval required'
      d.setToolBatch({ preId: 0, approval: call.callId, asked: [...b.asked, call.callId] })
      d.append('tool/approval-request', { turn: d.get('turn'), step: d.get('step'), callId: call.callId, name: call.name, reason })
      d.notify('tools/approval-requested', { ...executionOf(d, call), reason })
    }),
    /** TL-18: the answer is logged; an approval runs the body (no second pre-execute). */
    approveCall: actionOn(['approval.answered'], (d, e) => {
      d.append('tool/approval-answer', { turn: d.get('turn'), step: d.get('step'), callId: e.callId, decision: 'approve' })
      d.setToolBatch({ approval: null })
    }),
    /**
     * TL-18: a person denied: the answer is logged, and the denial becomes the result only once that append is
     * confirmed, so a refused answer is a scheduler failure with no result (TL-17), as a refused question is.
     */
    recordDenial: actionOn(['approval.answered'], (d, e) => {
      const reason = e.reason ?? 'denied'
      d.append('tool/approval-answer', { turn: d.get('turn'), step: d.get('step'), callId: e.callId, decision: 'deny', reason })
      d.setToolBatch({ denial: reason })
      d.confirm()
    }),
    /** TL-18: the logged denial is the call's error result, like a pre-execute deny (post-execute still runs). */
    denyApprovalCall: action((d) => {
      const reason = batchOf(d).denial ?? 'denied'
      d.setToolBatch({ approval: null, denial: null })
      endWithoutBody(d, errorOutcome(reason, { name: 'ToolDeniedError', code: 'DENIED' }))
    }),
    /** TL-18: a cancel ends the wait: the call never started, its result says so through the normal pipeline (TL-16). */
    abandonApprovalOnCancel: action((d) => {
      d.setToolBatch({ approval: null })
      endWithoutBody(d, ABORTED_BEFORE_DISPATCH)
    }),
    /**
     * TL-18: a disposal while the call waits parks the question instead of ending the turn: nothing aborts, the
     * calls that started before it finish and commit, and the log stops inside the wait for a later process to answer.
     */
    parkApproval: actionOn(['agent.cancel'], (d, e) => {
      d.setActivity({ disposing: true })
      d.setToolBatch({ parked: true })
      if (!e.keepInbox) clearInbox(d)
    }),
    /** TL-17: a scheduler failure while the call waits ends the wait; the call never reaches its body. */
    abandonApprovalAfterFailure: action((d) => {
      d.setToolBatch({ approval: null, denial: null })
      endWithoutBody(d, ABORTED_BEFORE_DISPATCH, true)
    }),
    /** A throwing pre-execute is that call's error result and skips post-execute (TL-10, HK-9). */
    failPreExecute: actionOn(['hook.failed'], (d, e) => endWithoutBody(d, errorOutcome(e.failure.message), true)),
    /** Run the body; the next call may start while it runs. */
    startBody: action((d) => startBody(d)),
    /** TL-14: a call that never started and never will gets a synthetic pair. */
    commitSkippedCall: action((d) => {
      const b = batchOf(d)
      const call = b.calls[b.nextCommit]
      logCall(d, call)
      logResult(d, call, ABORTED_BEFORE_DISPATCH)
      d.setToolBatch({ nextCommit: b.nextCommit + 1 })
    }),
    askPostExecute: action((d) => {
      const b = batchOf(d)
      const i = b.nextCommit
      const postId = d.id()
      d.setToolBatch({ postId })
      d.emit({
        type: 'fx.hook',
        id: postId,
        name: 'tools/post-execute',
        payload: { ...executionOf(d, b.calls[i]), outcome: b.outcomes[i] },
        fallback: { kind: 'accept' },
        abandonOnCancel: false,
      })
    }),
    applyPostExecute: actionOn(['hook.done'], (d, e) => {
      const b = batchOf(d)
      settle(d, b.nextCommit, applyPost(b.outcomes[b.nextCommit]!, e.value))
    }),
    /** A throwing post-execute is the call's error result (HK-9). */
    failPostExecute: actionOn(['hook.failed'], (d, e) => settle(d, batchOf(d).nextCommit, errorOutcome(e.failure.message))),
    commitResult: action(commitNext),
    settleToolBody: actionOn(['tool.settled'], settleBody),
    /** The body of the next call in model order settled and nobody decides at post-execute: its result is committed at once. */
    settleAndCommit: actionOn(['tool.settled'], (d, e) => {
      settleBody(d, e)
      commitNext(d)
    }),
    /**
     * TL-17: a refused append inside the batch is a scheduler failure: nothing new starts, what runs is drained.
     * Work asked for after the refusal never started: a body is not waited for, a pre-execute call ends without
     * its body, and the commit lane stops.
     */
    recordSchedulerFailure: actionOn(['append.failed'], (d, e) => {
      if (batchOf(d).failure === null) d.setToolBatch({ failure: { failure: e.failure, step: d.get('step') } })
      const b = batchOf(d)
      const lost = new Set(e.unstarted)
      const bodies = b.bodyIds.filter((id) => lost.has(id)).length
      if (bodies > 0) d.setToolBatch({ inFlight: b.inFlight - bodies, bodyIds: b.bodyIds.map((id) => (lost.has(id) ? 0 : id)) })
      if (lost.has(batchOf(d).preId)) endWithoutBody(d, ABORTED_BEFORE_DISPATCH, true)
      if (lost.has(batchOf(d).postId)) d.setToolBatch({ postId: 0 })
      if (lost.has(batchOf(d).classifyId)) d.setToolBatch({ classifyId: 0 })
    }),
    /** The step's outcome once both lanes are done and every started body has settled. */
    finishToolBatch: action((d) => {
      const b = batchOf(d)
      if (b.failure) d.set({ stepOutcome: 'error', failure: b.failure, endReason: { kind: 'error', error: b.failure.failure } })
      else if (d.get('activity').cancelCause !== null) d.set({ stepOutcome: 'aborted' })
      else d.set({ stepOutcome: b.concluded ? 'completed' : 'continue' })
    }),
  },
  guards: {
    /**
     * TL-2, TL-5: the next call is classified by the runtime right before it starts: its mode depends on its
     * arguments, or someone watches (the classification is then a decision point a synchronous cancel can reach).
     */
    needsClassification: guard((context) => context.toolBatch.nextMode === null && (context.facts.observed || modeOfNext(context, context.toolBatch) === null)),
    asksPreExecute: guard((context) => asks(context, 'tools/pre-execute')),
    asksPostExecute: guard((context) => asks(context, 'tools/post-execute')),
    /** Someone can answer an `ask` (TL-18). */
    hasApprover: guard((context) => context.facts.approver),
    /** After a scheduler failure: no pre-execute or post-execute answer is on its way (it never started). */
    hasNoPreExecute: guard((context) => context.toolBatch.preId === 0),
    hasNoPostExecute: guard((context) => context.toolBatch.postId === 0),
    hasNoClassification: guard((context) => context.toolBatch.classifyId === 0),
    isDenied: guardOn(['hook.done'], (_context, e) => (e.value as { kind?: string } | undefined)?.kind === 'deny'),
    /** TL-18: pre-execute answered `ask{reason}`. */
    isAsk: guardOn(['hook.done'], (_context, e) => (e.value as { kind?: string } | undefined)?.kind === 'ask'),
    /** The instance starts inside an approval wait its log describes (TL-18). */
    hasApprovalWait: guard((context) => context.instance.resume !== null),
    /** The answer is for the call that waits now. */
    isAwaitedApproval: guardOn(['approval.answered'], (context, e) => context.toolBatch.approval === e.callId),
    isApproved: guardOn(['approval.answered'], (_context, e) => e.approved),
    /** TL-18: the cancel is a disposal's and no other cancel came first: the question outlives this instance. */
    isDisposalCancel: guardOn(['agent.cancel'], (context, e) => e.cause.kind === 'disposed' && context.activity.cancelCause === null),
    /** No new call starts once the turn is cancelled or the scheduler failed (TL-14, TL-17). */
    isHalted: guard(halted),
    hasSchedulerFailure: guard((context) => context.toolBatch.failure !== null),
    allCallsStarted: guard((context) => context.toolBatch.nextStart >= context.toolBatch.calls.length),
    /** The next call to start is the batch's last. */
    isLastCall: guard((context) => context.toolBatch.nextStart === context.toolBatch.calls.length - 1),
    /** Every earlier call has committed: a barrier may start, or a new pool open. */
    isDrained: guard((context) => drained(context.toolBatch)),
    /** Room for one more parallel call in the open pool (TL-4). */
    hasPoolRoom: guard((context) => poolRoom(context.toolBatch)),
    /** The next call may start now: a new group may open, or it joins the open pool (TL-3, TL-4). */
    mayStartNext: guard((context) => drained(context.toolBatch) || (poolRoom(context.toolBatch) && modeOfNext(context, context.toolBatch) === 'parallel')),
    /** Every call is committed, or the scheduler failed: the commit lane has nothing more to do. */
    commitsDone: guard((context) => context.toolBatch.nextCommit >= context.toolBatch.calls.length || context.toolBatch.failure !== null),
    /** The commit lane has a settled result to post-execute or commit before anything new starts. */
    isCommitBusy: guard((context) => context.toolBatch.postId !== 0 || committable(context.toolBatch)),
    /** The next call in model order has settled. */
    isCommittable: guard((context) => committable(context.toolBatch)),
    skipsPostExecute: guard((context) => context.toolBatch.skipPost[context.toolBatch.nextCommit]),
    /** The next call in model order never started and never will (TL-14). */
    isSkippable: guard((context) => {
      const b = context.toolBatch
      return context.activity.cancelCause !== null && b.failure === null && b.nextCommit < b.calls.length && !b.started[b.nextCommit]
    }),
    noBodiesInFlight: guard((context) => context.toolBatch.inFlight === 0),
    /** The settled body is the next call in model order to commit, and the commit lane is free to commit it (no scheduler failure). */
    settlesNextCommit: guardOn(['tool.settled'], (context, e) => {
      const b = context.toolBatch
      return b.failure === null && b.bodyIds[b.nextCommit] === e.id && b.outcomes[b.nextCommit] === null
    }),
    /** The next result to commit is the batch's last and its body is the only call still running. */
    isLastResult: guard((context) => context.toolBatch.nextCommit === context.toolBatch.calls.length - 1 && context.toolBatch.inFlight === 1),
    /** The dispatch lane has started or given up on every call: once the commit lane is done too, the batch is. */
    isDispatchFinished: stateIn('#dispatchFinished') as ReturnType<typeof stateIn> & WrittenFor<'*'>,
  },
})

export type ToolBatchImplementations = typeof toolBatchImplementations & typeof activityImplementations & typeof inboxImplementations
export const toolBatchSetup = activitySetup.extend(toolBatchImplementations)

/**
 * Two regions over the same calls: `dispatch` starts them, `commit` writes their results in model order and, once
 * it is done, waits for every started body to settle (no step/end before, TL-15, TL-17). The batch is done when both
 * are: the commit lane then leaves it in one eventless transition, for `exit` (a final of its own when standalone).
 */
function toolBatchConfig(exit: { target: string; actions: readonly 'finishToolBatch'[]; standalone: boolean }) {
  return labelGuards(
    attached<ToolBatchImplementations>()(
      toolBatchSetup.createStateConfig({
        id: 'toolBatch',
        type: 'parallel',
        on: {
          // TL-17: a refused append inside the batch is a scheduler failure: stop, drain, end the turn error
          'append.failed': { guard: 'isActivityFailure', actions: ['restoreInbox', 'recordSchedulerFailure'] },
          'tool.settled': [
            // the batch's last result, nothing else running and dispatch done: it commits and the batch ends in the same microstep
            {
              guard: and(['settlesNextCommit', not('asksPostExecute'), 'isLastResult', 'isDispatchFinished']),
              target: exit.target,
              actions: ['settleAndCommit', ...exit.actions],
            },
            // TL-10: nobody decides or watches at post-execute: the next result in model order commits as it settles
            { guard: and(['settlesNextCommit', not('asksPostExecute')]), actions: 'settleAndCommit' },
            { actions: 'settleToolBody' },
          ],
        },
        states: {
          dispatch: {
            initial: 'next',
            states: {
              next: {
                // wait for room as if the call were parallel-safe, and for settled results to commit first;
                // the call's mode is read right before it would start (TL-5, TL-6)
                always: [
                  { guard: or(['allCallsStarted', 'isHalted']), target: 'finished' },
                  { guard: and([not('isCommitBusy'), or(['isDrained', 'hasPoolRoom']), 'needsClassification']), target: 'classifying' },
                  // TL-10: nobody decides or watches at pre-execute: the call is allowed, its body runs, the next may start
                  // (after the last call, dispatch is finished in the same microstep)
                  { guard: and([not('isCommitBusy'), 'mayStartNext', not('asksPreExecute'), 'isLastCall']), target: 'finished', actions: 'startNextCall' },
                  { guard: and([not('isCommitBusy'), 'mayStartNext', not('asksPreExecute')]), target: 'next', reenter: true, actions: 'startNextCall' },
                  { guard: and([not('isCommitBusy'), 'mayStartNext']), target: 'preExecuting', actions: 'startNextCall' },
                  { guard: and([not('isCommitBusy'), 'hasPoolRoom']), target: 'barrier', actions: 'closePool' },
                ],
              },
              classifying: {
                entry: 'classifyNextCall',
                // TL-17: a classification that never started (an append before it was refused)
                always: { guard: and(['hasSchedulerFailure', 'hasNoClassification']), target: 'finished' },
                on: awaiting(
                  {
                    'tool.classified': [
                      { guard: 'isHalted', target: 'finished' },
                      { target: 'next', actions: 'recordMode' },
                    ],
                  },
                  'classifyId',
                ),
              },
              barrier: {
                always: [
                  { guard: 'isHalted', target: 'finished' },
                  { guard: and(['isDrained', not('asksPreExecute')]), target: 'next', actions: 'startNextCall' },
                  { guard: 'isDrained', target: 'preExecuting', actions: 'startNextCall' },
                ],
              },
              preExecuting: {
                // TL-17: the pre-execute never started (an append before it was refused); its call ended without a body
                always: { guard: and(['hasSchedulerFailure', 'hasNoPreExecute']), target: 'next' },
                on: awaiting(
                  {
                    'hook.done': [
                      { guard: 'hasSchedulerFailure', target: 'next', actions: 'skipBodyAfterFailure' },
                      { guard: 'isCancelled', target: 'next', actions: 'skipBodyAfterCancel' },
                      { guard: 'isDenied', target: 'next', actions: 'denyCall' },
                      { guard: and(['isAsk', 'hasApprover']), target: 'awaitingApproval', actions: 'requestApproval' },
                      { guard: 'isAsk', target: 'next', actions: 'denyUnanswerable' },
                      { target: 'next', actions: 'startBody' },
                    ],
                    'hook.failed': { target: 'next', actions: 'failPreExecute' },
                  },
                  'preId',
                ),
              },
              // TL-18: the call waits for agent.approve / agent.deny; a resumed instance starts here after a restart
              awaitingApproval: {
                always: { guard: 'hasSchedulerFailure', target: 'next', actions: 'abandonApprovalAfterFailure' },
                on: {
                  'approval.answered': [
                    { guard: and(['isAwaitedApproval', 'isApproved']), target: 'next', actions: ['approveCall', 'startBody'] },
                    { guard: 'isAwaitedApproval', target: 'recordingDenial', actions: 'recordDenial' },
                  ],
                  'agent.cancel': [
                    // a disposal parks the question: the log keeps it pending and a later process answers it
                    { guard: 'isDisposalCancel', actions: 'parkApproval' },
                    // any other cancel ends the wait like any other: the signal aborts, the call is closed as not started
                    { target: 'next', actions: ['cancelActivity', 'abandonApprovalOnCancel'] },
                  ],
                },
              },
              // TL-18: the denial is logged; it becomes the result once the append is confirmed (a refusal: TL-17)
              recordingDenial: {
                always: { guard: 'hasSchedulerFailure', target: 'next', actions: 'abandonApprovalAfterFailure' },
                on: awaiting({ 'appends.confirmed': { target: 'next', actions: 'denyApprovalCall' } }),
              },
              finished: exit.standalone ? { id: 'dispatchFinished', type: 'final' } : { id: 'dispatchFinished' },
            },
          },
          commit: {
            initial: 'waiting',
            states: {
              waiting: {
                always: [
                  // every result is in (TL-17: after a scheduler failure nothing more is committed), and no body runs
                  { guard: and(['commitsDone', 'noBodiesInFlight', 'isDispatchFinished']), target: exit.target, actions: exit.actions },
                  { guard: 'commitsDone', target: 'draining' },
                  { guard: 'isSkippable', target: 'waiting', reenter: true, actions: 'commitSkippedCall' },
                  // TL-10: post-execute runs when anyone decides or watches there (never after a throwing pre-execute)
                  { guard: and(['isCommittable', not('skipsPostExecute'), 'asksPostExecute']), target: 'postExecuting' },
                  { guard: 'isCommittable', target: 'waiting', reenter: true, actions: 'commitResult' },
                ],
              },
              postExecuting: {
                entry: 'askPostExecute',
                // TL-17: the post-execute never started (an append before it was refused): nothing more commits
                always: { guard: and(['hasSchedulerFailure', 'hasNoPostExecute']), target: 'waiting' },
                on: awaiting(
                  {
                    'hook.done': { target: 'waiting', actions: ['applyPostExecute', 'commitResult'] },
                    'hook.failed': { target: 'waiting', actions: ['failPostExecute', 'commitResult'] },
                  },
                  'postId',
                ),
              },
              // no turn/end before every started call has settled (TL-15, TL-17); a call in its pre-execute counts as running
              draining: { always: { guard: and(['noBodiesInFlight', 'isDispatchFinished']), target: exit.target, actions: exit.actions } },
              finished: { type: 'final' },
            },
          },
        },
      }),
    ),
  )
}

/** The batch inside a step: done, it closes the step with the step's outcome. */
export const toolBatchState = toolBatchConfig({ target: '#stepClosed', actions: ['finishToolBatch'], standalone: false })
const standaloneConfig = toolBatchConfig({ target: '#toolBatch.commit.finished', actions: [], standalone: true })
/** On its own the batch ends in a final of each lane, so the machine is done when both are. */
const standaloneBatchState = {
  ...standaloneConfig,
  states: {
    ...standaloneConfig.states,
    commit: { ...standaloneConfig.states.commit, states: { ...standaloneConfig.states.commit.states, finished: { type: 'final' as const } } },
  },
}

/** The tool batch on its own: the calls of one step, planned in context (`toolBatch`). */
export const toolBatchMachine = toolBatchSetup.createMachine({
  context: ({ input }) => ({ ...initialContext(input), turn: 1, step: 1 }),
  ...standaloneBatchState,
  on: standaloneOn(standaloneBatchState.on),
})

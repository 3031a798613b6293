// tool batch: runs the calls an anchor asked for. Two regions work side by
// side: `dispatch` starts calls in model order (classify, wait for room,
// tool/call, pre-execute, body): exclusive calls are barriers, parallel-safe
// calls share a rolling pool bounded by the cap. `commit` runs post-execute
// and appends tool/result strictly in model order. Cancellation drains what
// started and writes synthetic pairs for the rest (TL-14, TL-15).
import { and, not, or } from 'xstate'
import { activitySetup, standaloneOn } from './activity.js'
import type { activityImplementations } from './activity.js'
import { attached } from './attachment.js'
import { initialContext } from './context.js'
import { action, actionOn, guard, guardOn, type Draft, named, labelGuards } from './draft.js'
import { insertInbox, type inboxImplementations } from './inbox.js'
import type { PlannedCall, PostExecuteDecision, ToolBatchContext, ToolOutcome } from './types.js'

export const ABORTED_BEFORE_DISPATCH: ToolOutcome = {
  isError: true,
  content: 'Error: tool call aborted before dispatch',
  error: { name: 'AbortError', code: 'ABORTED_BEFORE_DISPATCH' },
}
export const ABORTED_WHILE_RUNNING: ToolOutcome = {
  isError: true,
  content: 'Error: tool call aborted',
  error: { name: 'AbortError', code: 'ABORTED' },
}

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

const executionOf = (d: Draft, call: PlannedCall) => ({
  turn: d.get('turn'),
  step: d.get('step'),
  callId: call.callId,
  name: call.name,
  arguments: call.args,
})

function logCall(d: Draft, call: PlannedCall): void {
  d.append(
    'tool/call',
    { turn: d.get('turn'), step: d.get('step'), callId: call.callId, name: call.name, arguments: call.arguments },
    { key: `call:${call.callId}` },
  )
}

function logResult(d: Draft, call: PlannedCall, outcome: ToolOutcome): void {
  const message = {
    id: `${d.get('instance').id}-r${d.id()}`,
    role: 'user' as const,
    source: { kind: 'tool' as const, callId: call.callId },
    content: [{ type: 'tool-result' as const, toolCallId: call.callId, content: outcome.content, isError: outcome.isError }] as [
      { type: 'tool-result'; toolCallId: string; content: string; isError: boolean },
    ],
  }
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
 * hands the machine the decision as plain checked data (PostExecuteDecision): a `value` is already its JSON text.
 */
function applyPost(outcome: ToolOutcome, decision: unknown): ToolOutcome {
  const dec = (decision ?? { kind: 'accept' }) as PostExecuteDecision
  if (dec.kind === 'block') {
    return { isError: true, content: dec.feedback, ...(dec.additionalContexts?.length ? { additionalContexts: [...dec.additionalContexts] } : {}) }
  }
  const contexts = [...(outcome.additionalContexts ?? []), ...(dec.additionalContexts ?? [])]
  const { additionalContexts: _drop, ...rest } = outcome
  return { ...rest, ...(dec.content !== undefined ? { content: dec.content } : {}), ...(contexts.length > 0 ? { additionalContexts: contexts } : {}) }
}

/** The call's pre-stage ended without a body: it no longer holds a pool slot. */
function endWithoutBody(d: Draft, outcome: ToolOutcome, skipPost = false): void {
  const b = batchOf(d)
  settle(d, b.nextStart, outcome, skipPost)
  d.setToolBatch({ inFlight: batchOf(d).inFlight - 1, nextStart: b.nextStart + 1, preId: 0 })
}

// ---- guards' reads -------------------------------------------------------------------

const halted = (context: { cancelCause: unknown; toolBatch: ToolBatchContext }) => context.cancelCause !== null || context.toolBatch.failure !== null
const drained = (b: ToolBatchContext) => b.nextCommit >= b.nextStart && b.inFlight === 0
const poolRoom = (b: ToolBatchContext) => b.pool && b.inFlight < b.cap
const committable = (b: ToolBatchContext) => b.nextCommit < b.calls.length && b.outcomes[b.nextCommit] !== null

// ---- named implementations ---------------------------------------------------------

export const toolBatchImplementations = named({
  actions: {
    /** Ask whether the next call may join a parallel pool, right before it would start (TL-2, TL-5). */
    classifyNextCall: action((d) => {
      const b = batchOf(d)
      const classifyId = d.id()
      d.setToolBatch({ classifyId })
      d.emit({ type: 'fx.classify', id: classifyId, call: b.calls[b.nextStart] })
    }),
    /** A new group starts: a pool if the call is parallel-safe, else a barrier; the cap is read now (TL-4). */
    openGroup: actionOn(['tool.classified'], (d, e) => d.setToolBatch({ pool: e.mode === 'parallel', cap: d.get('instance').maxParallelToolCalls })),
    /** No longer parallel-safe: the pool stops filling, drains, and this call is the next barrier (TL-5). */
    closePool: action((d) => d.setToolBatch({ pool: false })),
    /** Log the call and run its pre-execute; bodies overlap, pre-execute runs one call at a time (TL-6, TL-7). */
    startCall: action((d) => {
      const b = batchOf(d)
      const i = b.nextStart
      const call = b.calls[i]
      logCall(d, call)
      const preId = d.id()
      d.setToolBatch({ started: setAt(b.started, i, true), inFlight: b.inFlight + 1, preId })
      d.emit({ type: 'fx.hook', id: preId, name: 'tools/pre-execute', payload: executionOf(d, call), fallback: { kind: 'allow' } })
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
    /**
     * TL-18: pre-execute asked for a person's approval: the call keeps its slot and dispatch waits (approvals are
     * asked one at a time, in model order, like pre-execute itself); the question is logged so it survives a restart.
     */
    requestApproval: actionOn(['hook.done'], (d, e) => {
      const b = batchOf(d)
      const call = b.calls[b.nextStart]
      const reason = (e.value as { reason?: string }).reason ?? 'approval required'
      d.setToolBatch({ preId: 0, approval: call.callId })
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
    /** TL-17: a scheduler failure while the call waits ends the wait; the call never reaches its body. */
    abandonApprovalAfterFailure: action((d) => {
      d.setToolBatch({ approval: null, denial: null })
      endWithoutBody(d, ABORTED_BEFORE_DISPATCH, true)
    }),
    /** A throwing pre-execute is that call's error result and skips post-execute (TL-10, HK-9). */
    failPreExecute: actionOn(['hook.failed'], (d, e) => endWithoutBody(d, errorOutcome(e.failure.message), true)),
    /** Run the body; the next call may start while it runs. */
    startBody: action((d) => {
      const b = batchOf(d)
      const i = b.nextStart
      const bodyId = d.id()
      d.setToolBatch({ bodyIds: setAt(b.bodyIds, i, bodyId), nextStart: i + 1, preId: 0 })
      d.emit({ type: 'fx.tool', id: bodyId, turn: d.get('turn'), step: d.get('step'), call: b.calls[i] })
    }),
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
      })
    }),
    applyPostExecute: actionOn(['hook.done'], (d, e) => {
      const b = batchOf(d)
      settle(d, b.nextCommit, applyPost(b.outcomes[b.nextCommit]!, e.value))
    }),
    /** A throwing post-execute is the call's error result (HK-9). */
    failPostExecute: actionOn(['hook.failed'], (d, e) => settle(d, batchOf(d).nextCommit, errorOutcome(e.failure.message))),
    /** tools/result, then tool/result; its contexts wait in next-step for the next step (TL-10, TL-12, TL-13). */
    commitResult: action((d) => {
      const b = batchOf(d)
      const i = b.nextCommit
      const call = b.calls[i]
      const outcome = b.outcomes[i]!
      d.notify('tools/result', { ...executionOf(d, call), outcome })
      logResult(d, call, outcome)
      insertInbox(d, 'next-step', outcome.additionalContexts ?? [])
      const concludes = outcome.concludesTurn === true && !outcome.isError
      d.setToolBatch({ nextCommit: i + 1, postId: 0, concluded: batchOf(d).concluded || concludes })
    }),
    /** A body settled; after the abort a success is recorded as aborted, its own error stays (TL-15). */
    settleToolBody: actionOn(['tool.settled'], (d, e) => {
      const b = batchOf(d)
      const i = b.bodyIds.indexOf(e.id)
      if (i < 0 || b.outcomes[i] !== null) return
      const outcome =
        d.get('cancelCause') !== null && !e.outcome.isError
          ? { ...ABORTED_WHILE_RUNNING, ...(e.outcome.additionalContexts ? { additionalContexts: e.outcome.additionalContexts } : {}) }
          : e.outcome
      settle(d, i, outcome)
      d.setToolBatch({ inFlight: batchOf(d).inFlight - 1 })
    }),
    /** TL-17: a refused append inside the batch is a scheduler failure: nothing new starts, what runs is drained. */
    recordSchedulerFailure: actionOn(['append.failed'], (d, e) => {
      if (batchOf(d).failure === null) d.setToolBatch({ failure: { failure: e.failure, step: d.get('step') } })
    }),
    /** While draining, a settled body only frees its slot. */
    countDrainedBody: actionOn(['tool.settled'], (d, e) => {
      const b = batchOf(d)
      if (b.bodyIds.includes(e.id)) d.setToolBatch({ inFlight: b.inFlight - 1 })
    }),
    /** The step's outcome once both lanes are done and every started body has settled. */
    finishToolBatch: action((d) => {
      const b = batchOf(d)
      if (b.failure) d.set({ stepOutcome: 'error', failure: b.failure, endReason: { kind: 'error', error: b.failure.failure } })
      else if (d.get('cancelCause') !== null) d.set({ stepOutcome: 'aborted' })
      else d.set({ stepOutcome: b.concluded ? 'completed' : 'continue' })
    }),
  },
  guards: {
    isPreExecuteAnswer: guardOn(['hook.done', 'hook.failed'], (context, e) => e.id === context.toolBatch.preId),
    isPostExecuteAnswer: guardOn(['hook.done', 'hook.failed'], (context, e) => e.id === context.toolBatch.postId),
    isClassification: guardOn(['tool.classified'], (context, e) => e.id === context.toolBatch.classifyId),
    isClassifiedParallel: guardOn(['tool.classified'], (_context, e) => e.mode === 'parallel'),
    isDenied: guardOn(['hook.done'], (_context, e) => (e.value as { kind?: string } | undefined)?.kind === 'deny'),
    /** TL-18: pre-execute answered `ask{reason}` (the runtime has already turned it into a deny when no approver is configured). */
    isAsk: guardOn(['hook.done'], (_context, e) => (e.value as { kind?: string } | undefined)?.kind === 'ask'),
    /** The answer is for the call that waits now. */
    isAwaitedApproval: guardOn(['approval.answered'], (context, e) => context.toolBatch.approval === e.callId),
    isApproved: guardOn(['approval.answered'], (_context, e) => e.approved),
    /** No new call starts once the turn is cancelled or the scheduler failed (TL-14, TL-17). */
    isHalted: guard(halted),
    hasSchedulerFailure: guard((context) => context.toolBatch.failure !== null),
    allCallsStarted: guard((context) => context.toolBatch.nextStart >= context.toolBatch.calls.length),
    /** Every earlier call has committed: a barrier may start, or a new pool open. */
    isDrained: guard((context) => drained(context.toolBatch)),
    /** Room for one more parallel call in the open pool (TL-4). */
    hasPoolRoom: guard((context) => poolRoom(context.toolBatch)),
    /** The commit lane has a settled result to post-execute or commit before anything new starts. */
    isCommitBusy: guard((context) => context.toolBatch.postId !== 0 || committable(context.toolBatch)),
    /** The next call in model order has settled. */
    isCommittable: guard((context) => committable(context.toolBatch)),
    skipsPostExecute: guard((context) => context.toolBatch.skipPost[context.toolBatch.nextCommit]),
    allCommitted: guard((context) => context.toolBatch.nextCommit >= context.toolBatch.calls.length),
    /** The next call in model order never started and never will (TL-14). */
    isSkippable: guard((context) => {
      const b = context.toolBatch
      return context.cancelCause !== null && b.failure === null && b.nextCommit < b.calls.length && !b.started[b.nextCommit]
    }),
    noBodiesInFlight: guard((context) => context.toolBatch.inFlight === 0),
  },
})

export type ToolBatchImplementations = typeof toolBatchImplementations & typeof activityImplementations & typeof inboxImplementations
export const toolBatchSetup = activitySetup.extend(toolBatchImplementations)

export const toolBatchState = labelGuards(
  attached<ToolBatchImplementations>()(
    toolBatchSetup.createStateConfig({
      initial: 'running',
      on: {
        // TL-17: a refused append inside the batch is a scheduler failure: stop, drain, end the turn error
        'append.failed': { guard: 'isActivityFailure', actions: ['restoreInbox', 'recordSchedulerFailure'] },
      },
      states: {
        running: {
          type: 'parallel',
          states: {
            dispatch: {
              initial: 'next',
              states: {
                next: {
                  always: [
                    { guard: or(['allCallsStarted', 'isHalted']), target: 'finished' },
                    // wait for room as if the call were parallel-safe, and for settled results to commit first;
                    // the call is classified right before it would start (TL-5, TL-6)
                    { guard: and([not('isCommitBusy'), or(['isDrained', 'hasPoolRoom'])]), target: 'classifying' },
                  ],
                },
                classifying: {
                  entry: 'classifyNextCall',
                  on: {
                    'tool.classified': [
                      { guard: and(['isClassification', 'isHalted']), target: 'finished' },
                      { guard: and(['isClassification', 'isDrained']), target: 'preExecuting', actions: 'openGroup' },
                      { guard: and(['isClassification', 'isClassifiedParallel', 'hasPoolRoom']), target: 'preExecuting' },
                      { guard: 'isClassification', target: 'barrier', actions: 'closePool' },
                    ],
                  },
                },
                barrier: {
                  always: [
                    { guard: 'isHalted', target: 'finished' },
                    { guard: 'isDrained', target: 'preExecuting' },
                  ],
                },
                preExecuting: {
                  entry: 'startCall',
                  on: {
                    'hook.done': [
                      { guard: and(['isPreExecuteAnswer', 'hasSchedulerFailure']), target: 'next', actions: 'skipBodyAfterFailure' },
                      { guard: and(['isPreExecuteAnswer', 'isCancelled']), target: 'next', actions: 'skipBodyAfterCancel' },
                      { guard: and(['isPreExecuteAnswer', 'isDenied']), target: 'next', actions: 'denyCall' },
                      { guard: and(['isPreExecuteAnswer', 'isAsk']), target: 'awaitingApproval', actions: 'requestApproval' },
                      { guard: 'isPreExecuteAnswer', target: 'next', actions: 'startBody' },
                    ],
                    'hook.failed': { guard: 'isPreExecuteAnswer', target: 'next', actions: 'failPreExecute' },
                  },
                },
                // TL-18: the call waits for agent.approve / agent.deny; a resumed instance starts here after a restart
                awaitingApproval: {
                  always: { guard: 'hasSchedulerFailure', target: 'next', actions: 'abandonApprovalAfterFailure' },
                  on: {
                    'approval.answered': [
                      { guard: and(['isAwaitedApproval', 'isApproved']), target: 'next', actions: ['approveCall', 'startBody'] },
                      { guard: 'isAwaitedApproval', target: 'recordingDenial', actions: 'recordDenial' },
                    ],
                    // cancel ends the wait like any other: the signal aborts, the call is closed as not started
                    'agent.cancel': { target: 'next', actions: ['cancelActivity', 'abandonApprovalOnCancel'] },
                  },
                },
                // TL-18: the denial is logged; it becomes the result once the append is confirmed (a refusal: TL-17)
                recordingDenial: {
                  always: { guard: 'hasSchedulerFailure', target: 'next', actions: 'abandonApprovalAfterFailure' },
                  on: { 'appends.confirmed': { guard: 'isAwaited', target: 'next', actions: 'denyApprovalCall' } },
                },
                finished: { type: 'final' },
              },
            },
            commit: {
              initial: 'waiting',
              states: {
                waiting: {
                  always: [
                    { guard: 'allCommitted', target: 'finished' },
                    // TL-17: after a scheduler failure nothing more is committed; only the drain remains
                    { guard: 'hasSchedulerFailure', target: 'finished' },
                    { guard: 'isSkippable', target: 'waiting', reenter: true, actions: 'commitSkippedCall' },
                    { guard: and(['isCommittable', 'skipsPostExecute']), target: 'committing' },
                    { guard: 'isCommittable', target: 'postExecuting' },
                  ],
                },
                postExecuting: {
                  entry: 'askPostExecute',
                  on: {
                    'hook.done': { guard: 'isPostExecuteAnswer', target: 'committing', actions: 'applyPostExecute' },
                    'hook.failed': [
                      // TL-17: the post-execute never started because an append of its macrostep was refused: nothing more commits
                      { guard: and(['isPostExecuteAnswer', 'hasSchedulerFailure']), target: 'finished' },
                      { guard: 'isPostExecuteAnswer', target: 'committing', actions: 'failPostExecute' },
                    ],
                  },
                },
                committing: { entry: 'commitResult', always: 'waiting' },
                finished: { type: 'final' },
              },
            },
          },
          on: { 'tool.settled': { actions: 'settleToolBody' } },
          onDone: 'draining',
        },
        // no turn/end before every started body has settled (TL-15, TL-17); no pre-execute can be pending here
        draining: {
          always: { guard: 'noBodiesInFlight', target: 'done', actions: 'finishToolBatch' },
          on: { 'tool.settled': { actions: 'countDrainedBody' } },
        },
        done: { type: 'final' },
      },
    }),
  ),
)

/** The tool batch on its own: the calls of one step, planned in context (`toolBatch`). */
export const toolBatchMachine = toolBatchSetup.createMachine({
  id: 'toolBatch',
  context: ({ input }) => ({ ...initialContext(input), turn: 1, step: 1 }),
  ...toolBatchState,
  on: standaloneOn(toolBatchState.on),
})

// tool batch: runs the calls an anchor asked for. Two regions work side by
// side: `dispatch` starts calls in model order (classify, wait for room,
// tool/call, pre-execute, body): exclusive calls are barriers, parallel-safe
// calls share a rolling pool bounded by the cap. `commit` runs post-execute
// and appends tool/result strictly in model order. Cancellation drains what
// started and writes synthetic pairs for the rest (TL-14, TL-15).
import type { UserMessage } from '../session/schemas.js'
import { activeOn } from './active.js'
import { act, agentSetup, initialContext, insert, type Draft, type EventOf } from './setup.js'
import type { AgentContext, PlannedCall, ToolBatchContext, ToolOutcome, TurnFailure } from './types.js'
export { newBatch } from './batch.js'

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

const batch = (d: Draft) => d.get('tools')
const update = (d: Draft, patch: Partial<ToolBatchContext>) => d.set({ tools: { ...d.get('tools'), ...patch } })
const setAt = <T>(list: readonly T[], i: number, value: T): T[] => list.map((v, j) => (j === i ? value : v))

function settle(d: Draft, i: number, outcome: ToolOutcome, skipPost = false): void {
  const b = batch(d)
  update(d, { outcomes: setAt(b.outcomes, i, outcome), skipPost: setAt(b.skipPost, i, skipPost) })
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

/** Apply a post-execute decision: accept (optionally replacing content or value), or block with feedback (TL-10). */
function applyPost(outcome: ToolOutcome, decision: unknown): ToolOutcome {
  const dec = (decision ?? { kind: 'accept' }) as {
    kind?: string
    content?: string
    value?: unknown
    feedback?: string
    additionalContexts?: UserMessage[]
  }
  // TL-10: a decision replaces content or value, never both
  if (dec.content !== undefined && dec.value !== undefined) return errorOutcome('tools/post-execute returned both content and value')
  if (dec.kind === 'block') {
    return { isError: true, content: String(dec.feedback ?? ''), ...(dec.additionalContexts?.length ? { additionalContexts: dec.additionalContexts } : {}) }
  }
  const replaced =
    dec.content !== undefined ? dec.content : dec.value !== undefined ? (typeof dec.value === 'string' ? dec.value : JSON.stringify(dec.value)) : undefined
  const contexts = [...(outcome.additionalContexts ?? []), ...(dec.additionalContexts ?? [])]
  const { additionalContexts: _drop, ...rest } = outcome
  return { ...rest, ...(replaced !== undefined ? { content: replaced } : {}), ...(contexts.length > 0 ? { additionalContexts: contexts } : {}) }
}

// ---- guards ------------------------------------------------------------------

type Args = { context: AgentContext; event: { type: string } }
const eventId = (event: { type: string }) => (event as { id?: number }).id
const isPre = ({ context, event }: Args) => eventId(event) === context.tools.preId
const isPost = ({ context, event }: Args) => eventId(event) === context.tools.postId
const isClassified = ({ context, event }: Args) => eventId(event) === context.tools.classifyId
/** No new call starts once the turn is cancelled or the scheduler failed (TL-14, TL-17). */
const halted = ({ context }: Args) => context.cause !== null || context.tools.failure !== null
const allStarted = ({ context }: Args) => context.tools.nextStart >= context.tools.calls.length
/** Every earlier call has committed: a barrier may start, or a new pool open. */
const drained = ({ context }: Args) => context.tools.nextCommit >= context.tools.nextStart && context.tools.inFlight === 0
/** Room for one more parallel call in the open pool (TL-4). */
const poolRoom = ({ context }: Args) => context.tools.pool && context.tools.inFlight < context.tools.cap
/** The commit lane has a settled result to post-execute or commit before anything new starts. */
const commitBusy = ({ context }: Args) => {
  const b = context.tools
  return b.postId !== 0 || (b.nextCommit < b.calls.length && b.outcomes[b.nextCommit] !== null)
}
const classifiedAs =
  (mode: 'parallel' | 'exclusive') =>
  ({ event }: Args) =>
    (event as EventOf<'tool.classified'>).mode === mode

// ---- the dispatch lane ---------------------------------------------------------

/** Log the call and run its pre-execute; bodies overlap, pre-execute runs one call at a time (TL-6, TL-7). */
const startCall = act((d) => {
  const b = batch(d)
  const i = b.nextStart
  const call = b.calls[i]
  logCall(d, call)
  const preId = d.id()
  update(d, { started: setAt(b.started, i, true), inFlight: b.inFlight + 1, preId })
  d.emit({ type: 'fx.hook', id: preId, name: 'tools/pre-execute', payload: executionOf(d, call), fallback: { kind: 'allow' } })
})

/** The call's pre-stage ended without a body: it no longer holds a pool slot. */
function endWithoutBody(d: Draft, outcome: ToolOutcome, skipPost = false): void {
  const b = batch(d)
  settle(d, b.nextStart, outcome, skipPost)
  update(d, { inFlight: batch(d).inFlight - 1, nextStart: b.nextStart + 1, preId: 0 })
}

const dispatch = {
  initial: 'next',
  states: {
    next: {
      always: [
        { guard: (a: Args) => allStarted(a) || halted(a), target: 'finished' },
        // wait for room as if the call were parallel-safe, and for settled results to commit first;
        // the call is classified right before it would start (TL-5, TL-6)
        { guard: (a: Args) => !commitBusy(a) && (drained(a) || poolRoom(a)), target: 'classifying' },
      ],
    },
    classifying: {
      entry: act((d) => {
        const b = batch(d)
        const classifyId = d.id()
        update(d, { classifyId })
        d.emit({ type: 'fx.classify', id: classifyId, call: b.calls[b.nextStart] })
      }),
      on: {
        'tool.classified': [
          { guard: (a: Args) => isClassified(a) && halted(a), target: 'finished' },
          {
            // a new group: read the cap now (TL-4)
            guard: (a: Args) => isClassified(a) && drained(a),
            target: 'preExecuting',
            actions: act<'tool.classified'>((d, e) => update(d, { pool: e.mode === 'parallel', cap: d.get('instance').maxParallelToolCalls })),
          },
          { guard: (a: Args) => isClassified(a) && classifiedAs('parallel')(a) && poolRoom(a), target: 'preExecuting' },
          // no longer parallel-safe: the pool stops filling, drains, and this call is the next barrier
          { guard: isClassified, target: 'barrier', actions: act((d) => update(d, { pool: false })) },
        ],
      },
    },
    barrier: {
      always: [
        { guard: halted, target: 'finished' },
        { guard: drained, target: 'preExecuting' },
      ],
    },
    preExecuting: {
      entry: startCall,
      on: {
        'hook.done': [
          {
            // TL-17: after a scheduler failure a pending call does not reach its body
            guard: (a: Args) => isPre(a) && a.context.tools.failure !== null,
            target: 'next',
            actions: act((d) => endWithoutBody(d, ABORTED_BEFORE_DISPATCH, true)),
          },
          {
            // TL-16: cancelled while pre-execute ran: no body, but the pipeline still runs
            guard: (a: Args) => isPre(a) && a.context.cause !== null,
            target: 'next',
            actions: act((d) => endWithoutBody(d, ABORTED_BEFORE_DISPATCH)),
          },
          {
            guard: (a: Args) => isPre(a) && ((a.event as EventOf<'hook.done'>).value as { kind?: string })?.kind === 'deny',
            target: 'next',
            actions: act<'hook.done'>((d, e) => {
              const reason = String((e.value as { reason?: unknown }).reason ?? 'denied')
              endWithoutBody(d, errorOutcome(reason, { name: 'ToolDeniedError', code: 'DENIED' }))
            }),
          },
          {
            guard: isPre,
            target: 'next',
            actions: act((d) => {
              const b = batch(d)
              const i = b.nextStart
              const bodyId = d.id()
              update(d, { bodyIds: setAt(b.bodyIds, i, bodyId), nextStart: i + 1, preId: 0 })
              d.emit({ type: 'fx.tool', id: bodyId, turn: d.get('turn'), step: d.get('step'), call: b.calls[i] })
            }),
          },
        ],
        // a throwing pre-execute is that call's error result and skips post-execute (TL-10, HK-9)
        'hook.failed': {
          guard: isPre,
          target: 'next',
          actions: act<'hook.failed'>((d, e) => endWithoutBody(d, errorOutcome(e.failure.message), true)),
        },
      },
    },
    finished: { type: 'final' as const },
  },
}

// ---- the commit lane -----------------------------------------------------------

const committable = ({ context }: Args) => {
  const b = context.tools
  return b.nextCommit < b.calls.length && b.outcomes[b.nextCommit] !== null
}
/** The next call in model order never started and never will: it gets a synthetic pair (TL-14). */
const skippable = (a: Args) => {
  const b = a.context.tools
  return halted(a) && b.failure === null && b.nextCommit < b.calls.length && !b.started[b.nextCommit] && a.context.cause !== null
}

const commit = {
  initial: 'waiting',
  states: {
    waiting: {
      always: [
        { guard: ({ context }: Args) => context.tools.nextCommit >= context.tools.calls.length, target: 'finished' },
        // TL-17: after a scheduler failure nothing more is committed; only the drain remains
        { guard: ({ context }: Args) => context.tools.failure !== null, target: 'finished' },
        {
          guard: skippable,
          target: 'waiting',
          reenter: true,
          actions: act((d) => {
            const b = batch(d)
            const call = b.calls[b.nextCommit]
            logCall(d, call)
            logResult(d, call, ABORTED_BEFORE_DISPATCH)
            update(d, { nextCommit: b.nextCommit + 1 })
          }),
        },
        { guard: (a: Args) => committable(a) && a.context.tools.skipPost[a.context.tools.nextCommit], target: 'committing' },
        { guard: committable, target: 'postExecuting' },
      ],
    },
    postExecuting: {
      entry: act((d) => {
        const b = batch(d)
        const i = b.nextCommit
        const postId = d.id()
        update(d, { postId })
        d.emit({
          type: 'fx.hook',
          id: postId,
          name: 'tools/post-execute',
          payload: { ...executionOf(d, b.calls[i]), outcome: b.outcomes[i] },
          fallback: { kind: 'accept' },
        })
      }),
      on: {
        'hook.done': {
          guard: isPost,
          target: 'committing',
          actions: act<'hook.done'>((d, e) => {
            const b = batch(d)
            settle(d, b.nextCommit, applyPost(b.outcomes[b.nextCommit]!, e.value))
          }),
        },
        'hook.failed': {
          guard: isPost,
          target: 'committing',
          actions: act<'hook.failed'>((d, e) => settle(d, batch(d).nextCommit, errorOutcome(e.failure.message))),
        },
      },
    },
    committing: {
      entry: act((d) => {
        const b = batch(d)
        const i = b.nextCommit
        const call = b.calls[i]
        const outcome = b.outcomes[i]!
        d.notify('tools/result', { ...executionOf(d, call), outcome })
        logResult(d, call, outcome)
        // TL-12: contexts wait in next-step and are entered after this step closes
        insert(d, 'next-step', outcome.additionalContexts ?? [])
        const concludes = outcome.concludesTurn === true && !outcome.isError
        update(d, { nextCommit: i + 1, postId: 0, concluded: batch(d).concluded || concludes })
      }),
      always: 'waiting',
    },
    finished: { type: 'final' as const },
  },
}

/** The step's outcome once both lanes are done and every started body has settled. */
function finishBatch(d: Draft): void {
  const b = batch(d)
  if (b.failure) {
    d.set({ stepOutcome: 'error', failure: b.failure, end: { kind: 'error', error: b.failure.failure } })
  } else if (d.get('cause') !== null) {
    d.set({ stepOutcome: 'aborted' })
  } else {
    d.set({ stepOutcome: b.concluded ? 'completed' : 'continue' })
  }
}

export const toolBatchState = agentSetup.createStateConfig({
  initial: 'running',
  states: {
    running: {
      type: 'parallel',
      states: { dispatch, commit },
      on: {
        'tool.settled': {
          actions: act<'tool.settled'>((d, e) => {
            const b = batch(d)
            const i = b.bodyIds.indexOf(e.id)
            if (i < 0 || b.outcomes[i] !== null) return
            // TL-15: a body that succeeds after the abort is recorded as aborted; its own error stays
            const outcome =
              d.get('cause') !== null && !e.outcome.isError
                ? { ...ABORTED_WHILE_RUNNING, ...(e.outcome.additionalContexts ? { additionalContexts: e.outcome.additionalContexts } : {}) }
                : e.outcome
            settle(d, i, outcome)
            update(d, { inFlight: batch(d).inFlight - 1 })
          }),
        },
        // TL-17: a failed append inside the batch is a scheduler failure: stop, drain, end the turn error
        fault: {
          actions: act<'fault'>((d, e) => {
            if (batch(d).failure === null) update(d, { failure: { failure: e.failure, error: e.error, step: d.get('step') } })
          }),
        },
      },
      onDone: 'draining',
    },
    // no turn/end before every started body has settled (TL-15, TL-17)
    draining: {
      // both lanes are final, so no pre-execute is pending: only bodies can still be running
      always: { guard: ({ context }) => context.tools.inFlight === 0, target: 'done', actions: act(finishBatch) },
      on: {
        'tool.settled': {
          actions: act<'tool.settled'>((d, e) => {
            const b = batch(d)
            if (b.bodyIds.includes(e.id)) update(d, { inFlight: b.inFlight - 1 })
          }),
        },
      },
    },
    done: { type: 'final' },
  },
})

/** The tool batch on its own: the calls of one step, planned in context (`tools`). */
export const toolBatchMachine = agentSetup.createMachine({
  id: 'toolBatch',
  context: ({ input }) => ({ ...initialContext(input), turn: 1, step: 1 }),
  on: activeOn,
  ...toolBatchState,
})

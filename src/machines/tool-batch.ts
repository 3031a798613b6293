// tool batch: runs the calls an anchor asked for, each through the pipeline
// pre-execute -> body -> post-execute -> tools/result -> tool/result, and
// commits results in model order. Cancellation writes synthetic pairs for
// calls never started (TL-14).
import type { UserMessage } from '../session/schemas.js'
import { activeOn } from './active.js'
import { act, agentSetup, awaited, initialContext, insert, type Draft, type EventOf } from './setup.js'
import type { PlannedCall, ToolOutcome } from './types.js'

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

const current = (d: Draft): PlannedCall => d.get('calls')[d.get('callIndex')]

const executionOf = (d: Draft, call: PlannedCall) => ({
  turn: d.get('turn'),
  step: d.get('step'),
  callId: call.callId,
  name: call.name,
  arguments: call.args,
})

function logCall(d: Draft, call: PlannedCall): void {
  const { turn, step } = { turn: d.get('turn'), step: d.get('step') }
  d.append('tool/call', { turn, step, callId: call.callId, name: call.name, arguments: call.arguments }, { key: `call:${call.callId}` })
}

function logResult(d: Draft, call: PlannedCall, outcome: ToolOutcome): void {
  const message = {
    id: `${d.get('instance')}-r${d.id()}`,
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

/** TL-14: every call that never started gets a synthetic call/result pair, no hooks. */
function skipRemaining(d: Draft): void {
  const calls = d.get('calls')
  for (let i = d.get('callIndex'); i < calls.length; i++) {
    logCall(d, calls[i])
    logResult(d, calls[i], ABORTED_BEFORE_DISPATCH)
  }
  d.set({ callIndex: calls.length, stepOutcome: 'aborted' })
}

/** Apply a post-execute decision: accept (optionally replacing content), or block with feedback (TL-10). */
function applyPost(outcome: ToolOutcome, decision: unknown): ToolOutcome {
  const dec = (decision ?? { kind: 'accept' }) as {
    kind?: string
    content?: string
    value?: unknown
    feedback?: string
    additionalContexts?: UserMessage[]
  }
  if (dec.kind === 'block') {
    return { isError: true, content: String(dec.feedback ?? ''), additionalContexts: dec.additionalContexts }
  }
  const replaced =
    dec.content !== undefined ? dec.content : dec.value !== undefined ? (typeof dec.value === 'string' ? dec.value : JSON.stringify(dec.value)) : undefined
  const contexts = [...(outcome.additionalContexts ?? []), ...(dec.additionalContexts ?? [])]
  return {
    ...outcome,
    ...(replaced !== undefined ? { content: replaced } : {}),
    ...(contexts.length > 0 ? { additionalContexts: contexts } : {}),
  }
}

function startPost(d: Draft): void {
  const call = current(d)
  d.hook('tools/post-execute', { ...executionOf(d, call), outcome: d.get('callOutcome') }, { kind: 'accept' }, false)
}

export const toolBatchState = agentSetup.createStateConfig({
  initial: 'next',
  states: {
    next: {
      always: [
        {
          guard: ({ context }) => context.callIndex >= context.calls.length,
          target: 'done',
          actions: act((d) => {
            if (d.get('stepOutcome') !== 'aborted') d.set({ stepOutcome: d.get('concluded') ? 'completed' : 'continue' })
          }),
        },
        { guard: ({ context }) => context.cause !== null, target: 'done', actions: act(skipRemaining) },
        { target: 'preExecuting' },
      ],
    },
    preExecuting: {
      entry: act((d) => {
        const call = current(d)
        logCall(d, call)
        d.set({ callOutcome: null })
        d.hook('tools/pre-execute', executionOf(d, call), { kind: 'allow' }, false)
      }),
      on: {
        'hook.done': [
          {
            // TL-16: cancelled while pre-execute ran: skip the body, keep the pipeline
            guard: (a) => awaited(a) && a.context.cause !== null,
            target: 'postExecuting',
            actions: act((d) => d.set({ callOutcome: ABORTED_BEFORE_DISPATCH })),
          },
          {
            guard: (a) => awaited(a) && ((a.event as EventOf<'hook.done'>).value as { kind?: string })?.kind === 'deny',
            target: 'postExecuting',
            actions: act<'hook.done'>((d, e) => {
              const reason = String((e.value as { reason?: unknown }).reason ?? 'denied')
              d.set({ callOutcome: errorOutcome(reason, { name: 'ToolDeniedError', code: 'DENIED' }) })
            }),
          },
          { guard: awaited, target: 'executing' },
        ],
        // a throwing pre-execute is the call's error result and skips post-execute (TL-10)
        'hook.failed': {
          guard: awaited,
          target: 'committing',
          actions: act<'hook.failed'>((d, e) => d.set({ callOutcome: errorOutcome(e.failure.message) })),
        },
      },
    },
    executing: {
      entry: act((d) => d.emit({ type: 'fx.tool', id: d.await(), turn: d.get('turn'), step: d.get('step'), call: current(d) })),
      on: {
        'tool.settled': {
          guard: awaited,
          target: 'postExecuting',
          actions: act<'tool.settled'>((d, e) => {
            // TL-15: a body that succeeds after the abort is recorded as aborted; its own error stays
            const outcome = d.get('cause') !== null && !e.outcome.isError ? { ...ABORTED_WHILE_RUNNING, additionalContexts: e.outcome.additionalContexts } : e.outcome
            d.set({ callOutcome: outcome })
          }),
        },
      },
    },
    postExecuting: {
      entry: act(startPost),
      on: {
        'hook.done': {
          guard: awaited,
          target: 'committing',
          actions: act<'hook.done'>((d, e) => d.set({ callOutcome: applyPost(d.get('callOutcome')!, e.value) })),
        },
        'hook.failed': {
          guard: awaited,
          target: 'committing',
          actions: act<'hook.failed'>((d, e) => d.set({ callOutcome: errorOutcome(e.failure.message) })),
        },
      },
    },
    committing: {
      entry: act((d) => {
        const call = current(d)
        const outcome = d.get('callOutcome')!
        d.notify('tools/result', { ...executionOf(d, call), outcome })
        logResult(d, call, outcome)
        // TL-12: contexts wait in next-step, entered after this step closes
        insert(d, 'next-step', outcome.additionalContexts ?? [])
        const concludes = outcome.concludesTurn === true && !outcome.isError
        d.set({ callIndex: d.get('callIndex') + 1, concluded: d.get('concluded') || concludes, callOutcome: null })
      }),
      always: 'next',
    },
    done: { type: 'final' },
  },
})

/** The tool batch on its own: the calls of one step, already planned in context. */
export const toolBatchMachine = agentSetup.createMachine({
  id: 'toolBatch',
  context: ({ input }) => ({ ...initialContext(input), turn: 1, step: 1 }),
  on: activeOn,
  ...toolBatchState,
})

// The walk's compact vocabulary ("model text", "tool ok") spelled out as the
// explicit inputs of the portable format: the harness records one explicit
// input per input it applies, so an exported scenario needs none of
// agentchart's helpers to interpret.
import type { AgentCancelCause, StreamChunk, UserMessage } from '../../session/schemas.js'
import type { ScenarioInput } from '../conformance/format.js'
import type { WalkInput } from './scenario.js'

/** The texts a scripted environment uses; each reaches the log verbatim somewhere. */
export const SCRIPTED = {
  listenerFailure: 'scripted failure',
  storeFailure: 'scripted store failure',
  toolFailure: 'scripted tool failure',
  modelFailure: 'scripted model failure',
  /** The backoff a `retry-later` decision asks for, in milliseconds. */
  retryDelayMs: 25,
  denial: 'scripted denial',
  question: 'scripted question',
  refusal: 'scripted refusal',
  replaced: 'replaced',
  blocked: 'blocked',
  summary: 'scripted summary',
  summaryFailure: 'scripted summariser failure',
  overflow: 'scripted prompt too long',
  /** The reason of a `hook` cancel. */
  cancelReason: 'scripted hook cancel',
  /** What a blank summariser returns: whitespace only (CP-3). */
  blankSummary: '  ',
} as const

/** The user message a walk means by an id: its text is the id. */
export const scenarioMessage = (id: string): UserMessage => ({ id, role: 'user', content: [{ type: 'text', text: id }], source: { kind: 'user' } })

/** What is needed besides the walk input to spell it out. */
export interface ScriptDetail {
  /** The chunks a model input streams, and whether the stream ends after them. */
  chunks?: StreamChunk[]
  end?: boolean
  /** The message a steering turn-stopping listener sends. */
  steer?: UserMessage
  /** Whether the turn's signal had aborted when a tool body settles. */
  aborted?: boolean
}

const thrown = { action: 'throw' as const, message: SCRIPTED.listenerFailure }

/** The cause a walk's cancel names (CX-1): the user's by default. */
export function cancelCause(kind: 'user' | 'parent' | 'hook' = 'user'): AgentCancelCause {
  return kind === 'hook' ? { kind, reason: SCRIPTED.cancelReason } : { kind }
}

/** One walk input as the explicit input a driver performs. */
export function scriptInput(input: WalkInput, detail: ScriptDetail = {}): ScenarioInput {
  switch (input.type) {
    case 'send':
      return { type: 'send', message: scenarioMessage(input.id), target: input.target, wakeup: input.wakeup }
    case 'cancel':
      return { type: 'cancel', cause: cancelCause(input.cause), keepInbox: input.keepInbox }
    case 'cancel-on':
      return { type: 'cancel-on', trigger: input.trigger, cause: { kind: 'user' }, keepInbox: false }
    case 'remove':
      return { type: 'remove', id: input.id }
    case 'replace':
      return { type: 'replace', id: input.id, message: scenarioMessage(input.with) }
    case 'clear':
      return { type: 'clear' }
    case 'splice':
      return { type: 'splice', target: input.target, start: input.start, deleteCount: input.deleteCount, insert: input.insert.map(scenarioMessage) }
    case 'maintenance':
    case 'job-done':
    case 'dispose':
    case 'backoff-elapsed':
      return { type: input.type }
    case 'fail-next':
      return { type: 'fail-append', eventType: input.eventType, message: SCRIPTED.storeFailure }
    case 'pre-step':
      switch (input.decision) {
        case 'default':
          return { type: 'pre-step', action: 'next' }
        case 'reject':
          return { type: 'pre-step', action: 'return', value: { kind: 'reject' } }
        case 'empty':
          return { type: 'pre-step', action: 'return', value: { kind: 'enter', messages: [] } }
        case 'throw':
          return { type: 'pre-step', ...thrown }
      }
      break
    case 'request':
      switch (input.decision) {
        case 'default':
          return { type: 'request', action: 'next' }
        case 'no-route':
          return { type: 'request', action: 'return', value: { provider: '', model: '' } }
        case 'throw':
          return { type: 'request', ...thrown }
      }
      break
    case 'model':
      return { type: 'model', chunks: detail.chunks ?? [], end: detail.end ?? true }
    case 'request-error':
      switch (input.decision) {
        case 'retry':
          return { type: 'request-error', action: 'return', value: { kind: 'retry' } }
        case 'retry-later':
          return { type: 'request-error', action: 'return', value: { kind: 'retry', delayMs: SCRIPTED.retryDelayMs } }
        case 'give-up':
          return { type: 'request-error', action: 'next' }
        case 'throw':
          return { type: 'request-error', ...thrown }
      }
      break
    case 'turn-stopping':
      if (input.decision === 'throw') return { type: 'turn-stopping', ...thrown }
      return { type: 'turn-stopping', action: 'return', ...(detail.steer ? { steer: detail.steer } : {}) }
    case 'tool-pre':
      switch (input.decision) {
        case 'allow':
          return { type: 'tool-pre', callId: input.callId, action: 'next' }
        case 'deny':
          return { type: 'tool-pre', callId: input.callId, action: 'return', value: { kind: 'deny', reason: SCRIPTED.denial } }
        case 'throw':
          return { type: 'tool-pre', callId: input.callId, ...thrown }
        case 'ask':
          return { type: 'tool-pre', callId: input.callId, action: 'return', value: { kind: 'ask', reason: SCRIPTED.question } }
      }
      break
    case 'approval':
      return input.decision === 'approve'
        ? { type: 'approval', callId: input.callId, decision: 'approve' }
        : { type: 'approval', callId: input.callId, decision: 'deny', reason: SCRIPTED.refusal }
    case 'tool': {
      const base = { type: 'tool' as const, callId: input.callId, afterAbort: detail.aborted ?? false }
      const content = `ok ${input.callId}`
      switch (input.outcome) {
        case 'ok':
          return { ...base, action: 'return', value: { content } }
        case 'error':
          return { ...base, action: 'throw', message: SCRIPTED.toolFailure }
        case 'concludes':
          return { ...base, action: 'return', value: { content, concludesTurn: true } }
        case 'context':
          return { ...base, action: 'return', value: { content, additionalContexts: [scenarioMessage(`ctx-${input.callId}`)] } }
      }
      break
    }
    case 'compact':
      return { type: 'compact' }
    case 'summary':
      return input.outcome === 'ok'
        ? { type: 'summary', action: 'return', value: SCRIPTED.summary }
        : input.outcome === 'blank'
          ? { type: 'summary', action: 'return', value: SCRIPTED.blankSummary }
          : { type: 'summary', action: 'throw', message: SCRIPTED.summaryFailure }
    case 'tool-post':
      switch (input.decision) {
        case 'accept':
          return { type: 'tool-post', callId: input.callId, action: 'next' }
        case 'replace':
          return { type: 'tool-post', callId: input.callId, action: 'return', value: { kind: 'accept', content: SCRIPTED.replaced } }
        case 'block':
          return { type: 'tool-post', callId: input.callId, action: 'return', value: { kind: 'block', feedback: SCRIPTED.blocked } }
        case 'throw':
          return { type: 'tool-post', callId: input.callId, ...thrown }
      }
      break
  }
  // `watch` has none: walks with facts of their own are not replayed
  throw new Error(`no explicit form for walk input ${JSON.stringify(input)}`)
}

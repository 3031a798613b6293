// What listeners of the waterfall hooks return is foreign: it is read here,
// once, into plain checked data, before the machine sees it. A
// value that cannot be read, or is not a decision, is refused with a TypeError
// whose message names the hook and the field; the runtime answers the machine
// with hook.failed, so the call ends as an error result (tools) or the turn
// ends `error` (agent hooks). Machine guards and actions then read only plain data.
import { describeThrown, describeValue, fieldsOf, isArrayLike, isRecordLike } from '../values/foreign.js'
import { MAX_TIMER_MS } from '../values/timer.js'
import type { HookName, PostExecuteAnswer } from '../machines/types.js'
import { checkedMessage, contextsOf } from '../tools/define.js'

/**
 * The plain, frozen answer the machine takes for what a listener returned; throws a TypeError naming what is wrong.
 * Why: the machines are pure and must not throw (an action that throws stops the actor), so they never
 * read a foreign value; this is where `kind` getters, revoked proxies, BigInts and cycles are met.
 */
export function hookAnswer(name: HookName, value: unknown, payload: Record<string, unknown>): unknown {
  switch (name) {
    case 'agent/pre-step':
      return preStep(value)
    case 'agent/request-error':
      return requestError(value)
    case 'tools/pre-execute':
      return preExecute(value)
    case 'tools/post-execute':
      return postExecute(value, typeof payload.name === 'string' ? payload.name : '')
    default:
      return undefined // agent/turn-stopping answers nothing; agent/request has its own path (request/options.ts)
  }
}

function decisionFields(value: unknown, hook: string, shapes: string): (key: string) => unknown {
  if (!isRecordLike(value)) throw new TypeError(`${hook} must return ${shapes}, got ${describeValue(value)}`)
  return fieldsOf(value, `${hook}'s decision`)
}

function preStep(value: unknown): unknown {
  const shapes = "{kind:'reject'} or {kind:'enter', messages}"
  const field = decisionFields(value, 'agent/pre-step', shapes)
  const kind = field('kind')
  if (kind === 'reject') return Object.freeze({ kind: 'reject' })
  if (kind !== 'enter') throw new TypeError(`agent/pre-step must return ${shapes}, got kind ${describeValue(kind)}`)
  const messages = field('messages')
  if (!isArrayLike(messages)) throw new TypeError(`agent/pre-step must return ${shapes}: messages is not an array`)
  // each message is copied as checked JSON (IN-8: what is logged is what was decided)
  const entered = Array.from(messages, (m, i) => checkedMessage(m, `agent/pre-step's messages[${i}]`))
  return Object.freeze({ kind: 'enter', messages: Object.freeze(entered) })
}

/** RQ-9/RQ-14: `{kind:'retry', delayMs?}` retries (a delay is whole milliseconds); anything else that can be read gives up. */
function requestError(value: unknown): unknown {
  if (value === undefined || value === null || typeof value !== 'object') return undefined
  const field = fieldsOf(value, "agent/request-error's decision")
  if (field('kind') !== 'retry') return undefined
  const delayMs = field('delayMs')
  if (delayMs === undefined) return Object.freeze({ kind: 'retry' })
  if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0 || delayMs > MAX_TIMER_MS) {
    throw new TypeError(`agent/request-error: delayMs must be a number of milliseconds from 0 to ${MAX_TIMER_MS}, got ${describeValue(delayMs)}`)
  }
  // whole milliseconds, and 0 for -0 (JSON writes it as 0: llm/retry logs the delay)
  return Object.freeze({ kind: 'retry', delayMs: Math.round(delayMs) || 0 })
}

function preExecute(value: unknown): unknown {
  const shapes = "{kind:'allow'}, {kind:'deny', reason} or {kind:'ask', reason}"
  const field = decisionFields(value, 'tools/pre-execute', shapes)
  const kind = field('kind')
  if (kind === 'allow') return Object.freeze({ kind: 'allow' })
  if (kind === 'ask') {
    // TL-18: the question a person answers
    const question = field('reason')
    if (typeof question !== 'string') throw new TypeError('tools/pre-execute must give an ask a string reason (the question a person answers)')
    return Object.freeze({ kind: 'ask', reason: question })
  }
  if (kind !== 'deny') throw new TypeError(`tools/pre-execute must return ${shapes}, got kind ${describeValue(kind)}`)
  const reason = field('reason')
  if (reason !== undefined && typeof reason !== 'string') throw new TypeError('tools/pre-execute must give a deny a string reason')
  return Object.freeze({ kind: 'deny', reason: reason === undefined || reason === '' ? 'denied' : reason })
}

function postExecute(value: unknown, tool: string): PostExecuteAnswer {
  const shapes = "{kind:'accept', content? | value?} or {kind:'block', feedback}"
  const field = decisionFields(value, 'tools/post-execute', shapes)
  const kind = field('kind')
  const contexts = contextsOf(tool, field('additionalContexts'), 'tools/post-execute')
  const extra = contexts && contexts.length > 0 ? { additionalContexts: contexts } : {}
  if (kind === 'block') {
    const feedback = field('feedback')
    if (feedback !== undefined && typeof feedback !== 'string') throw new TypeError('tools/post-execute must give a block a string feedback')
    return Object.freeze({ kind: 'block', feedback: feedback ?? '', ...extra })
  }
  if (kind !== 'accept') throw new TypeError(`tools/post-execute must return ${shapes}, got kind ${describeValue(kind)}`)
  const content = field('content')
  const replaced = field('value')
  // TL-10: a decision replaces content or value, never both
  if (content !== undefined && replaced !== undefined) throw new TypeError('tools/post-execute returned both content and value')
  if (content !== undefined && typeof content !== 'string') throw new TypeError('tools/post-execute must give content as a string (or a value to serialise)')
  const text = content ?? (replaced === undefined ? undefined : typeof replaced === 'string' ? replaced : serialised(replaced))
  return Object.freeze({ kind: 'accept', ...(text !== undefined ? { content: text } : {}), ...extra })
}

/** A post-execute `value` as the JSON text the model reads; a BigInt, a cycle or a throwing getter is refused. */
function serialised(value: unknown): string {
  let text: unknown
  try {
    text = JSON.stringify(value)
  } catch (error) {
    throw new TypeError(`tools/post-execute's value cannot be serialised as JSON: ${describeThrown(error)}`, { cause: error })
  }
  if (typeof text !== 'string') throw new TypeError(`tools/post-execute's value cannot be serialised as JSON: ${describeValue(value)}`)
  return text
}

// One sentence per session event for the log, read defensively (a stored log
// may come from another version): who did what, in words, with the payload cut
// to a readable length. The result is plain text; the log puts it in the page
// with textContent. The details panel keeps the event whole, as JSON.
import type { WireEvent } from './protocol.js'
import { causeLabel, duration, textOf } from './model.js'

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v))
const clip = (text: string, max = 160) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)
const quote = (text: string, max = 140) => `“${clip(text.replace(/\s+/g, ' ').trim(), max)}”`
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
const tokens = (usage: unknown): string => {
  if (!isObject(usage)) return ''
  const input = typeof usage.inputTokens === 'number' ? usage.inputTokens : 0
  const output = typeof usage.outputTokens === 'number' ? usage.outputTokens : 0
  return `${input} in, ${output} out`
}

/** What a sentence may look up about the rest of the log. */
export interface LogContext {
  /** The tool a call id names. */
  toolName(callId: string): string | undefined
}

/** The coordinates an event names: `t2 s1`. */
export function where(event: WireEvent): string {
  const data = isObject(event.data) ? event.data : {}
  const turn = typeof data.turn === 'number' ? `t${data.turn}` : ''
  const step = typeof data.step === 'number' ? ` s${data.step}` : ''
  return `${turn}${step}`
}

/** How a turn ended, as a clause: `completed`, `cancelled (user)`, `failed: SERVER upstream overloaded`. */
function endClause(reason: Record<string, unknown>): string {
  const kind = str(reason.kind)
  switch (kind) {
    case 'aborted':
      return `cancelled (${causeLabel(reason.reason)})`
    case 'max-steps':
      return `stopped at the step limit (${str(reason.limit)})`
    case 'error': {
      const error = isObject(reason.error) ? reason.error : {}
      return `failed: ${str(error.code)} ${clip(str(error.message), 120)}`
    }
    case 'blocked':
      return 'blocked by a hook'
    case 'max-tokens':
      return 'stopped at the token limit'
    default:
      return kind || 'for an unknown reason'
  }
}

/** Who a user message is from, as a subject: `the user`, `the parent (session p, call #c1)`, `tool #c2`. */
function author(source: unknown): string {
  if (!isObject(source)) return 'the user'
  if (source.kind === 'tool') return `tool call #${str(source.callId)}`
  if (source.kind === 'plugin') {
    if (typeof source.parentSessionId === 'string') return `the parent agent (session ${source.parentSessionId}, call #${str(source.parentCallId)})`
    return `plugin ${str(source.plugin)}`
  }
  return 'the user'
}

/** The kind of a send, from its target and whether the log says it woke the agent. */
function sendKind(target: string, wakeup: unknown): string {
  if (target === 'next-turn') return wakeup === false ? 'prompt queued for a later turn' : 'followup'
  if (wakeup === true) return 'steer'
  if (wakeup === false) return 'inject'
  return 'next-step message'
}

function chunkSentence(chunk: Record<string, unknown>): string {
  const type = str(chunk.type)
  switch (type) {
    case 'text-delta':
      return `streams text ${quote(str(chunk.text), 80)}`
    case 'reasoning-delta':
      return `streams reasoning ${quote(str(chunk.text), 80)}`
    case 'tool-call-delta':
      return `streams a call${chunk.name ? ` to ${str(chunk.name)}` : ''}: ${clip(str(chunk.argumentsDelta), 80)}`
    case 'block-start':
      return `a ${str(chunk.blockType)} block starts`
    case 'block-end':
      return 'the block ends'
    case 'usage':
      return `the provider reports usage: ${tokens(chunk.usage)} tokens`
    case 'finish': {
      const reason = isObject(chunk.reason) ? chunk.reason : {}
      const failure = isObject(reason.failure) ? reason.failure : null
      if (failure) return `the stream ${reason.kind === 'aborted' ? 'was cut' : 'failed'}: ${str(failure.code)} ${clip(str(failure.message), 100)}`
      const why = str(reason.kind)
      return why === 'tool-calls' ? 'the stream ends asking for tools' : why === 'stop' ? 'the stream ends' : `the stream ends (${why})`
    }
    default:
      return type ? `stream chunk ${type}` : 'stream chunk'
  }
}

/** One sentence about one event. */
export function summarize(event: WireEvent, context?: LogContext): string {
  const data = isObject(event.data) ? event.data : {}
  const toolName = (callId: string) => context?.toolName(callId) ?? 'call'
  switch (event.type) {
    case 'turn/start':
      return `turn ${str(data.turn)} starts`
    case 'turn/end':
      return `turn ${str(data.turn)} ends: ${endClause(isObject(data.reason) ? data.reason : {})}`
    case 'step/start':
      return `step ${str(data.step)} starts`
    case 'step/end':
      return `step ${str(data.step)} ends`
    case 'user/message':
      return `${author(data.source)} says ${quote(textOf(data.content))}`
    case 'assistant/chunk':
      return chunkSentence(isObject(data.chunk) ? data.chunk : {})
    case 'assistant/message': {
      const message = isObject(data.message) ? data.message : {}
      const content = Array.isArray(message.content) ? message.content : []
      const calls = content.filter((b: unknown) => isObject(b) && b.type === 'tool-call').map((b) => `${str((b as Record<string, unknown>).name)}`)
      const text = textOf(content.filter((b: unknown) => isObject(b) && b.type !== 'tool-call'))
      const said = text.trim() ? ` ${quote(text)}` : ''
      const asks = calls.length ? ` asks for ${calls.join(', ')}` : ''
      const used = isObject(data.usage) ? ` (${tokens(data.usage)} tokens)` : ''
      if (data.interrupted === true) return `the model was cut off after${said || ' nothing'}${used}`
      if (!said) return `the model${asks || ' answers nothing'}${used}`
      return `the model answers${said}${asks ? `, and${asks}` : ''}${used}`
    }
    case 'tool/call':
      return `calls ${str(data.name)}(${clip(str(data.arguments), 100)}) #${str(data.callId)}`
    case 'tool/result': {
      const message = isObject(data.message) ? data.message : {}
      const source = isObject(message.source) ? message.source : {}
      const callId = str(source.callId)
      const text = clip(textOf(message.content), 120)
      const meta = isObject(data.meta) && isObject(data.meta.subagent) ? data.meta.subagent : null
      const child = meta
        ? ` (subagent ${str(meta.sessionId)}: ${str(meta.end)}, ${plural(typeof meta.steps === 'number' ? meta.steps : 0, 'step')}${isObject(meta.usage) ? `, ${str(meta.usage.totalTokens)} tokens` : ''})`
        : ''
      if (isObject(data.error)) return `${toolName(callId)} #${callId} failed (${str(data.error.code)}): ${text}${child}`
      return `${toolName(callId)} #${callId} returns ${quote(text, 120)}${child}`
    }
    case 'tool/approval-request':
      return `${str(data.name)} #${str(data.callId)} waits for a person's approval: ${quote(str(data.reason))}`
    case 'tool/approval-answer': {
      const call = `${toolName(str(data.callId))} #${str(data.callId)}`
      if (data.decision === 'approve') return `a person approved ${call}; it runs`
      return `a person denied ${call}${typeof data.reason === 'string' ? `: ${quote(data.reason)}` : ''}`
    }
    case 'llm/retry': {
      const failure = isObject(data.failure) ? data.failure : {}
      const delay = typeof data.delayMs === 'number' ? data.delayMs : 0
      return `the request to ${str(data.provider)} failed (${str(failure.code)}: ${clip(str(failure.message), 80)}); retry ${str(data.retry)} in ${duration(delay)}`
    }
    case 'llm/retry-started':
      return `retry ${str(data.retry)} starts`
    case 'request/header': {
      const header = isObject(data.header) ? data.header : {}
      const config = isObject(header.config) ? header.config : {}
      const tools = Array.isArray(header.tools) ? header.tools.map((t: unknown) => (isObject(t) ? str(t.name) : '')).join(', ') : ''
      const why = data.reason === 'initial' ? 'first request' : data.reason === 'resume' ? 'resumed' : 'changed'
      return `request header (${why}): ${str(config.provider)}/${str(config.model)}${tools ? `, tools ${tools}` : ', no tools'}`
    }
    case 'request/context':
      return `routed to ${str(data.provider)}/${str(data.model)}${typeof data.contextWindow === 'number' ? ` (context window ${data.contextWindow} tokens)` : ''}`
    case 'agent/inbox/spliced': {
      const inserted = Array.isArray(data.inserted) ? data.inserted : []
      const removed = typeof data.removedCount === 'number' ? data.removedCount : 0
      const target = str(data.target)
      const texts = inserted.map((m: unknown) => (isObject(m) ? quote(textOf(m.content), 100) : '')).join(', ')
      if (data.outcome === 'canceled') {
        const dropped = removed > 0 ? `${plural(removed, 'pending message')} discarded from ${target}` : ''
        return [dropped, inserted.length ? `${texts} put in their place` : ''].filter(Boolean).join('; ') || 'inbox edit'
      }
      if (removed > 0) return `the turn takes ${plural(removed, target === 'next-turn' ? 'prompt' : 'pending message')} from ${target}`
      return `${sendKind(target, data.wakeup)} arrives: ${texts}`
    }
    case 'compaction/completed':
      return `history compacted (${str(data.reason)}): events ${str(data.start)}–${str(data.end)} summarised, ${str(data.tokensBefore)} → ${str(data.tokensAfter)} tokens`
    case 'compaction/failed': {
      const failure = isObject(data.failure) ? data.failure : {}
      return `compaction (${str(data.reason)}) failed: ${str(failure.code)} ${clip(str(failure.message), 100)}; nothing was replaced`
    }
    case 'session/end-seed': {
      const fork = isObject(data.fork) ? data.fork : null
      return fork ? `forked from session ${str(fork.parent)} up to #${str(fork.upTo)}` : 'the seeded history ends here'
    }
    case 'todo/write': {
      const todos = Array.isArray(data.todos) ? data.todos : []
      const counts = new Map<string, number>()
      for (const t of todos) if (isObject(t)) counts.set(str(t.status), (counts.get(str(t.status)) ?? 0) + 1)
      return `todo list: ${[...counts].map(([status, n]) => `${n} ${status}`).join(', ') || 'empty'}`
    }
    default: {
      // a type this viewer does not know: its fields, one level deep, as `name: value`
      const fields = Object.entries(data).map(([key, value]) => `${key}: ${clip(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''), 40)}`)
      return clip(`${event.type}${fields.length ? ` — ${fields.join(', ')}` : ''}`, 160)
    }
  }
}

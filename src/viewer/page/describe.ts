// One line per session event for the log, read defensively (a stored log may
// come from another version). The result is plain text; the log puts it in
// the page with textContent.
import type { WireEvent } from './protocol.js'
import { causeLabel, textOf } from './model.js'

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v))
const clip = (text: string, max = 160) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** The coordinates an event names: `t2 s1`. */
export function where(event: WireEvent): string {
  const data = isObject(event.data) ? event.data : {}
  const turn = typeof data.turn === 'number' ? `t${data.turn}` : ''
  const step = typeof data.step === 'number' ? ` s${data.step}` : ''
  return `${turn}${step}`
}

/** A short human summary of one event. */
export function summarize(event: WireEvent): string {
  const data = isObject(event.data) ? event.data : {}
  switch (event.type) {
    case 'turn/start':
      return `turn ${str(data.turn)} opens`
    case 'turn/end': {
      const reason = isObject(data.reason) ? data.reason : {}
      const kind = str(reason.kind)
      if (kind === 'aborted') return `turn ${str(data.turn)} ended aborted (${causeLabel(reason.reason)})`
      if (kind === 'max-steps') return `turn ${str(data.turn)} ended max-steps (limit ${str(reason.limit)})`
      if (kind === 'error') {
        const error = isObject(reason.error) ? reason.error : {}
        return `turn ${str(data.turn)} ended error ${str(error.code)}: ${clip(str(error.message))}`
      }
      return `turn ${str(data.turn)} ended ${kind}`
    }
    case 'step/start':
      return `step ${str(data.step)} opens`
    case 'step/end':
      return `step ${str(data.step)} closes`
    case 'user/message':
      return `user: ${clip(textOf(data.content))}`
    case 'assistant/chunk': {
      const chunk = isObject(data.chunk) ? data.chunk : {}
      const type = str(chunk.type)
      if (type === 'text-delta' || type === 'reasoning-delta') return `${type} ${JSON.stringify(clip(str(chunk.text), 80))}`
      if (type === 'tool-call-delta') return `tool-call-delta ${str(chunk.name)} ${clip(str(chunk.argumentsDelta), 80)}`
      if (type === 'finish') {
        const reason = isObject(chunk.reason) ? chunk.reason : {}
        const failure = isObject(reason.failure) ? reason.failure : null
        return failure ? `finish ${str(reason.kind)} ${str(failure.code)}: ${clip(str(failure.message), 80)}` : `finish ${str(reason.kind)}`
      }
      if (type === 'usage') return `usage ${clip(JSON.stringify(chunk.usage ?? {}), 80)}`
      return type
    }
    case 'assistant/message': {
      const message = isObject(data.message) ? data.message : {}
      const text = textOf(message.content)
      return `assistant${data.interrupted === true ? ' (interrupted)' : ''}: ${clip(text) || '(empty)'}`
    }
    case 'tool/call':
      return `call ${str(data.name)}(${clip(str(data.arguments), 100)}) #${str(data.callId)}`
    case 'tool/result': {
      const message = isObject(data.message) ? data.message : {}
      const source = isObject(message.source) ? message.source : {}
      const error = isObject(data.error) ? ` ${str(data.error.code)}` : ''
      return `result #${str(source.callId)}${error}: ${clip(textOf(message.content))}`
    }
    case 'request/header': {
      const header = isObject(data.header) ? data.header : {}
      const config = isObject(header.config) ? header.config : {}
      const tools = Array.isArray(header.tools) ? header.tools.map((t: unknown) => (isObject(t) ? str(t.name) : '')).join(', ') : ''
      return `header (${str(data.reason)}) ${str(config.provider)}/${str(config.model)}${tools ? ` tools: ${tools}` : ''}`
    }
    case 'request/context':
      return `route ${str(data.provider)}/${str(data.model)}`
    case 'agent/inbox/spliced': {
      const inserted = Array.isArray(data.inserted) ? data.inserted : []
      const removed = typeof data.removedCount === 'number' ? data.removedCount : 0
      const texts = inserted.map((m: unknown) => (isObject(m) ? clip(textOf(m.content), 60) : '')).join(' | ')
      const what = data.outcome === 'canceled' ? `discard ${removed}` : removed > 0 ? `claim ${removed}` : ''
      return [str(data.target), what, inserted.length ? `+${inserted.length}: ${texts}` : ''].filter(Boolean).join(' ')
    }
    default:
      return clip(JSON.stringify(event.data ?? null), 160)
  }
}

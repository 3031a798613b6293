// Render a session log as an indented turn/step tree for people to read.
import type { ContentBlock, SessionEvent } from '../session/schemas.js'
import { escapeTerminal } from './escape.js'

const clip = (text: string, max = 80) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

function blocks(content: readonly ContentBlock[]): string {
  return content
    .map((b) => {
      switch (b.type) {
        case 'text':
          return JSON.stringify(clip(b.text))
        case 'reasoning':
          return `(thinking ${JSON.stringify(clip(b.text, 40))})`
        case 'tool-call':
          return `call ${b.name}(${clip(b.arguments, 60)}) #${b.id}`
        case 'tool-result':
          return typeof b.content === 'string' ? JSON.stringify(clip(b.content)) : '[blocks]'
        default:
          return `[${b.type}]`
      }
    })
    .join(' ')
}

/**
 * One line per meaningful event, indented by the turn and step that enclose it; chunks are counted, not listed.
 * Every line is escaped (escapeTerminal): a stored log is foreign data and must not drive the terminal.
 */
export function formatSessionTree(events: readonly SessionEvent[]): string {
  const lines: string[] = []
  let depth = 0
  let chunks = 0
  const put = (text: string) => lines.push(`${'  '.repeat(depth)}${escapeTerminal(text)}`)
  for (const e of events) {
    if (e.type !== 'assistant/chunk' && chunks > 0) {
      put(`· ${chunks} chunk${chunks === 1 ? '' : 's'} streamed`)
      chunks = 0
    }
    switch (e.type) {
      case 'turn/start':
        put(`turn ${e.data.turn}`)
        depth = 1
        break
      case 'turn/end': {
        const r = e.data.reason
        const why =
          r.kind === 'error'
            ? `error: ${r.error.code} ${r.error.message}`
            : r.kind === 'aborted'
              ? `aborted (${r.reason.kind})`
              : r.kind === 'max-steps'
                ? `max-steps (limit ${r.limit})`
                : r.kind
        depth = 0
        put(`turn ${e.data.turn} ended ${why}`)
        break
      }
      case 'step/start':
        put(`step ${e.data.step}`)
        depth = 2
        break
      case 'step/end':
        depth = 1
        break
      case 'user/message':
        put(`user: ${blocks(e.data.content)}`)
        break
      case 'assistant/chunk':
        chunks++
        break
      case 'assistant/message':
        put(`assistant${e.data.interrupted ? ' (interrupted)' : ''}: ${blocks(e.data.message.content) || '(empty)'}`)
        break
      case 'tool/call':
        put(`tool/call ${e.data.name}(${clip(e.data.arguments, 60)}) #${e.data.callId}`)
        break
      case 'tool/result':
        put(`tool/result #${e.data.message.source.callId}${e.data.message.content[0].isError ? ' (error)' : ''}: ${blocks(e.data.message.content)}`)
        break
      case 'request/header': {
        const h = e.data.header
        const tools = h.tools?.length ? `, tools: ${h.tools.map((t) => t.name).join(', ')}` : ''
        put(`request/header (${e.data.reason}) ${h.config.provider}/${h.config.model}${tools}`)
        break
      }
      case 'request/context':
        break
      case 'agent/inbox/spliced': {
        const d = e.data
        const what = d.inserted.length ? `+${d.inserted.length}` : `-${d.removedCount ?? 0}`
        put(`inbox ${d.target} ${what}${d.outcome ? ' (canceled)' : d.inserted.length ? '' : ' (claimed)'}`)
        break
      }
      default:
        put(e.type)
    }
  }
  if (chunks > 0) put(`· ${chunks} chunks streamed`)
  return lines.join('\n')
}

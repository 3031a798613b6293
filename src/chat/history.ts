// A chat's messages in the AI SDK's UI shape, read from its log: what a
// person typed, and each response as the stream would have built it (the
// same chunks, folded into parts). This is what a page loads before it
// re-attaches to a running turn, so the open response is left out.
import type { SessionEvent } from '../session/schemas.js'
import type { UIMessage, UIMessageChunk, UIMessagePart } from './protocol.js'
import { isPersonMessage, ResponseView, segmentMessageId, segmentsOf } from './segments.js'

type ToolPart = Extract<UIMessagePart, { toolCallId: string }>

/** Fold a response's chunks into the parts of one assistant message. */
export function foldChunks(id: string, chunks: readonly UIMessageChunk[]): UIMessage {
  const parts: UIMessagePart[] = []
  const texts = new Map<string, Extract<UIMessagePart, { type: 'text' | 'reasoning' }>>()
  const tools = new Map<string, ToolPart>()
  for (const chunk of chunks) {
    switch (chunk.type) {
      case 'start-step':
        parts.push({ type: 'step-start' })
        break
      case 'text-start':
      case 'reasoning-start': {
        const part = { type: chunk.type === 'text-start' ? ('text' as const) : ('reasoning' as const), text: '', state: 'streaming' as const }
        texts.set(chunk.id, part)
        parts.push(part)
        break
      }
      case 'text-delta':
      case 'reasoning-delta': {
        const part = texts.get(chunk.id)
        if (part) part.text += chunk.delta
        break
      }
      case 'text-end':
      case 'reasoning-end': {
        const part = texts.get(chunk.id)
        if (part) part.state = 'done'
        break
      }
      case 'tool-input-start':
      case 'tool-input-available': {
        let part = tools.get(chunk.toolCallId)
        if (!part) {
          part = { type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId, state: 'input-streaming', input: undefined }
          tools.set(chunk.toolCallId, part)
          parts.push(part)
        }
        if (chunk.type === 'tool-input-available') {
          part.state = 'input-available'
          part.input = chunk.input
        }
        break
      }
      case 'tool-approval-request': {
        const part = tools.get(chunk.toolCallId)
        if (part) {
          part.state = 'approval-requested'
          part.approval = { id: chunk.approvalId }
        }
        break
      }
      case 'tool-output-available':
      case 'tool-output-error':
      case 'tool-output-denied': {
        const part = tools.get(chunk.toolCallId)
        if (!part) break
        if (chunk.type === 'tool-output-available') Object.assign(part, { state: 'output-available', output: chunk.output })
        else if (chunk.type === 'tool-output-error') Object.assign(part, { state: 'output-error', errorText: chunk.errorText })
        else part.state = 'output-denied'
        if (part.approval) part.approval = { ...part.approval, approved: chunk.type !== 'tool-output-denied' }
        break
      }
      default:
        if (chunk.type.startsWith('data-')) {
          const data = chunk as Extract<UIMessageChunk, { data: unknown }>
          const existing = data.id === undefined ? undefined : parts.find((p) => p.type === data.type && 'id' in p && p.id === data.id)
          if (existing && 'data' in existing) existing.data = data.data
          else if (!data.transient) parts.push({ type: data.type, ...(data.id !== undefined ? { id: data.id } : {}), data: data.data })
        }
    }
  }
  return { id, role: 'assistant', parts }
}

/** The text a person typed, as a UI message. */
function personMessage(id: string, content: readonly { type: string; text?: string }[]): UIMessage {
  const text = content.flatMap((b) => (b.type === 'text' && b.text !== undefined ? [b.text] : [])).join('\n')
  return { id, role: 'user', parts: [{ type: 'text', text, state: 'done' }] }
}

/**
 * The chat's messages: each message a person typed, then the response that answers it. A response still running
 * is left out (its prompts are kept) unless `includeOpen`: the resume stream replays it.
 */
export function chatMessages(events: readonly SessionEvent[], options: { includeOpen?: boolean } = {}): UIMessage[] {
  const messages: UIMessage[] = []
  for (const segment of segmentsOf(events)) {
    for (const prompt of segment.prompts) if (isPersonMessage(prompt)) messages.push(personMessage(prompt.id, prompt.content))
    if (segment.end === undefined && !options.includeOpen) continue
    const chunks: UIMessageChunk[] = []
    const view = new ResponseView({ kind: 'segment', start: segment.start }, (chunk) => chunks.push(chunk))
    const end = segment.end ?? events.length
    for (let seq = segment.start; seq < end && !view.done; seq++) view.push(events[seq])
    messages.push(foldChunks(segmentMessageId(segment.start), chunks))
  }
  return messages
}

// Small builders for session tests.
import type { AssistantMessage, EventData, Message, SessionEvent, UserMessage } from '../../src/session/schemas.js'
import { nodeMessage } from '../../src/session/surface.js'

export const user = (id: string, text = `text of ${id}`): UserMessage => ({
  id,
  role: 'user',
  content: [{ type: 'text', text }],
  source: { kind: 'user' },
})

export const assistant = (id: string, text = `reply ${id}`): AssistantMessage => ({
  id,
  role: 'assistant',
  content: text === '' ? [] : [{ type: 'text', text }],
  source: { kind: 'model', provider: 'fake', model: 'fake-1' },
})

export const assistantData = (id: string, text?: string, turn = 1, step = 1): EventData<'assistant/message'> => ({
  turn,
  step,
  message: assistant(id, text),
})

export const toolResultData = (callId: string, content: string, turn = 1, step = 1): EventData<'tool/result'> => ({
  turn,
  step,
  message: {
    id: `result-${callId}`,
    role: 'user',
    content: [{ type: 'tool-result', toolCallId: callId, content }],
    source: { kind: 'tool', callId },
  },
})

/** An independent, deliberately naive derivation used as the oracle (SS-7, SS-8). */
export function naiveDerive(events: readonly SessionEvent[]): Message[] {
  let surface: { seq: number; message: Message }[] = []
  for (const e of events) {
    if (e.type !== 'user/message' && e.type !== 'assistant/message' && e.type !== 'tool/result') continue
    const message: Message = e.type === 'user/message' ? e.data : e.data.message
    const op = e.surfaceOp
    if (op === 'append') surface = [...surface, { seq: e.seq, message }]
    else if (op !== undefined) {
      const s = surface.findIndex((n) => n.seq === op.start)
      const t = surface.findIndex((n) => n.seq === op.end)
      surface = [...surface.slice(0, s), { seq: e.seq, message }, ...surface.slice(t + 1)]
    }
  }
  return surface.map((n) => n.message).filter((m) => !(m.role === 'assistant' && m.content.length === 0))
}

/**
 * Derives the history of a log from scratch (SS-7), by a plain walk that shares nothing with the incremental
 * `Surface`: the reference `Session.deriveMessages` must match.
 */
export function deriveMessagesFrom(events: readonly SessionEvent[]): Message[] {
  const nodes: { seq: number; message: Message | undefined }[] = []
  for (const event of events) {
    const op = event.surfaceOp
    if (op === undefined) continue
    const node = { seq: event.seq, message: nodeMessage(event) }
    if (op === 'append') nodes.push(node)
    else {
      const from = nodes.findIndex((n) => n.seq === op.start)
      const to = nodes.findIndex((n) => n.seq === op.end)
      nodes.splice(from, to - from + 1, node)
    }
  }
  return Object.freeze(nodes.flatMap((n) => (n.message === undefined ? [] : [n.message]))) as Message[]
}

// The AI SDK's UI message stream, as the chat endpoint writes it: the chunk
// shapes (a subset of ai 6's UIMessageChunk, spelled as its schema checks
// them), the parts of a UIMessage the history route returns, and the SSE
// framing (`data: <json>` per chunk, `data: [DONE]` at the end).

/** One chunk of the UI message stream (`x-vercel-ai-ui-message-stream: v1`). */
export type UIMessageChunk =
  | { type: 'start'; messageId?: string; messageMetadata?: unknown }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'finish'; finishReason?: UIFinishReason; messageMetadata?: unknown }
  | { type: 'abort'; reason?: string }
  | { type: 'error'; errorText: string }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'reasoning-start'; id: string }
  | { type: 'reasoning-delta'; id: string; delta: string }
  | { type: 'reasoning-end'; id: string }
  | { type: 'tool-input-start'; toolCallId: string; toolName: string }
  | { type: 'tool-input-delta'; toolCallId: string; inputTextDelta: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-approval-request'; approvalId: string; toolCallId: string }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string }
  | { type: 'tool-output-denied'; toolCallId: string }
  | { type: `data-${string}`; id?: string; data: unknown; transient?: boolean }

/** The finish reasons of the AI SDK that a turn's end maps to. */
export type UIFinishReason = 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other'

/** What the `data-turn` part carries: the turn a response belongs to and how it stands. */
export interface TurnData {
  readonly turn: number
  /** `running` while the turn runs, then its end reason's kind (`completed`, `aborted`, `error`, ...). */
  readonly status: string
}

/** A part of a UIMessage as the history route returns it (the shapes `useChat` keeps in `messages`). */
export type UIMessagePart =
  | { type: 'step-start' }
  | { type: 'text'; text: string; state: 'streaming' | 'done' }
  | { type: 'reasoning'; text: string; state: 'streaming' | 'done' }
  | {
      type: `tool-${string}`
      toolCallId: string
      state: 'input-streaming' | 'input-available' | 'approval-requested' | 'approval-responded' | 'output-available' | 'output-error' | 'output-denied'
      input: unknown
      output?: unknown
      errorText?: string
      approval?: { id: string; approved?: boolean; reason?: string }
    }
  | { type: `data-${string}`; id?: string; data: unknown }

/** A chat message in the AI SDK's UI shape. */
export interface UIMessage {
  readonly id: string
  readonly role: 'user' | 'assistant'
  readonly parts: UIMessagePart[]
}

/** The response headers of a UI message stream. */
export const UI_MESSAGE_STREAM_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
})

/** One chunk framed as a Server-Sent Event. */
export const sseFrame = (chunk: UIMessageChunk): string => `data: ${JSON.stringify(chunk)}\n\n`

/** The stream's last frame. */
export const SSE_DONE = 'data: [DONE]\n\n'

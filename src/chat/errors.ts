// The chat endpoint's refusals: each names what was wrong with the request.
import { AgentchartError } from '../errors.js'

export type ChatErrorCode = 'CHAT_BAD_REQUEST' | 'CHAT_NO_MESSAGE' | 'CHAT_UNSUPPORTED' | 'CHAT_NOT_FOUND' | 'CHAT_METHOD' | 'CHAT_NO_AGENT' | 'CHAT_BACKEND'

/** A request the chat endpoint refuses, or a backend that cannot serve it; `status` is the HTTP status it answers with. */
export class ChatError extends AgentchartError {
  declare readonly code: ChatErrorCode
  readonly status: number
  constructor(code: ChatErrorCode, message: string, options?: { path?: string; cause?: unknown }) {
    super(code, message, options)
    this.name = 'ChatError'
    this.status = STATUS[code]
  }
}

const STATUS: Record<ChatErrorCode, number> = {
  CHAT_BAD_REQUEST: 400,
  CHAT_NO_MESSAGE: 400,
  CHAT_UNSUPPORTED: 501,
  CHAT_NOT_FOUND: 404,
  CHAT_METHOD: 405,
  CHAT_NO_AGENT: 500,
  CHAT_BACKEND: 502,
}

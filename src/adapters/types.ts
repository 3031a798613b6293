// The model boundary: adapters normalize a provider's stream into StreamChunks.
import type { LlmCallConfig, Message, StreamChunk, ToolSchema } from '../session/schemas.js'

/** One frozen model request, rebuilt entirely from the session log (SS-13). */
export interface ModelRequest {
  readonly sessionId: string
  readonly config: LlmCallConfig
  readonly messages: readonly Message[]
  readonly system?: string
  readonly tools?: readonly ToolSchema[]
  readonly maxTokens?: number
  readonly signal: AbortSignal
}

/** What a provider plugs in: a name pair and a stream of normalized chunks. */
export interface ModelAdapter {
  readonly provider: string
  readonly model: string
  readonly contextWindow?: number
  stream(request: ModelRequest): AsyncIterable<StreamChunk>
}

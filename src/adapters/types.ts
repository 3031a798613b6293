// The model boundary: adapters normalize a provider's stream into StreamChunks.
import type { RequestOptions } from '../request/options.js'
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
  /**
   * Request options the agent seeds its first config with (e.g. DeepSeek's
   * thinking switch), so they are logged in the header like any other option
   * and an `agent/request` listener can change them.
   */
  readonly defaultConfig?: RequestOptions
  stream(request: ModelRequest): AsyncIterable<StreamChunk>
}

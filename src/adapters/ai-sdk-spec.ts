// The parts of the AI SDK's language model specifications this adapter writes
// and reads: LanguageModelV3 (ai 6, @ai-sdk/provider 3) and LanguageModelV4
// (ai 7, @ai-sdk/provider 4). Declared here so that `ai` is no dependency;
// where the two differ the shape names the version.

/** Which specification a model implements. */
export type SpecVersion = 'v3' | 'v4'

/** Provider-keyed JSON: `providerOptions` going in, `providerMetadata` coming out. */
export type ProviderRecord = Record<string, Record<string, unknown>>

/**
 * An AI SDK language model as the adapter needs it: any object of specification v3 or v4 with
 * `doStream` (e.g. `openai('gpt-5')`, `anthropic('claude-sonnet-4-5')`, `MockLanguageModelV3`).
 */
export interface AiSdkLanguageModel {
  readonly specificationVersion: 'v3' | 'v4'
  readonly provider: string
  readonly modelId: string
  doStream(options: Record<string, unknown>): PromiseLike<{ stream: ReadableStream<unknown> }>
}

/** File data of a prompt part: v3 takes bytes, base64 text or a URL; v4 a tagged object. */
export type SpecFileData = string | URL | { type: 'data'; data: string } | { type: 'url'; url: URL }

export interface SpecTextPart {
  type: 'text'
  text: string
  providerOptions?: ProviderRecord
}
export interface SpecReasoningPart {
  type: 'reasoning'
  text: string
  providerOptions?: ProviderRecord
}
export interface SpecFilePart {
  type: 'file'
  data: SpecFileData
  mediaType: string
  providerOptions?: ProviderRecord
}
export interface SpecToolCallPart {
  type: 'tool-call'
  toolCallId: string
  toolName: string
  input: unknown
  providerOptions?: ProviderRecord
}

/** Tool output parts: v3 names images `image-data`/`image-url`, v4 has one `file` part with tagged data. */
export type SpecToolOutputPart =
  | { type: 'text'; text: string }
  | { type: 'image-data'; data: string; mediaType: string }
  | { type: 'image-url'; url: string }
  | { type: 'file'; data: SpecFileData; mediaType: string }

export type SpecToolResultOutput = { type: 'text'; value: string } | { type: 'error-text'; value: string } | { type: 'content'; value: SpecToolOutputPart[] }

export interface SpecToolResultPart {
  type: 'tool-result'
  toolCallId: string
  toolName: string
  output: SpecToolResultOutput
}

export type SpecMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: Array<SpecTextPart | SpecFilePart> }
  | { role: 'assistant'; content: Array<SpecTextPart | SpecReasoningPart | SpecFilePart | SpecToolCallPart> }
  | { role: 'tool'; content: SpecToolResultPart[] }

/** v4's reasoning levels (its `reasoning` call option); v3 has no such option. */
export const V4_REASONING_LEVELS: ReadonlySet<string> = new Set(['provider-default', 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'])

/** The call options this adapter sets (both specs; `reasoning` is v4 only). */
export interface SpecCallOptions {
  prompt: SpecMessage[]
  maxOutputTokens?: number
  temperature?: number
  stopSequences?: string[]
  tools?: Array<{ type: 'function'; name: string; description?: string; inputSchema: Record<string, unknown> }>
  toolChoice?: { type: 'auto' | 'none' | 'required' } | { type: 'tool'; toolName: string }
  responseFormat?: { type: 'text' } | { type: 'json'; schema?: Record<string, unknown>; name?: string; description?: string }
  reasoning?: string
  providerOptions?: ProviderRecord
  abortSignal?: AbortSignal
}

/** Usage of a finish part: nested counts in both specs (each may be undefined). */
export interface SpecUsage {
  inputTokens?: { total?: number; noCache?: number; cacheRead?: number; cacheWrite?: number } | number
  outputTokens?: { total?: number; text?: number; reasoning?: number } | number
}

// OpenAI-compatible chat completions (OpenAI, DeepSeek, proxies, local servers)
// as a ModelAdapter: the request is rebuilt from the derived history and the
// logged config, the provider's SSE stream is normalized into StreamChunks
// (BEHAVIOURS 1.4), failures into LlmErrors (1.5). The `openai` package is an
// optional peer dependency, loaded at the first request.
import type OpenAI from 'openai'
import type {
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions'
import type { CompletionUsage } from 'openai/resources/completions'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { ConfigError } from '../errors.js'
import { describeValue, isRecordLike, peek } from '../values/foreign.js'
import type { RequestOptions } from '../request/options.js'
import type {
  AssistantMessage,
  ContentBlock,
  FinishReason,
  ImageBlock,
  Message,
  ResponseFormat,
  StreamChunk,
  TokenUsage,
  ToolChoice,
  ToolResultBlock,
  ToolSchema,
} from '../session/schemas.js'
import { abortedFailure, isNetworkError, llmFailure, LlmError, retryAfterMs, toLlmFailure, type LlmFailureInit } from './failure.js'
import { credentialRedactor, urlCredentials, withoutCredentials, type Redactor } from './credentials.js'
import { uniqueCallId } from './assemble.js'
import type { ModelAdapter, ModelRequest } from './types.js'

export interface OpenAIModelOptions {
  /** The model name reported by the adapter, e.g. 'gpt-4.1-mini'. Requests send `request.config.model`. */
  model: string
  /** Default 'deepseek' when the base URL contains 'deepseek', else 'openai'. Also the key of `providerOptions` this adapter reads. */
  provider?: string
  /**
   * Default: DEEPSEEK_API_KEY for provider 'deepseek', else OPENAI_API_KEY (read at the first request).
   * Not needed when `baseURL` is a loopback address (a local server): no Authorization header is sent then.
   */
  apiKey?: string
  /** Default: https://api.deepseek.com for provider 'deepseek', else the SDK's (OPENAI_BASE_URL or api.openai.com). */
  baseURL?: string
  /** Logged in `request/context`. */
  contextWindow?: number
  /** A configured client (tests, proxies); `apiKey` and `baseURL` are then ignored. */
  client?: OpenAI
  /**
   * SDK retries per request. Default 0 for the client built here (retry is the
   * agent's retry policy, RQ-14); an injected client keeps its own setting
   * unless this is given.
   */
  maxRetries?: number
  /** Request options the agent starts from (logged in the header like the agent's own). */
  defaultConfig?: RequestOptions
}

/** DeepSeek's thinking effort names (the API maps minimal to low, medium and xhigh to high, ultra to max). */
export type DeepSeekReasoningEffort = 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max' | 'ultra'

export interface DeepSeekModelOptions extends Omit<OpenAIModelOptions, 'provider'> {
  /** e.g. 'deepseek-v4-pro', 'deepseek-v4-flash', 'deepseek-chat'. */
  model: string
  /** Default 'deepseek'. */
  provider?: string
  /** Thinking mode on or off, sent as `thinking: { type }` (DeepSeek's default when unset: on). */
  thinking?: boolean
  /** Sent as `reasoning_effort`. */
  reasoningEffort?: DeepSeekReasoningEffort
}

/** How the wire format differs by provider family. */
type Dialect = 'openai' | 'deepseek'

const DEEPSEEK_BASE_URL = 'https://api.deepseek.com'
const CONTEXT_TEXT = /context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long|reduce the length/i

const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1|0\.0\.0\.0)$/i

/** True when the URL names this machine (a local OpenAI-compatible server needs no key). */
function isLoopback(url: string | undefined): boolean {
  if (url === undefined) return false
  try {
    const host = new URL(url).hostname
    return LOOPBACK_HOST.test(host) || host.endsWith('.localhost')
  } catch {
    return false
  }
}

/** The `openai` module, imported once at the first request: it is an optional peer dependency. */
type Sdk = typeof import('openai')
let sdkLoading: Promise<Sdk> | undefined
async function loadSdk(): Promise<Sdk> {
  sdkLoading ??= import('openai')
  try {
    return await sdkLoading
  } catch (error) {
    sdkLoading = undefined
    throw new LlmError(
      { message: "the 'openai' package is not installed; agentchart's OpenAI-compatible adapters need it: npm install openai", code: 'MISSING_DEPENDENCY' },
      error,
    )
  }
}

function looksLikeClient(x: unknown): x is OpenAI {
  const completions = (x as { chat?: { completions?: { create?: unknown } } } | null)?.chat?.completions
  return typeof completions?.create === 'function'
}

/**
 * A ModelAdapter for OpenAI-compatible chat completions (OpenAI, DeepSeek, local servers).
 * Why: the loop speaks StreamChunks and provider-neutral failure codes; this
 * is the one place that knows the chat-completions wire format.
 * The client is built lazily at the first request, so a missing API key fails
 * that request with MISSING_CREDENTIAL (before any network call) instead of
 * failing agent creation. A provider named 'deepseek' gets DeepSeek's rules
 * (reasoning sent back with tool calls, JSON output), as `deepseekModel` does.
 */
export function openaiModel(options: OpenAIModelOptions): ModelAdapter {
  return chatModel(options, undefined)
}

/**
 * A ModelAdapter for DeepSeek (thinking mode with tools included).
 * Why: DeepSeek requires the `reasoning_content` of every assistant message
 * that made tool calls to come back on all later requests (HTTP 400
 * otherwise), switches thinking with `thinking: { type }` and sets its effort
 * with `reasoning_effort`; `thinking` and `reasoningEffort` become the agent's
 * seed config, so they are logged and an `agent/request` listener can change them.
 */
export function deepseekModel(options: DeepSeekModelOptions): ModelAdapter {
  if (typeof options !== 'object' || options === null) throw new ConfigError('deepseekModel: options must be an object')
  const { thinking, reasoningEffort, ...rest } = options
  if (thinking !== undefined && typeof thinking !== 'boolean') throw new ConfigError('deepseekModel: thinking must be a boolean', { path: 'thinking' })
  if (reasoningEffort !== undefined && (typeof reasoningEffort !== 'string' || reasoningEffort.length === 0)) {
    throw new ConfigError('deepseekModel: reasoningEffort must be a non-empty string', { path: 'reasoningEffort' })
  }
  const provider = rest.provider ?? 'deepseek'
  const defaults: RequestOptions = { ...rest.defaultConfig }
  if (reasoningEffort !== undefined) defaults.reasoningEffort = reasoningEffort
  if (thinking !== undefined) {
    const own = defaults.providerOptions?.[provider]
    defaults.providerOptions = { ...defaults.providerOptions, [provider]: { ...own, thinking: { type: thinking ? 'enabled' : 'disabled' } } }
  }
  return chatModel({ ...rest, provider, defaultConfig: defaults }, 'deepseek')
}

function chatModel(options: OpenAIModelOptions, forced: Dialect | undefined): ModelAdapter {
  const name = forced === 'deepseek' ? 'deepseekModel' : 'openaiModel'
  if (typeof options !== 'object' || options === null) throw new ConfigError(`${name}: options must be an object`)
  const { model, contextWindow, maxRetries, client: injected, defaultConfig } = options
  if (typeof model !== 'string' || model.length === 0) {
    throw new ConfigError(`${name}: model must be a non-empty string`, { path: 'model' })
  }
  for (const key of ['provider', 'apiKey', 'baseURL'] as const) {
    const value = options[key]
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw new ConfigError(`${name}: ${key} must be a non-empty string`, { path: key })
    }
  }
  if (contextWindow !== undefined && !(Number.isSafeInteger(contextWindow) && contextWindow > 0)) {
    throw new ConfigError(`${name}: contextWindow must be a positive safe integer`, { path: 'contextWindow' })
  }
  if (maxRetries !== undefined && !(Number.isSafeInteger(maxRetries) && maxRetries >= 0)) {
    throw new ConfigError(`${name}: maxRetries must be a non-negative safe integer`, { path: 'maxRetries' })
  }
  if (injected !== undefined && !looksLikeClient(injected)) {
    throw new ConfigError(`${name}: client must be an OpenAI client (new OpenAI(...))`, { path: 'client' })
  }
  if (defaultConfig !== undefined && (typeof defaultConfig !== 'object' || defaultConfig === null)) {
    throw new ConfigError(`${name}: defaultConfig must be an object`, { path: 'defaultConfig' })
  }

  const urlHint = options.baseURL ?? injected?.baseURL ?? process.env.OPENAI_BASE_URL ?? ''
  const provider = options.provider ?? (forced === 'deepseek' || /deepseek/i.test(urlHint) ? 'deepseek' : 'openai')
  const dialect: Dialect = forced ?? (provider === 'deepseek' ? 'deepseek' : 'openai')
  const keyVariable = provider === 'deepseek' ? 'DEEPSEEK_API_KEY' : 'OPENAI_API_KEY'

  let connection: Connection | undefined = injected
    ? {
        client: injected,
        hasKey: typeof injected.apiKey === 'string' && injected.apiKey.length > 0,
        redact: credentialRedactor([injected.apiKey, ...urlCredentials(injected.baseURL)]),
      }
    : undefined

  /** The client, built once a key is known (or not needed); throws MISSING_CREDENTIAL (not cached) while none is. */
  const connect = async (): Promise<Connection> => {
    if (connection !== undefined) return connection
    const { default: OpenAIClient } = await loadSdk()
    if (connection !== undefined) return connection
    const baseURL = options.baseURL ?? (provider === 'deepseek' ? DEEPSEEK_BASE_URL : undefined)
    const apiKey = options.apiKey ?? process.env[keyVariable]
    const local = !apiKey && isLoopback(baseURL ?? process.env.OPENAI_BASE_URL)
    if (!apiKey && !local) {
      throw new LlmError({
        message: `${provider}: no API key: pass ${name}({ apiKey }) or set ${keyVariable}`,
        code: 'MISSING_CREDENTIAL',
      })
    }
    const client = new OpenAIClient({
      // a local server: the SDK insists on a key, so give it one and send no Authorization header at all
      apiKey: apiKey || 'no-key',
      maxRetries: maxRetries ?? 0,
      ...(baseURL !== undefined ? { baseURL } : {}),
      ...(local ? { defaultHeaders: { Authorization: null } } : {}),
    })
    // what the client really sends: the key given or read from the environment, the base URL it resolved
    const sent = local ? [] : [apiKey, client.apiKey]
    connection = { client, hasKey: !local, redact: credentialRedactor([...sent, ...urlCredentials(baseURL), ...urlCredentials(client.baseURL)]) }
    return connection
  }

  return {
    provider,
    model,
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    ...(defaultConfig !== undefined ? { defaultConfig } : {}),
    stream(request: ModelRequest): AsyncIterable<StreamChunk> {
      return streamChat(request, { provider, dialect, connect, maxRetries })
    },
  }
}

interface Connection {
  readonly client: OpenAI
  /** Whether a static key is known (a 401 then means INVALID_CREDENTIAL rather than AUTH). */
  readonly hasKey: boolean
  /** Cuts the key and the base URL's credentials out of what this connection's failures report. */
  readonly redact: Redactor
}

interface StreamContext {
  readonly provider: string
  readonly dialect: Dialect
  readonly connect: () => Promise<Connection>
  readonly maxRetries: number | undefined
}

async function* streamChat(request: ModelRequest, context: StreamContext): AsyncGenerator<StreamChunk> {
  const { signal } = request
  if (signal.aborted) throw abortError(signal)
  const { client, hasKey, redact } = await context.connect()
  const sdk = await loadSdk()
  const body = buildChatBody(request, context)
  // A per-request signal: the SDK adds an abort listener to the signal it is
  // given and never removes it, which would pile up on a turn's shared signal.
  const linked = new AbortController()
  const forward = () => linked.abort(signal.reason)
  signal.addEventListener('abort', forward, { once: true })
  let requestId: string | undefined
  // a provider may echo the credential it was sent in any part of its error: nothing reported keeps it
  const fail = (thrown: unknown) => withoutCredentials(toLlmError(thrown, { sdk, provider: context.provider, signal, hasKey, requestId }), redact)
  try {
    if (signal.aborted) throw abortError(signal) // while the client was set up
    let response: Response
    try {
      response = await client.chat.completions
        .create(body, { signal: linked.signal, ...(context.maxRetries !== undefined ? { maxRetries: context.maxRetries } : {}) })
        .asResponse()
    } catch (thrown) {
      throw fail(thrown)
    }
    requestId = response.headers.get('x-request-id') ?? undefined
    if (response.body === null) {
      throw new LlmError({ message: `${context.provider}: the response has no body`, code: 'INVALID_RESPONSE', requestId })
    }
    const events = chatEvents(response.body, sdk, response.headers)
    const state = new ChunkNormalizer()
    let exhausted = false
    try {
      for (;;) {
        let step: IteratorResult<unknown>
        try {
          step = await events.next()
        } catch (thrown) {
          exhausted = true
          throw fail(thrown)
        }
        if (step.done === true) {
          exhausted = true
          break
        }
        // events decoded before an abort may still come: check ourselves
        if (signal.aborted) break
        const malformed = malformation(step.value)
        if (malformed !== undefined) {
          throw new LlmError({ message: `${context.provider}: malformed stream data: ${malformed}`, code: 'MALFORMED_RESPONSE', requestId })
        }
        // yields stay outside the catch above: a consumer's throw() is not a provider failure
        yield* state.accept(step.value as ChatCompletionChunk)
      }
    } finally {
      if (!exhausted) await events.return(undefined)
    }
    if (signal.aborted) throw abortError(signal)
    yield* state.finish(requestId)
  } finally {
    signal.removeEventListener('abort', forward)
  }
}

// ---- request --------------------------------------------------------------

/** Body fields the adapter owns: provider options may not replace them. */
const RESERVED_FIELDS = new Set(['model', 'messages', 'stream'])

/** A chat-completions body: the typed fields plus provider passthrough fields. */
type ChatBody = ChatCompletionCreateParamsStreaming & Record<string, unknown>

/**
 * The chat-completions body for one request, a pure function of the request
 * (so of the log, SS-13): config fields map to their wire names, then the
 * provider's own `providerOptions` fields are laid over them as they are.
 */
function buildChatBody(request: ModelRequest, context: Pick<StreamContext, 'provider' | 'dialect'>): ChatBody {
  const { config } = request
  const { dialect } = context
  const extra = config.providerOptions?.[context.provider]
  const maxTokens = request.maxTokens ?? config.maxTokens
  const thinkingOff = dialect === 'deepseek' && (extra?.thinking as { type?: unknown } | undefined)?.type === 'disabled'
  const body: ChatBody = {
    model: config.model,
    messages: toChatMessages(request.messages, systemText(request.system, config.responseFormat, dialect), { dialect, thinkingOff }),
    stream: true,
    stream_options: { include_usage: true },
  }
  const tools = request.tools ?? []
  const hasTools = tools.length > 0
  if (hasTools) body.tools = tools.map(toChatTool)
  // tool_choice without tools is refused by the API: it only goes out with them
  if (hasTools && config.toolChoice !== undefined) body.tool_choice = toChatToolChoice(config.toolChoice)
  if (maxTokens !== undefined) body.max_tokens = maxTokens
  if (config.temperature !== undefined) body.temperature = config.temperature
  if (config.stop !== undefined && config.stop.length > 0) body.stop = [...config.stop]
  if (config.reasoningEffort !== undefined) {
    body.reasoning_effort = config.reasoningEffort as NonNullable<ChatCompletionCreateParamsStreaming['reasoning_effort']>
  }
  if (config.responseFormat !== undefined) body.response_format = toChatResponseFormat(config.responseFormat, dialect)
  if (extra !== undefined) {
    for (const [field, value] of Object.entries(extra)) {
      if (RESERVED_FIELDS.has(field)) {
        throw new LlmError({
          message: `${context.provider}: providerOptions.${context.provider}.${field} cannot be set (the adapter owns it)`,
          code: 'UNSUPPORTED_OPTION',
        })
      }
      body[field] = value
    }
  }
  return body
}

function toChatToolChoice(choice: ToolChoice): ChatCompletionToolChoiceOption {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } }
}

/**
 * OpenAI: `json_schema` for a schema (name default 'response'), `json_object`
 * without one. DeepSeek has only `json_object`; the schema goes into the
 * system text instead (see systemText).
 */
function toChatResponseFormat(format: ResponseFormat, dialect: Dialect): ChatBody['response_format'] {
  if (format.type === 'text') return { type: 'text' }
  if (format.schema === undefined || dialect === 'deepseek') return { type: 'json_object' }
  return {
    type: 'json_schema',
    json_schema: {
      name: format.name ?? 'response',
      schema: { ...format.schema },
      ...(format.description !== undefined ? { description: format.description } : {}),
      ...(format.strict !== undefined ? { strict: format.strict } : {}),
    },
  }
}

/**
 * The system text sent. DeepSeek's JSON output needs the word "json" in the
 * prompt and works from a described format, so a JSON response format adds
 * one line (with the JSON Schema when there is one) after the system prompt.
 */
function systemText(system: string | undefined, format: ResponseFormat | undefined, dialect: Dialect): string | undefined {
  if (dialect !== 'deepseek' || format?.type !== 'json') return system
  const line =
    format.schema === undefined
      ? 'Answer with a single JSON object.'
      : `Answer with a single JSON object that matches this JSON Schema:\n${JSON.stringify(format.schema)}`
  return system ? `${system}\n\n${line}` : line
}

function toChatTool(tool: ToolSchema): ChatCompletionFunctionTool {
  return {
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      parameters: { ...tool.inputSchema },
    },
  }
}

interface HistoryRules {
  readonly dialect: Dialect
  /** DeepSeek with thinking switched off: a tool-call message with no reasoning sends none. */
  readonly thinkingOff: boolean
}

/**
 * The derived history in chat-completions form: system first; each tool-result
 * block becomes a `tool` message; user text blocks are joined with '\n' (a parts
 * array only when images are present); assistant text is joined as streamed,
 * tool-call blocks become `tool_calls`, and an assistant message left with
 * neither text nor calls is skipped. Reasoning is dropped, except that DeepSeek
 * gets the reasoning of every assistant message that made tool calls back as
 * `reasoning_content` (its rule, HTTP 400 otherwise).
 */
function toChatMessages(messages: readonly Message[], system: string | undefined, rules: HistoryRules): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = []
  if (system) out.push({ role: 'system', content: system })
  for (const message of messages) {
    if (message.role === 'assistant') {
      const assistant = toAssistantMessage(message, rules)
      if (assistant !== undefined) out.push(assistant)
      continue
    }
    const blocks: readonly ContentBlock[] = message.content
    for (const block of blocks) {
      if (block.type === 'tool-result') out.push({ role: 'tool', tool_call_id: block.toolCallId, content: toolResultText(block) })
    }
    if (message.source.kind === 'tool') continue
    const visible = blocks.filter((b): b is Extract<ContentBlock, { type: 'text' | 'image' }> => b.type === 'text' || b.type === 'image')
    if (visible.length === 0 && blocks.length > 0) continue // e.g. only tool results
    if (visible.every((b) => b.type === 'text')) {
      out.push({ role: 'user', content: visible.map((b) => (b.type === 'text' ? b.text : '')).join('\n') })
      continue
    }
    const parts: ChatCompletionContentPart[] = []
    for (const block of visible) {
      if (block.type === 'text') parts.push({ type: 'text', text: block.text })
      else {
        const url = imageUrl(block)
        if (url !== undefined) parts.push({ type: 'image_url', image_url: { url } })
      }
    }
    out.push({ role: 'user', content: parts })
  }
  return out
}

function toAssistantMessage(message: AssistantMessage, rules: HistoryRules): ChatCompletionMessageParam | undefined {
  let text = ''
  let reasoning: string | undefined
  const calls: ChatCompletionMessageFunctionToolCall[] = []
  for (const block of message.content) {
    if (block.type === 'text') text += block.text
    else if (block.type === 'reasoning') reasoning = (reasoning ?? '') + block.text
    else if (block.type === 'tool-call') {
      calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: block.arguments } })
    }
  }
  if (calls.length > 0) {
    const out: ChatCompletionMessageParam & { reasoning_content?: string } = { role: 'assistant', content: text === '' ? null : text, tool_calls: calls }
    // DeepSeek: a tool-call message carries its reasoning, '' when it had none (its absence is what the API refuses)
    if (rules.dialect === 'deepseek' && !(rules.thinkingOff && reasoning === undefined)) out.reasoning_content = reasoning ?? ''
    return out
  }
  return text === '' ? undefined : { role: 'assistant', content: text }
}

/** Tool output as a string: block arrays keep their text, joined with '\n' (images cannot go into a tool message). */
function toolResultText(block: ToolResultBlock): string {
  if (typeof block.content === 'string') return block.content
  return block.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n')
}

function imageUrl(block: ImageBlock): string | undefined {
  const { url, data, mediaType } = block.attachment
  if (url) return url
  return data ? `data:${mediaType};base64,${data}` : undefined
}

// ---- stream ---------------------------------------------------------------

/**
 * The parsed data of a chat-completions SSE body, up to `data: [DONE]`: a
 * server may keep the connection open after it, so reading stops there and the
 * body is let go. An `error` object is thrown as the SDK's APIError (as the
 * SDK's own stream does), unparseable data as its SyntaxError.
 */
async function* chatEvents(body: ReadableStream<Uint8Array>, sdk: Sdk, headers: Headers): AsyncGenerator<unknown, void> {
  const reader = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
  let ended = false
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) {
        ended = true
        return
      }
      if (value.data.startsWith('[DONE]')) return
      const parsed: unknown = JSON.parse(value.data)
      const error = peek(parsed, 'error')
      if (error) throw new sdk.APIError(undefined, error, undefined, headers)
      yield parsed
    }
  } finally {
    // a stream left before its end (at [DONE], or on a throw) lets the connection go
    if (!ended) await reader.cancel().catch(() => {})
    reader.releaseLock()
  }
}

/** What makes parsed stream data unusable: a chunk, choice or tool call that is not an object; undefined when nothing does. */
function malformation(chunk: unknown): string | undefined {
  const notObject = (path: string, value: unknown) => `${path} is ${describeValue(value)}, not an object`
  if (!isRecordLike(chunk)) return notObject('a chunk', chunk)
  if (!Array.isArray(chunk.choices)) return undefined
  for (const [i, choice] of (chunk.choices as unknown[]).entries()) {
    if (!isRecordLike(choice)) return notObject(`choices[${i}]`, choice)
    const calls = peek(choice.delta, 'tool_calls')
    if (!Array.isArray(calls)) continue
    for (const [j, call] of (calls as unknown[]).entries()) {
      if (!isRecordLike(call)) return notObject(`choices[${i}].delta.tool_calls[${j}]`, call)
    }
  }
  return undefined
}

type BlockKind = 'text' | 'reasoning' | 'tool-call'

interface OpenBlock {
  readonly index: number
  readonly kind: BlockKind
  text: string
  id: string | undefined
  name: string | undefined
}

/** Extensions some compatible providers add to the wire types. */
interface DeltaExtensions {
  reasoning_content?: unknown // DeepSeek
  reasoning?: unknown // vLLM, OpenRouter
}
interface UsageExtensions {
  prompt_cache_hit_tokens?: unknown // DeepSeek
}

/**
 * Turns chat-completion chunks into StreamChunks: one block per kind (reasoning,
 * text) and per tool call (by its index, or by its id when a provider sends no
 * index), numbered in first-seen order; `block-end`s, `usage` and `finish` come
 * at the end, when every block is complete.
 */
class ChunkNormalizer {
  readonly #blocks: OpenBlock[] = []
  readonly #byKey = new Map<string, OpenBlock>()
  /** Call ids given out in this response, so that no two calls share one (Decision 8). */
  readonly #callIds = new Set<string>()
  /** The block keys of calls sent without an index, by the id they started with, and the last one started. */
  readonly #unindexed = new Map<string, string>()
  #lastUnindexed: string | undefined
  #usage: CompletionUsage | undefined
  #finishReason: string | undefined;

  *accept(chunk: ChatCompletionChunk): Generator<StreamChunk> {
    if (chunk.usage) this.#usage = chunk.usage
    const choices = Array.isArray(chunk.choices) ? chunk.choices : []
    const choice = choices.find((c) => c.index === 0) ?? choices[0]
    if (choice === undefined) return
    const delta = (choice.delta ?? {}) as ChatCompletionChunk.Choice.Delta & DeltaExtensions
    const reasoning = nonEmpty(delta.reasoning_content) ?? nonEmpty(delta.reasoning)
    if (reasoning !== undefined) yield* this.#text('reasoning', reasoning)
    const text = nonEmpty(delta.content)
    if (text !== undefined) yield* this.#text('text', text)
    const refusal = nonEmpty(delta.refusal)
    if (refusal !== undefined) yield* this.#text('text', refusal)
    const calls = Array.isArray(delta.tool_calls) ? delta.tool_calls : []
    for (const call of calls) yield* this.#toolCall(this.#slotOf(call), call)
    if (typeof choice.finish_reason === 'string' && choice.finish_reason.length > 0) this.#finishReason = choice.finish_reason
  }

  /** The closing chunks: every block-end, the usage (if reported), then the finish. */
  *finish(requestId: string | undefined): Generator<StreamChunk> {
    const reason = this.#finishReason
    if (reason === undefined) {
      throw new LlmError({ message: 'the stream ended without a finish reason', code: 'STREAM_CLOSED', requestId })
    }
    for (const block of this.#blocks) {
      if (block.kind === 'tool-call' && block.id === undefined) {
        // a call that never got an id: `call-<index>`, unless another call of the response already has that id
        block.id = uniqueCallId(`call-${block.index}`, this.#callIds)
        this.#callIds.add(block.id)
      }
      yield { type: 'block-end', index: block.index, block: closeBlock(block) }
    }
    if (this.#usage !== undefined) yield { type: 'usage', usage: toTokenUsage(this.#usage) }
    yield { type: 'finish', reason: this.#finishOf(reason, requestId) }
  }

  #finishOf(reason: string, requestId: string | undefined): FinishReason {
    const error = (init: LlmFailureInit): FinishReason => ({ kind: 'error', failure: llmFailure({ ...init, requestId }) })
    switch (reason) {
      case 'length':
        return { kind: 'max-tokens' }
      case 'content_filter':
        return error({ message: 'the response was stopped by the content filter', code: 'CONTENT_FILTERED' })
      case 'insufficient_system_resource':
        return error({ message: 'the provider ran out of resources while generating', code: 'SERVER' })
      default: // stop, tool_calls, function_call, and unknown reasons of compatible servers
        if (this.#blocks.length === 0) return error({ message: 'the model returned no content', code: 'EMPTY_RESPONSE' })
        return this.#blocks.some((b) => b.kind === 'tool-call') ? { kind: 'tool-calls' } : { kind: 'stop' }
    }
  }

  *#text(kind: 'text' | 'reasoning', text: string): Generator<StreamChunk> {
    const block = yield* this.#open(kind, kind)
    block.text += text
    yield { type: kind === 'text' ? 'text-delta' : 'reasoning-delta', index: block.index, text }
  }

  /** The block key of a tool-call delta. */
  #slotOf(call: ChatCompletionChunk.Choice.Delta.ToolCall): string {
    if (Number.isInteger(call.index)) return `tool:${call.index}`
    // no index (the wire format always sends one): an id not seen yet starts a call, a delta without one continues the last call
    const id = nonEmpty(call.id)
    let key = id !== undefined ? this.#unindexed.get(id) : this.#lastUnindexed
    if (key === undefined) {
      key = `tool-unindexed:${this.#blocks.length}` // the index of the block it opens, so unique
      if (id !== undefined) this.#unindexed.set(id, key)
    }
    this.#lastUnindexed = key
    return key
  }

  *#toolCall(key: string, call: ChatCompletionChunk.Choice.Delta.ToolCall): Generator<StreamChunk> {
    const block = yield* this.#open(key, 'tool-call')
    let id = nonEmpty(call.id)
    const name = nonEmpty(call.function?.name)
    const argumentsDelta = typeof call.function?.arguments === 'string' ? call.function.arguments : ''
    if (id !== undefined) {
      // Decision 8: a call whose id an earlier call of this response has gets the next free `<id>#<k>`
      if (block.id === undefined) {
        block.id = uniqueCallId(id, this.#callIds)
        this.#callIds.add(block.id)
      }
      id = block.id
    }
    if (block.name === undefined && name !== undefined) block.name = name
    block.text += argumentsDelta
    yield {
      type: 'tool-call-delta',
      index: block.index,
      ...(id !== undefined ? { id } : {}),
      ...(name !== undefined ? { name } : {}),
      argumentsDelta,
    }
  }

  /** The block for a key, announcing it with `block-start` the first time. */
  *#open(key: string, kind: BlockKind): Generator<StreamChunk, OpenBlock> {
    const known = this.#byKey.get(key)
    if (known !== undefined) return known
    const block: OpenBlock = { index: this.#blocks.length, kind, text: '', id: undefined, name: undefined }
    this.#blocks.push(block)
    this.#byKey.set(key, block)
    yield { type: 'block-start', index: block.index, blockType: kind }
    return block
  }
}

function closeBlock(block: OpenBlock): ContentBlock {
  if (block.kind === 'tool-call') {
    return { type: 'tool-call', id: block.id ?? `call-${block.index}`, name: block.name ?? '', arguments: block.text }
  }
  return { type: block.kind, text: block.text }
}

/**
 * Provider usage as disjoint TokenUsage counts: `inputTokens` excludes cached
 * reads and writes (DeepSeek `prompt_cache_hit_tokens`, else OpenAI
 * `prompt_tokens_details.cached_tokens`; `cache_write_tokens`), `outputTokens`
 * excludes `reasoningTokens`. Optional counts appear only when reported and non-zero.
 */
function toTokenUsage(usage: CompletionUsage): TokenUsage {
  const extended = usage as CompletionUsage & UsageExtensions
  const prompt = count(usage.prompt_tokens) ?? 0
  const completion = count(usage.completion_tokens) ?? 0
  const cacheRead = count(extended.prompt_cache_hit_tokens) ?? count(usage.prompt_tokens_details?.cached_tokens)
  const cacheWrite = count(usage.prompt_tokens_details?.cache_write_tokens)
  const reasoning = count(usage.completion_tokens_details?.reasoning_tokens)
  const out: TokenUsage = {
    inputTokens: Math.max(0, prompt - (cacheRead ?? 0) - (cacheWrite ?? 0)),
    outputTokens: Math.max(0, completion - (reasoning ?? 0)),
  }
  if (cacheRead) out.cacheReadTokens = cacheRead
  if (cacheWrite) out.cacheWriteTokens = cacheWrite
  if (reasoning) out.reasoningTokens = reasoning
  return out
}

function count(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : undefined
}

function nonEmpty(x: unknown): string | undefined {
  return typeof x === 'string' && x.length > 0 ? x : undefined
}

// ---- failures -------------------------------------------------------------

interface FailureContext {
  /** The loaded SDK, whose error classes say what failed. */
  readonly sdk: Sdk
  readonly provider: string
  readonly signal: AbortSignal
  readonly hasKey: boolean
  readonly requestId: string | undefined
}

/** An LlmError named AbortError (what an SDK throws on abort) with code ABORTED. */
function abortError(signal: AbortSignal, cause?: unknown): LlmError {
  const error = new LlmError(abortedFailure(signal.reason), cause ?? signal.reason)
  error.name = 'AbortError'
  return error
}

/**
 * Maps whatever the SDK threw to an LlmError with a provider-neutral code:
 * 401 INVALID_CREDENTIAL (AUTH without a known key), 403 AUTH, 402 QUOTA,
 * 404 UNKNOWN_MODEL, 408 TIMEOUT, 429 RATE_LIMIT (QUOTA for insufficient_quota),
 * 400/413/422 CONTEXT_WINDOW_EXCEEDED or INVALID_REQUEST, 5xx SERVER, other 4xx
 * INVALID_REQUEST; an error event inside the stream SERVER (or the context/rate
 * codes its text names); connection TRANSPORT, timeout TIMEOUT, abort ABORTED;
 * unparseable stream data MALFORMED_RESPONSE; anything else UNKNOWN.
 */
function toLlmError(thrown: unknown, context: FailureContext): LlmError {
  const { provider, signal, hasKey } = context
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = context.sdk
  if (thrown instanceof LlmError) return thrown
  if (signal.aborted || thrown instanceof APIUserAbortError || isAbortError(thrown)) return abortError(signal, thrown)
  const base = { requestId: context.requestId }
  const say = (message: string) => `${provider}: ${message}`
  if (thrown instanceof APIConnectionTimeoutError) {
    return new LlmError({ ...base, message: say(thrown.message), code: 'TIMEOUT' }, thrown)
  }
  if (thrown instanceof APIConnectionError) {
    return new LlmError({ ...base, message: say(toLlmFailure(thrown).message), code: 'TRANSPORT' }, thrown)
  }
  if (thrown instanceof APIError) {
    const status = thrown.status as number | undefined
    const facts = {
      message: say(thrown.message),
      ...(status !== undefined ? { status } : {}),
      requestId: thrown.requestID ?? context.requestId ?? undefined,
    }
    const text = `${thrown.message} ${thrown.code ?? ''} ${thrown.type ?? ''}`
    const headers = thrown.headers as Headers | undefined
    return new LlmError({ ...facts, code: statusCode(status, text, hasKey), providerRetryAfterMs: retryAfterMs((name) => headers?.get(name)) }, thrown)
  }
  if (thrown instanceof SyntaxError) {
    return new LlmError({ ...base, message: say(`unparseable stream data: ${thrown.message}`), code: 'MALFORMED_RESPONSE' }, thrown)
  }
  if (isNetworkError(thrown)) {
    return new LlmError({ ...base, message: say(toLlmFailure(thrown).message), code: 'TRANSPORT' }, thrown)
  }
  return new LlmError({ ...base, message: say(toLlmFailure(thrown).message), code: 'UNKNOWN' }, thrown)
}

function statusCode(status: number | undefined, text: string, hasKey: boolean): string {
  const context = CONTEXT_TEXT.test(text)
  if (status === undefined) {
    // an `error` event inside a 200 stream
    if (context) return 'CONTEXT_WINDOW_EXCEEDED'
    return /rate[ _-]?limit/i.test(text) ? 'RATE_LIMIT' : 'SERVER'
  }
  if (status === 401) return hasKey ? 'INVALID_CREDENTIAL' : 'AUTH'
  if (status === 403) return 'AUTH'
  if (status === 402) return 'QUOTA'
  if (status === 404) return 'UNKNOWN_MODEL'
  if (status === 408) return 'TIMEOUT'
  if (status === 429) return /insufficient_quota/i.test(text) ? 'QUOTA' : 'RATE_LIMIT'
  if (status >= 500) return 'SERVER'
  if ((status === 400 || status === 413 || status === 422) && context) return 'CONTEXT_WINDOW_EXCEEDED'
  return 'INVALID_REQUEST'
}

function isAbortError(x: unknown): boolean {
  return typeof x === 'object' && x !== null && (x as { name?: unknown }).name === 'AbortError'
}

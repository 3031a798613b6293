// agentchart/adapters/ai-sdk: any AI SDK language model (LanguageModelV3 of
// ai 6, LanguageModelV4 of ai 7) as a ModelAdapter. The model object is
// duck-typed: nothing here imports `ai` or `@ai-sdk/*`.
import { ConfigError } from '../errors.js'
import { isInstance, peek } from '../values/foreign.js'
import type { RequestOptions } from '../request/options.js'
import type { StreamChunk } from '../session/schemas.js'
import { toAiSdkError, abortError } from './ai-sdk-failure.js'
import { PartNormalizer } from './ai-sdk-parts.js'
import { toCallOptions } from './ai-sdk-prompt.js'
import type { AiSdkLanguageModel, SpecCallOptions, SpecVersion } from './ai-sdk-spec.js'
import { credentialRedactor, withoutCredentials, type Redactor } from './credentials.js'
import { LlmError } from './failure.js'
import type { ModelAdapter, ModelRequest } from './types.js'

export type { AiSdkLanguageModel } from './ai-sdk-spec.js'

export interface AiSdkModelOptions {
  /** The provider name logged and matched for replay; default the model's `provider` (e.g. 'anthropic.messages'). */
  provider?: string
  /** The model name logged; default the model's `modelId`. */
  model?: string
  /** Logged in `request/context`. */
  contextWindow?: number
  /** Request options the agent starts from (logged in the header like the agent's own). */
  defaultConfig?: RequestOptions
  /** Credentials to cut out of every failure reported (the patterns of common key formats are cut out anyway). */
  secrets?: readonly string[]
}

/** What the adapter calls: the model's doStream with the spec's options. */
type DoStream = (options: SpecCallOptions) => PromiseLike<unknown>

/**
 * A ModelAdapter for an AI SDK language model (`openai('gpt-5')`, `anthropic('claude-sonnet-4-5')`,
 * any provider of ai 6 or 7). Why: the AI SDK's providers cover most APIs; the loop needs
 * StreamChunks, provider-neutral failure codes and a request rebuilt from the log, and this is the
 * one place that knows the spec. Provider metadata (reasoning signatures, item ids) is logged per
 * block in the finish's replayState and handed back as the parts' providerOptions.
 */
export function aiSdkModel(model: AiSdkLanguageModel, options: AiSdkModelOptions = {}): ModelAdapter {
  const version = checkModel(model)
  if (typeof options !== 'object' || options === null) throw new ConfigError('aiSdkModel: options must be an object')
  for (const key of ['provider', 'model'] as const) {
    const value = options[key]
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw new ConfigError(`aiSdkModel: ${key} must be a non-empty string`, { path: key })
    }
  }
  const { contextWindow, defaultConfig, secrets } = options
  if (contextWindow !== undefined && !(Number.isSafeInteger(contextWindow) && contextWindow > 0)) {
    throw new ConfigError('aiSdkModel: contextWindow must be a positive safe integer', { path: 'contextWindow' })
  }
  if (defaultConfig !== undefined && (typeof defaultConfig !== 'object' || defaultConfig === null)) {
    throw new ConfigError('aiSdkModel: defaultConfig must be an object', { path: 'defaultConfig' })
  }
  if (secrets !== undefined && !(Array.isArray(secrets) && secrets.every((s) => typeof s === 'string'))) {
    throw new ConfigError('aiSdkModel: secrets must be an array of strings', { path: 'secrets' })
  }
  const provider = options.provider ?? model.provider
  const doStream = (model.doStream as unknown as DoStream).bind(model)
  // kept once the provider's key is known; until then (no key configured yet) each request looks again
  let known: Redactor | undefined
  const redact = async (): Promise<Redactor> => {
    if (known !== undefined) return known
    const found = await providerSecrets(model)
    const redactor = credentialRedactor([...(secrets ?? []), ...found])
    if (found.length > 0) known = redactor
    return redactor
  }
  return {
    provider,
    model: options.model ?? model.modelId,
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    ...(defaultConfig !== undefined ? { defaultConfig } : {}),
    stream(request: ModelRequest): AsyncIterable<StreamChunk> {
      return streamModel(request, { provider, version, doStream, redact })
    },
  }
}

/** The model's specification version, or a ConfigError saying what the value is instead. */
function checkModel(model: unknown): SpecVersion {
  if (typeof model === 'string') {
    throw new ConfigError(`aiSdkModel: pass a model object (e.g. openai('${model}') from @ai-sdk/openai), not a model id string`, { path: 'model' })
  }
  if (typeof model !== 'object' || model === null) throw new ConfigError('aiSdkModel: model must be an AI SDK language model object', { path: 'model' })
  const version = peek(model, 'specificationVersion')
  if (version !== 'v3' && version !== 'v4') {
    throw new ConfigError(
      `aiSdkModel: the model implements specification ${JSON.stringify(version)}; LanguageModelV3 (ai 6) and LanguageModelV4 (ai 7) are supported`,
      { path: 'model.specificationVersion' },
    )
  }
  if (typeof peek(model, 'doStream') !== 'function') throw new ConfigError('aiSdkModel: model.doStream must be a function', { path: 'model.doStream' })
  for (const key of ['provider', 'modelId']) {
    const value = peek(model, key)
    if (typeof value !== 'string' || value.length === 0) throw new ConfigError(`aiSdkModel: model.${key} must be a non-empty string`, { path: `model.${key}` })
  }
  return version
}

/**
 * The credentials the provider's own config would send, when it exposes them (`config.headers()`
 * of the AI SDK's HTTP providers): the values of its key and authorization headers.
 */
async function providerSecrets(model: unknown): Promise<string[]> {
  try {
    const config = peek(model, 'config')
    const headers = peek(config, 'headers')
    if (typeof headers !== 'function') return []
    const value: unknown = await (headers as (this: unknown) => unknown).call(config)
    if (typeof value !== 'object' || value === null) return []
    const out: string[] = []
    for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
      if (typeof v !== 'string' || !/authorization|api[-_]?key|token/i.test(name)) continue
      out.push(v, v.replace(/^(bearer|basic|token)\s+/i, ''))
    }
    return out
  } catch {
    return [] // no key configured yet: the request itself will say so
  }
}

interface StreamContext {
  readonly provider: string
  readonly version: SpecVersion
  readonly doStream: DoStream
  readonly redact: () => Promise<Redactor>
}

async function* streamModel(request: ModelRequest, context: StreamContext): AsyncGenerator<StreamChunk> {
  const { signal } = request
  if (signal.aborted) throw abortError(signal)
  const redact = await context.redact()
  const provider = request.config.provider || context.provider
  let requestId: string | undefined
  const fail = (thrown: unknown, inStream = false) =>
    withoutCredentials(toAiSdkError(thrown, { provider, signal, inStream, ...(requestId !== undefined ? { requestId } : {}) }), redact)
  const options = toCallOptions(request, context.version)
  // a per-request signal: a provider's fetch may keep its listener on the signal it is given
  const linked = new AbortController()
  const forward = () => linked.abort(signal.reason)
  signal.addEventListener('abort', forward, { once: true })
  try {
    if (signal.aborted) throw abortError(signal) // while the redactor was looked up
    let result: unknown
    try {
      result = await context.doStream({ ...options, abortSignal: linked.signal })
    } catch (thrown) {
      throw fail(thrown)
    }
    const stream = peek(result, 'stream')
    if (!isInstance(stream, ReadableStream)) {
      throw new LlmError({ message: `${provider}: doStream returned no readable stream`, code: 'INVALID_RESPONSE' })
    }
    requestId = responseRequestId(peek(peek(result, 'response'), 'headers'))
    const reader = stream.getReader()
    // a model that ignores its abort signal still stops: cancelling the reader ends the pending read
    const stop = () => void reader.cancel(signal.reason).catch(() => {})
    signal.addEventListener('abort', stop, { once: true })
    if (signal.aborted) stop() // while doStream was answering
    const parts = new PartNormalizer(provider)
    let exhausted = false
    try {
      for (;;) {
        let step: { done?: boolean; value?: unknown }
        try {
          step = await reader.read()
        } catch (thrown) {
          exhausted = true
          throw fail(thrown)
        }
        if (signal.aborted) break
        if (step.done) {
          exhausted = true
          break
        }
        if (peek(step.value, 'type') === 'error') throw fail(peek(step.value, 'error'), true)
        // yields stay outside the catch above: a consumer's throw() is not a provider failure
        yield* parts.accept(step.value)
        if (parts.finished) break
      }
    } finally {
      signal.removeEventListener('abort', stop)
      if (!exhausted) await reader.cancel().catch(() => {})
    }
    if (signal.aborted) throw abortError(signal)
    yield* parts.finish(requestId)
  } finally {
    signal.removeEventListener('abort', forward)
  }
}

/** The request id a provider's response headers name (OpenAI `x-request-id`, Anthropic `request-id`). */
function responseRequestId(headers: unknown): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined
  for (const name of ['x-request-id', 'request-id']) {
    const value = peek(headers, name)
    if (typeof value === 'string' && value.length > 0) return value
  }
  return undefined
}

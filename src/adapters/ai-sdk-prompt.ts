// One ModelRequest as AI SDK call options: the derived history as the spec's
// prompt (system, user, assistant and tool messages), the logged config as
// call settings, and each block's logged provider metadata handed back as the
// part's providerOptions so that a provider can replay its own output
// (reasoning signatures, item ids).
import { isRecordLike } from '../values/foreign.js'
import type { AssistantMessage, ContentBlock, ImageBlock, ResponseFormat, ToolChoice, ToolResultBlock } from '../session/schemas.js'
import { LlmError } from './failure.js'
import type { ModelRequest } from './types.js'
import {
  V4_REASONING_LEVELS,
  type ProviderRecord,
  type SpecCallOptions,
  type SpecFileData,
  type SpecFilePart,
  type SpecMessage,
  type SpecToolCallPart,
  type SpecToolOutputPart,
  type SpecToolResultOutput,
  type SpecVersion,
} from './ai-sdk-spec.js'

/** A plain, mutable copy of a JSON value (undefined dropped, dates as ISO text); undefined when it has no JSON form. */
export function jsonCopy(value: unknown): unknown {
  try {
    const text = JSON.stringify(value)
    return text === undefined ? undefined : (JSON.parse(text) as unknown)
  } catch {
    return undefined
  }
}

/** Provider-keyed records only: anything else in a provider's slot is left out. */
export function providerRecord(value: unknown): ProviderRecord | undefined {
  const copy = jsonCopy(value)
  if (!isRecordLike(copy)) return undefined
  const out: ProviderRecord = {}
  for (const [key, fields] of Object.entries(copy)) if (isRecordLike(fields)) out[key] = fields
  return Object.keys(out).length > 0 ? out : undefined
}

/**
 * The call options of one request, a pure function of the request (so of the log).
 * Throws an LlmError UNSUPPORTED_OPTION for a config field the spec cannot carry.
 */
export function toCallOptions(request: ModelRequest, version: SpecVersion): SpecCallOptions {
  const { config } = request
  const options: SpecCallOptions = { prompt: toPrompt(request, version) }
  const maxTokens = request.maxTokens ?? config.maxTokens
  if (maxTokens !== undefined) options.maxOutputTokens = maxTokens
  if (config.temperature !== undefined) options.temperature = config.temperature
  if (config.stop !== undefined && config.stop.length > 0) options.stopSequences = [...config.stop]
  const tools = request.tools ?? []
  if (tools.length > 0) {
    options.tools = tools.map((tool) => ({
      type: 'function' as const,
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      inputSchema: jsonCopy(tool.inputSchema) as Record<string, unknown>,
    }))
    // a tool choice without tools means nothing to a provider: it goes out with them only
    if (config.toolChoice !== undefined) options.toolChoice = toToolChoice(config.toolChoice)
  }
  if (config.responseFormat !== undefined) options.responseFormat = toResponseFormat(config.responseFormat)
  if (config.reasoningEffort !== undefined) options.reasoning = reasoningLevel(config.reasoningEffort, version, config.provider)
  const providerOptions = providerRecord(config.providerOptions)
  if (providerOptions !== undefined) options.providerOptions = providerOptions
  return options
}

function toToolChoice(choice: ToolChoice): NonNullable<SpecCallOptions['toolChoice']> {
  return typeof choice === 'string' ? { type: choice } : { type: 'tool', toolName: choice.name }
}

/** The spec's response format: `json` with its schema, name and description (`strict` has no place in it). */
function toResponseFormat(format: ResponseFormat): NonNullable<SpecCallOptions['responseFormat']> {
  if (format.type === 'text') return { type: 'text' }
  return {
    type: 'json',
    ...(format.schema !== undefined ? { schema: jsonCopy(format.schema) as Record<string, unknown> } : {}),
    ...(format.name !== undefined ? { name: format.name } : {}),
    ...(format.description !== undefined ? { description: format.description } : {}),
  }
}

/** v4's `reasoning` level; v3 has no such option, so a set effort fails the request rather than being dropped. */
function reasoningLevel(effort: string, version: SpecVersion, provider: string): string {
  if (version === 'v4' && V4_REASONING_LEVELS.has(effort)) return effort
  const why =
    version === 'v4'
      ? `reasoningEffort '${effort}' is not one of LanguageModelV4's levels (${[...V4_REASONING_LEVELS].join(', ')})`
      : 'LanguageModelV3 has no reasoning effort option'
  throw new LlmError({
    message: `${provider}: ${why}; set the provider's own option in providerOptions instead (e.g. openai.reasoningEffort, anthropic.thinking)`,
    code: 'UNSUPPORTED_OPTION',
  })
}

// ---- the prompt -------------------------------------------------------------

/**
 * The history as the spec's prompt: system first; tool-result blocks become `tool` messages (one for
 * consecutive results);
 * user text and images become text and file parts; assistant text, reasoning, images and tool
 * calls become their parts, with the block's logged provider metadata as the part's
 * providerOptions when the message came from this provider.
 */
function toPrompt(request: ModelRequest, version: SpecVersion): SpecMessage[] {
  const prompt: SpecMessage[] = []
  if (request.system) prompt.push({ role: 'system', content: request.system })
  const toolNames = new Map<string, string>()
  for (const message of request.messages) {
    if (message.role !== 'assistant') continue
    for (const block of message.content) if (block.type === 'tool-call') toolNames.set(block.id, block.name)
  }
  for (const message of request.messages) {
    if (message.role === 'assistant') {
      const assistant = toAssistantMessage(message, request.config.provider, version)
      if (assistant !== undefined) prompt.push(assistant)
      continue
    }
    const blocks: readonly ContentBlock[] = message.content
    const results = blocks.filter((b): b is ToolResultBlock => b.type === 'tool-result')
    if (results.length > 0) {
      const parts = results.map((block) => ({
        type: 'tool-result' as const,
        toolCallId: block.toolCallId,
        toolName: toolNames.get(block.toolCallId) ?? '',
        output: toToolOutput(block, version),
      }))
      // a step's results form one tool message, as the AI SDK itself sends them
      const last = prompt.at(-1)
      if (last?.role === 'tool') last.content.push(...parts)
      else prompt.push({ role: 'tool', content: parts })
    }
    const parts: Array<{ type: 'text'; text: string } | SpecFilePart> = []
    for (const block of blocks) {
      if (block.type === 'text') parts.push({ type: 'text', text: block.text })
      else if (block.type === 'image') parts.push(toFilePart(block, version))
    }
    if (parts.length > 0) prompt.push({ role: 'user', content: parts })
  }
  return prompt
}

/** The logged metadata of each block, when it lines up with the content and came from `provider`. */
function replayedMetadata(message: AssistantMessage, provider: string): readonly unknown[] | undefined {
  const { source } = message
  if (source.provider !== provider) return undefined
  const blocks = source.replayState?.blocks
  return Array.isArray(blocks) && blocks.length === message.content.length ? blocks : undefined
}

function toAssistantMessage(message: AssistantMessage, provider: string, version: SpecVersion): SpecMessage | undefined {
  const metadata = replayedMetadata(message, provider)
  const parts: Extract<SpecMessage, { role: 'assistant' }>['content'] = []
  message.content.forEach((block, k) => {
    const providerOptions = metadata === undefined ? undefined : providerRecord(metadata[k])
    const withOptions = <T extends object>(part: T): T => (providerOptions !== undefined ? { ...part, providerOptions } : part)
    switch (block.type) {
      case 'text':
      case 'reasoning':
        // an empty block says nothing, unless it carries what the provider needs back (e.g. redacted thinking)
        if (block.text !== '' || providerOptions !== undefined) parts.push(withOptions({ type: block.type, text: block.text }))
        return
      case 'tool-call':
        parts.push(withOptions<SpecToolCallPart>({ type: 'tool-call', toolCallId: block.id, toolName: block.name, input: toolInput(block.arguments) }))
        return
      case 'image':
        parts.push(withOptions(toFilePart(block, version)))
        return
      default:
        return
    }
  })
  return parts.length > 0 ? { role: 'assistant', content: parts } : undefined
}

/** The call's input as the spec wants it (a JSON value): parsed, `{}` for no arguments, the raw text when it is not JSON. */
function toolInput(text: string): unknown {
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

function toToolOutput(block: ToolResultBlock, version: SpecVersion): SpecToolResultOutput {
  const { content } = block
  const textOnly = typeof content === 'string' ? content : content.every((b) => b.type === 'text') ? content.map((b) => b.text).join('\n') : undefined
  if (textOnly !== undefined) return { type: block.isError === true ? 'error-text' : 'text', value: textOnly }
  const parts: SpecToolOutputPart[] = []
  for (const part of content as Exclude<ToolResultBlock['content'], string>) {
    if (part.type === 'text') parts.push({ type: 'text', text: part.text })
    else if (version === 'v4') parts.push({ type: 'file', data: fileData(part, version), mediaType: part.attachment.mediaType })
    else {
      const { url, data, mediaType } = part.attachment
      if (url) parts.push({ type: 'image-url', url })
      else parts.push({ type: 'image-data', data: data ?? '', mediaType })
    }
  }
  return { type: 'content', value: parts }
}

function toFilePart(block: ImageBlock, version: SpecVersion): SpecFilePart {
  return { type: 'file', data: fileData(block, version), mediaType: block.attachment.mediaType }
}

/** An image's bytes as the spec carries them: base64 text or a URL (tagged in v4). */
function fileData(block: ImageBlock, version: SpecVersion): SpecFileData {
  const { url, data } = block.attachment
  if (url) {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new LlmError({ message: `an image's url is not a URL: ${JSON.stringify(url.slice(0, 80))}`, code: 'INVALID_REQUEST' })
    }
    return version === 'v4' ? { type: 'url', url: parsed } : parsed
  }
  return version === 'v4' ? { type: 'data', data: data ?? '' } : (data ?? '')
}

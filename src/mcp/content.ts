// An MCP tool result as an agentchart tool result. A tool result is text in
// agentchart (and OpenAI-style chat APIs take no image in a tool message),
// so images travel as a user message after the step's results (TL-12), and
// what the model cannot read (audio, binary resources) is kept whole in `meta`.
import { isRecordLike } from '../values/foreign.js'
import { userMessage } from '../request/messages.js'
import { MAX_JSON_DEPTH } from '../session/lossless.js'
import type { ContentBlock } from '../session/schemas.js'
import type { ToolResultValue } from '../tools/define.js'

/** What `meta.mcp` holds: what the model did not read as text, for the app. */
export interface McpResultMeta {
  /** The remote tool's name as the server lists it. */
  tool: string
  structuredContent?: Record<string, unknown>
  /** Blocks not shown to the model as they are: audio, binary resources, blocks meant for the user only. */
  withheld?: unknown[]
  _meta?: Record<string, unknown>
}

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)

/** `annotations.audience` without 'assistant': the block is for the user, not the model. */
function forUserOnly(block: Record<string, unknown>): boolean {
  const audience = isRecordLike(block.annotations) ? block.annotations.audience : undefined
  return Array.isArray(audience) && !audience.includes('assistant')
}

/**
 * `value` with every -0 made 0, the value JSON writes for it: a server's `-0.0` (Python writes it) parses as -0,
 * which the log refuses. Only plain arrays and objects are copied, and only where a -0 was; anything else (a
 * cycle, a class instance, NaN) is kept as it is for the log's check to judge.
 */
function zeroed(value: unknown, ancestors: object[] = []): unknown {
  if (Object.is(value, -0)) return 0
  if (typeof value !== 'object' || value === null || ancestors.length > MAX_JSON_DEPTH || ancestors.includes(value)) return value
  const prototype = Object.getPrototypeOf(value) as unknown
  if (!Array.isArray(value) && prototype !== Object.prototype && prototype !== null) return value
  ancestors.push(value)
  try {
    if (Array.isArray(value)) {
      const copy = value.map((item) => zeroed(item, ancestors))
      return copy.some((item, i) => !Object.is(item, value[i])) ? copy : value
    }
    const entries = Object.entries(value).map(([key, item]) => [key, item, zeroed(item, ancestors)] as const)
    return entries.some(([, item, made]) => !Object.is(item, made)) ? Object.fromEntries(entries.map(([key, , made]) => [key, made])) : value
  } finally {
    ancestors.pop()
  }
}

/** Base64 length in bytes, for the placeholder the model reads. */
const bytesOf = (base64: string) => Math.floor((base64.replace(/=+$/, '').length * 3) / 4)

/**
 * The result of calling `name` (the agentchart name) on `tool` (the remote name): text blocks joined, other
 * blocks described in place, images as an additional context, `isError` as an error result.
 */
export function toToolResult(name: string, tool: string, result: unknown): ToolResultValue {
  const record = isRecordLike(result) ? result : {}
  const blocks = Array.isArray(record.content) ? (record.content as unknown[]) : []
  const lines: string[] = []
  const images: ContentBlock[] = []
  const withheld: unknown[] = []
  const image = (mediaType: string, data: string) => {
    images.push({ type: 'image', attachment: { mediaType, data } })
    lines.push(`[image ${mediaType}, ${bytesOf(data)} bytes: attached after the tool results]`)
  }
  for (const block of blocks) {
    if (!isRecordLike(block)) continue
    if (forUserOnly(block)) {
      withheld.push(block)
      continue
    }
    const mime = str(block.mimeType)
    switch (block.type) {
      case 'text':
        lines.push(str(block.text) ?? '')
        break
      case 'image':
        if (mime && typeof block.data === 'string') image(mime, block.data)
        break
      case 'audio':
        withheld.push(block)
        lines.push(`[audio ${mime ?? ''}${typeof block.data === 'string' ? `, ${bytesOf(block.data)} bytes` : ''}: not shown to the model]`)
        break
      case 'resource_link':
        lines.push(
          `[resource link] ${str(block.title) ?? str(block.name) ?? ''} <${str(block.uri) ?? ''}>${mime ? ` (${mime})` : ''}${block.description ? `: ${str(block.description)}` : ''}`,
        )
        break
      case 'resource': {
        const resource = isRecordLike(block.resource) ? block.resource : {}
        const uri = str(resource.uri) ?? ''
        const type = str(resource.mimeType)
        if (typeof resource.text === 'string') lines.push(`[resource <${uri}>${type ? ` (${type})` : ''}]\n${resource.text}`)
        else if (typeof resource.blob === 'string' && type?.startsWith('image/')) image(type, resource.blob)
        else {
          withheld.push(block)
          lines.push(`[resource <${uri}>${type ? ` (${type})` : ''}, binary: not shown to the model]`)
        }
        break
      }
      default:
        // a block type newer than this code: the model reads it as JSON rather than not at all
        lines.push(JSON.stringify(block))
    }
  }
  const structured = isRecordLike(record.structuredContent) ? record.structuredContent : undefined
  // a server that returns structured content alone: its JSON is the text (MCP asks servers to send both)
  if (lines.length === 0 && structured !== undefined) lines.push(JSON.stringify(structured))
  const isError = record.isError === true
  const content = lines.join('\n') || (isError ? `tool ${tool} reported an error` : '')
  const meta = zeroed({
    tool,
    ...(structured !== undefined ? { structuredContent: structured } : {}),
    ...(withheld.length ? { withheld } : {}),
    ...(isRecordLike(record._meta) ? { _meta: record._meta } : {}),
  }) as McpResultMeta
  const contexts = images.length
    ? [
        userMessage([{ type: 'text', text: `The image${images.length > 1 ? 's' : ''} returned by tool ${name}:` }, ...images], {
          source: { kind: 'plugin', plugin: `mcp:${name}`, form: 'tool-image' },
        }),
      ]
    : undefined
  return { content, ...(isError ? { isError } : {}), meta, ...(contexts ? { additionalContexts: contexts } : {}) }
}

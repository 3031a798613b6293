// The session vocabulary: zod schemas are the single source of both the
// runtime checks (loaded logs, public inputs) and the TypeScript types.
import { z } from 'zod/v4'
import { MINUS_ZERO, notMinusZero } from './lossless.js'

const nonEmpty = z.string().min(1)
const turnNo = z.number().int().positive()
// JSON writes -0 as 0, so the log's lossless rule would refuse it at the append: the schemas refuse it first,
// naming the field (z.number() already refuses NaN and ±Infinity)
const count = z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO)
const anyNumber = z.number().refine(notMinusZero, MINUS_ZERO)

// ---- content and messages -------------------------------------------------

export const TextBlockSchema = z.object({ type: z.literal('text'), text: z.string() }).strict()
export const ReasoningBlockSchema = z.object({ type: z.literal('reasoning'), text: z.string() }).strict()
export const ImageBlockSchema = z
  .object({
    type: z.literal('image'),
    attachment: z.object({ mediaType: nonEmpty, data: z.string().optional(), url: z.string().optional() }).strict(),
  })
  .strict()
export const ToolCallBlockSchema = z.object({ type: z.literal('tool-call'), id: z.string(), name: z.string(), arguments: z.string() }).strict()
export const ToolResultBlockSchema = z
  .object({
    type: z.literal('tool-result'),
    toolCallId: nonEmpty,
    content: z.union([z.string(), z.array(z.union([TextBlockSchema, ImageBlockSchema]))]),
    isError: z.boolean().optional(),
  })
  .strict()

export const ContentBlockSchema = z.discriminatedUnion('type', [
  TextBlockSchema,
  ReasoningBlockSchema,
  ImageBlockSchema,
  ToolCallBlockSchema,
  ToolResultBlockSchema,
])

export const UserSourceSchema = z.object({ kind: z.literal('user') }).strict()
export const PluginSourceSchema = z.object({ kind: z.literal('plugin'), plugin: z.string(), form: z.string().optional() }).loose()
/** What a provider needs back verbatim on later requests (a reasoning signature, an item id); `blocks` lines up with the content. */
const ReplayStateSchema = z.object({ response: z.unknown(), blocks: z.array(z.unknown()).optional() })
export const ModelSourceSchema = z.object({ kind: z.literal('model'), provider: nonEmpty, model: nonEmpty, replayState: ReplayStateSchema.optional() }).strict()
export const ToolSourceSchema = z.object({ kind: z.literal('tool'), callId: nonEmpty }).strict()
export const MessageSourceSchema = z.discriminatedUnion('kind', [UserSourceSchema, PluginSourceSchema, ModelSourceSchema, ToolSourceSchema])

export const UserMessageSchema = z
  .object({
    id: nonEmpty,
    role: z.literal('user'),
    content: z.array(ContentBlockSchema),
    source: z.discriminatedUnion('kind', [UserSourceSchema, PluginSourceSchema, ToolSourceSchema]),
  })
  .strict()
/**
 * A message someone hands the inbox (a send, a pre-step's entries, a tool's additional contexts): a user
 * message as the log keeps it, less what only the loop writes. Tool calls are the model's and tool results
 * the tools'; one sent by hand answers no call, and a provider refuses every later request that carries it.
 */
export const InboxMessageSchema = UserMessageSchema.extend({
  content: z.array(
    ContentBlockSchema.refine((block) => block.type !== 'tool-call' && block.type !== 'tool-result', {
      message: 'a tool-call or tool-result block is written by the loop, not sent: an inbox message holds text, reasoning and image blocks',
      path: ['type'],
    }),
  ),
  source: z.discriminatedUnion('kind', [UserSourceSchema, PluginSourceSchema, ToolSourceSchema]).refine((source) => source.kind !== 'tool', {
    message: "a tool source is the loop's own (tool results): send with a user or plugin source",
    path: ['kind'],
  }),
})
export const AssistantMessageSchema = z
  .object({ id: nonEmpty, role: z.literal('assistant'), content: z.array(ContentBlockSchema), source: ModelSourceSchema })
  .strict()
export const ToolResultMessageSchema = z
  .object({
    id: nonEmpty,
    role: z.literal('user'),
    content: z.tuple([ToolResultBlockSchema]),
    source: ToolSourceSchema,
  })
  .strict()
  .refine((m) => m.content[0].toolCallId === m.source.callId, {
    message: 'the tool-result block must answer the call named by its source',
    path: ['content', 0, 'toolCallId'],
  })
export const MessageSchema = z.union([UserMessageSchema, AssistantMessageSchema, ToolResultMessageSchema])

export const TokenUsageSchema = z
  .object({
    inputTokens: count,
    outputTokens: count,
    cacheReadTokens: count.optional(),
    cacheWriteTokens: count.optional(),
    reasoningTokens: count.optional(),
  })
  .strict()

// ---- failures and stream chunks -------------------------------------------

export const LlmFailureSchema = z
  .object({
    message: nonEmpty,
    code: nonEmpty,
    status: z.number().int().min(100).max(599).optional(),
    providerRetryAfterMs: z.number().positive().finite().optional(),
    requestId: nonEmpty.optional(),
  })
  .strict()

export const FinishReasonSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('stop') }).strict(),
  z.object({ kind: z.literal('tool-calls') }).strict(),
  z.object({ kind: z.literal('max-tokens') }).strict(),
  z.object({ kind: z.literal('aborted'), failure: LlmFailureSchema }).strict(),
  z.object({ kind: z.literal('error'), failure: LlmFailureSchema }).strict(),
])

const index = count
export const StreamChunkSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('block-start'), index, blockType: z.enum(['text', 'reasoning', 'image', 'tool-call']) }).strict(),
  z.object({ type: z.literal('text-delta'), index, text: z.string() }).strict(),
  z.object({ type: z.literal('reasoning-delta'), index, text: z.string() }).strict(),
  z.object({ type: z.literal('tool-call-delta'), index, id: z.string().optional(), name: z.string().optional(), argumentsDelta: z.string() }).strict(),
  z.object({ type: z.literal('block-end'), index, block: ContentBlockSchema }).strict(),
  z.object({ type: z.literal('usage'), usage: TokenUsageSchema }).strict(),
  z.object({ type: z.literal('finish'), reason: FinishReasonSchema, replayState: ReplayStateSchema.optional() }).strict(),
])

// ---- turn outcomes and causes ---------------------------------------------

export const AgentCancelCauseSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('user') }).strict(),
  z.object({ kind: z.literal('parent') }).strict(),
  z.object({ kind: z.literal('hook'), reason: z.string() }).strict(),
  z.object({ kind: z.literal('disposed') }).strict(),
])

export const TurnEndReasonSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('completed') }).strict(),
  z.object({ kind: z.literal('blocked') }).strict(),
  z.object({ kind: z.literal('max-tokens') }).strict(),
  // TU-16: the turn ran its `limit` steps (createAgent's maxSteps) and wanted another
  z.object({ kind: z.literal('max-steps'), limit: z.number().int().positive() }).strict(),
  z.object({ kind: z.literal('error'), error: LlmFailureSchema }).strict(),
  z
    .object({
      kind: z.literal('aborted'),
      reason: z.union([AgentCancelCauseSchema, z.object({ kind: z.literal('legacy') }).strict()]),
    })
    .strict(),
  z.object({ kind: z.literal('interrupted') }).strict(),
])

// ---- request envelope -----------------------------------------------------

/** Body fields an OpenAI-compatible adapter passes through as they are (the provider's own snake_case names). */
export interface OpenAIBodyOptions {
  seed?: number
  top_p?: number
  frequency_penalty?: number
  presence_penalty?: number
  logit_bias?: Record<string, number>
  logprobs?: boolean
  top_logprobs?: number
  user?: string
  parallel_tool_calls?: boolean
  service_tier?: string
  store?: boolean
  metadata?: Record<string, string>
  [field: string]: unknown
}

/** DeepSeek's body fields: `thinking` switches thinking mode (enabled by default on DeepSeek's side). */
export interface DeepSeekBodyOptions extends OpenAIBodyOptions {
  thinking?: { type: 'enabled' | 'disabled' }
}

/**
 * Provider-specific request fields, keyed by provider name (`openai`, `deepseek`, or
 * an adapter's own `provider`); an adapter reads only its own key. Logged in the header.
 */
export interface ProviderOptions {
  openai?: OpenAIBodyOptions
  deepseek?: DeepSeekBodyOptions
  [provider: string]: Record<string, unknown> | undefined
}

/** Whether and which tool the model must call: `auto` (the provider's default), `none`, `required`, or one named tool. */
export const ToolChoiceSchema = z.union([z.enum(['auto', 'none', 'required']), z.object({ type: z.literal('tool'), name: nonEmpty }).strict()])

/**
 * The shape of the answer: plain `text`, or `json` (any JSON object when no
 * `schema` is given; else the provider's structured-output mode for that JSON Schema).
 */
export const ResponseFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }).strict(),
  z
    .object({
      type: z.literal('json'),
      schema: z.record(z.string(), z.unknown()).optional(),
      name: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/)
        .optional(),
      description: z.string().optional(),
      strict: z.boolean().optional(),
    })
    .strict(),
])

const ProviderOptionsSchema = z.record(z.string(), z.record(z.string(), z.unknown())) as unknown as z.ZodType<ProviderOptions>

export const LlmCallConfigSchema = z
  .object({
    provider: z.string(),
    model: z.string(),
    reasoningEffort: z.string().optional(),
    temperature: anyNumber.optional(),
    maxTokens: z.number().int().positive().optional(),
    stop: z.array(z.string()).optional(),
    toolChoice: ToolChoiceSchema.optional(),
    responseFormat: ResponseFormatSchema.optional(),
    providerOptions: ProviderOptionsSchema.optional(),
  })
  .strict()

export const ToolSchemaSchema = z.object({ name: nonEmpty, description: z.string().optional(), inputSchema: z.record(z.string(), z.unknown()) }).strict()

export const RequestHeaderSchema = z
  .object({
    config: LlmCallConfigSchema.extend({ provider: nonEmpty, model: nonEmpty }),
    adapterDefaults: z
      .object({ reasoningEffort: z.literal(true).optional(), maxTokens: z.literal(true).optional() })
      .strict()
      .optional(),
    system: z.string().optional(),
    tools: z.array(ToolSchemaSchema).optional(),
  })
  .strict()

// ---- session events --------------------------------------------------------

const turnStep = { turn: turnNo, step: turnNo }
const CompactionReasonSchema = z.enum(['auto', 'manual', 'overflow'])

/** What a tool error result says it was, beside its text: `{ name, code }` (TL-9). */
export const ToolErrorSchema = z.object({ name: nonEmpty, code: nonEmpty }).strict()

/** Data schema of every event type the loop knows, keyed by type. */
export const EventDataSchemas = {
  'turn/start': z.object({ turn: turnNo }).strict(),
  'turn/end': z.object({ turn: turnNo, reason: TurnEndReasonSchema }).strict(),
  'step/start': z.object(turnStep).strict(),
  'step/end': z.object(turnStep).strict(),
  'user/message': UserMessageSchema,
  'assistant/chunk': z.object({ ...turnStep, chunk: StreamChunkSchema }).strict(),
  'assistant/message': z
    .object({ ...turnStep, message: AssistantMessageSchema, usage: TokenUsageSchema.optional(), interrupted: z.literal(true).optional() })
    .strict(),
  'tool/call': z.object({ ...turnStep, callId: nonEmpty, name: z.string(), arguments: z.string() }).strict(),
  'tool/result': z
    .object({
      ...turnStep,
      message: ToolResultMessageSchema,
      error: ToolErrorSchema.optional(),
      meta: z.unknown().optional(),
    })
    .strict(),
  // TL-18: pre-execute asked a person; the call waits until the answer is logged (or the turn is cancelled)
  'tool/approval-request': z.object({ ...turnStep, callId: nonEmpty, name: z.string(), reason: z.string() }).strict(),
  'tool/approval-answer': z.object({ ...turnStep, callId: nonEmpty, decision: z.enum(['approve', 'deny']), reason: z.string().optional() }).strict(),
  'request/header': z.object({ header: RequestHeaderSchema, reason: z.enum(['initial', 'resume', 'change']) }).strict(),
  'request/context': z.object({ provider: nonEmpty, model: nonEmpty, contextWindow: z.number().int().positive().optional() }).strict(),
  'agent/inbox/spliced': z
    .object({
      target: z.enum(['next-turn', 'next-step']),
      start: count,
      removedCount: z.number().int().positive().optional(),
      inserted: z.array(UserMessageSchema),
      outcome: z.literal('canceled').optional(),
      // a send into next-step says whether it woke the agent: true for a steer, false for an inject (absent in older logs)
      wakeup: z.boolean().optional(),
    })
    .strict(),
  // SS-14: a fork's seed ends with the lineage: the parent session, the inclusive boundary seq, and the seed's length
  'session/end-seed': z
    .object({
      fork: z.object({ parent: nonEmpty, upTo: count, seedLength: z.number().int().positive() }).strict().optional(),
    })
    .strict(),
  // RQ-14: a failed attempt will be retried after `delayMs` (the backoff is cancellable), then the retry starts
  'llm/retry': z.object({ ...turnStep, retryId: nonEmpty, provider: nonEmpty, retry: turnNo, delayMs: count, failure: LlmFailureSchema }).strict(),
  'llm/retry-started': z.object({ ...turnStep, retryId: nonEmpty, retry: turnNo }).strict(),
  // compaction: the summary (a user/message replacing the compacted surface range) is followed by this record
  'compaction/completed': z
    .object({
      compactionId: nonEmpty,
      reason: CompactionReasonSchema,
      messageId: nonEmpty,
      start: count,
      end: count,
      tokensBefore: count,
      tokensAfter: count,
      contextWindow: z.number().int().positive(),
      usage: TokenUsageSchema.optional(),
    })
    .strict(),
  // the summariser failed: nothing was replaced
  'compaction/failed': z
    .object({
      compactionId: nonEmpty,
      reason: CompactionReasonSchema,
      start: count,
      end: count,
      failure: LlmFailureSchema,
    })
    .strict(),
  'todo/write': z.object({ todos: z.array(z.object({ content: z.string(), status: z.string() }).strict()) }).strict(),
} as const

export type SessionEventType = keyof typeof EventDataSchemas
export const SESSION_EVENT_TYPES = Object.keys(EventDataSchemas) as SessionEventType[]
/** The three types that produce model-visible messages. */
export const SURFACE_TYPES = ['user/message', 'assistant/message', 'tool/result'] as const
export type SurfaceType = (typeof SURFACE_TYPES)[number]

export const SurfaceOpSchema = z.union([z.literal('append'), z.object({ op: z.literal('replace'), start: count, end: count }).strict()])

/** The envelope of one logged event; `data` is checked per type. */
export const SessionEventEnvelopeSchema = z
  .object({
    seq: count,
    time: anyNumber,
    type: nonEmpty,
    data: z.unknown(),
    surfaceOp: SurfaceOpSchema.optional(),
    sourceEventSeqs: z.array(count).optional(),
    ignorable: z.literal(true).optional(),
  })
  .strict()

// ---- compaction vocabulary ---------------------------------------------------

/** Why a compaction runs: the policy at a pre-step checkpoint, `agent.compact()`, or a CONTEXT_WINDOW_EXCEEDED failure. */
export type CompactionReason = z.infer<typeof CompactionReasonSchema>

/** What a compaction will replace, and the numbers behind the decision (logged in `compaction/*`). */
export interface CompactionPlan {
  /** First and last surface seq of the compacted range (the summary's `surfaceOp: {op:'replace', start, end}`). */
  start: number
  end: number
  /** Every surface node the range shadows, in surface order (the summary's `sourceEventSeqs`). */
  sources: number[]
  /** Estimated tokens of the request as it stands (system, tools, history, entering input). */
  tokensBefore: number
  /** Estimated tokens of the range's messages. */
  rangeTokens: number
  contextWindow: number
}

// ---- inferred types --------------------------------------------------------

export type TextBlock = z.infer<typeof TextBlockSchema>
export type ReasoningBlock = z.infer<typeof ReasoningBlockSchema>
export type ImageBlock = z.infer<typeof ImageBlockSchema>
export type ToolCallBlock = z.infer<typeof ToolCallBlockSchema>
export type ToolResultBlock = z.infer<typeof ToolResultBlockSchema>
export type ContentBlock = z.infer<typeof ContentBlockSchema>
export type MessageSource = z.infer<typeof MessageSourceSchema>
export type UserMessage = z.infer<typeof UserMessageSchema>
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>
export type ToolResultMessage = z.infer<typeof ToolResultMessageSchema>
export type Message = z.infer<typeof MessageSchema>
export type TokenUsage = z.infer<typeof TokenUsageSchema>
export type LlmFailure = z.infer<typeof LlmFailureSchema>
export type FinishReason = z.infer<typeof FinishReasonSchema>
export type StreamChunk = z.infer<typeof StreamChunkSchema>
export type AgentCancelCause = z.infer<typeof AgentCancelCauseSchema>
export type TurnEndReason = z.infer<typeof TurnEndReasonSchema>
export type LlmCallConfig = z.infer<typeof LlmCallConfigSchema>
export type ToolChoice = z.infer<typeof ToolChoiceSchema>
export type ResponseFormat = z.infer<typeof ResponseFormatSchema>
export type ToolSchema = z.infer<typeof ToolSchemaSchema>
export type ToolError = z.infer<typeof ToolErrorSchema>
export type RequestHeader = z.infer<typeof RequestHeaderSchema>
export type SurfaceOp = z.infer<typeof SurfaceOpSchema>
export type EventData<T extends SessionEventType> = z.infer<(typeof EventDataSchemas)[T]>
export type InboxTarget = EventData<'agent/inbox/spliced'>['target']

/** One logged event, discriminated by `type`. */
export type SessionEvent = {
  [T in SessionEventType]: {
    readonly seq: number
    readonly time: number
    readonly type: T
    readonly data: EventData<T>
    readonly surfaceOp?: SurfaceOp
    readonly sourceEventSeqs?: readonly number[]
    readonly ignorable?: true
  }
}[SessionEventType]

export type SessionEventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>

/** What a caller may add to an append besides type and data. */
export interface AppendIntent {
  surfaceOp?: SurfaceOp
  sourceEventSeqs?: readonly number[]
  ignorable?: true
  /** An explicit time (epoch ms) instead of the clock: repair closers reuse the last event's time (RS-4). */
  time?: number
}

/** One event to append (a repair closer, RS-4), with the intent (citations, the reused time) it needs. */
export interface RepairCloser {
  type: SessionEventType
  data: unknown
  intent?: AppendIntent
}

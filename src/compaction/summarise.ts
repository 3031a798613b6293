// The two summarisers a compaction can run: the agent's own model with the instructions, or the user's function; the answer is checked before it is logged.
import { z } from 'zod/v4'
import { LlmError } from '../adapters/failure.js'
import { admitChunk, normalizeStream, StreamAssembler } from '../adapters/assemble.js'
import type { ModelAdapter, ModelRequest } from '../adapters/types.js'
import { describeThrown, describeValue, isRecordLike } from '../values/foreign.js'
import { formatPath } from '../session/lossless.js'
import type { CompactionReason } from './plan.js'
import { TokenUsageSchema, type LlmCallConfig, type Message, type TokenUsage, type ToolSchema } from '../session/schemas.js'
import type { ResolvedCompaction } from './options.js'

/** The object form of a summariser's answer; its usage goes into compaction/completed as the log's schema wants it. */
const SummaryAnswerSchema = z.object({ summary: z.string(), usage: TokenUsageSchema.optional() }).strict()

/** An answer that does not fit SummariseResult, as a compaction failure naming what was wrong. */
const invalidAnswer = (why: string) => new LlmError({ message: `the compaction summariser's answer ${why}`, code: 'INVALID_RESPONSE' })

/**
 * A summariser's answer, checked and copied: a string, or `{ summary, usage? }` with a usage the log accepts.
 * Why: the answer comes from user code and its usage is logged in the record, so a bad one fails this
 * compaction (INVALID_RESPONSE, naming the field) instead of reaching the log; blank text is EMPTY_RESPONSE.
 */
function checkedSummary(result: unknown): { summary: string; usage?: TokenUsage } {
  let value: { summary: string; usage?: TokenUsage }
  if (typeof result === 'string') value = { summary: result }
  else if (!isRecordLike(result)) throw invalidAnswer(`is not a summary: expected a string or { summary, usage? }, got ${describeValue(result)}`)
  else {
    let parsed: ReturnType<typeof SummaryAnswerSchema.safeParse>
    try {
      parsed = SummaryAnswerSchema.safeParse(result)
    } catch (error) {
      throw invalidAnswer(`could not be read: ${describeThrown(error)}`)
    }
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      const path = formatPath('', issue.path)
      throw invalidAnswer(`is not a summary${path ? ` at ${path}` : ''}: ${issue.message}`)
    }
    value = parsed.data
  }
  if (value.summary.trim() === '') throw new LlmError({ message: 'the compaction summariser returned no summary text', code: 'EMPTY_RESPONSE' })
  return value.usage === undefined ? { summary: value.summary } : { summary: value.summary, usage: value.usage }
}

/**
 * Runs the summariser over the range's messages. The model summariser sends the range, then one user message
 * asking for the summary, with the agent's tools declared but not callable (toolChoice none) and no
 * structured output; a failed finish or a malformed chunk becomes a thrown LlmError with its facts.
 */
export async function runSummariser(args: {
  compaction: ResolvedCompaction
  model: ModelAdapter
  sessionId: string
  config: LlmCallConfig
  tools: readonly ToolSchema[]
  messages: readonly Message[]
  reason: CompactionReason
  signal: AbortSignal
}): Promise<{ summary: string; usage?: TokenUsage }> {
  const { compaction, model, messages, reason, signal } = args
  if (compaction.summarise) return checkedSummary(await compaction.summarise({ messages, reason, signal }))
  const { responseFormat: _format, toolChoice: _choice, ...config } = args.config
  const ask: Message = {
    id: 'compaction-request',
    role: 'user',
    content: [{ type: 'text', text: 'Summarise the conversation above now, following your instructions.' }],
    source: { kind: 'plugin', plugin: 'compaction' },
  }
  const request: ModelRequest = Object.freeze({
    sessionId: args.sessionId,
    config: { ...config, ...(args.tools.length ? { toolChoice: 'none' as const } : {}) },
    messages: Object.freeze([...messages, ask]),
    system: compaction.instructions,
    ...(args.tools.length ? { tools: args.tools } : {}),
    ...(config.maxTokens ? { maxTokens: config.maxTokens } : {}),
    signal,
  })
  const assembler = new StreamAssembler()
  for await (const raw of normalizeStream(model, request)) {
    // checked as a turn's chunks are (ST-6): a malformed one is a MALFORMED_RESPONSE failure, not part of a summary
    const admitted = admitChunk(raw)
    if (!admitted.ok) throw new LlmError(admitted.failure)
    assembler.push(admitted.chunk)
  }
  const response = assembler.result()
  if (response.finish.kind === 'error' || response.finish.kind === 'aborted') throw new LlmError(response.finish.failure)
  const text = response.content
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('')
  return checkedSummary(response.usage ? { summary: text, usage: response.usage } : text)
}

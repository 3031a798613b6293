// Compaction as users configure it (createAgent `compaction`), resolved into the policy and summariser the runtime runs.
import type { ModelAdapter } from '../adapters/types.js'
import { ConfigError } from '../errors.js'
import { describeValue } from '../values/foreign.js'
import { estimateMessageTokens, type CompactionPolicy, type CompactionReason } from './plan.js'
import type { Message, TokenUsage } from '../session/schemas.js'
import type { CompactionMode } from '../machines/types.js'

/** What a user summariser is given: the messages of the range to replace, why, and the turn's (or job's) signal. */
export interface SummariseInput {
  messages: readonly Message[]
  reason: CompactionReason
  signal: AbortSignal
}

/** A summariser's answer: the summary text, or the text with the tokens it cost. */
export type SummariseResult = string | { summary: string; usage?: TokenUsage }

/** createAgent's `compaction` option (docs/compaction.md). */
export interface CompactionOptions {
  /** Tokens per request; defaults to the model adapter's `contextWindow`. One of the two is needed. */
  contextWindow?: number
  /** Fraction of the window past which the policy compacts before a step (default 0.8). */
  threshold?: number
  /** Fraction of the window kept verbatim as the recent tail (default 0.25). */
  keepRecent?: number
  /** Check the policy before every step (default true); false leaves agent.compact() and CONTEXT_WINDOW_EXCEEDED recovery. */
  auto?: boolean
  /** Writes the summary; defaults to asking the agent's model with `instructions`. */
  summarise?: (input: SummariseInput) => SummariseResult | Promise<SummariseResult>
  /** The system prompt of the model summariser. */
  instructions?: string
  /** Tokens of one message; defaults to 4 + a quarter of its characters. */
  estimateTokens?: (message: Message) => number
  /** Tokens of the request's fixed part (system prompt and tool schemas); defaults to a quarter of their characters. */
  baseTokens?: number
}

/** What the runtime needs: the resolved policy and the summariser. */
export interface ResolvedCompaction {
  mode: CompactionMode
  policy: CompactionPolicy
  estimate: (message: Message) => number
  /** The fixed part's tokens when the user gave them; else the runtime estimates them. */
  baseTokens: number | undefined
  summarise: CompactionOptions['summarise']
  instructions: string
}

/** The system prompt the model summariser gets by default. */
export const DEFAULT_INSTRUCTIONS = [
  'You compact a conversation between a user and an AI assistant so that the assistant can continue it within a limited context window.',
  'Write a concise summary of the conversation above that keeps everything the assistant still needs:',
  "the user's goals and requests, decisions made, facts and tool results that still matter, names, paths and values needed later,",
  'and any unfinished work with its next step. Write it as notes for the assistant; do not address the user and do not call tools.',
].join(' ')

const fraction = (name: string, value: unknown, fallback: number, min: number, max: number): number => {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new ConfigError(`compaction.${name} must be a number from ${min} to ${max}, got ${describeValue(value)}`, { path: `compaction.${name}` })
  }
  return value
}

/**
 * The compaction an agent runs with, or null when it is off. Why: checked once at creation, so a bad option
 * is a ConfigError naming the field; without the option, compaction is on exactly when the window is known.
 */
export function resolveCompaction(option: CompactionOptions | false | undefined, model: ModelAdapter): ResolvedCompaction | null {
  if (option === false) return null
  if (option !== undefined && (option === null || typeof option !== 'object')) {
    throw new ConfigError('compaction must be false or an options object', { path: 'compaction' })
  }
  const contextWindow = option?.contextWindow ?? model.contextWindow
  if (contextWindow === undefined) {
    if (option === undefined) return null
    throw new ConfigError('compaction needs a context window: set contextWindow on the model adapter or in the compaction options', {
      path: 'compaction.contextWindow',
    })
  }
  if (!Number.isSafeInteger(contextWindow) || contextWindow <= 0) {
    throw new ConfigError(`compaction.contextWindow must be a positive safe integer, got ${describeValue(contextWindow)}`, { path: 'compaction.contextWindow' })
  }
  const threshold = fraction('threshold', option?.threshold, 0.8, 0.01, 1)
  const keepRecent = fraction('keepRecent', option?.keepRecent, 0.25, 0, threshold)
  for (const name of ['summarise', 'estimateTokens'] as const) {
    if (option?.[name] !== undefined && typeof option[name] !== 'function') {
      throw new ConfigError(`compaction.${name} must be a function`, { path: `compaction.${name}` })
    }
  }
  if (option?.instructions !== undefined && typeof option.instructions !== 'string') {
    throw new ConfigError('compaction.instructions must be a string', { path: 'compaction.instructions' })
  }
  if (option?.auto !== undefined && typeof option.auto !== 'boolean') throw new ConfigError('compaction.auto must be a boolean', { path: 'compaction.auto' })
  const baseTokens = option?.baseTokens
  if (baseTokens !== undefined && (!Number.isSafeInteger(baseTokens) || baseTokens < 0)) {
    throw new ConfigError(`compaction.baseTokens must be a non-negative safe integer, got ${describeValue(baseTokens)}`, { path: 'compaction.baseTokens' })
  }
  return {
    mode: option?.auto === false ? 'manual' : 'auto',
    policy: { contextWindow, threshold, keepRecent },
    estimate: option?.estimateTokens ?? estimateMessageTokens,
    baseTokens,
    summarise: option?.summarise,
    instructions: option?.instructions ?? DEFAULT_INSTRUCTIONS,
  }
}

// Compaction planning, pure: how many tokens a request would carry, and which
// leading range of the surface a summary should replace so that the recent
// tail stays verbatim. The runtime plans over the live session, the model walk
// over its trace, with this one function (docs/compaction.md).
import type { CompactionPlan, CompactionReason, Message, UserMessage } from '../session/schemas.js'
import { SUMMARY_SOURCE } from '../session/vocabulary.js'

export { SUMMARY_SOURCE, summaryText } from '../session/vocabulary.js'
export type { CompactionPlan, CompactionReason } from '../session/schemas.js'

/** The numbers a plan is made with. */
export interface CompactionPolicy {
  /** Tokens the model accepts per request (the adapter's `contextWindow`, or the option). */
  contextWindow: number
  /** Fraction of the window at which the policy compacts before a step (default 0.8). */
  threshold: number
  /** Fraction of the window kept verbatim as the recent tail (default 0.25). */
  keepRecent: number
}

/** One current surface node: its seq, its event type, and its model-visible message (none for an empty answer). */
export interface SurfaceNodeView {
  seq: number
  type: string
  message: Message | undefined
}

/** Characters an image counts for, about the tokens providers bill for a small image. */
const IMAGE_CHARS = 3000

/** Rough tokens of a text: a quarter of its length (what most tokenizers average on English and code). */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / 4)
}

/**
 * The default estimate of one message: 4 tokens of framing plus a quarter of its characters (texts, reasoning,
 * tool names and arguments, tool results; an image as 3,000 characters). Why: cheap, provider-neutral, and
 * written down so another implementation plans the same ranges (docs/conformance.md).
 */
export function estimateMessageTokens(message: Message): number {
  let chars = 0
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
      case 'reasoning':
        chars += block.text.length
        break
      case 'tool-call':
        chars += block.name.length + block.arguments.length
        break
      case 'image':
        chars += IMAGE_CHARS
        break
      case 'tool-result':
        if (typeof block.content === 'string') chars += block.content.length
        else for (const part of block.content) chars += part.type === 'text' ? part.text.length : IMAGE_CHARS
        break
    }
  }
  return 4 + Math.ceil(chars / 4)
}

const isSummary = (node: SurfaceNodeView): boolean => {
  const source = node.message?.source as { kind?: string; plugin?: string } | undefined
  return node.type === 'user/message' && source?.kind === 'plugin' && source.plugin === SUMMARY_SOURCE.plugin
}

/**
 * The range to compact, or null when nothing should (the policy is under its threshold) or nothing can be
 * (the tail already holds everything, or the range would hold only an earlier summary). `auto` compacts only
 * past the threshold; `manual` and `overflow` whenever there is a range. The tail keeps the newest nodes that
 * fit `keepRecent` of the window (the entering input counts first) and never starts with a tool result: it
 * reaches back to the answer that made the call, so a request never holds a result without its call.
 */
export function planCompaction(args: {
  nodes: readonly SurfaceNodeView[]
  entering: readonly UserMessage[]
  /** Tokens outside the history: system prompt and tool schemas. */
  baseTokens: number
  policy: CompactionPolicy
  reason: CompactionReason
  estimate: (message: Message) => number
}): CompactionPlan | null {
  const { nodes, entering, baseTokens, policy, reason, estimate } = args
  const tokens = nodes.map((n) => (n.message === undefined ? 0 : estimate(n.message)))
  const enteringTokens = entering.reduce((sum, m) => sum + estimate(m), 0)
  const historyTokens = tokens.reduce((sum, t) => sum + t, 0)
  const tokensBefore = baseTokens + historyTokens + enteringTokens
  if (reason === 'auto' && tokensBefore <= policy.threshold * policy.contextWindow) return null
  const keep = policy.keepRecent * policy.contextWindow
  let tailStart = nodes.length
  let tail = enteringTokens
  while (tailStart > 0 && tail + tokens[tailStart - 1] <= keep) {
    tailStart--
    tail += tokens[tailStart]
  }
  while (tailStart > 0 && tailStart < nodes.length && nodes[tailStart].type === 'tool/result') tailStart--
  if (tailStart === 0) return null
  const range = nodes.slice(0, tailStart)
  if (range.length === 1 && isSummary(range[0])) return null
  return {
    start: range[0].seq,
    end: range[range.length - 1].seq,
    sources: range.map((n) => n.seq),
    tokensBefore,
    rangeTokens: tokens.slice(0, tailStart).reduce((sum, t) => sum + t, 0),
    contextWindow: policy.contextWindow,
  }
}

// The compaction effects (docs/compaction.md): what the next request would
// weigh and which range would go (CP-1), and the summariser's run over that
// range (CP-2, CP-3). The machine decides when; this only measures and runs.
import type { ModelAdapter } from '../adapters/types.js'
import { ConfigError } from '../errors.js'
import { describeValue } from '../values/foreign.js'
import type { ResolvedCompaction } from '../compaction/options.js'
import { runSummariser } from '../compaction/summarise.js'
import type { AgentEvent, CompactionReason, Effect } from '../machines/types.js'
import { estimateTextTokens, planCompaction, SUMMARY_SOURCE, summaryText, type CompactionPlan } from '../compaction/plan.js'
import type { Message, UserMessage } from '../session/schemas.js'
import { surfaceNodes, type Session } from '../session/session.js'
import { messageOf } from '../session/surface.js'
import type { Assembled } from './assembly.js'

export class Compacting {
  /** Estimated tokens per message, remembered by identity (logged messages are frozen and never change). */
  readonly #tokens = new WeakMap<object, number>()
  /** The tokens of the system text and tool schemas, for the assembly they were counted in. */
  #baseTokens: { assembly: Assembled; tokens: number } | undefined

  constructor(
    readonly compaction: ResolvedCompaction,
    readonly session: Session,
    readonly model: ModelAdapter,
  ) {}

  /** A message's estimate, checked: the log records sums of them as token counts (CP-7). */
  #estimate = (message: Message): number => {
    let tokens = this.#tokens.get(message)
    if (tokens === undefined) {
      tokens = this.compaction.estimate(message)
      if (!Number.isSafeInteger(tokens) || tokens < 0) {
        throw new ConfigError(`compaction.estimateTokens must return a non-negative safe integer, got ${describeValue(tokens)}`, {
          path: 'compaction.estimateTokens',
        })
      }
      this.#tokens.set(message, tokens)
    }
    return tokens
  }

  /** The plan for the request the next step would send, from the current surface (CP-1). */
  measure(reason: CompactionReason, entering: readonly UserMessage[], assembly: Assembled): CompactionPlan | null {
    const { compaction, session } = this
    if (this.#baseTokens?.assembly !== assembly) {
      const { system, toolSchemas } = assembly
      const tokens = compaction.baseTokens ?? estimateTextTokens(system ?? '') + (toolSchemas.length ? estimateTextTokens(JSON.stringify(toolSchemas)) : 0)
      this.#baseTokens = { assembly, tokens }
    }
    const { policy } = compaction
    // under the threshold an automatic check plans nothing: decided from the running count, without the nodes
    if (reason === 'auto') {
      const tokensBefore = this.#baseTokens.tokens + this.#historyTokens() + entering.reduce((sum, m) => sum + this.#estimate(m), 0)
      if (tokensBefore <= policy.threshold * policy.contextWindow) return null
    }
    const nodes = surfaceNodes(session)
    const plan = planCompaction({ nodes, entering, baseTokens: this.#baseTokens.tokens, policy, reason, estimate: this.#estimate })
    if (plan && !Number.isSafeInteger(plan.tokensBefore)) {
      throw new ConfigError(`compaction.estimateTokens: the request's estimates sum to ${plan.tokensBefore}, past a safe integer`, {
        path: 'compaction.estimateTokens',
      })
    }
    return plan
  }

  /** The history's tokens as last counted: its length then, and the replace generation it was counted in. */
  #counted = { generation: -1, length: 0, tokens: 0 }

  /**
   * The estimated tokens of the current history, summed in history order as the planner sums them. Only the messages
   * appended since the last count are estimated; a replace (compaction, a rewritten result) starts the count over.
   */
  #historyTokens(): number {
    const { session } = this
    const history = session.deriveMessages()
    const generation = session.replaceGeneration
    let { length, tokens } = this.#counted
    if (this.#counted.generation !== generation || history.length < length) {
      length = 0
      tokens = 0
    }
    for (let i = length; i < history.length; i++) tokens += this.#estimate(history[i])
    this.#counted = { generation, length: history.length, tokens }
    return tokens
  }

  /** Runs the summariser over the planned range; the answer is compaction.summarised, or a throw for compaction.failed. */
  async summarise(signal: AbortSignal, effect: Extract<Effect, { type: 'fx.summarise' }>, assembly: Assembled): Promise<AgentEvent> {
    const { compaction, session, model } = this
    const { plan } = effect
    // the range's messages as the history holds them (a node gone since the plan is read from the log)
    const nodes = new Map(surfaceNodes(session).map((node) => [node.seq, node]))
    const messages = plan.sources.flatMap((seq) => {
      const node = nodes.get(seq)
      const message = node ? node.message : messageOf(session.at(seq)!)
      return message !== undefined && message.content.length > 0 ? [message] : []
    })
    const { summary, usage } = await runSummariser({
      compaction,
      model,
      sessionId: session.id,
      config: effect.config,
      tools: assembly.toolSchemas,
      messages,
      reason: effect.reason,
      signal,
    })
    const message = { id: 'summary', role: 'user' as const, content: [{ type: 'text' as const, text: summaryText(summary) }], source: SUMMARY_SOURCE }
    const tokensAfter = Math.max(0, plan.tokensBefore - plan.rangeTokens + this.#estimate(message))
    return { type: 'compaction.summarised', id: effect.id, summary, tokensAfter, ...(usage ? { usage } : {}) }
  }
}

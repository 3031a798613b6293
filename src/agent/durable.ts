// What an agent over a store holds besides its session, and the results its tools recover for calls a crash cut short.
import type { HookLogger } from '../runtime/hooks.js'
import type { EventData, SessionEvent } from '../session/schemas.js'
import { repairClosers, type RepairCloser } from '../session/repair.js'
import type { SessionStore } from '../stores/types.js'
import type { SessionWriter } from '../stores/writer.js'
import { callRecoveryOf, type CallRecovery, type ToolDefinition } from '../tools/define.js'
import type { AgentOptions } from './options.js'

/** What an agent over a store holds besides its session. */
export interface Durable {
  readonly store: SessionStore
  readonly writer: SessionWriter
  /** Results for calls a crash cut short that their tools could settle (setCallRecovery), by call id. */
  readonly recovered?: ReadonlyMap<string, RecoveredResult>
}

export type RecoveredResult = NonNullable<Awaited<ReturnType<CallRecovery>>>

/**
 * The repair closers of a crash-truncated log, with the results of calls their tools recovered in place of
 * TOOL_OUTCOME_UNKNOWN (a finished subagent's answer, say); a recovered error keeps the catalogue's code.
 */
export function withRecovered(closers: RepairCloser[], recovered: ReadonlyMap<string, RecoveredResult> | undefined): RepairCloser[] {
  if (!recovered || recovered.size === 0) return closers
  return closers.map((closer) => {
    if (closer.type !== 'tool/result') return closer
    const data = closer.data as EventData<'tool/result'>
    const found = recovered.get(data.message.source.callId)
    if (!found) return closer
    const [block] = data.message.content
    const message = { ...data.message, content: [{ ...block, content: found.content, isError: found.isError }] as typeof data.message.content }
    const { error, ...rest } = data
    return {
      ...closer,
      data: { ...rest, message, ...(found.isError ? { error } : {}), ...(found.meta !== undefined ? { meta: found.meta } : {}) },
    }
  })
}

/** Asks each tool with a crash recovery (setCallRecovery) what became of its calls the crash cut short (they would close TOOL_OUTCOME_UNKNOWN). */
export async function recoverCalls(
  events: readonly SessionEvent[],
  tools: AgentOptions['tools'],
  store: SessionStore,
  sessionId: string,
  logger: HookLogger,
): Promise<Map<string, RecoveredResult>> {
  const recovered = new Map<string, RecoveredResult>()
  if (!Array.isArray(tools)) return recovered
  for (const closer of repairClosers(events)) {
    if (closer.type !== 'tool/result') continue
    const data = closer.data as EventData<'tool/result'>
    if (data.error?.code !== 'TOOL_OUTCOME_UNKNOWN') continue
    const callId = data.message.source.callId
    const call = events.findLast((e) => e.type === 'tool/call' && e.data.callId === callId) as
      (SessionEvent & { type: 'tool/call'; data: EventData<'tool/call'> }) | undefined
    const tool = (tools as readonly ToolDefinition<any>[]).find((t) => t.name === call?.data.name)
    const recover = tool && callRecoveryOf(tool)
    if (!call || !recover) continue
    try {
      const result = await recover({
        callId,
        name: call.data.name,
        arguments: call.data.arguments,
        turn: call.data.turn,
        step: call.data.step,
        sessionId,
        store,
        logger,
      })
      if (result) recovered.set(callId, result)
    } catch (error) {
      logger.error(`agentchart: recovering call ${callId} (${call.data.name}) failed; it closes with an unknown outcome`, error)
    }
  }
  return recovered
}

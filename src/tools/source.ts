// Tools that can change while an agent lives (an MCP server's list after
// `notifications/tools/list_changed`). The agent copies plain tools once at
// createAgent; a tool source it asks again before every step's request, so a
// change takes effect at the next step and never inside one.
import type { ToolDefinition } from './define.js'

/** Which request a tool source is read for. */
export interface ToolRead {
  readonly turn: number
  readonly step: number
}

/**
 * A list of tools the agent re-reads before each step's request. `currentTools` may return a promise (the
 * step's request waits for it, e.g. while a changed list is being fetched again); the tools it returns are
 * those of that step: offered to the model, and the ones its calls run with. At createAgent it is read
 * without a `ToolRead`, for the tools known before any step.
 */
export interface ToolSource {
  readonly currentTools: (read?: ToolRead) => readonly ToolDefinition<any>[] | Promise<readonly ToolDefinition<any>[]>
}

/** True for anything with a `currentTools` function: a tool source, whether or not it is also an array of tools. */
export function isToolSource(value: unknown): value is ToolSource {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false
  try {
    return typeof (value as ToolSource).currentTools === 'function'
  } catch {
    return false // a getter that throws (a hostile or revoked proxy) is no source; createAgent then names the entry
  }
}

// Process-wide tables of agents: which live agent holds a session id (RS-7), and each agent's inspector, telemetry and mail reader.
import type { LiveTelemetry } from '../telemetry/live.js'
import type { Agent } from './agent-type.js'
import type { AgentOptions } from './options.js'

/** Each agent's inspector, so the children it delegates to (agentTool) report to the same one. */
export const inspectors = new WeakMap<Agent, NonNullable<AgentOptions['inspect']>>()

/** The inspector `agent` was made with, if any (in-house: agentTool hands it to children). */
export function inspectorOf(agent: Agent): AgentOptions['inspect'] {
  return inspectors.get(agent)
}

/** The mailbox readers of stored agents, stopped first at disposal: rows not yet applied stay for the next driver. */
export const mailReaders = new WeakMap<Agent, () => Promise<void>>()

export const telemetries = new WeakMap<Agent, LiveTelemetry>()
/** The live telemetry an agent writes spans with, if any. Why: a subagent's turns nest under the parent's tool-call span. */
export function telemetryOf(agent: Agent): LiveTelemetry | undefined {
  return telemetries.get(agent)
}

/** Live agents by session id, so a second instance cannot take over an open turn (RS-7). */
export const liveAgents = new Map<string, WeakRef<Agent>>()
/** An agent dropped without dispose() leaves the registry when it is collected. */
export const collected = new FinalizationRegistry<string>((id) => {
  if (liveAgents.get(id)?.deref() === undefined) liveAgents.delete(id)
})

/** How many session ids the live-agent registry holds. Why: a test can check that dropped agents do not leak. */
export function liveAgentCount(): number {
  return liveAgents.size
}

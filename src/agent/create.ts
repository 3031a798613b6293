// createAgent: an agent over a session in memory, or (with a store) a promise of one over a stored session.
import { Agent } from './agent.js'
import type { AgentOptions, StoredAgentOptions } from './options.js'
import { openStoredAgent } from './stored-open.js'

/**
 * Create an agent over a new or given session (RQ-3: bad options fail before anything is registered).
 * With a `store` it creates or resumes the stored session and returns a promise; without
 * one it stays synchronous.
 */
export function createAgent(options: StoredAgentOptions): Promise<Agent>
export function createAgent(options: AgentOptions): Agent
export function createAgent(options: AgentOptions | StoredAgentOptions): Agent | Promise<Agent> {
  if (options && typeof options === 'object' && options.store !== undefined) return openStoredAgent(options)
  return new Agent(options)
}

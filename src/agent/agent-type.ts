// The agent as the files below the Agent class name it: agent.ts merges the
// class into this interface, so the types of its options and listeners need
// not import the class that imports them.

/** An agent as its options and listeners receive it: agent.ts merges in every member of the Agent class. */
export interface Agent {
  readonly sessionId: string
}

/** Whether an agent is running a turn (`agent.status`, the `agent/status` notification). */
export type AgentStatus = 'idle' | 'running'

// agentchart/stores: the stores (src/stores/) and the sessions served over
// them from any process: workers that drive agents, clients that talk to them.
export * from '../stores/index.js'
export { createSessionClient } from './client.js'
export type { SessionClient, SessionStatus, SentMessage } from './client.js'
export { serveSessions } from './workers.js'
export type { ServeSessionsOptions, ServedAgentOptions, SessionWorkers } from './workers.js'

// agentchart/machines: the five statecharts, each walkable on its own, and
// the vocabulary they share.
export { agentMachine, buildAgentMachine } from './agent.js'
export { turnMachine, turnState } from './turn.js'
export { stepMachine, stepState } from './step.js'
export { attemptMachine, attemptState, parseArguments } from './attempt.js'
export { toolBatchMachine, toolBatchState } from './tool-batch.js'
export { agentSetup, initialContext } from './setup.js'
export * from './inbox.js'
export type * from './types.js'

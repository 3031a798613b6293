// agentchart/machines: the five statecharts, each walkable on its own, the
// setup their named implementations live in, and the vocabulary they share.
export { agentMachine, agentSetup } from './agent.js'
export { turnMachine, turnState } from './turn.js'
export { stepMachine, stepState } from './step.js'
export { attemptMachine, attemptState } from './attempt.js'
export { parseArguments } from '../session/vocabulary.js'
export { toolBatchMachine, toolBatchState } from './tool-batch.js'
export { initialContext } from './context.js'
export { applySplice, duplicatePending, duplicatedBy, findPending, hasPending, listOf, normalizeStart, spliceOf, alreadyPending } from './inbox.js'
export type { SpliceData } from './inbox.js'
export type { EventOf } from './setup.js'
export type * from './types.js'

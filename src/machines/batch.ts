// The empty book-keeping of a tool batch, shared by the attempt (which plans
// the calls) and the tool batch machine (which runs them).
import type { PlannedCall, ToolBatchContext } from './types.js'

/** A fresh batch for the calls of one anchor. */
export function newBatch(calls: readonly PlannedCall[], cap: number): ToolBatchContext {
  return {
    calls,
    nextStart: 0,
    nextCommit: 0,
    started: calls.map(() => false),
    outcomes: calls.map(() => null),
    skipPost: calls.map(() => false),
    bodyIds: calls.map(() => 0),
    inFlight: 0,
    pool: false,
    cap,
    preId: 0,
    postId: 0,
    classifyId: 0,
    concluded: false,
    failure: null,
  }
}

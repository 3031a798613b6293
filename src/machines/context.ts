// The context a machine starts from, and the empty book-keeping of a tool
// batch that the attempt (which plans the calls) and the batch (which runs
// them) both build.
import type { AgentContext, AgentInput, Facts, HookName, RequestedCall, ToolBatchContext, TurnOptionsContext } from './types.js'

/** Every extension point the machines wait on. */
export const HOOK_NAMES: readonly HookName[] = Object.freeze([
  'agent/pre-step',
  'agent/request',
  'agent/request-error',
  'agent/turn-stopping',
  'tools/pre-execute',
  'tools/post-execute',
  'system-prompt/assemble',
])

/**
 * What a machine assumes with nothing reported: every decision hook is listened to, everything is watched, someone
 * approves, every call is classified when it starts. Prompt assembly is not assumed: with nobody assembling, the
 * fixed prompt and tools stand (HK-12).
 */
const ASSUMED_FACTS: Facts = Object.freeze({
  listened: Object.freeze(HOOK_NAMES.filter((name) => name !== 'system-prompt/assemble')),
  observed: true,
  approver: true,
  modes: null,
})

/** A proposal that claimed nothing and enters nothing (shared, so setting it again changes nothing). */
export const NO_PROPOSAL: AgentContext['proposal'] = Object.freeze({ claimed: Object.freeze([]), entering: Object.freeze([]), asked: false })

/** No prompt queued with options and no turn running with them. */
export const NO_TURN_OPTIONS: TurnOptionsContext = Object.freeze({ queued: Object.freeze({}), current: null, baseSeed: null })

/** The context a fresh agent instance starts from (resume passes what the log says). */
export function initialContext(input: AgentInput): AgentContext {
  const maxParallelToolCalls = input.maxParallelToolCalls ?? 10
  return {
    instance: {
      id: input.instance ?? 'i0',
      maxParallelToolCalls,
      repair: input.repair ?? [],
      compaction: input.compaction ?? 'off',
      maxSteps: input.maxSteps ?? null,
      resume: input.resume ?? null,
    },
    facts: { ...ASSUMED_FACTS, ...input.facts },
    request: {
      seedConfig: input.seedConfig,
      priorHeader: input.priorHeader ?? false,
      requests: 0,
      headerKey: null,
      contextKey: input.contextKey ?? null,
      attempt: 0,
      config: null,
      failure: null,
      retry: null,
      recoveryAsked: false,
    },
    nextTurn: input.nextTurn ?? [],
    nextStep: input.nextStep ?? [],
    activity: { wakeLatched: false, cancelCause: null, disposing: false },
    turn: input.lastTurn ?? 0,
    step: 0,
    maxTokensSeen: false,
    lastStep: 'none',
    proposal: input.entering?.length ? { claimed: [], entering: input.entering, asked: false } : NO_PROPOSAL,
    endReason: null,
    failure: null,
    stepOutcome: null,
    ids: { next: 1, waiting: 0 },
    toolBatch: newToolBatch(input.calls ?? [], maxParallelToolCalls),
    compaction: { reason: null, plan: null, compacted: false, overflowAt: null, failure: null },
    turnOptions: NO_TURN_OPTIONS,
  }
}

/** A fresh batch for the calls of one anchor. */
export function newToolBatch(calls: readonly RequestedCall[], cap: number): ToolBatchContext {
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
    approval: null,
    parked: false,
    denial: null,
    nextMode: null,
    asked: [],
  }
}

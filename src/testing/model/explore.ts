// Generate scenarios from a machine's graph: @xstate/graph finds the shortest
// input path to every abstract state of the harness; each path is completed
// to rest with default answers, its trace checked, and the transitions it
// took counted for coverage.
import { getShortestPaths } from '@xstate/graph'
import type { AnyStateMachine } from 'xstate'
import { repairClosers } from '../../session/repair.js'
import type { SessionEvent } from '../../session/schemas.js'
import { checkSessionInvariants } from '../invariants.js'
import { allTransitions, createHarness, type Budget, type Harness, type HarnessState, type TraceEvent } from './harness.js'
import type { FailAppend, ScenarioInput, SeedEvent } from '../conformance/format.js'
import type { WalkInput } from './scenario.js'
import { checkLifecycleInvariants, LIFECYCLE_INVARIANTS } from './lifecycle-invariants.js'
import { scriptInput } from './script.js'

/** One logged event of a walk's trace, seed included. */
export interface WalkEvent extends TraceEvent {
  seq: number
  time: number
}

/**
 * A path of a walk, completed to rest: its inputs in the walk's vocabulary and spelled out (`script`), the whole
 * log it writes, the transitions it takes, and whether a driver can replay it (conformance/export.ts makes it portable).
 */
export interface GeneratedScenario {
  id: string
  machine: 'agent' | 'turn' | 'step' | 'attempt' | 'toolBatch'
  description: string
  inputs: WalkInput[]
  script: ScenarioInput[]
  /** The stored log the agent is created over, and the store failures armed before it is created. */
  seed?: SeedEvent[]
  faults?: FailAppend[]
  /** The whole log: the seed, its end-seed, then every append. */
  trace: WalkEvent[]
  invariants: string[]
  covers: string[]
  replayable: boolean
}

export interface Exploration {
  machine: string
  states: number
  scenarios: GeneratedScenario[]
  transitions: Map<string, { source: string; event: string; guarded: boolean; target: string }>
  covered: Set<string>
  violations: Array<{ scenario: string; rule: string; seq: number; message: string }>
}

/** The default answer to the oldest pending effect, or null when nothing is pending. */
function defaultAnswer(state: HarnessState): WalkInput | null {
  const p = state.pending[0]
  if (!p) return null
  switch (p.kind) {
    case 'hook':
      switch (p.name) {
        case 'agent/pre-step':
          return { type: 'pre-step', decision: 'default' }
        case 'agent/request-error':
          return { type: 'request-error', decision: 'give-up' }
        case 'agent/turn-stopping':
          return { type: 'turn-stopping', decision: 'none' }
        case 'tools/pre-execute':
          return { type: 'tool-pre', callId: String(p.payload.callId), decision: 'allow' }
        default:
          return { type: 'tool-post', callId: String(p.payload.callId), decision: 'accept' }
      }
    case 'prepare':
      return { type: 'request', decision: 'default' }
    case 'model':
      return { type: 'model', response: 'text' }
    case 'tool':
      return { type: 'tool', callId: p.call.callId, outcome: 'ok' }
    case 'job':
      return { type: 'job-done' }
  }
}

/** Drive a state to rest with default answers (bounded). */
export function complete(harness: Harness, state: HarnessState, limit = 200): HarnessState {
  let current = state
  for (let i = 0; i < limit; i++) {
    const answer = defaultAnswer(current)
    if (!answer) return current
    current = harness.apply(current, answer) ?? current
  }
  throw new Error(`scenario did not come to rest within ${limit} default answers: ${JSON.stringify(current.inputs)}`)
}

/** Replay inputs from the start; also returns the transitions taken on the way. */
export function replay(harness: Harness, inputs: readonly WalkInput[]): { state: HarnessState; taken: Set<string> } {
  let state = harness.initial()
  const taken = new Set(state.taken)
  for (const input of inputs) {
    const next = harness.apply(state, input)
    if (!next) throw new Error(`input ${JSON.stringify(input)} does not apply after ${JSON.stringify(state.inputs)}`)
    next.taken.forEach((t) => taken.add(t))
    state = next
  }
  return { state, taken }
}

export function traceOf(trace: readonly TraceEvent[]): WalkEvent[] {
  return trace.map((e, seq) => ({ seq, time: 0, ...e }))
}

/** Walk one machine under several budgets: shortest paths to every abstract state, each completed into a scenario. */
export function explore(name: string, options: { machine: AnyStateMachine; input: Record<string, unknown>; profiles: Budget[]; limit?: number }): Exploration {
  const transitions = allTransitions(options.machine)
  const covered = new Set<string>()
  const scenarios: GeneratedScenario[] = []
  const violations: Exploration['violations'] = []
  const seen = new Set<string>()
  let states = 0
  for (const budget of options.profiles) {
    // a seeded walk starts where an agent over that stored log would: after its end-seed, with its repair closers
    const seed = budget.seed ? [...budget.seed, { seq: budget.seed.length, time: 0, type: 'session/end-seed', data: {} }] : []
    const fromSeed = budget.seed ? seededInput(seed as SessionEvent[]) : {}
    const harness = createHarness({ machine: options.machine, input: { ...options.input, ...fromSeed, ...budget.input }, budget })
    // a walk that starts from another input, or with a listener cancel armed before the machine starts, is for
    // coverage only; store failures armed before the start are replayable (a driver arms them on the session)
    const replayable = !budget.input && (budget.prelude ?? []).every((p) => p.type === 'fail-next')
    const faults = (budget.prelude ?? []).filter((p) => p.type === 'fail-next').map((p) => scriptInput(p) as FailAppend)
    const paths = getShortestPaths(
      harness.logic as any,
      {
        events: (state: HarnessState) => harness.choices(state) as any,
        serializeState: (state: HarnessState) => harness.abstract(state),
        serializeEvent: (event: any) => JSON.stringify(event),
        limit: options.limit ?? 50_000,
      } as any,
    )
    states += paths.length
    // edge cover: every state's shortest path, plus each input from it that takes a transition not yet taken
    const ends: HarnessState[] = []
    for (const path of paths) {
      const end = path.state as HarnessState
      ends.push(end)
      end.takenAll.forEach((t) => covered.add(t))
    }
    for (const path of paths) {
      for (const input of harness.choices(path.state as HarnessState)) {
        const next = harness.apply(path.state as HarnessState, input)
        if (next && next.taken.some((t) => !covered.has(t))) {
          next.taken.forEach((t) => covered.add(t))
          ends.push(next)
        }
      }
    }
    for (const end of ends) {
      const state = complete(harness, end)
      // the same inputs from another starting point (a seed, another input) are another scenario
      const key = JSON.stringify([budget.seed ?? null, budget.input ?? null, state.inputs])
      if (seen.has(key)) continue
      seen.add(key)
      state.takenAll.forEach((t) => covered.add(t))
      const id = `${name}-${String(scenarios.length + 1).padStart(4, '0')}`
      const events = traceOf([...seed, ...state.trace])
      // a refused boundary append leaves the log unbalanced on purpose (TU-15, ST-4 with a failing store)
      const brokenBoundary = state.inputs.some((i) => i.type === 'fail-next' && ['step/end', 'turn/end'].includes(i.eventType))
      const excused = (rule: string) => brokenBoundary && ['balanced', 'turn-enclosure', 'turn-closes-once', 'event-enclosure'].includes(rule)
      // a part machine's trace is a fragment of a log: only the agent's traces are whole logs
      const checks = name === 'agent' && !budget.input ? [...checkSessionInvariants(events), ...checkLifecycleInvariants(events)] : []
      for (const v of checks) {
        if (!excused(v.rule)) violations.push({ scenario: id, rule: v.rule, seq: v.seq, message: v.message })
      }
      scenarios.push({
        id,
        machine: name as GeneratedScenario['machine'],
        description: describe(state.inputs),
        inputs: state.inputs,
        script: state.script,
        ...(budget.seed ? { seed: budget.seed.map((e) => ({ ...e })) } : {}),
        ...(faults.length > 0 ? { faults } : {}),
        trace: events,
        invariants: brokenBoundary ? ['session-except-boundaries'] : ['session', ...LIFECYCLE_INVARIANTS],
        covers: state.takenAll,
        replayable,
      })
    }
  }
  return { machine: name, states, scenarios, transitions, covered, violations }
}

/** What createAgent derives from a stored log: the next turn number and the repair closers. */
function seededInput(events: SessionEvent[]): Record<string, unknown> {
  const lastTurn = events.reduce((max, e) => (e.type === 'turn/start' ? Math.max(max, e.data.turn) : max), 0)
  return { lastTurn, repair: repairClosers(events) }
}

function describe(inputs: readonly WalkInput[]): string {
  if (inputs.length === 0) return '(no input)'
  return inputs
    .map((i) => {
      const { type, ...rest } = i
      const detail = Object.values(rest).join(' ')
      return detail ? `${type}(${detail})` : type
    })
    .join(' → ')
}

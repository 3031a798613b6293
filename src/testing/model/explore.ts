// Generate scenarios from a machine's graph: @xstate/graph explores the
// harness breadth first, which gives the shortest input path to every
// abstract state; each path is completed
// to rest with default answers, its trace checked, and the transitions it
// took counted for coverage.
import { isDeepStrictEqual } from 'node:util'
import { getAdjacencyMap } from '@xstate/graph'
import type { AnyStateMachine } from 'xstate'
import { canonical } from '../../values/canonical.js'
import { approvalWaitOf } from '../../session/approvals.js'
import { repairClosers } from '../../session/repair.js'
import type { SessionEvent } from '../../session/schemas.js'
import { checkSessionInvariants } from '../../session/invariants.js'
import { allTransitions, createHarness, type Budget, type Harness, type HarnessState, type TraceEvent } from './harness.js'
import type { CompactionSetup, FailAppend, ScenarioInput, SeedEvent } from '../conformance/format.js'
import type { WalkInput } from './scenario.js'
import { checkLifecycleInvariants, LIFECYCLE_INVARIANTS } from './lifecycle-invariants.js'
import { scriptInput } from './script.js'
import { dataKeys } from '../conformance/data-cover.js'

/** One logged event of a walk's trace, seed included. */
export interface WalkEvent extends TraceEvent {
  seq: number
  time: number
}

/** One abstract state of a walk (the first concrete state that reached it) and where each input leads from it. */
interface AdjacencyNode {
  state: HarnessState
  transitions: Record<string, { state: HarnessState }>
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
  /** For each input of `script`: what held when it was performed (harness.ts, for the data cover). */
  scriptFlags?: string[]
  /** Facts of the walk the log does not spell out (for the data cover). */
  notes?: string[]
  /** For each input of `script`: the log's length when it was performed. */
  scriptAt?: number[]
  /** The stored log the agent is created over, and the store failures armed before it is created. */
  seed?: SeedEvent[]
  faults?: FailAppend[]
  /** The agent's step limit (TU-16), when the walk had one. */
  maxSteps?: number
  /** The agent's pool size (TL-4), when the walk set one. */
  maxParallelToolCalls?: number
  /** Walked with no approver (TL-18): an `ask` is a denial, so the scenario's setup has no `approvals`. */
  noApprover?: true
  /** The whole log: the seed, its end-seed, then every append. */
  trace: WalkEvent[]
  invariants: string[]
  covers: string[]
  replayable: boolean
  /** Walked with compaction on (CP-*): the policy, as a scenario's setup.compaction (format 5). */
  compaction?: CompactionSetup
}

export interface Exploration {
  machine: string
  states: number
  scenarios: GeneratedScenario[]
  transitions: Map<string, { source: string; event: string; guarded: boolean; target: string }>
  covered: Set<string>
  violations: Array<{ scenario: string; rule: string; seq: number; message: string }>
  /** With `checkData`: how many snapshots and effect batches were checked, and the first few that are not JSON data. */
  data?: { snapshots: number; effects: number; divergent: string[] }
}

/** Why a value does not come back unchanged from JSON.stringify/parse, or null when it does. */
export function jsonDivergence(value: unknown): string | null {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (error) {
    return `JSON.stringify throws: ${(error as Error).message}`
  }
  if (text === undefined) return 'JSON.stringify gives nothing'
  return isDeepStrictEqual(JSON.parse(text), value) ? null : `differs after a round trip: ${text.slice(0, 200)}`
}

/**
 * The same verdict as `jsonDivergence`, found by walking the value: only plain objects and arrays
 * (dense, not cyclic), strings, booleans, null and finite numbers other than -0 come back unchanged.
 * Objects already found to be data are skipped, since snapshots share most of their structure.
 */
function dataDivergence(value: unknown, known: WeakSet<object>, path = '', depth = 0): string | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0) ? null : `${path || '(root)'}: ${String(value)}`
  if (typeof value !== 'object') return `${path || '(root)'}: a ${typeof value}`
  if (known.has(value)) return null
  if (depth > 200) return `${path}: nested too deep (a cycle?)`
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) return `${path}[${i}]: a hole`
      const why = dataDivergence(value[i], known, `${path}[${i}]`, depth + 1)
      if (why) return why
    }
  } else {
    const proto: unknown = Object.getPrototypeOf(value)
    if (proto !== Object.prototype) return `${path || '(root)'}: not a plain object`
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key === 'symbol') return `${path}: a symbol key`
      const why = dataDivergence((value as Record<string, unknown>)[key], known, `${path}.${key}`, depth + 1)
      if (why) return why
    }
  }
  known.add(value)
  return null
}

/** A persisted snapshot as data: XState's own `output` and `error` keys are undefined while the actor runs. */
function snapshotData(snapshot: unknown): unknown {
  const { output, error, ...rest } = snapshot as Record<string, unknown>
  return { ...rest, ...(output !== undefined ? { output } : {}), ...(error !== undefined ? { error } : {}) }
}

/** Drive a state to rest with default answers (bounded). */
export function complete(harness: Harness, state: HarnessState, limit = 200): HarnessState {
  return harness.complete(state, limit)
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
export function explore(
  name: string,
  options: { machine: AnyStateMachine; input: Record<string, unknown>; profiles: Budget[]; limit?: number; checkData?: boolean },
): Exploration {
  const transitions = allTransitions(options.machine)
  const covered = new Set<string>()
  const scenarios: GeneratedScenario[] = []
  const violations: Exploration['violations'] = []
  const seen = new Set<string>()
  // the data keys the walk's paths reach (conformance/data-cover.ts): an agent walk's edge cover takes each new one too
  const reached = new Set<string>()
  let states = 0
  const data = { snapshots: 0, effects: 0, divergent: [] as string[] }
  const known = new WeakSet<object>()
  const diverged = (what: string, value: unknown, check: (value: unknown) => string | null = (v) => dataDivergence(v, known)) => {
    const why = check(value)
    if (why !== null && data.divergent.length < 10) data.divergent.push(`${what}: ${why}`)
  }
  const observe = options.checkData
    ? {
        snapshot: (snapshot: unknown) => {
          data.snapshots++
          diverged('snapshot', snapshotData(snapshot))
        },
        effects: (effects: readonly unknown[]) => {
          data.effects++
          diverged('effects', effects)
        },
      }
    : undefined
  for (const budget of options.profiles) {
    // a seeded walk starts where an agent over that stored log would: after its end-seed, with its repair closers
    const seed = budget.seed ? [...budget.seed, { seq: budget.seed.length, time: 0, type: 'session/end-seed', data: {} }] : []
    const fromSeed = budget.seed ? seededInput(seed as SessionEvent[]) : {}
    const limit = budget.maxSteps !== undefined ? { maxSteps: budget.maxSteps } : {}
    const pool = budget.maxParallelToolCalls !== undefined ? { maxParallelToolCalls: budget.maxParallelToolCalls } : {}
    // compaction on: `auto` checks the policy before each step, `manual` only recovers overflows and compacts on demand
    const compaction = budget.compaction ? { compaction: budget.compaction.auto === false ? 'manual' : 'auto' } : {}
    const harness = createHarness({
      machine: options.machine,
      input: {
        ...options.input,
        ...fromSeed,
        ...limit,
        ...pool,
        ...compaction,
        ...(budget.approver === false ? { facts: { approver: false } } : {}),
        ...(budget.facts ? { facts: budget.facts } : {}),
        ...budget.input,
      },
      budget,
      observe,
    })
    // a walk that starts from another input, or with a listener cancel armed before the machine starts, is for
    // coverage only; store failures armed before the start are replayable (a driver arms them on the session)
    // so is one with facts of its own: a driver answers every extension point and watches the session
    const replayable =
      !budget.input && !budget.facts && !budget.strays && budget.portable !== false && (budget.prelude ?? []).every((p) => p.type === 'fail-next')
    const faults = (budget.prelude ?? []).filter((p) => p.type === 'fail-next').map((p) => scriptInput(p) as FailAppend)
    // breadth first: the first state reached with each abstract key is the end of a shortest path to it
    const adjacency = getAdjacencyMap(harness.logic, {
      events: (state: HarnessState) => harness.choices(state),
      serializeState: (state: HarnessState) => harness.abstract(state),
      serializeEvent: (event) => JSON.stringify(event),
      limit: options.limit ?? 50_000,
    }) as unknown as Record<string, AdjacencyNode>
    const nodes = Object.values(adjacency)
    states += nodes.length
    // edge cover: every state's shortest path, plus each input from it that takes a transition not yet taken, or
    // (for the agent, whose scenarios make the suite) that reaches a data key not yet reached: an answer that leads to
    // the same abstract state (a thrown body, a cause, a cut stream) still changes the log
    const ends: HarnessState[] = []
    const setup = { ...pool, compaction: budget.compaction !== undefined }
    const keysOf = (state: HarnessState) => (name === 'agent' ? dataKeys({ ...state, setup }) : [])
    for (const node of nodes) {
      ends.push(node.state)
      node.state.takenAll.forEach((t) => covered.add(t))
      keysOf(node.state).forEach((k) => reached.add(k))
    }
    for (const node of nodes) {
      for (const { state: next } of Object.values(node.transitions)) {
        const keys = keysOf(next)
        if (next.taken.some((t) => !covered.has(t)) || keys.some((k) => !reached.has(k))) {
          next.taken.forEach((t) => covered.add(t))
          keys.forEach((k) => reached.add(k))
          ends.push(next)
        }
      }
    }
    for (const end of ends) {
      const state = harness.complete(end)
      if (options.checkData) diverged('end state', snapshotData(state.machine), jsonDivergence)
      // the same inputs from another starting point (a seed, another input, a step limit, a compaction policy) are another scenario
      const key = JSON.stringify([
        budget.seed ?? null,
        budget.input ?? null,
        budget.maxSteps ?? null,
        budget.compaction ?? null,
        pool,
        budget.approver ?? null,
        state.inputs,
      ])
      if (seen.has(key)) continue
      seen.add(key)
      state.takenAll.forEach((t) => covered.add(t))
      const id = `${name}-${String(scenarios.length + 1).padStart(4, '0')}`
      const events = traceOf([...seed, ...state.trace])
      // a refused boundary append leaves the log unbalanced on purpose (TU-15, ST-4 with a failing store)
      const brokenBoundary = state.inputs.some((i) => i.type === 'fail-next' && ['step/end', 'turn/end'].includes(i.eventType))
      // a refused compaction/completed leaves its summary without the record on purpose (CP-2 with a failing store)
      const brokenRecord = state.inputs.some((i) => i.type === 'fail-next' && i.eventType === 'compaction/completed')
      const excused = (rule: string) =>
        (brokenBoundary && ['balanced', 'turn-enclosure', 'turn-closes-once', 'event-enclosure', 'retry-stays-in-step'].includes(rule)) ||
        (brokenRecord && rule === 'compaction-record')
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
        scriptFlags: state.scriptFlags,
        notes: state.notes,
        scriptAt: state.scriptAt.map((at) => at + seed.length),
        ...(budget.seed ? { seed: budget.seed.map((e) => ({ ...e })) } : {}),
        ...(faults.length > 0 ? { faults } : {}),
        ...limit,
        ...pool,
        ...(budget.approver === false ? { noApprover: true as const } : {}),
        trace: events,
        invariants: brokenBoundary
          ? ['session-except-boundaries']
          : brokenRecord
            ? ['session-except-boundaries', ...LIFECYCLE_INVARIANTS]
            : ['session', ...LIFECYCLE_INVARIANTS],
        covers: state.takenAll,
        replayable,
        ...(budget.compaction ? { compaction: compactionSetup(budget.compaction) } : {}),
      })
    }
  }
  return { machine: name, states, scenarios, transitions, covered, violations, ...(options.checkData ? { data } : {}) }
}

/** A walk's compaction policy as a scenario sets it up: the walk counts nothing for the request's fixed part. */
function compactionSetup(policy: NonNullable<Budget['compaction']>): CompactionSetup {
  const { contextWindow, threshold, keepRecent, auto } = policy
  return { contextWindow, threshold, keepRecent, auto: auto !== false, baseTokens: 0 }
}

/** What createAgent derives from a stored log: the next turn number and the repair closers. */
function seededInput(events: SessionEvent[]): Record<string, unknown> {
  const lastTurn = events.reduce((max, e) => (e.type === 'turn/start' ? Math.max(max, e.data.turn) : max), 0)
  // TL-18: a log that stops while a call waits for approval resumes in that wait instead of being repaired
  const resumed = approvalWaitOf(events)
  // RQ-4, RQ-5: as for an agent over the log, its first request logs a `resume` header, and a route only when it differs
  const priorHeader = events.some((e) => e.type === 'request/header')
  const route = events.findLast((e) => e.type === 'request/context')
  const request = { priorHeader, ...(route ? { contextKey: canonical(route.data) } : {}) }
  return resumed ? { lastTurn, repair: [], resume: resumed.wait, ...request } : { lastTurn, repair: repairClosers(events), ...request }
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

// The fork scenarios of the portable suite (format 5, SS-14, IN-14). Forks
// and restarts are not transitions of the agent machine, so the walk cannot
// find them: each scenario here is a short hand-picked programme, driven on
// the same pure harness as the walk. An instance over a fork (or over a
// restarted log) is a new harness seeded as createAgent would seed the
// agent, and the expected log is the last session's whole log.
import { canonical } from '../../values/canonical.js'
import { agentMachine } from '../../machines/index.js'
import { applySplice } from '../../machines/inbox.js'
import type { InboxLists } from '../../machines/types.js'
import { checkSessionInvariants } from '../../session/invariants.js'
import { openTurnOf, repairClosers } from '../../session/repair.js'
import type { SessionEvent } from '../../session/schemas.js'
import type { WalkEvent } from '../model/explore.js'
import { createHarness, SCENARIO_CONFIG, type Harness, type HarnessState } from '../model/harness.js'
import { checkLifecycleInvariants, LIFECYCLE_INVARIANTS } from '../model/lifecycle-invariants.js'
import type { WalkInput } from '../model/scenario.js'
import { expectedEvent, scenarioSetup } from './export.js'
import { FORMAT_VERSION, ScenarioSchema, type ForkRefusal, type Scenario, type ScenarioInput } from './format.js'

/** The id of the session every fork scenario starts with. */
export const ROOT_SESSION = 'root'

/** Where a fork cuts, read from the log driven so far. */
type Boundary = (log: readonly WalkEvent[]) => number

/** One step of a programme: a walk input, `rest` (default answers until the agent rests), a fork or a restart. */
type Step = WalkInput | { type: 'rest' } | { type: 'fork'; upTo: Boundary; id: string; refused?: ForkRefusal } | { type: 'resume' }

interface Programme {
  id: string
  description: string
  steps: Step[]
}

// ---- boundaries --------------------------------------------------------------------------

/** The last seq of the log. */
const last: Boundary = (log) => log.length - 1
/** The seq of the `n`th (from 1) event of `type`. */
const nth =
  (type: string, n = 1): Boundary =>
  (log) => {
    const found = log.filter((e) => e.type === type)[n - 1]
    if (!found) throw new Error(`no ${type} #${n} in the log`)
    return found.seq
  }
/** One past the end: a seq the log does not have. */
const pastEnd: Boundary = (log) => log.length
const before: Boundary = () => -1

// ---- walk inputs -------------------------------------------------------------------------

const followup = (id: string): WalkInput => ({ type: 'send', id, target: 'next-turn', wakeup: true })
const inject = (id: string): WalkInput => ({ type: 'send', id, target: 'next-step', wakeup: false })
const queue = (id: string): WalkInput => ({ type: 'send', id, target: 'next-turn', wakeup: false })
const rest = { type: 'rest' } as const
/** A turn answered with text, brought to rest. */
const turn = (id: string): Step[] => [followup(id), rest]
const fork = (upTo: Boundary, id: string, refused?: ForkRefusal): Step => ({ type: 'fork', upTo, id, ...(refused ? { refused } : {}) })
const resume = { type: 'resume' } as const

/** The programmes, one per scenario: what each pins down is in its description. */
const PROGRAMMES: Programme[] = [
  {
    id: 'fork-01',
    description: 'fork at the end of turn 1 of two; the fork runs its own turn 2 (history is the prefix, SS-14)',
    steps: [...turn('m1'), ...turn('m2'), fork(nth('turn/end'), 'fork-a'), ...turn('m3')],
  },
  {
    id: 'fork-02',
    description: 'fork at the last seq; the fork runs a turn with tool calls',
    steps: [
      ...turn('m1'),
      fork(last, 'fork-a'),
      followup('m2'),
      { type: 'pre-step', decision: 'default' },
      { type: 'request', decision: 'default' },
      { type: 'model', response: 'tools' },
      rest,
    ],
  },
  {
    id: 'fork-03',
    description: 'inherited splices are ignored (IN-14): items pending at the boundary are not pending in the fork, which may send them again',
    steps: [...turn('m1'), inject('m2'), queue('m3'), fork(last, 'fork-a'), inject('m2'), ...turn('m4')],
  },
  {
    id: 'fork-04',
    description: 'fork at seq 0, before any turn: the inherited send is ignored; the fork numbers its first turn 1 and logs an initial header',
    steps: [...turn('m1'), fork(() => 0, 'fork-a'), ...turn('m2')],
  },
  {
    id: 'fork-05',
    description: "resume of a fork: the restarted instance replays the fork's own splices, not the inherited ones, and logs a resume header",
    steps: [...turn('m1'), inject('m2'), fork(last, 'fork-a'), inject('m3'), queue('m4'), resume, ...turn('m5')],
  },
  {
    id: 'fork-06',
    description: 'resume of a fork before it ran: no second end-seed marker; then a turn',
    steps: [...turn('m1'), fork(last, 'fork-a'), resume, ...turn('m2')],
  },
  {
    id: 'fork-07',
    description: 'a fork of a fork: the latest marker names the first fork as parent; inherited splices of both are ignored',
    steps: [...turn('m1'), ...turn('m2'), fork(nth('turn/end'), 'fork-a'), ...turn('m3'), inject('m4'), fork(last, 'fork-b'), ...turn('m5')],
  },
  {
    id: 'fork-08',
    description: 'refused inside a turn (FORK_INSIDE_TURN): at a step/end of a closed turn, and at the last seq while a turn runs; the log is untouched',
    steps: [
      ...turn('m1'),
      fork(nth('step/end'), 'fork-a', 'FORK_INSIDE_TURN'),
      fork(nth('turn/start'), 'fork-a', 'FORK_INSIDE_TURN'),
      followup('m2'),
      { type: 'pre-step', decision: 'default' },
      { type: 'request', decision: 'default' },
      fork(last, 'fork-a', 'FORK_INSIDE_TURN'),
      rest,
      fork(last, 'fork-a'),
      ...turn('m3'),
    ],
  },
  {
    id: 'fork-09',
    description: 'refused on a seq the log does not have (FORK_UNKNOWN_SEQ): one past the end, and -1; the parent goes on',
    steps: [...turn('m1'), fork(pastEnd, 'fork-a', 'FORK_UNKNOWN_SEQ'), fork(before, 'fork-a', 'FORK_UNKNOWN_SEQ'), ...turn('m2')],
  },
  {
    id: 'fork-10',
    description: "refused on a taken id (FORK_ID_TAKEN): the parent's own id, and an earlier session of the scenario from a fork",
    steps: [
      ...turn('m1'),
      fork(last, ROOT_SESSION, 'FORK_ID_TAKEN'),
      fork(last, 'fork-a'),
      ...turn('m2'),
      fork(last, ROOT_SESSION, 'FORK_ID_TAKEN'),
      fork(last, 'fork-a', 'FORK_ID_TAKEN'),
      ...turn('m3'),
    ],
  },
]

// ---- driving -----------------------------------------------------------------------------

/** One agent instance: the events it was created over (its seed, marker included) and its harness. */
interface Instance {
  base: WalkEvent[]
  harness: Harness
  state: HarnessState
}

/** The log of an instance: its seed, then what it appended. */
const logOf = (i: Instance): WalkEvent[] => [...i.base, ...i.state.trace.map((e, k) => ({ seq: i.base.length + k, time: 0, ...e }))]

/** The inbox an agent over `events` starts with (IN-14): the splices after the latest fork marker. */
function replayed(events: readonly WalkEvent[]): InboxLists {
  const marker = events.findLast((e) => e.type === 'session/end-seed' && (e.data as { fork?: unknown }).fork !== undefined)
  let lists: InboxLists = { nextTurn: [], nextStep: [] }
  for (const e of events.slice((marker?.seq ?? -1) + 1)) if (e.type === 'agent/inbox/spliced') lists = applySplice(lists, e.data as never)
  return lists
}

/** An instance as createAgent makes it over `events` (a seed ending with its end-seed marker), or a fresh one. */
function instance(events: WalkEvent[], calls: number): Instance {
  const stored = events.slice(0, -1)
  const route = events.findLast((e) => e.type === 'request/context')?.data
  const lists = replayed(events)
  const input = {
    seedConfig: SCENARIO_CONFIG,
    lastTurn: events.reduce((max, e) => (e.type === 'turn/start' ? Math.max(max, (e.data as { turn: number }).turn) : max), 0),
    priorHeader: events.some((e) => e.type === 'request/header'),
    // keyed as the runtime keys a route (RQ-5)
    ...(route ? { contextKey: canonical(route) } : {}),
    repair: repairClosers(events as unknown as SessionEvent[]),
    nextTurn: lists.nextTurn,
    nextStep: lists.nextStep,
  }
  // the harness numbers its events after `seed` and one end-seed marker
  const harness = createHarness({ machine: agentMachine, input, budget: events.length > 0 ? { seed: stored } : {} })
  const state = harness.initial()
  state.counters.calls = calls // tool call ids go on from the parent's, so a log never holds one twice
  return { base: events, harness, state }
}

/** Why a fork of `log` at `upTo` as `id` is refused, or null (docs/conformance.md 5.17). */
function refusalOf(log: readonly WalkEvent[], upTo: number, id: string, taken: ReadonlySet<string>): ForkRefusal | null {
  if (!Number.isInteger(upTo) || upTo < 0 || upTo >= log.length) return 'FORK_UNKNOWN_SEQ'
  if (openTurnOf(log.slice(0, upTo + 1) as unknown as SessionEvent[]) !== null) return 'FORK_INSIDE_TURN'
  if (taken.has(id)) return 'FORK_ID_TAKEN'
  return null
}

/** Drive one programme: the scenario's inputs and the last session's whole log. */
function drive(programme: Programme): { script: ScenarioInput[]; log: WalkEvent[] } {
  let current = instance([], 0)
  let sessionId = ROOT_SESSION
  const sessions = new Set([ROOT_SESSION])
  const done: ScenarioInput[] = []
  const atRest = () => {
    if (current.state.pending.length > 0)
      throw new Error(`${programme.id}: a fork or restart needs the agent at rest, but it waits for ${current.state.pending[0].kind}`)
  }
  /** Leave the current instance for one over `events`. */
  const switchTo = (events: WalkEvent[]) => {
    done.push(...current.state.script)
    current = instance(events, current.state.counters.calls)
  }
  for (const step of programme.steps) {
    if (step.type === 'rest') {
      current.state = current.harness.complete(current.state)
    } else if (step.type === 'fork') {
      const log = logOf(current)
      const upTo = step.upTo(log)
      const refused = refusalOf(log, upTo, step.id, sessions)
      if (refused !== (step.refused ?? null))
        throw new Error(`${programme.id}: fork at ${upTo} as ${step.id}: ${refused ?? 'accepted'}, not ${step.refused ?? 'accepted'}`)
      const input: ScenarioInput = { type: 'fork', upTo, id: step.id, ...(refused ? { refused } : {}) }
      if (refused) {
        current.state.script.push(input)
        continue
      }
      atRest()
      const marker = { seq: upTo + 1, time: 0, type: 'session/end-seed', data: { fork: { parent: sessionId, upTo, seedLength: upTo + 2 } } }
      current.state.script.push(input)
      switchTo([...log.slice(0, upTo + 1), marker])
      sessions.add(step.id)
      sessionId = step.id
    } else if (step.type === 'resume') {
      atRest()
      const log = logOf(current)
      current.state.script.push({ type: 'resume' })
      // a stored log that already ends with its marker gets no second one (SS-9)
      switchTo(log.at(-1)?.type === 'session/end-seed' ? log : [...log, { seq: log.length, time: 0, type: 'session/end-seed', data: {} }])
    } else {
      const next = current.harness.apply(current.state, step)
      if (!next) throw new Error(`${programme.id}: ${JSON.stringify(step)} does not apply`)
      current.state = next
    }
  }
  atRest()
  return { script: [...done, ...current.state.script], log: logOf(current) }
}

/**
 * The fork scenarios of the suite, in order, each checked against the schema and the invariants.
 * Why: forks are not machine transitions, so `conformance generate` adds these beside the walk's scenarios.
 */
export function forkScenarios(): Scenario[] {
  return PROGRAMMES.map((programme) => {
    const { script, log } = drive(programme)
    const violations = [...checkSessionInvariants(log), ...checkLifecycleInvariants(log)]
    if (violations.length > 0)
      throw new Error(`${programme.id}: the expected log breaks ${violations[0].rule} at seq ${violations[0].seq}: ${violations[0].message}`)
    const scenario: unknown = JSON.parse(
      JSON.stringify({
        formatVersion: FORMAT_VERSION,
        id: programme.id,
        description: programme.description,
        setup: { ...scenarioSetup(), sessionId: ROOT_SESSION },
        inputs: script,
        // every event was appended by an instance of the scenario (the prefix too): its own ids are free
        expected: log.map((event) => expectedEvent(event, true)),
        invariants: ['session', ...LIFECYCLE_INVARIANTS],
      }),
    )
    return ScenarioSchema.parse(scenario)
  })
}

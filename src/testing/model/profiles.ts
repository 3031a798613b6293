// The walks that generate scenarios: each machine with the budgets that
// keep its graph finite while every reachable transition gets taken.
import type { AnyStateMachine } from 'xstate'
import { agentMachine, attemptMachine, stepMachine, toolBatchMachine, turnMachine } from '../../machines/index.js'
import type { Budget } from './harness.js'
import { SCENARIO_CONFIG, scenarioMessage } from './harness.js'
import { MALFORMED } from './scenario.js'

const few = { decisions: 'few' as const }

/** A stored log cut inside step 1 of turn 1, as a crash leaves it. */
const CRASHED = [
  { seq: 0, time: 1, type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, inserted: [scenarioMessage('m0')] } },
  { seq: 1, time: 2, type: 'turn/start', data: { turn: 1 } },
  { seq: 2, time: 3, type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, removedCount: 1, inserted: [] } },
  { seq: 3, time: 4, type: 'step/start', data: { turn: 1, step: 1 } },
  { seq: 4, time: 5, type: 'user/message', data: scenarioMessage('m0'), surfaceOp: 'append' },
]

/** CRASHED continued by step 1's request records and an answer that asks for these calls (id, tool name), in order. */
function toolStep(calls: ReadonlyArray<readonly [id: string, name: string]>) {
  return [
    ...CRASHED,
    { seq: 5, time: 6, type: 'request/header', data: { header: { config: SCENARIO_CONFIG }, reason: 'initial' } },
    { seq: 6, time: 7, type: 'request/context', data: { provider: SCENARIO_CONFIG.provider, model: SCENARIO_CONFIG.model } },
    {
      seq: 7,
      time: 8,
      type: 'assistant/message',
      data: {
        turn: 1,
        step: 1,
        message: {
          id: 'a1',
          role: 'assistant',
          content: calls.map(([id, name]) => ({ type: 'tool-call', id, name, arguments: '{}' })),
          source: { kind: 'model', ...SCENARIO_CONFIG },
        },
      },
      surfaceOp: 'append',
      sourceEventSeqs: [],
    },
  ]
}

/** A stored log that stops while call c1 (after c0, which ran) waits for a person's answer (TL-18): an instance resumes there. */
const AWAITING_APPROVAL = [
  ...toolStep([
    ['c0', 'p'],
    ['c1', 'x'],
    ['c2', 'p'],
  ]),
  { seq: 8, time: 9, type: 'tool/call', data: { turn: 1, step: 1, callId: 'c0', name: 'p', arguments: '{}' } },
  { seq: 9, time: 10, type: 'tool/call', data: { turn: 1, step: 1, callId: 'c1', name: 'x', arguments: '{}' } },
  { seq: 10, time: 11, type: 'tool/approval-request', data: { turn: 1, step: 1, callId: 'c1', name: 'x', reason: 'a person decides' } },
]

/**
 * A stored log cut while call c9 of step 1 ran, before c10 started: repair gives c9 a TOOL_OUTCOME_UNKNOWN result
 * and c10 a TOOL_NOT_STARTED one before step/end (RS-4, RS-5).
 */
const CRASHED_IN_TOOLS = [
  ...toolStep([
    ['c9', 'p'],
    ['c10', 'x'],
  ]),
  { seq: 8, time: 9, type: 'tool/call', data: { turn: 1, step: 1, callId: 'c9', name: 'p', arguments: '{}' } },
]

/** A policy small enough that the walk's tiny messages pass its threshold within a turn or two (CP-1). */
const SMALL_WINDOW = { contextWindow: 20, threshold: 0.5, keepRecent: 0.3 }
/** Compaction on: the walk measures its own log with SMALL_WINDOW; a scenario sets it up as setup.compaction (format 5). */
const compacting = { compaction: SMALL_WINDOW }

/** Walks of the compaction regions: the pre-step policy, agent.compact(), overflow recovery, with cancels and store failures. */
const COMPACTION_PROFILES: Budget[] = [
  { sends: 2, ...few, responses: ['text', 'tools', 'overflow'], ...compacting },
  { sends: 2, cancels: 1, ...few, responses: ['text', 'overflow'], ...compacting },
  { sends: 1, fails: 1, ...few, responses: ['text', 'overflow'], failTypes: ['user/message', 'compaction/completed', 'compaction/failed'], ...compacting },
  // auto off: the history passes the threshold with no compaction; an overflow is still met with one
  { sends: 2, ...few, responses: ['text', 'overflow'], compaction: { ...SMALL_WINDOW, auto: false } },
]

/** For the step and attempt walks, whose logs hold one prompt: the whole history is compactable (no tail kept). */
const partCompacting = { compaction: { ...SMALL_WINDOW, keepRecent: 0 } }
const PART_COMPACTION_PROFILES: Budget[] = [
  { sends: 0, ...few, responses: ['text', 'overflow'], ...partCompacting },
  { sends: 0, cancels: 1, ...few, responses: ['overflow'], ...partCompacting },
  // with a tail kept, the prompt alone is the tail: nothing to compact, so request recovery decides
  { sends: 0, ...few, responses: ['overflow'], ...compacting },
]
/** The attempt starts inside an open step: its log is given that step's prompt as a stored prefix. */
const PROMPTED = [{ seq: 0, time: 1, type: 'user/message', data: scenarioMessage('m0'), surfaceOp: 'append' }]

const triggers = ['agent/status', 'turn/start', 'step/start', 'request/header', 'assistant/message', 'tools/result'] as const

/** Nobody listens or watches: every extension point is decided in the chart, with no round trip, and tool modes are known. */
const UNWATCHED = { observed: false, listened: [], approver: false, modes: { p: 'parallel', x: 'exclusive' } } as const
/** Every extension point listened to, but nothing watches the session: decisions wait for hooks, boundaries do not. */
const LISTENED = { observed: false, approver: true, modes: { p: 'parallel', x: 'exclusive' } } as const

/** The paths where nobody decides or watches (Facts): the same catalogue, fewer round trips. */
const FACT_PROFILES: Budget[] = [
  { sends: 2, ...few, responses: ['text', 'tools', 'tools-mixed', 'error', 'max-tokens', 'partial'], facts: UNWATCHED },
  { sends: 1, cancels: 1, ...few, responses: ['text', 'tools-mixed', 'partial'], facts: UNWATCHED },
  { sends: 1, fails: 1, ...few, responses: ['text', 'tools'], facts: UNWATCHED },
  // a refused answer with nobody watching: the step and turn close in the same macrostep, then write step/end and turn/end again
  { sends: 1, fails: 1, ...few, responses: ['text'], facts: UNWATCHED, failTypes: ['assistant/message'] },
  { sends: 1, ...few, responses: ['text', 'tools', 'error'], facts: LISTENED },
  { sends: 1, fails: 1, ...few, responses: ['text', 'tools'], facts: LISTENED },
  // TL-18: an ask with nobody to answer it is denied
  { sends: 1, ...few, responses: ['tools'], approvals: true, facts: { ...UNWATCHED, listened: ['tools/pre-execute'] } },
  { sends: 2, ...few, responses: ['text', 'tools'], maxSteps: 1, facts: UNWATCHED },
  { sends: 2, ...few, responses: ['text', 'tools', 'overflow'], ...compacting, facts: UNWATCHED },
  // someone starts watching mid-walk, or stops (a listener added or removed)
  { sends: 1, ...few, responses: ['text', 'tools'], facts: UNWATCHED, watches: 1 },
  { sends: 1, ...few, responses: ['text', 'tools'], facts: { ...LISTENED, observed: true }, watches: 1 },
]

/** The same for the part machines, which need fewer paths to take each of their transitions. */
const PART_FACT_PROFILES: Budget[] = [
  { sends: 1, ...few, responses: ['text', 'tools-mixed', 'error'], facts: UNWATCHED },
  { sends: 0, fails: 1, ...few, responses: ['text'], facts: UNWATCHED, failTypes: ['assistant/message'] },
  { sends: 0, fails: 1, ...few, responses: ['tools'], facts: UNWATCHED, failTypes: ['tool/call', 'tool/result', 'step/end'] },
  { sends: 0, ...few, responses: ['text', 'tools'], facts: LISTENED },
  { sends: 0, ...few, responses: ['tools'], approvals: true, facts: { ...UNWATCHED, listened: ['tools/pre-execute'] } },
  { sends: 0, ...few, responses: ['text'], facts: UNWATCHED, watches: 1 },
]

/** Requests the machine refuses: an answer for a call that does not wait, a job or a compaction while it is busy (MT-1, CP-4, TL-18). */
const STRAY_PROFILES: Budget[] = [
  { sends: 1, strays: 1, ...few, responses: ['text', 'tools'] },
  { sends: 1, strays: 1, ...few, responses: ['text'], ...compacting },
]

/**
 * Walks that vary the environment's answers rather than the machine's paths (coverage of data, docs/conformance.md
 * 7.4, 7.6, 7.8): small, so the suite's data cover (conformance/data-cover.ts) can pick one scenario per answer.
 */
const DATA_PROFILES: Budget[] = [
  // tool bodies that throw, conclude or add contexts, each met by every post-execute decision (7.6)
  {
    sends: 1,
    ...few,
    responses: ['tools'],
    steps: 2,
    answers: { tool: ['ok', 'error', 'concludes', 'context'], toolPost: ['accept', 'replace', 'block', 'throw'] },
  },
  // bodies and pre-execute answering after the abort (TL-15, TL-16)
  { sends: 1, cancels: 1, ...few, responses: ['tools'], steps: 2, answers: { tool: ['ok', 'error', 'context'], toolPre: ['allow', 'deny', 'throw'] } },
  { sends: 1, cancels: 1, ...few, responses: ['tools'], steps: 2, answers: { tool: ['context'], toolPost: ['accept', 'block', 'throw'] } },
  // causes other than the user's, a second cancel, keepInbox (CX-1, CX-2, CX-3, CX-12)
  { sends: 2, cancels: 2, ...few, responses: ['text', 'partial', 'tools'], steps: 2, causes: ['parent', 'hook'] },
  // an ask with no approver configured is a denial (TL-18)
  { sends: 1, ...few, responses: ['tools'], steps: 2, approver: false, answers: { toolPre: ['allow', 'ask'] } },
  // streams cut inside their text or reasoning (CX-7, 7.4)
  { sends: 1, cancels: 1, ...few, responses: ['partial', 'partial-reasoning', 'partial-blank', 'partial-mixed'] },
  // malformed streams (7.4)
  { sends: 1, ...few, responses: [...MALFORMED, 'max-tokens-tools'], steps: 2 },
  // a pool smaller than the parallel calls (TL-4)
  { sends: 1, ...few, responses: ['tools-parallel', 'tools-mixed'], steps: 2, maxParallelToolCalls: 2 },
  // a max-tokens turn with work pending (PH-4); a refused turn/start, then another turn (TU-4)
  { sends: 2, ...few, responses: ['max-tokens', 'text'] },
  { sends: 2, fails: 1, ...few, responses: ['text'], failTypes: ['turn/start'] },
  // a listener cancel on the running status around a maintenance job, which leaves the status idle (MT-1)
  { sends: 2, maintenance: 1, cancels: 1, ...few, responses: ['text'], cancelTriggers: ['agent/status'] },
  // a blank summary (CP-3); an empty answer, so the estimate can meet the threshold exactly (CP-1)
  { sends: 2, ...few, responses: ['text', 'empty'], ...compacting, answers: { summary: ['ok', 'blank'] } },
  // an overflow met again after its compaction failed, in the same step of a second turn (CP-6)
  // (two attempts: with a third, an immediate retry then a retry-later numbers its llm/retry 2, which the retry-sequence invariant refuses)
  { sends: 2, ...few, responses: ['text', 'overflow'], turns: 2, ...compacting, answers: { summary: ['fail'] } },
  // repair of a step whose call was running (RS-4)
  { sends: 1, ...few, responses: ['text'], seed: CRASHED_IN_TOOLS },
]

/** Budgets for the agent machine, from the richest single-prompt walk to focused ones. */
export const AGENT_PROFILES: Budget[] = [
  // every hook decision, model response and tool outcome for one prompt
  { sends: 1 },
  // cancellation at every landing point, including from listeners
  { sends: 2, cancels: 1, ...few, responses: ['text', 'tools-mixed', 'error', 'partial'], cancelTriggers: triggers },
  // a failing store at every boundary
  { sends: 1, fails: 1, ...few, responses: ['text', 'tools'] },
  // a refused append meeting a listener's cancel or a failed request: turn/end is written again
  { sends: 1, cancels: 1, fails: 1, ...few, responses: ['error'], cancelTriggers: ['step/start'], failTypes: ['user/message', 'step/end'] },
  // the inbox, maintenance and disposal around turns
  { sends: 2, maintenance: 1, cancels: 1, removes: 1, ...few, responses: ['text'] },
  // an instance over a crash-truncated log: the repair closers go in first (RS-4), even when the store refuses
  // them (a driver arms that failure on the session before it creates the agent)
  { sends: 1, ...few, responses: ['text', 'tools'], seed: CRASHED },
  { sends: 1, ...few, responses: ['text'], seed: CRASHED, prelude: [{ type: 'fail-next', eventType: 'step/end' }] },
  { sends: 1, ...few, responses: ['text'], seed: CRASHED, prelude: [{ type: 'fail-next', eventType: 'turn/end' }] },
  // TL-18: calls that ask a person, answered either way or cancelled while they wait; a store refusing the question
  { sends: 1, cancels: 1, ...few, responses: ['tools-mixed'], approvals: true },
  { sends: 1, fails: 1, ...few, responses: ['tools'], approvals: true, failTypes: ['tool/approval-request', 'tool/approval-answer'] },
  ...COMPACTION_PROFILES,
  // agent.compact() from idle, around turns, with a cancel, a latched send and a refused summary
  { sends: 2, maintenance: 1, cancels: 1, ...few, responses: ['text'], ...compacting },
  { sends: 1, maintenance: 1, fails: 1, ...few, responses: ['text'], failTypes: ['user/message', 'compaction/completed'], ...compacting },
  // TU-16: a one-step limit, reached after a tool step or with input staged by turn-stopping; the next turn goes on
  { sends: 2, ...few, responses: ['text', 'tools'], maxSteps: 1 },
  ...FACT_PROFILES,
  ...STRAY_PROFILES,
  // TL-18: an instance over a log that stops while a call waits: it waits on, answered, cancelled, or its store refuses
  // (docs/conformance.md does not yet describe this resume, so its scenarios stay out of the suite)
  { sends: 1, cancels: 1, ...few, responses: ['text'], approvals: true, seed: AWAITING_APPROVAL, portable: false },
  {
    sends: 0,
    fails: 1,
    ...few,
    responses: ['text'],
    approvals: true,
    seed: AWAITING_APPROVAL,
    failTypes: ['tool/result', 'tool/approval-answer'],
    portable: false,
  },
  // TL-18: a disposal while a call waits parks the question, after an earlier call still running finishes, and
  // discards queued input (no scenario of format 7 disposes in the wait, docs/conformance.md 7.8: the model tests replay these walks)
  { sends: 2, maintenance: 1, ...few, responses: ['tools'], approvals: true, parks: true, portable: false },
  ...DATA_PROFILES,
]

export interface Walk {
  name: 'agent' | 'turn' | 'step' | 'attempt' | 'toolBatch'
  machine: AnyStateMachine
  input: Record<string, unknown>
  profiles: Budget[]
}

// a pool of two, a barrier, then a pool again
const calls = [
  { callId: 'k1', name: 'p', arguments: '{}', args: {} },
  { callId: 'k2', name: 'p', arguments: '{}', args: {} },
  { callId: 'k3', name: 'x', arguments: '{}', args: {} },
  { callId: 'k4', name: 'p', arguments: '{}', args: {} },
]

/** Walks with a failure or a listener cancel armed before the machine's first appends. */
function armedAtStart(fails: string[], cancels: Array<'turn/start' | 'step/start'>): Budget[] {
  const small = { sends: 0, ...few, responses: ['text'] as const }
  return [
    ...fails.map((eventType): Budget => ({ ...small, prelude: [{ type: 'fail-next', eventType }] })),
    ...cancels.map((trigger): Budget => ({ ...small, prelude: [{ type: 'cancel-on', trigger }] })),
  ]
}

/** One walk per machine; the part machines start where the agent would hand them over. */
export function walks(): Walk[] {
  const input = { seedConfig: SCENARIO_CONFIG }
  const part: Budget[] = [
    { sends: 0 },
    { sends: 1, cancels: 1, ...few, responses: ['text', 'tools-mixed', 'error', 'partial'], cancelTriggers: triggers },
    { sends: 0, fails: 1, ...few, responses: ['text', 'tools'] },
    { sends: 2, removes: 1, fails: 1, ...few, responses: ['text'], failTypes: ['agent/inbox/spliced'] },
    // TL-18: the approval wait, answered, cancelled, or cut short by a refused append
    { sends: 0, cancels: 1, ...few, responses: ['tools'], approvals: true },
    { sends: 0, fails: 1, ...few, responses: ['tools'], approvals: true, failTypes: ['tool/approval-request', 'tool/approval-answer'] },
    // TL-18: a disposal parks the wait, once any earlier call has finished
    { sends: 0, maintenance: 1, ...few, responses: ['tools'], approvals: true, parks: true },
    ...PART_FACT_PROFILES,
  ]
  // a refused append meeting a cancel or a failed request: the turn writes turn/end again
  const refusedBeforeTurnEnd: Budget = {
    sends: 1,
    cancels: 1,
    fails: 1,
    ...few,
    responses: ['error'],
    cancelTriggers: ['step/start'],
    failTypes: ['user/message', 'step/end'],
  }
  return [
    { name: 'agent', machine: agentMachine, input, profiles: AGENT_PROFILES },
    {
      name: 'turn',
      machine: turnMachine,
      input: { ...input, nextTurn: [scenarioMessage('m0')] },
      // TU-16: the step limit, reached after a tool step or after turn-stopping staged input
      profiles: [
        ...part,
        refusedBeforeTurnEnd,
        ...armedAtStart(['turn/start'], ['turn/start']),
        ...COMPACTION_PROFILES,
        { sends: 0, ...few, responses: ['text', 'tools'], maxSteps: 1 },
        // a turn over an empty inbox, with nobody to decide: it completes with no step (TU-7)
        { sends: 0, ...few, responses: ['text'], facts: UNWATCHED, input: { nextTurn: [] } },
        { sends: 0, ...few, responses: ['text', 'overflow'], ...compacting, facts: UNWATCHED },
        { sends: 0, ...few, responses: ['tools'], maxSteps: 1, facts: UNWATCHED },
      ],
    },
    {
      name: 'step',
      machine: stepMachine,
      input: { ...input, entering: [scenarioMessage('m0')] },
      profiles: [...part, ...armedAtStart(['step/start', 'user/message'], ['step/start']), ...PART_COMPACTION_PROFILES],
    },
    { name: 'attempt', machine: attemptMachine, input, profiles: [...part, ...PART_COMPACTION_PROFILES.map((p) => ({ ...p, seed: PROMPTED }))] },
    { name: 'toolBatch', machine: toolBatchMachine, input: { ...input, calls }, profiles: part },
  ]
}

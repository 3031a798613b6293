// Random schedules: fast-check walks the model through random user actions
// (followup, steer, inject, cancel with and without keepInbox, remove),
// random model outcomes and hook decisions, then replays the walk on the
// real runtime. Deep runs scale with AGENTCHART_PROPERTY_RUNS.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { agentMachine, applySplice, type InboxLists } from '../../src/machines/index.js'
import type { SessionEvent } from '../../src/index.js'
import {
  checkLifecycleInvariants,
  checkSessionInvariants,
  complete,
  createHarness,
  judge,
  runOnAgentchart,
  scenarioOfState,
  type HarnessState,
  type WalkInput,
} from '../../src/testing/index.js'
import { propertyRuns } from '../helpers.js'

const harness = createHarness({
  machine: agentMachine,
  input: { seedConfig: { provider: 'scripted', model: 'scripted-1' } },
  budget: { sends: 5, cancels: 3, removes: 2, steps: 3, turns: 4, cancelTriggers: ['agent/status', 'step/start', 'assistant/message'] },
})

/** Walk the model with picks from fast-check, then bring it to rest. */
function walk(picks: number[]): HarnessState {
  let state = harness.initial()
  for (const pick of picks) {
    const options = harness.choices(state)
    if (options.length === 0) break
    state = harness.apply(state, options[pick % options.length]) ?? state
  }
  return complete(harness, state)
}

/** Where every sent message ended: entered, discarded, still pending, or consumed by a proposal that never entered it. */
function fates(events: readonly SessionEvent[], inputs: readonly WalkInput[]) {
  let lists: InboxLists = { nextTurn: [], nextStep: [] }
  const entered = new Set<string>()
  const discarded = new Set<string>()
  const claimedIn = new Map<string, number>()
  let turn = 0
  const turnEnd = new Map<number, string>()
  const stepped = new Set<number>()
  for (const e of events) {
    if (e.type === 'turn/start') turn = e.data.turn
    if (e.type === 'step/start') stepped.add(turn)
    if (e.type === 'turn/end') turnEnd.set(e.data.turn, e.data.reason.kind)
    if (e.type === 'user/message') entered.add(e.data.id)
    if (e.type === 'agent/inbox/spliced') {
      const list = e.data.target === 'next-turn' ? lists.nextTurn : lists.nextStep
      const removed = list.slice(e.data.start, e.data.start + (e.data.removedCount ?? 0))
      for (const m of removed) e.data.outcome === 'canceled' ? discarded.add(m.id) : claimedIn.set(m.id, turn)
      lists = applySplice(lists, e.data)
    }
  }
  const pending = new Set([...lists.nextTurn, ...lists.nextStep].map((m) => m.id))
  const sent = new Set(inputs.flatMap((i) => (i.type === 'send' ? [i.id] : [])))
  const lost = [...sent].filter((id) => {
    if (entered.has(id) || discarded.has(id) || pending.has(id)) return false
    const t = claimedIn.get(id)
    // a claimed batch may be consumed unentered: a rejected, emptied, failed or cancelled proposal (TU-5, TU-7, HK-4, CX-9)
    if (t !== undefined && (turnEnd.get(t) !== 'completed' || !stepped.has(t) || inputs.some((i) => i.type === 'pre-step' && i.decision === 'empty')))
      return false
    // a duplicate or refused send never entered the inbox (IN-6)
    return !events.some((e) => e.type === 'agent/inbox/spliced' && e.data.inserted.some((m) => m.id === id))
  })
  return { lost, pending: [...pending], turns: events.filter((e) => e.type === 'turn/start').map((e) => (e as { data: { turn: number } }).data.turn) }
}

describe('random schedules', () => {
  it('IN-1/CX-3/PH-6/TU-1: no message is lost, invariants hold, turns count up by one, and the runtime agrees', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(), { minLength: 5, maxLength: 60 }), async (picks) => {
        const state = walk(picks)
        const scenario = scenarioOfState('walk', state)
        const statuses: string[] = []
        const events = (await runOnAgentchart(scenario, {
          observe: (agent) => agent.on('agent/status', ({ status }) => void statuses.push(status)),
        })) as SessionEvent[]
        // the runtime logs what the model predicts
        expect(judge(scenario, events)).toMatchObject({ passed: true })
        // statuses alternate running/idle, one pair per activity (PH-6)
        expect(statuses).toEqual(statuses.map((_, i) => (i % 2 === 0 ? 'running' : 'idle')))
        expect(statuses.length % 2).toBe(0)
        const withSeq = events.map((e, seq) => ({ ...e, seq }))
        expect(checkSessionInvariants(withSeq)).toEqual([])
        expect(checkLifecycleInvariants(withSeq)).toEqual([])
        const { lost, pending, turns } = fates(events, state.inputs)
        expect(lost).toEqual([])
        // the machine's inbox is exactly the projection of the logged splices (IN-2)
        const context = (state.machine as { context: InboxLists }).context
        expect([...context.nextTurn, ...context.nextStep].map((m) => m.id).sort()).toEqual(pending.sort())
        expect(turns).toEqual(turns.map((_, i) => i + 1))
      }),
      { numRuns: propertyRuns(40) },
    )
  }, 240_000)
})

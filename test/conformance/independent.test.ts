// Proof that the documentation suffices: an implementation of the loop that
// shares no code with agentchart (./independent/loop.ts, a plain async
// loop), driven by a driver written from docs/conformance.md, passes the
// generated suite; each deliberate bug planted in it fails exactly the
// scenarios that exercise it.
import { beforeAll, describe, expect, it } from 'vitest'
import { formatResult, readSuite, runSuite, type Scenario, type Suite } from '../../src/testing/index.js'
import { createIndependentDriver } from './independent/driver.js'
import { sharedSuite } from './shared-suite.js'

let suite: Suite

beforeAll(async () => {
  suite = await readSuite(await sharedSuite())
}, 240_000)

/** A proposal rejected by pre-step: a loop that opens a step anyway shows it. */
const rejects = (s: Scenario) => s.inputs.some((i) => i.type === 'pre-step' && i.action === 'return' && i.value.kind === 'reject')

/** A steer while a turn runs: a turn-stopping listener's steer, or a waking next-step send the expected log inserts inside an open turn. */
function steersWhileRunning(s: Scenario): boolean {
  // a turn-stopping steer the store accepted (a refused one changes nothing, lost or not)
  const logged = (id: string) =>
    s.expected.some((e) => e.type === 'agent/inbox/spliced' && (e.data as { inserted?: Array<{ id: string }> }).inserted?.some((m) => m.id === id))
  if (s.inputs.some((i) => i.type === 'turn-stopping' && i.action === 'return' && i.steer !== undefined && logged(i.steer.id))) return true
  return s.inputs.some((i) => {
    if (i.type !== 'send' || i.target !== 'next-step' || !i.wakeup) return false
    let open = false
    for (const e of s.expected) {
      const d = e.data as { target?: string; inserted?: Array<{ id: string }> }
      if (e.type === 'turn/start') open = true
      if (e.type === 'turn/end') open = false
      if (e.type === 'agent/inbox/spliced' && d.target === 'next-step' && d.inserted?.some((m) => m.id === i.message.id)) return open
    }
    return false
  })
}

/** A fork whose parent had items pending at the boundary (IN-14): a loop that replays inherited splices shows it. */
function inheritsPending(s: Scenario): boolean {
  const marker = s.expected.findLast((e) => e.type === 'session/end-seed' && (e.data as { fork?: unknown }).fork !== undefined)
  if (!marker) return false
  let pending = 0
  for (const e of s.expected.slice(0, marker.seq)) {
    if (e.type !== 'agent/inbox/spliced') continue
    const d = e.data as { removedCount?: number; inserted: unknown[] }
    pending += d.inserted.length - (d.removedCount ?? 0)
  }
  return pending > 0
}

describe('an independent implementation, driven from the documentation alone', () => {
  it('passes every scenario of the suite', async () => {
    const report = await runSuite(suite, createIndependentDriver())
    expect(report.results.filter((r) => !r.passed).map(formatResult)).toEqual([])
    expect(report.passed).toBe(suite.scenarios.length)
  }, 120_000)

  it.each([
    ['step-after-reject', 'a step opened after a rejected proposal (TU-5, TU-6)', rejects],
    ['lost-steer', 'a steer lost while a turn runs (IN-12, TU-10)', steersWhileRunning],
  ] as const)(
    'a mutation, %s (%s), fails exactly the scenarios that exercise it',
    async (mutation, _what, exercises) => {
      const report = await runSuite(suite, createIndependentDriver(mutation))
      const failed = report.results.filter((r) => !r.passed).map((r) => r.id)
      const expected = suite.scenarios.filter(exercises).map((s) => s.id)
      expect(expected.length).toBeGreaterThan(20)
      expect(failed).toEqual(expected)
    },
    120_000,
  )

  it('a mutation, inherited-splices (a fork replays the splices of its seed, IN-14), fails exactly the fork scenarios with items pending at the boundary', async () => {
    const forks = suite.scenarios.filter((s) => s.inputs.some((i) => i.type === 'fork'))
    const report = await runSuite(forks, createIndependentDriver('inherited-splices'))
    const expected = forks.filter(inheritsPending).map((s) => s.id)
    expect(expected.length).toBeGreaterThanOrEqual(3)
    expect(report.results.filter((r) => !r.passed).map((r) => r.id)).toEqual(expected)
  }, 60_000)

  it('a mutation, overflow-unrecovered (CONTEXT_WINDOW_EXCEEDED not met with a compaction, CP-6), fails exactly the scenarios whose log records one', async () => {
    const report = await runSuite(suite, createIndependentDriver('overflow-unrecovered'))
    const recordsOverflow = (s: Scenario) =>
      s.expected.some((e) => (e.type === 'compaction/completed' || e.type === 'compaction/failed') && (e.data as { reason?: string }).reason === 'overflow')
    const expected = suite.scenarios.filter(recordsOverflow).map((s) => s.id)
    expect(expected.length).toBeGreaterThanOrEqual(3)
    expect(report.results.filter((r) => !r.passed).map((r) => r.id)).toEqual(expected)
  }, 120_000)
})

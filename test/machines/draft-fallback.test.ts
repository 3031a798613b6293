// The fallback form of the named actions. They normally resolve as XState
// built-in actions (src/machines/draft.ts); under an XState whose `assign`
// carries no `resolve`, they become enqueueActions of the same Draft steps.
// Here xstate's `assign` export is replaced by one without it, so the whole
// conformance suite runs on that form and must log exactly what it expects.
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { agentMachine } from '../../src/machines/index.js'
import { agentchartDriver, runSuite } from '../../src/testing/index.js'
import { sharedSuite } from '../conformance/shared-suite.js'

vi.mock('xstate', async (importOriginal) => {
  const actual = await importOriginal<typeof import('xstate')>()
  const assign = ((...args: Parameters<typeof actual.assign>) => {
    const made = actual.assign(...args) as unknown as { type: string; assignment: unknown }
    return Object.assign(function assign() {}, { type: made.type, assignment: made.assignment })
  }) as typeof actual.assign
  return { ...actual, assign }
})

let dir: string
beforeAll(async () => {
  dir = await sharedSuite()
}, 240_000)

describe('named actions without the built-in action protocol', () => {
  it('are enqueueActions, and the conformance suite passes on them', async () => {
    expect((agentMachine.implementations.actions.openTurn as unknown as { type: string }).type).toBe('xstate.enqueueActions')
    const report = await runSuite(dir, agentchartDriver)
    expect(report.results.filter((r) => !r.passed)).toEqual([])
    expect(report.passed).toBeGreaterThanOrEqual(250)
  }, 120_000)
})

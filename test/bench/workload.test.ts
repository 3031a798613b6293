// The benchmark's agentchart workload, run small: it must do what bench/README.md
// says a turn is (3 model calls, 3 tool runs, C + 8 text chunks, every chunk
// logged), and the harness must refuse a loop that skips work. No timing is
// asserted; the peers are not loaded.
import { describe, expect, it } from 'vitest'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { fitLine, measureHeap, measureTiming, perStepAndChunk, type Loop } from '../../bench/peers/harness.js'
import { agentchartLoop } from '../../bench/peers/loops/agentchart.js'
import floorLoop from '../../bench/peers/loops/floor.js'
import { categorise } from '../../bench/peers/profile.js'
import { counters } from '../../bench/peers/workload.js'

const tiny = { chunks: [1, 3], reps: 1, batchMs: 1, warmupTurns: 1, warmupMs: 0 }

describe('bench workload', () => {
  it('an agentchart turn is 3 steps, 3 tool results and C + 8 logged text chunks, and the log stays sound', async () => {
    const loop = agentchartLoop()
    loop.setChunks(5)
    const conv = loop.conversation()
    const calls = counters.modelCalls
    await conv.turn('first')
    await conv.turn('second')
    const events = conv.agent.session.events
    const count = (type: string) => events.filter((e) => e.type === type).length
    expect(counters.modelCalls - calls).toBe(6)
    expect(count('step/start')).toBe(6)
    expect(count('tool/result')).toBe(6)
    expect(conv.textChunks()).toBe(2 * (5 + 8))
    expect(events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(['completed', 'completed'])
    const results = events.filter((e) => e.type === 'tool/result').map((e) => JSON.stringify(e.data))
    expect(results.some((r) => r.includes('value of beta')) && results.some((r) => r.includes('"5"'))).toBe(true)
    expect(checkSessionInvariants(events)).toEqual([])
    await conv.close()
  })

  it('the harness runs a loop through timing and heap with its work checked', async () => {
    const loop = floorLoop()
    const timing = await measureTiming(loop, tiny)
    expect(Object.keys(timing.turnUs)).toEqual(['1', '3'])
    expect(Number.isFinite(timing.perChunkUs) && Number.isFinite(timing.perStepUs)).toBe(true)
    const heap = await measureHeap(loop, 2, 2, { warmupTurns: 1, every: 2 })
    expect(heap.samples.map(([turn]) => turn)).toEqual([0, 2])
  })

  it('a loop that skips a tool run is refused, naming what it did and what the workload needs', async () => {
    const floor = floorLoop()
    const lazy: Loop = {
      ...floor,
      conversation: async () => {
        const conv = await floor.conversation()
        return {
          ...conv,
          turn: async (text: string) => {
            await conv.turn(text)
            counters.toolRuns-- // as if one call had not run
          },
        }
      },
    }
    await expect(measureTiming(lazy, tiny)).rejects.toThrow(/made 3 model calls, 2 tool runs, 9 text chunks; the workload needs 3, 3, 9/)
  })

  it('per chunk is the slope of turn time against C; per step is the rest, less the 8 fixed chunks, per call', () => {
    const fit = fitLine([
      [16, 100 + 16 * 2],
      [128, 100 + 128 * 2],
      [512, 100 + 512 * 2],
    ])
    expect(fit.slope).toBeCloseTo(2, 10)
    expect(fit.intercept).toBeCloseTo(100, 10)
    expect(fit.r2).toBeCloseTo(1, 10)
    expect(perStepAndChunk(fit).perStepUs).toBeCloseTo((100 - 16) / 3, 10)
    expect(() => fitLine([[1, 2]])).toThrow(RangeError)
  })

  it('profile frames are grouped by where their code lives', () => {
    expect(categorise('(garbage collector)', '')).toBe('GC')
    expect(categorise('microstep', 'file:///x/node_modules/xstate/dist/raise.cjs.js')).toBe('XState')
    expect(categorise('parse', 'file:///x/node_modules/zod/v4/core/schemas.js')).toBe('zod')
    expect(categorise('run', 'file:///x/node_modules/@openai/agents-core/dist/run.mjs')).toBe('@openai/agents-core')
    expect(categorise('append', 'file:///repo/src/session/session.ts', '/repo/')).toBe('agentchart')
    expect(categorise('append', 'file:///repo/dist/session/session.js', '/repo/')).toBe('agentchart')
    expect(categorise('processTicksAndRejections', 'node:internal/process/task_queues')).toBe('Node internals')
    expect(categorise('push', '')).toBe('V8 builtins and runtime')
  })
})

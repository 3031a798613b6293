// A seed (a stored log) must keep the structure the loop writes before a new
// instance continues it: enclosure, numbering, pairing, citations. A log that
// is only cut short is accepted (repair closes it); the input is never changed.
import { describe, expect, it } from 'vitest'
import { createAgent, createSession, SeedRefusedError, SessionAppendError, type SessionEvent } from '../../src/index.js'
import { scriptedModel, SEED_RULES, seedViolations, textResponse } from '../../src/testing/index.js'

type Raw = Record<string, unknown> & { seq: number; type: string; data: unknown }

/** A log as plain JSON built from (type, data, extra) triples, seqs in order. */
function log(...entries: Array<[string, unknown, Record<string, unknown>?]>): Raw[] {
  return entries.map(([type, data, extra], seq) => ({ seq, time: 1, type, data, ...extra }))
}

const assistant = (turn: number, step: number, text: string, cites: number[], calls: { id: string; name: string }[] = []) =>
  [
    'assistant/message',
    {
      turn,
      step,
      message: {
        id: `a-${turn}-${step}`,
        role: 'assistant',
        content: [{ type: 'text', text }, ...calls.map((c) => ({ type: 'tool-call', id: c.id, name: c.name, arguments: '{}' }))],
        source: { kind: 'model', provider: 'p', model: 'm' },
      },
    },
    { surfaceOp: 'append', sourceEventSeqs: cites },
  ] as [string, unknown, Record<string, unknown>]
const result = (turn: number, step: number, callId: string, cites?: number[]) =>
  [
    'tool/result',
    {
      turn,
      step,
      message: { id: `r-${callId}`, role: 'user', content: [{ type: 'tool-result', toolCallId: callId, content: 'ok' }], source: { kind: 'tool', callId } },
    },
    { surfaceOp: 'append', ...(cites ? { sourceEventSeqs: cites } : {}) },
  ] as [string, unknown, Record<string, unknown>]
const chunk = (turn: number, step: number): [string, unknown] => ['assistant/chunk', { turn, step, chunk: { type: 'text-delta', index: 0, text: 'x' } }]

/** Turn 1 with one tool step and a closing text step: a sound log to break. */
function sound(): Raw[] {
  return log(
    ['turn/start', { turn: 1 }],
    ['step/start', { turn: 1, step: 1 }],
    chunk(1, 1),
    assistant(1, 1, 'calling', [2], [{ id: 'c1', name: 'read' }]),
    ['tool/call', { turn: 1, step: 1, callId: 'c1', name: 'read', arguments: '{}' }],
    result(1, 1, 'c1', [4]),
    ['step/end', { turn: 1, step: 1 }],
    ['step/start', { turn: 1, step: 2 }],
    chunk(1, 2),
    assistant(1, 2, 'done', [8]),
    ['step/end', { turn: 1, step: 2 }],
    ['turn/end', { turn: 1, reason: { kind: 'completed' } }],
  )
}

function refusal(seed: unknown[]): SeedRefusedError {
  try {
    createSession({ seed })
  } catch (error) {
    if (error instanceof SeedRefusedError) return error
    throw error
  }
  throw new Error('the seed was accepted')
}

describe('SS-10: the structure of a seed', () => {
  it('SS-10: a sound log and a log cut short inside a turn, a step, or an unanswered call are accepted', () => {
    expect(() => createSession({ seed: sound() })).not.toThrow()
    for (let end = 1; end < sound().length; end++) expect(() => createSession({ seed: sound().slice(0, end) }), `cut at ${end}`).not.toThrow()
    expect(seedViolations(sound().slice(0, 5))).toEqual([])
  })

  const breaks: Array<{ what: string; rule: string; seq: number; make: () => Raw[] }> = [
    {
      what: 'a step outside any turn (enclosure)',
      rule: 'turn-enclosure',
      seq: 0,
      make: () => log(['step/start', { turn: 1, step: 1 }]),
    },
    {
      what: 'a turn opened inside another (enclosure)',
      rule: 'turn-enclosure',
      seq: 2,
      make: () => log(['turn/start', { turn: 1 }], ['step/start', { turn: 1, step: 1 }], ['turn/start', { turn: 2 }]),
    },
    {
      what: 'turn numbers that skip after the end-seed marker (numbering)',
      rule: 'turn-enclosure',
      seq: 3,
      make: () =>
        log(['turn/start', { turn: 1 }], ['turn/end', { turn: 1, reason: { kind: 'completed' } }], ['session/end-seed', {}], ['turn/start', { turn: 3 }]),
    },
    {
      what: 'a step numbered 2 first (numbering)',
      rule: 'turn-enclosure',
      seq: 1,
      make: () => log(['turn/start', { turn: 1 }], ['step/start', { turn: 1, step: 2 }]),
    },
    {
      what: 'a chunk naming another step (enclosure)',
      rule: 'event-enclosure',
      seq: 2,
      make: () => log(['turn/start', { turn: 1 }], ['step/start', { turn: 1, step: 1 }], chunk(1, 2)),
    },
    {
      what: 'a result for a call that was never made (pairing)',
      rule: 'call-result-pairing',
      seq: 5,
      make: () => {
        const events = sound().slice(0, 6)
        events[5] = { ...result(1, 1, 'c9', [4])[2], seq: 5, time: 1, type: 'tool/result', data: result(1, 1, 'c9', [4])[1] } as Raw
        return events
      },
    },
    {
      what: 'a second result for one call (pairing)',
      rule: 'call-result-pairing',
      seq: 6,
      make: () => [...sound().slice(0, 6), { seq: 6, time: 1, type: 'tool/result', data: result(1, 1, 'c1')[1], surfaceOp: 'append', sourceEventSeqs: [4] }],
    },
    {
      what: 'an answer citing something that is not its chunks (citation)',
      rule: 'chunk-citation',
      seq: 3,
      make: () => {
        const events = sound().slice(0, 4)
        events[3] = { ...events[3], sourceEventSeqs: [1] }
        return events
      },
    },
  ]

  for (const { what, rule, seq, make } of breaks) {
    it(`SS-10: refuses ${what}, naming the seq and the rule`, () => {
      const error = refusal(make())
      expect(error).toBeInstanceOf(SessionAppendError)
      expect(error).toMatchObject({ code: 'SESSION_SEED_REFUSED', seq, rule, path: `seed[${seq}]` })
      expect(error.message).toMatch(new RegExp(`^seed\\[${seq}\\]: breaks the ${rule} rule: `))
    })
  }

  it('SS-10: never changes the input, whether it is accepted or refused', () => {
    for (const seed of [sound(), breaks[5].make()]) {
      const copy = structuredClone(seed)
      try {
        createSession({ seed })
      } catch {
        // refused or not, the caller's values are untouched
      }
      expect(seed).toEqual(copy)
      expect(seed.some((e) => Object.isFrozen(e) || Object.isFrozen(e.data))).toBe(false)
    }
  })

  it('SS-10: checkSeed: false lets a diagnostic tool load a broken log to report on it', () => {
    const broken = breaks[1].make()
    const session = createSession({ seed: broken, checkSeed: false })
    expect(session.events.slice(0, broken.length).map((e) => e.type)).toEqual(broken.map((e) => e.type))
    expect(seedViolations(broken).map((v) => v.rule)).toContain('turn-enclosure')
  })

  it('SS-10: only the rules a resume depends on refuse a seed; the others stay findings of checkSessionInvariants', () => {
    expect([...SEED_RULES].sort()).toEqual([
      'approval-sequence',
      'call-result-pairing',
      'chunk-citation',
      'contiguous-seq',
      'event-enclosure',
      'shape',
      'surface-metadata',
      'turn-enclosure',
    ])
    // sticky max-tokens is a decision the loop made, not a structure a resume needs
    const decided = sound()
    decided[11] = { ...decided[11], data: { turn: 1, reason: { kind: 'max-tokens' } } }
    expect(() => createSession({ seed: decided })).not.toThrow()
  })

  it('SS-10: an agent cannot be made over a refused seed, and one over a log cut short repairs it', async () => {
    expect(() => createSession({ seed: breaks[2].make() })).toThrow(SeedRefusedError)
    const agent = createAgent({
      model: scriptedModel([textResponse('hi')]),
      session: createSession({ seed: sound().slice(0, 5) }),
      logger: { error: () => {} },
    })
    const tail = agent.session.events.slice(5).map((e: SessionEvent) => e.type)
    expect(tail).toEqual(['session/end-seed', 'tool/result', 'step/end', 'turn/end'])
    await agent.dispose()
  })
})

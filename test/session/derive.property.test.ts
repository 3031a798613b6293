// SS-8 / SS-13: the incremental derived history always equals a from-scratch
// derivation, for random sequences of appends, replacements and refusals.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createSession, type Session } from '../../src/session/session.js'
import { assistantData, deriveMessagesFrom, naiveDerive, toolResultData, user } from './fixtures.js'
import { propertyRuns } from '../helpers.js'

type Op =
  | { kind: 'user' }
  | { kind: 'assistant'; empty: boolean }
  | { kind: 'chunk' }
  | { kind: 'tool-result' }
  | { kind: 'boundary' }
  | { kind: 'replace'; as: 'user' | 'assistant'; a: number; b: number; extra: boolean }
  | { kind: 'replace-result'; pick: number }
  | { kind: 'bad-replace'; a: number; b: number }
  | { kind: 'check' }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.constant({ kind: 'user' as const }),
  fc.boolean().map((empty) => ({ kind: 'assistant' as const, empty })),
  fc.constant({ kind: 'chunk' as const }),
  fc.constant({ kind: 'tool-result' as const }),
  fc.constant({ kind: 'boundary' as const }),
  fc.record({
    kind: fc.constant('replace' as const),
    as: fc.constantFrom('user' as const, 'assistant' as const),
    a: fc.nat(),
    b: fc.nat(),
    extra: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('replace-result' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('bad-replace' as const), a: fc.nat(), b: fc.nat() }),
  fc.constant({ kind: 'check' as const }),
)

/** Random appends shaped like a loop's log (one open turn, steps, cited chunks and calls), so any prefix is a valid seed. */
function run(session: Session, ops: readonly Op[]): void {
  let n = 0
  const id = () => `m${n++}`
  let step = 1
  let chunks: number[] = []
  session.append('turn/start', { turn: 1 })
  session.append('step/start', { turn: 1, step })
  for (const o of ops) {
    const surface = session.surface()
    switch (o.kind) {
      case 'user':
        session.append('user/message', user(id()), { surfaceOp: 'append' })
        break
      case 'assistant':
        session.append('assistant/message', assistantData(id(), o.empty ? '' : 'hi', 1, step), { surfaceOp: 'append', sourceEventSeqs: chunks })
        chunks = []
        break
      case 'chunk':
        chunks.push(session.append('assistant/chunk', { turn: 1, step, chunk: { type: 'text-delta', index: 0, text: 'x' } }).seq)
        break
      case 'tool-result': {
        const callId = id()
        const call = session.append('tool/call', { turn: 1, step, callId, name: 'read', arguments: '{}' })
        session.append('tool/result', toolResultData(callId, 'out', 1, step), { surfaceOp: 'append', sourceEventSeqs: [call.seq] })
        break
      }
      case 'boundary':
        session.append('step/end', { turn: 1, step })
        session.append('step/start', { turn: 1, step: ++step })
        chunks = []
        break
      case 'replace': {
        if (surface.length === 0) break
        const [i, j] = [o.a % surface.length, o.b % surface.length].sort((x, y) => x - y)
        const shadowed = surface.slice(i, j + 1)
        const sources = o.extra && session.length > 0 ? [...new Set([...shadowed, session.length - 1])] : shadowed
        const surfaceOp = { op: 'replace' as const, start: surface[i], end: surface[j] }
        if (o.as === 'user') session.append('user/message', user(id()), { surfaceOp, sourceEventSeqs: sources })
        else session.append('assistant/message', assistantData(id(), 'summary'), { surfaceOp, sourceEventSeqs: sources })
        break
      }
      case 'replace-result': {
        const results = surface.filter((seq) => session.at(seq)?.type === 'tool/result')
        if (results.length === 0) break
        const seq = results[o.pick % results.length]
        const old = session.at(seq)!
        if (old.type !== 'tool/result') break
        const content = [{ ...old.data.message.content[0], content: `short ${seq}` }] as typeof old.data.message.content
        session.append(
          'tool/result',
          { ...old.data, message: { ...old.data.message, content } },
          {
            surfaceOp: { op: 'replace', start: seq, end: seq },
            sourceEventSeqs: [seq],
          },
        )
        break
      }
      case 'bad-replace': {
        // Refused appends must leave no trace in the surface or the history.
        if (surface.length < 2) break
        const [i, j] = [o.a % surface.length, o.b % surface.length].sort((x, y) => x - y)
        if (i === j) break
        const before = { length: session.length, surface: session.surface(), history: session.deriveMessages() }
        expect(() =>
          session.append('user/message', user(id()), {
            surfaceOp: { op: 'replace', start: surface[j], end: surface[i] },
            sourceEventSeqs: surface.slice(i, j + 1),
          }),
        ).toThrow(/comes after end/)
        expect({ length: session.length, surface: session.surface(), history: session.deriveMessages() }).toEqual(before)
        break
      }
      case 'check':
        expect(session.deriveMessages()).toEqual(naiveDerive(session.events))
        break
    }
  }
}

describe('derived history property', () => {
  it('SS-8: random append/replace sequences give deriveMessages() equal to a naive derivation', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const session = createSession()
        run(session, ops)
        const history = session.deriveMessages()
        expect(history).toEqual(naiveDerive(session.events))
        expect(history).toEqual(deriveMessagesFrom(session.events))
        // Identity, not just equality: the derived values are the logged ones.
        const logged = new Set(
          session.events.map((e) =>
            e.type === 'user/message' ? e.data : 'message' in (e.data as object) ? (e.data as { message: unknown }).message : undefined,
          ),
        )
        for (const m of history) expect(logged.has(m)).toBe(true)
      }),
      { numRuns: propertyRuns(300) },
    )
  })

  it('SS-9: replaying any such log as a seed yields the identical prefix and history', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const session = createSession()
        run(session, ops)
        const replay = createSession({ seed: session.events })
        expect(replay.events.slice(0, session.length)).toEqual(session.events)
        expect(replay.deriveMessages()).toEqual(session.deriveMessages())
        expect(replay.surface()).toEqual(session.surface())
        expect(replay.replaceGeneration).toBe(session.replaceGeneration)
      }),
      { numRuns: propertyRuns(150) },
    )
  })

  it('SS-13: every log prefix derives, from scratch, the history the session reported at that point', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const session = createSession()
        const seen: unknown[] = []
        session.observe((_e, s) => void seen.push(s.deriveMessages()))
        run(session, ops)
        seen.forEach((h, seq) => expect(h).toEqual(naiveDerive(session.events.slice(0, seq + 1))))
      }),
      { numRuns: propertyRuns(100) },
    )
  })
})

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { StreamAssembler } from '../../src/adapters/assemble.js'
import type { ContentBlock, StreamChunk, TokenUsage, TurnEndReason } from '../../src/session/schemas.js'
import { checkLifecycleInvariants, checkSessionInvariants, errorResponse, maxTokensResponse, textResponse, toolCallResponse } from '../../src/testing/index.js'

// Hand-made logs as plain objects: no dependency on the Session class.
type Raw = { seq: number; time: number; type: string; data: any; surfaceOp?: unknown; sourceEventSeqs?: number[]; ignorable?: true }

const userMsg = (id: string, text: string) => ({ id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })

class Log {
  readonly events: Raw[] = []
  turn = 0
  step = 0
  #ids = 0

  add(type: string, data: unknown, extra: Partial<Raw> = {}): number {
    const seq = this.events.length
    this.events.push({ seq, time: 1_000 + seq, type, data, ...extra })
    return seq
  }
  turnStart(n = this.turn + 1): number {
    this.turn = n
    this.step = 0
    return this.add('turn/start', { turn: n })
  }
  turnEnd(reason: TurnEndReason = { kind: 'completed' }): number {
    return this.add('turn/end', { turn: this.turn, reason })
  }
  stepStart(): number {
    this.step += 1
    return this.add('step/start', { turn: this.turn, step: this.step })
  }
  stepEnd(): number {
    return this.add('step/end', { turn: this.turn, step: this.step })
  }
  splice(): number {
    return this.add('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [userMsg(`q${++this.#ids}`, 'queued')] })
  }
  user(text = 'hello'): number {
    return this.add('user/message', userMsg(`u${++this.#ids}`, text), { surfaceOp: 'append' })
  }
  request(): number {
    this.add('request/header', { header: { config: { provider: 'p', model: 'm' } }, reason: 'initial' })
    return this.add('request/context', { provider: 'p', model: 'm' })
  }
  chunks(chunks: readonly StreamChunk[]): number[] {
    return chunks.map((chunk) => this.add('assistant/chunk', { turn: this.turn, step: this.step, chunk }))
  }
  anchor(content: ContentBlock[], cited: number[] | undefined, extra: { usage?: TokenUsage; interrupted?: true } = {}): number {
    const message = { id: `a${++this.#ids}`, role: 'assistant', content, source: { kind: 'model', provider: 'p', model: 'm' } }
    return this.add(
      'assistant/message',
      { turn: this.turn, step: this.step, message, ...extra },
      { surfaceOp: 'append', ...(cited === undefined ? {} : { sourceEventSeqs: cited }) },
    )
  }
  /** Logs an attempt's chunks and its anchor (or interrupted prefix), assembled like the loop does. */
  attempt(chunks: readonly StreamChunk[], interrupted = false): number {
    const seqs = this.chunks(chunks)
    const assembler = new StreamAssembler()
    chunks.forEach((c) => assembler.push(c))
    const result = assembler.result()
    const content = interrupted ? (assembler.interruptedContent() ?? []) : result.content
    return this.anchor(content, seqs, { ...(result.usage ? { usage: result.usage } : {}), ...(interrupted ? { interrupted: true as const } : {}) })
  }
  call(callId: string, name = 'read', args = '{}'): number {
    return this.add('tool/call', { turn: this.turn, step: this.step, callId, name, arguments: args })
  }
  result(callId: string, callSeq: number | undefined, error?: { name: string; code: string }): number {
    const message = {
      id: `r${++this.#ids}`,
      role: 'user',
      content: [{ type: 'tool-result', toolCallId: callId, content: 'ok' }],
      source: { kind: 'tool', callId },
    }
    return this.add(
      'tool/result',
      { turn: this.turn, step: this.step, message, ...(error ? { error } : {}) },
      { surfaceOp: 'append', ...(callSeq === undefined ? {} : { sourceEventSeqs: [callSeq] }) },
    )
  }
  /** A complete one-step text turn. */
  textTurn(text = 'hi'): this {
    this.turnStart()
    this.stepStart()
    this.user()
    this.request()
    this.attempt(textResponse(text))
    this.stepEnd()
    this.turnEnd()
    return this
  }
}

const calls = [
  { id: 'c1', name: 'read', arguments: '{"path":"a"}' },
  { id: 'c2', name: 'list', arguments: '' },
]

/** A sound log exercising seeds, retries, tools, blocks, max-tokens, cancellation, TL-17, repair and replaces. */
function soundLog(): Raw[] {
  const log = new Log()
  // seed: starts at turn 3
  log.splice()
  log.turnStart(3)
  log.splice()
  log.stepStart()
  const firstUser = log.user()
  log.request()
  const firstAnchor = log.attempt(textResponse('hi', { usage: { inputTokens: 3, outputTokens: 1 } }))
  log.stepEnd()
  log.turnEnd()
  log.add('session/end-seed', {})
  // live turn 4: a failed attempt, a retry with tool calls, then a text step (TU-9)
  log.turnStart()
  log.stepStart()
  log.user('use tools')
  log.request()
  log.chunks([{ type: 'text-delta', index: 0, text: 'partial' }, ...errorResponse({ message: 'busy', code: 'SERVER', status: 503 })])
  log.add('llm/retry', { turn: 4, step: 1, retryId: 'r1', provider: 'p', retry: 1, delayMs: 5, failure: { message: 'busy', code: 'SERVER', status: 503 } })
  log.add('plugin/note', { text: 'a type the checker does not know' }, { ignorable: true })
  log.add('llm/retry-started', { turn: 4, step: 1, retryId: 'r1', retry: 1 })
  log.attempt(toolCallResponse(calls, 'let me look', { usage: { inputTokens: 9, outputTokens: 4 } }))
  const c1 = log.call('c1', 'read', '{"path":"a"}')
  const c2 = log.call('c2', 'list', '')
  const r1 = log.result('c1', c1)
  log.result('c2', c2)
  log.add('todo/write', { todos: [{ content: 'x', status: 'done' }] })
  log.stepEnd()
  log.stepStart()
  log.attempt(textResponse('done'))
  log.stepEnd()
  log.turnEnd()
  // turn 5: rejected at the first proposal (TU-5)
  log.turnStart()
  log.splice()
  log.turnEnd({ kind: 'blocked' })
  // turn 6: max-tokens, steered on, ends max-tokens (TU-12)
  log.turnStart()
  log.stepStart()
  log.user()
  log.attempt(maxTokensResponse('cut'))
  log.stepEnd()
  log.stepStart()
  log.user('go on')
  log.attempt(textResponse('finished'))
  log.stepEnd()
  log.turnEnd({ kind: 'max-tokens' })
  // turn 7: cancelled mid-stream with a visible prefix (CX-7)
  log.turnStart()
  log.stepStart()
  log.user()
  log.attempt(
    [
      { type: 'reasoning-delta', index: 0, text: 'thinking' },
      { type: 'tool-call-delta', index: 1, id: 'cx', argumentsDelta: '{' },
    ],
    true,
  )
  log.stepEnd()
  log.turnEnd({ kind: 'aborted', reason: { kind: 'user' } })
  // turn 8: scheduler failure, a started call keeps no result (TL-17)
  log.turnStart()
  log.stepStart()
  log.user()
  log.attempt(
    toolCallResponse([
      { id: 'c3', name: 'read', arguments: '{}' },
      { id: 'c4', name: 'read', arguments: '{}' },
    ]),
  )
  log.call('c3')
  log.stepEnd()
  log.turnEnd({ kind: 'error', error: { message: 'scheduler failed', code: 'UNKNOWN' } })
  // turn 9: repaired after a crash (RS-4/5)
  log.turnStart()
  log.stepStart()
  log.user()
  log.attempt(
    toolCallResponse([
      { id: 'c5', name: 'read', arguments: '{}' },
      { id: 'c6', name: 'read', arguments: '{}' },
    ]),
  )
  const c5 = log.call('c5')
  log.result('c5', c5, { name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' })
  log.result('c6', undefined, { name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' })
  log.stepEnd()
  log.turnEnd({ kind: 'interrupted' })
  // replacements outside a turn: a tool result rewrite (SS-6) and a summary over the first exchange
  const msg = { id: 'r1b', role: 'user', content: [{ type: 'tool-result', toolCallId: 'c1', content: 'trimmed' }], source: { kind: 'tool', callId: 'c1' } }
  log.add('tool/result', { turn: 4, step: 1, message: msg }, { surfaceOp: { op: 'replace', start: r1, end: r1 }, sourceEventSeqs: [r1] })
  log.add('user/message', userMsg('sum', 'summary'), {
    surfaceOp: { op: 'replace', start: firstUser, end: firstAnchor },
    sourceEventSeqs: [firstUser, firstAnchor],
  })
  // turn 10: one step, then a rejected later proposal (TU-6)
  log.turnStart()
  log.stepStart()
  log.user()
  log.attempt(textResponse('k'))
  log.stepEnd()
  log.splice()
  log.turnEnd({ kind: 'blocked' })
  return log.events
}

const at = (violations: { rule: string; seq: number }[]) => violations.map((v) => `${v.rule}@${v.seq}`)
const indexOf = (events: Raw[], pred: (e: Raw) => boolean, from = 0) => events.findIndex((e, k) => k >= from && pred(e))

describe('checkSessionInvariants', () => {
  it('a sound log has no violations', () => {
    expect(checkSessionInvariants(soundLog())).toEqual([])
    expect(checkSessionInvariants([])).toEqual([])
    expect(checkSessionInvariants(new Log().textTurn().textTurn().events)).toEqual([])
  })

  it('every violation names a known rule and a seq, and the checker never throws', () => {
    fc.assert(
      fc.property(fc.array(fc.anything(), { maxLength: 8 }), (garbage) => {
        const violations = checkSessionInvariants(garbage)
        for (const v of violations) expect(typeof v.rule === 'string' && Number.isInteger(v.seq) && v.message.length > 0).toBe(true)
      }),
    )
  })

  describe('shape', () => {
    it('non-array input', () => {
      expect(at(checkSessionInvariants('nope' as unknown as unknown[]))).toEqual(['shape@-1'])
    })

    it('garbage events are reported, not thrown', () => {
      expect(at(checkSessionInvariants([null, 'x', { seq: 2, time: 0, type: 'turn/start', data: { turn: 0 } }]))).toEqual(['shape@0', 'shape@1', 'shape@2'])
    })

    it('a bad envelope key or bad per-type data', () => {
      const events = new Log().textTurn().events
      ;(events[2] as Record<string, unknown>).extra = 1
      events[4].data = { ...events[4].data, header: { config: { provider: '', model: 'm' } } }
      expect(at(checkSessionInvariants(events))).toEqual(['shape@2', 'shape@4'])
    })

    it('unknown types are checked for their envelope only', () => {
      const log = new Log().textTurn()
      log.add('plugin/thing', { anything: [1, 2] })
      expect(checkSessionInvariants(log.events)).toEqual([])
    })
  })

  it('contiguous-seq', () => {
    const events = new Log().textTurn().events
    const stepEnd = indexOf(events, (e) => e.type === 'step/end')
    events[stepEnd].seq = 99
    expect(at(checkSessionInvariants(events))).toEqual([`contiguous-seq@${stepEnd}`])
  })

  describe('turn-enclosure', () => {
    it('turn numbers must continue at highest + 1', () => {
      const log = new Log().textTurn()
      log.turn = 2
      log.textTurn()
      expect(at(checkSessionInvariants(log.events))).toEqual([`turn-enclosure@${indexOf(log.events, (e) => e.type === 'turn/start', 1)}`])
    })

    it('the first turn may have any number; the seed region need only increase', () => {
      const seeded = new Log()
      seeded.turn = 6
      seeded.textTurn()
      seeded.turn = 9
      seeded.textTurn()
      seeded.add('session/end-seed', {})
      seeded.textTurn()
      expect(checkSessionInvariants(seeded.events)).toEqual([])
      const live = seeded.events.filter((e) => e.type !== 'session/end-seed').map((e, k) => ({ ...e, seq: k }))
      expect(at(checkSessionInvariants(live)).filter((r) => r.startsWith('turn-enclosure'))).toHaveLength(1)
    })

    it('turn/end while a step is open', () => {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      const end = log.turnEnd()
      expect(at(checkSessionInvariants(log.events))).toEqual([`turn-enclosure@${end}`])
    })

    it('steps are numbered from 1 and only inside the open turn', () => {
      const log = new Log()
      log.turnStart()
      log.step = 1
      const bad = log.stepStart()
      log.stepEnd()
      log.turnEnd()
      const outside = log.add('step/start', { turn: 1, step: 3 })
      const stray = log.add('step/end', { turn: 1, step: 3 })
      expect(at(checkSessionInvariants(log.events))).toEqual([`turn-enclosure@${bad}`, `turn-enclosure@${outside}`, `turn-enclosure@${stray}`])
    })

    it('turn/start while a turn is open; turn/end with none open', () => {
      const log = new Log()
      log.turnStart()
      const nested = log.turnStart()
      log.turnEnd()
      const extra = log.turnEnd()
      expect(at(checkSessionInvariants(log.events))).toEqual([`turn-enclosure@${nested}`, `turn-enclosure@${extra}`])
    })
  })

  describe('balanced', () => {
    it('a complete log may not end inside a step or a turn', () => {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      const last = log.user()
      expect(at(checkSessionInvariants(log.events))).toEqual([`balanced@${last}`, `balanced@${last}`])
    })

    /** A step whose model asks for c1 and c2: c1 runs and commits, c2 asks a person; `then` writes the rest. */
    const askingStep = (then: (log: Log, seqs: { c1: number; c2: number }) => void) => {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      log.request()
      log.attempt(toolCallResponse(calls))
      const c1 = log.call('c1', 'read', calls[0].arguments)
      const c2 = log.call('c2', 'list', calls[1].arguments)
      then(log, { c1, c2 })
      return log
    }
    const ask = (log: Log, callId: string, name: string) => log.add('tool/approval-request', { turn: log.turn, step: log.step, callId, name, reason: 'may I?' })

    it('a log parked in an approval wait is at rest: the last call waits for its answer, every earlier call has its result', () => {
      const parked = askingStep((log, { c1 }) => {
        ask(log, 'c2', 'list')
        log.result('c1', c1)
      })
      expect(checkSessionInvariants(parked.events)).toEqual([])
      expect(checkLifecycleInvariants(parked.events)).toEqual([])
      // the discarded inbox of the disposal may follow
      parked.splice()
      expect(checkSessionInvariants(parked.events)).toEqual([])
      expect(checkLifecycleInvariants(parked.events)).toEqual([])
    })

    it('a log that only looks parked is not at rest', () => {
      // the session rules report it unbalanced, the lifecycle rules a turn that never ended
      const rulesOf = (log: Log) => [...checkSessionInvariants(log.events), ...checkLifecycleInvariants(log.events)].map((v) => v.rule)
      // an earlier call has no result yet
      expect(rulesOf(askingStep((log) => ask(log, 'c2', 'list')))).toEqual(expect.arrayContaining(['balanced', 'turn-closes-once']))
      // the question was answered: the call goes on
      const answered = askingStep((log, { c1 }) => {
        log.result('c1', c1)
        ask(log, 'c2', 'list')
        log.add('tool/approval-answer', { turn: log.turn, step: log.step, callId: 'c2', decision: 'approve' })
      })
      expect(rulesOf(answered)).toEqual(expect.arrayContaining(['balanced', 'turn-closes-once']))
      // the waiting call is not the last that started
      const other = new Log()
      other.turnStart()
      other.stepStart()
      other.user()
      other.request()
      other.attempt(toolCallResponse(calls))
      other.call('c1', 'read', calls[0].arguments)
      ask(other, 'c1', 'read')
      other.call('c2', 'list', calls[1].arguments)
      expect(rulesOf(other)).toEqual(expect.arrayContaining(['balanced', 'turn-closes-once']))
      // no question at all: a turn cut inside its tools
      expect(rulesOf(askingStep((log, { c1, c2 }) => (log.result('c1', c1), log.result('c2', c2))))).toEqual(
        expect.arrayContaining(['balanced', 'turn-closes-once']),
      )
    })

    it('a log read while a turn runs may (complete: false)', () => {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      log.attempt(toolCallResponse([calls[0]]))
      log.call('c1', 'read', calls[0].arguments)
      expect(checkSessionInvariants(log.events, { complete: false })).toEqual([])
    })
  })

  describe('event-enclosure', () => {
    it('chunks must name the open step; request records need a turn; user input needs a step', () => {
      const log = new Log()
      const header = log.add('request/header', { header: { config: { provider: 'p', model: 'm' } }, reason: 'initial' })
      const stray = log.user()
      log.turnStart()
      log.stepStart()
      log.user()
      const chunk = log.add('assistant/chunk', { turn: 1, step: 2, chunk: { type: 'finish', reason: { kind: 'stop' } } })
      log.anchor([], [])
      log.stepEnd()
      log.turnEnd()
      expect(at(checkSessionInvariants(log.events))).toEqual([`event-enclosure@${header}`, `event-enclosure@${stray}`, `event-enclosure@${chunk}`])
    })
  })

  it('step-input-first', () => {
    const log = new Log()
    log.turnStart()
    log.stepStart()
    log.user()
    log.request()
    const late = log.user('late')
    log.attempt(textResponse('x'))
    log.stepEnd()
    log.turnEnd()
    expect(at(checkSessionInvariants(log.events))).toEqual([`step-input-first@${late}`])
  })

  describe('chunk-citation', () => {
    function step(build: (log: Log) => void): { log: Log; violations: string[] } {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      build(log)
      log.stepEnd()
      log.turnEnd()
      return { log, violations: at(checkSessionInvariants(log.events)) }
    }

    it('cites something that is not a chunk of its step', () => {
      let anchor = -1
      const { violations } = step((log) => {
        const seqs = log.chunks(textResponse('a'))
        anchor = log.anchor([{ type: 'text', text: 'a' }], [2, ...seqs])
      })
      expect(violations).toEqual([`chunk-citation@${anchor}`])
    })

    it('citations not ascending', () => {
      let anchor = -1
      const { violations } = step((log) => {
        const seqs = log.chunks(textResponse('a'))
        anchor = log.anchor([{ type: 'text', text: 'a' }], [...seqs].reverse())
      })
      expect(violations).toContain(`chunk-citation@${anchor}`)
    })

    it('leaves out a chunk of its own attempt', () => {
      let anchor = -1
      const { violations } = step((log) => {
        const seqs = log.chunks(textResponse('a'))
        anchor = log.anchor([{ type: 'text', text: 'a' }], seqs.slice(0, -1))
      })
      expect(violations).toEqual([`chunk-citation@${anchor}`])
    })

    it('uncited earlier chunks must be a failed attempt', () => {
      let anchor = -1
      const { violations } = step((log) => {
        log.chunks([{ type: 'text-delta', index: 0, text: 'lost' }])
        anchor = log.attempt(textResponse('a'))
      })
      expect(violations).toEqual([`chunk-citation@${anchor}`])
    })

    it('RQ-11 an anchor never cites a failed attempt', () => {
      let anchor = -1
      const { log, violations } = step((log) => {
        const seqs = log.chunks(errorResponse({ message: 'x', code: 'SERVER' }))
        anchor = log.anchor([], seqs)
      })
      expect(violations).toEqual([`chunk-citation@${anchor}`])
      expect(log.events.length).toBeGreaterThan(0)
    })

    it('ST-7 usage must be the last cited usage chunk', () => {
      let anchor = -1
      const { violations } = step((log) => {
        const seqs = log.chunks(textResponse('a', { usage: { inputTokens: 1, outputTokens: 1 } }))
        anchor = log.anchor([{ type: 'text', text: 'a' }], seqs, { usage: { inputTokens: 2, outputTokens: 1 } })
      })
      expect(violations).toEqual([`chunk-citation@${anchor}`])
    })

    it('a cited chunk after finish', () => {
      let anchor = -1
      const { violations } = step((log) => {
        const seqs = log.chunks([...textResponse('a'), { type: 'text-delta', index: 0, text: 'b' }])
        anchor = log.anchor([{ type: 'text', text: 'a' }], seqs)
      })
      expect(violations).toEqual([`chunk-citation@${anchor}`])
    })

    it('ST-7/ST-8 an empty stream cites [] and absent citations are unknown provenance', () => {
      expect(step((log) => log.anchor([], [])).violations).toEqual([])
      expect(step((log) => log.anchor([{ type: 'text', text: 'x' }], undefined)).violations).toEqual([])
    })
  })

  describe('call-from-anchor', () => {
    function toolStep(build: (log: Log) => void, end: TurnEndReason = { kind: 'completed' }): Log {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      log.attempt(toolCallResponse(calls))
      build(log)
      log.stepEnd()
      log.turnEnd(end)
      return log
    }

    it('a call the anchor never made', () => {
      let bad = -1
      const log = toolStep((log) => {
        bad = log.call('zz')
        log.result('zz', bad)
        log.result('c1', log.call('c1', 'read', calls[0].arguments))
        log.result('c2', log.call('c2', 'list', ''))
      })
      expect(at(checkSessionInvariants(log.events))).toEqual([`call-from-anchor@${bad}`])
    })

    it('different arguments, and out of model order', () => {
      let second = -1
      let first = -1
      const log = toolStep((log) => {
        second = log.call('c2', 'list', 'changed')
        first = log.call('c1', 'read', calls[0].arguments)
        log.result('c2', second)
        log.result('c1', first)
      })
      expect(at(checkSessionInvariants(log.events))).toEqual([`call-from-anchor@${second}`, `call-from-anchor@${first}`])
    })

    it('a block never started is a violation at step/end, unless the turn ends error (TL-17)', () => {
      const build = (log: Log) => log.result('c1', log.call('c1', 'read', calls[0].arguments))
      const log = toolStep(build)
      expect(at(checkSessionInvariants(log.events))).toEqual([`call-from-anchor@${indexOf(log.events, (e) => e.type === 'step/end')}`])
      expect(checkSessionInvariants(toolStep(build, { kind: 'error', error: { message: 'm', code: 'UNKNOWN' } }).events)).toEqual([])
    })
  })

  describe('call-result-pairing', () => {
    function toolStep(build: (log: Log) => void, end: TurnEndReason = { kind: 'completed' }): Log {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      log.attempt(toolCallResponse([calls[0]]))
      build(log)
      log.stepEnd()
      log.turnEnd(end)
      return log
    }
    const callC1 = (log: Log) => log.call('c1', 'read', calls[0].arguments)

    it('a result with no call in the step', () => {
      let bad = -1
      const log = toolStep((log) => {
        bad = log.result('c1', 0)
        log.result('c1', callC1(log))
      })
      expect(at(checkSessionInvariants(log.events))).toEqual([`call-result-pairing@${bad}`])
    })

    it('a result citing the wrong seq, and a second result', () => {
      let wrong = -1
      let second = -1
      const log = toolStep((log) => {
        const c = callC1(log)
        wrong = log.result('c1', c - 1)
        second = log.result('c1', c)
      })
      expect(at(checkSessionInvariants(log.events))).toEqual([`call-result-pairing@${wrong}`, `call-result-pairing@${second}`])
    })

    it('a duplicate call id', () => {
      let dup = -1
      const log = toolStep((log) => {
        const c = callC1(log)
        dup = callC1(log)
        log.result('c1', c)
      })
      expect(at(checkSessionInvariants(log.events))).toContain(`call-result-pairing@${dup}`)
    })

    it('a call without a result at step/end, excused when the turn ends error (TL-17)', () => {
      const log = toolStep(callC1)
      expect(at(checkSessionInvariants(log.events))).toEqual([`call-result-pairing@${indexOf(log.events, (e) => e.type === 'step/end')}`])
      expect(checkSessionInvariants(toolStep(callC1, { kind: 'error', error: { message: 'm', code: 'UNKNOWN' } }).events)).toEqual([])
    })

    it("RS-5 only repair's uncited TOOL_NOT_STARTED result may lack a call", () => {
      let cited = -1
      const log = toolStep(
        (log) => {
          cited = log.result('c1', undefined, { name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' })
        },
        { kind: 'interrupted' },
      )
      expect(at(checkSessionInvariants(log.events))).toEqual([`call-result-pairing@${cited}`, `call-from-anchor@${cited + 1}`])
      const repaired = toolStep((log) => log.result('c1', undefined, { name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' }), {
        kind: 'interrupted',
      })
      expect(checkSessionInvariants(repaired.events)).toEqual([])
    })
  })

  it('no-step-after-reject', () => {
    const log = new Log()
    log.turnStart()
    log.stepStart()
    log.user()
    log.attempt(textResponse('a'))
    log.stepEnd()
    log.add('request/context', { provider: 'p', model: 'm' })
    log.splice()
    const end = log.turnEnd({ kind: 'blocked' })
    expect(at(checkSessionInvariants(log.events))).toEqual([`no-step-after-reject@${end}`])
  })

  describe('surface-metadata', () => {
    it('only surface types carry surface metadata, and they always carry surfaceOp', () => {
      const log = new Log()
      log.textTurn()
      const bad = log.add('agent/inbox/spliced', { target: 'next-step', start: 0, inserted: [] }, { surfaceOp: 'append' })
      const missing = log.add('user/message', userMsg('x', 'x'))
      expect(at(checkSessionInvariants(log.events))).toEqual([`surface-metadata@${bad}`, `surface-metadata@${missing}`])
    })

    it('citations are earlier, unique, and non-empty except on assistant/message', () => {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      const later = log.add('user/message', userMsg('a', 'a'), { surfaceOp: 'append', sourceEventSeqs: [5] })
      const dup = log.add('user/message', userMsg('b', 'b'), { surfaceOp: 'append', sourceEventSeqs: [0, 0] })
      const empty = log.add('user/message', userMsg('c', 'c'), { surfaceOp: 'append', sourceEventSeqs: [] })
      log.attempt(textResponse('x'))
      log.stepEnd()
      log.turnEnd()
      expect(at(checkSessionInvariants(log.events))).toEqual([`surface-metadata@${later}`, `surface-metadata@${dup}`, `surface-metadata@${empty}`])
    })

    it('replace ranges must be current surface nodes, cited in full; a result replace shadows one result of its call', () => {
      const log = new Log().textTurn()
      const user = indexOf(log.events, (e) => e.type === 'user/message')
      const anchor = indexOf(log.events, (e) => e.type === 'assistant/message')
      const notSurface = log.add('user/message', userMsg('s1', 's'), { surfaceOp: { op: 'replace', start: 0, end: anchor }, sourceEventSeqs: [0] })
      const uncited = log.add('user/message', userMsg('s2', 's'), { surfaceOp: { op: 'replace', start: user, end: anchor }, sourceEventSeqs: [user] })
      const msg = { id: 'r', role: 'user', content: [{ type: 'tool-result', toolCallId: 'c1', content: 'x' }], source: { kind: 'tool', callId: 'c1' } }
      const wrongKind = log.add(
        'tool/result',
        { turn: 1, step: 1, message: msg },
        { surfaceOp: { op: 'replace', start: uncited, end: uncited }, sourceEventSeqs: [uncited] },
      )
      expect(at(checkSessionInvariants(log.events))).toEqual([`surface-metadata@${notSurface}`, `surface-metadata@${uncited}`, `surface-metadata@${wrongKind}`])
    })
  })

  describe('no-tool-call-in-max-tokens-step', () => {
    it('a max-tokens anchor keeping tool-call blocks', () => {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      const seqs = log.chunks(maxTokensResponse('cut'))
      const anchor = log.anchor(
        [
          { type: 'text', text: 'cut' },
          { type: 'tool-call', id: 'c', name: 'n', arguments: '{' },
        ],
        seqs,
      )
      log.stepEnd()
      log.turnEnd({ kind: 'max-tokens' })
      expect(at(checkSessionInvariants(log.events))).toEqual([`no-tool-call-in-max-tokens-step@${anchor}`])
    })

    it('ST-9 a tool/call after a max-tokens anchor', () => {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      log.attempt([...toolCallResponse([calls[0]]).slice(0, -1), { type: 'finish', reason: { kind: 'max-tokens' } }])
      const call = log.call('c1', 'read', calls[0].arguments)
      log.result('c1', call)
      log.stepEnd()
      log.turnEnd({ kind: 'max-tokens' })
      expect(at(checkSessionInvariants(log.events))).toEqual([`no-tool-call-in-max-tokens-step@${call}`])
    })
  })

  describe('interrupted-prefix', () => {
    function cancelled(content: ContentBlock[], end: TurnEndReason): { log: Log; prefix: number } {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      const seqs = log.chunks([{ type: 'text-delta', index: 0, text: 'x' }])
      const prefix = log.anchor(content, seqs, { interrupted: true })
      log.stepEnd()
      log.turnEnd(end)
      return { log, prefix }
    }
    const aborted: TurnEndReason = { kind: 'aborted', reason: { kind: 'user' } }

    it('CX-7 no tool-call blocks, and some visible text', () => {
      const withCall = cancelled(
        [
          { type: 'text', text: 'x' },
          { type: 'tool-call', id: 'c', name: 'n', arguments: '' },
        ],
        aborted,
      )
      expect(at(checkSessionInvariants(withCall.log.events))).toEqual([`interrupted-prefix@${withCall.prefix}`])
      const blank = cancelled([{ type: 'text', text: ' \n' }], aborted)
      expect(at(checkSessionInvariants(blank.log.events))).toEqual([`interrupted-prefix@${blank.prefix}`])
    })

    it('CX-5 its turn ends aborted', () => {
      const { log } = cancelled([{ type: 'text', text: 'x' }], { kind: 'completed' })
      expect(at(checkSessionInvariants(log.events))).toEqual([`interrupted-prefix@${log.events.length - 1}`])
    })
  })

  describe('sticky-max-tokens', () => {
    it('TU-12 a turn with a max-tokens step does not end completed', () => {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      log.attempt(maxTokensResponse('cut'))
      log.stepEnd()
      const end = log.turnEnd({ kind: 'completed' })
      expect(at(checkSessionInvariants(log.events))).toEqual([`sticky-max-tokens@${end}`])
    })

    it('a turn ending max-tokens had a max-tokens step', () => {
      const log = new Log().textTurn()
      log.events[log.events.length - 1].data.reason = { kind: 'max-tokens' }
      expect(at(checkSessionInvariants(log.events))).toEqual([`sticky-max-tokens@${log.events.length - 1}`])
    })
  })

  describe('max-steps', () => {
    it('TU-16 turn/end{max-steps} right after step/end, once the turn ran its limit, is sound', () => {
      const log = new Log().textTurn()
      log.events[log.events.length - 1].data.reason = { kind: 'max-steps', limit: 1 }
      expect(checkSessionInvariants(log.events)).toEqual([])
    })

    it('TU-16 a turn ending max-steps with fewer steps than its limit, or with no step at all, breaks the rule', () => {
      const short = new Log().textTurn()
      short.events[short.events.length - 1].data.reason = { kind: 'max-steps', limit: 2 }
      expect(at(checkSessionInvariants(short.events))).toEqual([`max-steps@${short.events.length - 1}`])
      const none = new Log()
      none.turnStart()
      const end = none.turnEnd({ kind: 'max-steps', limit: 1 })
      expect(at(checkSessionInvariants(none.events))).toEqual([`max-steps@${end}`])
    })
  })

  describe('retry-sequence', () => {
    const failure = { message: 'down', code: 'SERVER' }
    const retry = (log: Log, n: number, id = `r${n}`) =>
      log.add('llm/retry', { turn: log.turn, step: log.step, retryId: id, provider: 'p', retry: n, delayMs: 10, failure })
    const started = (log: Log, n: number, id = `r${n}`) => log.add('llm/retry-started', { turn: log.turn, step: log.step, retryId: id, retry: n })
    function retried(build: (log: Log) => void, end: TurnEndReason = { kind: 'completed' }): string[] {
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      log.request()
      build(log)
      log.stepEnd()
      log.turnEnd(end)
      return at(checkSessionInvariants(log.events))
    }

    it('a failed attempt, llm/retry, the backoff, llm/retry-started, then the next attempt is sound; so is a cancel during the backoff', () => {
      const sound = (log: Log) => {
        log.chunks(errorResponse(failure))
        retry(log, 1)
        started(log, 1)
        log.chunks(errorResponse(failure))
        retry(log, 2)
        log.splice() // inbox edits may land during the backoff
        started(log, 2)
        log.attempt(textResponse('ok'))
      }
      expect(retried(sound)).toEqual([])
      const cancelled = (log: Log) => {
        log.chunks(errorResponse(failure))
        retry(log, 1)
      }
      expect(retried(cancelled, { kind: 'aborted', reason: { kind: 'user' } })).toEqual([])
    })

    it('llm/retry must follow a failed finish and count up; llm/retry-started must name the waiting retry', () => {
      let seq = -1
      const noFailure = retried((log) => {
        log.attempt(textResponse('fine'))
        seq = retry(log, 1)
        started(log, 1)
      })
      expect(noFailure).toEqual([`retry-sequence@${seq}`])
      const outOfOrder: number[] = []
      expect(
        retried((log) => {
          log.chunks(errorResponse(failure))
          outOfOrder.push(retry(log, 2))
          outOfOrder.push(started(log, 1))
          log.attempt(textResponse('ok'))
        }),
      ).toEqual(outOfOrder.map((k) => `retry-sequence@${k}`))
    })

    it('no attempt streams before the retry starts, and a retry left waiting means the turn ended aborted', () => {
      let chunk = -1
      const early = retried((log) => {
        log.chunks(errorResponse(failure))
        retry(log, 1)
        chunk = log.attempt(textResponse('ok')) - textResponse('ok').length
        started(log, 1)
      })
      expect(early).toContain(`retry-sequence@${chunk}`)
      const log = new Log()
      log.turnStart()
      log.stepStart()
      log.user()
      log.chunks(errorResponse(failure))
      retry(log, 1)
      log.stepEnd()
      const end = log.turnEnd({ kind: 'error', error: failure })
      expect(at(checkSessionInvariants(log.events))).toEqual([`retry-sequence@${end}`])
    })

    it('retry events outside their step are enclosure violations', () => {
      const log = new Log().textTurn()
      const stray = log.add('llm/retry-started', { turn: 1, step: 1, retryId: 'r1', retry: 1 })
      expect(at(checkSessionInvariants(log.events))).toEqual([`event-enclosure@${stray}`])
    })
  })

  it('reports every violation of a log, sorted by seq', () => {
    const events = soundLog()
    events[3].seq = 10_000 // unambiguous: a seq no other event has
    const firstChunk = indexOf(events, (e) => e.type === 'assistant/chunk')
    events[firstChunk].data = { ...events[firstChunk].data, step: 9 }
    const violations = checkSessionInvariants(events)
    expect(at(violations)).toEqual([
      `contiguous-seq@3`,
      `event-enclosure@${firstChunk}`,
      `chunk-citation@${indexOf(events, (e) => e.type === 'assistant/message')}`,
    ])
  })
})

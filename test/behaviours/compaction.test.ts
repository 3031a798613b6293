// CP — Compaction: the policy at the pre-step checkpoint, the summary that
// replaces the compacted range, agent.compact(), CONTEXT_WINDOW_EXCEEDED
// recovery, and configuration (docs/compaction.md, docs/behaviours.md CP-*).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  AgentStateError,
  COMPACTION_INSTRUCTIONS,
  ConfigError,
  createAgent,
  estimateMessageTokens,
  userMessage,
  type Message,
  type ModelRequest,
  type SessionEvent,
  type StreamChunk,
} from '../../src/index.js'
import { memoryStore, type SessionStore } from '../../src/stores/index.js'
import { sqliteStore } from '../../src/stores/sqlite.js'
import { checkSessionInvariants, errorResponse, scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { ofType, scriptedAgent, trace, track } from '../helpers.js'

const m = (id: string, text = id) => userMessage(text, { id })
/** A long answer: about 100 tokens by the default estimate. */
const answer = (n: number) => textResponse(`answer ${n} `.padEnd(400, 'x'))
const isSummaryRequest = (request: ModelRequest) => request.system === COMPACTION_INSTRUCTIONS
/** The scripted model's turn requests (the model summariser's requests aside). */
const turnRequests = (requests: readonly ModelRequest[]) => requests.filter((r) => !isSummaryRequest(r))
const tokensOf = (messages: readonly Message[]) => messages.reduce((sum, message) => sum + estimateMessageTokens(message), 0)
const summaryEvents = (events: readonly SessionEvent[]) =>
  events.filter((e) => e.type === 'user/message' && e.surfaceOp !== 'append' && e.data.source.kind === 'plugin')

/** A model with a small window that summarises when asked (the summariser's request carries its instructions). */
function windowedModel(contextWindow: number, respond: (request: ModelRequest, n: number) => ScriptEntry = (_r, n) => answer(n)) {
  let turns = 0
  let summaries = 0
  const entry = (request: ModelRequest) => {
    if (isSummaryRequest(request)) return textResponse(`summary ${++summaries}: the user asked questions and got answers.`)
    const next = respond(request, ++turns)
    return typeof next === 'function' ? next(request) : next
  }
  return scriptedModel(
    Array.from({ length: 2000 }, () => entry),
    { contextWindow },
  )
}

describe('CP — Compaction', () => {
  it('CP-1: past the threshold, the turn compacts before its step: summary, record, then the step with summary + tail + the new prompt', async () => {
    const model = windowedModel(800)
    const agent = track(createAgent({ model, logger: { error: () => {} } }))
    for (let n = 1; n <= 7; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const compactions = ofType(agent, 'compaction/completed')
    expect(compactions).toHaveLength(1)
    const record = compactions[0]
    const summary = agent.session.at(record.seq - 1)!
    // the summary sits between the claim and step/start of the turn whose request passed 80% of the window
    const turn = agent.session.events.findLast((e) => e.type === 'turn/start' && e.seq < record.seq)!
    expect(trace(agent.session.events.slice(turn.seq, record.seq + 3))).toEqual([
      `turn/start{${(turn.data as { turn: number }).turn}}`,
      'spliced(next-turn -1)',
      expect.stringMatching(/^user\/message\(\[Summary of the earlier conversation/),
      'compaction/completed',
      expect.stringMatching(/^step\/start/),
      expect.stringMatching(/^user\/message\(question/),
    ])
    expect(record.data).toMatchObject({ reason: 'auto', messageId: (summary.data as { id: string }).id, contextWindow: 800 })
    expect(record.data.tokensBefore).toBeGreaterThan(0.8 * 800)
    expect(record.data.tokensAfter).toBeLessThan(record.data.tokensBefore)
    // the next request: the summary first, then the verbatim tail, then the prompt; the log keeps everything
    const requests = turnRequests(model.requests)
    const after = requests[requests.length - 1 - (7 - (turn.data as { turn: number }).turn)]
    expect(after.messages[0]).toBe(summary.data)
    expect(after.messages.at(-1)).toMatchObject({ id: `p${(turn.data as { turn: number }).turn}` })
    expect(after.messages.length).toBeLessThan(requests[requests.indexOf(after) - 1].messages.length)
    expect(ofType(agent, 'user/message').filter((e) => e.surfaceOp === 'append')).toHaveLength(7)
  })

  it('CP-1: under the threshold nothing is compacted and the log is what it would be without compaction', async () => {
    const script = [answer(1), answer(2)]
    const withWindow = scriptedAgent(script, { model: scriptedModel(script, { contextWindow: 100_000 }) })
    const without = scriptedAgent(script)
    for (const { agent } of [withWindow, without]) {
      await agent.run(m('a'))
      await agent.run(m('b'))
    }
    expect(trace(withWindow.agent)).toEqual(trace(without.agent))
    expect(ofType(withWindow.agent, 'compaction/completed')).toEqual([])
  })

  it('CP-2: the summary replaces the range, citing every shadowed node; the summariser gets exactly those messages', async () => {
    const seen: Message[][] = []
    const model = windowedModel(800)
    const agent = track(
      createAgent({
        model,
        compaction: {
          summarise: ({ messages, reason }) => {
            seen.push([...messages])
            return { summary: `summary of ${messages.length} (${reason})`, usage: { inputTokens: 7, outputTokens: 3 } }
          },
        },
      }),
    )
    for (let n = 1; n <= 7; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const [summary] = summaryEvents(agent.session.events)
    const op = summary.surfaceOp as { op: 'replace'; start: number; end: number }
    expect(op.start).toBe(summary.sourceEventSeqs![0])
    expect(op.end).toBe(summary.sourceEventSeqs!.at(-1))
    // the summariser saw the shadowed nodes' messages, in order
    const shadowed = summary.sourceEventSeqs!.map((seq) => {
      const e = agent.session.at(seq)!
      return e.type === 'user/message' ? e.data : (e.data as { message: Message }).message
    })
    expect(seen).toEqual([shadowed])
    expect(textOfMessage(summary.data as Message)).toContain(`summary of ${shadowed.length} (auto)`)
    expect(ofType(agent, 'compaction/completed')[0].data.usage).toEqual({ inputTokens: 7, outputTokens: 3 })
    // no model request was spent on the summary
    expect(model.requests.some(isSummaryRequest)).toBe(false)
  })

  it('CP-2: the model summariser sends the range and one request for the summary, tools declared but not callable', async () => {
    const model = windowedModel(800)
    const agent = track(createAgent({ model, tools: [], request: { responseFormat: { type: 'text' } } }))
    for (let n = 1; n <= 7; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const summaryRequest = model.requests.find(isSummaryRequest)!
    const [summary] = summaryEvents(agent.session.events)
    expect(summaryRequest.messages.slice(0, -1).map((x) => x.id)).toEqual(
      summary.sourceEventSeqs!.map((seq) => {
        const e = agent.session.at(seq)!
        return e.type === 'user/message' ? e.data.id : (e.data as { message: Message }).message.id
      }),
    )
    expect(summaryRequest.messages.at(-1)).toMatchObject({ role: 'user', source: { kind: 'plugin', plugin: 'compaction' } })
    expect(summaryRequest.config.responseFormat).toBeUndefined()
    expect(textOfMessage(summary.data as Message)).toContain('summary 1: the user asked')
  })

  it('CP-3: a failing summariser is logged as compaction/failed, nothing is replaced, and the step runs on the full history', async () => {
    const model = windowedModel(800)
    const agent = track(
      createAgent({
        model,
        compaction: {
          summarise: () => {
            throw new Error('summariser down')
          },
        },
      }),
    )
    for (let n = 1; n <= 7; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const failed = ofType(agent, 'compaction/failed')
    expect(failed.length).toBeGreaterThan(0)
    expect(failed[0].data).toMatchObject({ reason: 'auto', failure: { message: 'summariser down', code: 'UNKNOWN' } })
    expect(summaryEvents(agent.session.events)).toEqual([])
    expect(ofType(agent, 'turn/end').map((e) => e.data.reason.kind)).toEqual(Array(7).fill('completed'))
    // every turn request carries the whole history
    const requests = turnRequests(model.requests)
    expect(requests.at(-1)!.messages).toHaveLength(13)
  })

  // the answer of a user summariser is foreign: its usage goes into compaction/completed, so it is checked like a chunk
  const badAnswers: Array<[string, unknown, RegExp]> = [
    ['a negative token count', { summary: 's', usage: { inputTokens: -1, outputTokens: 2 } }, /at usage\.inputTokens: /],
    ['a fractional token count', { summary: 's', usage: { inputTokens: 1, outputTokens: 2.5 } }, /at usage\.outputTokens: /],
    ['a -0 token count', { summary: 's', usage: { inputTokens: 1, outputTokens: -0 } }, /at usage\.outputTokens: -0 does not survive JSON/],
    ['a usage with an unknown key', { summary: 's', usage: { inputTokens: 1, outputTokens: 2, cost: 3 } }, /at usage: .*"cost"/],
    ['a usage that is not an object', { summary: 's', usage: 'lots' }, /at usage: /],
    ['a summary that is not a string', { summary: 42 }, /at summary: /],
    ['an answer with an unknown key', { summary: 's', usgae: {} }, /"usgae"/],
    ['no answer at all', undefined, /expected a string or \{ summary, usage\? \}, got undefined/],
    [
      'a usage whose read throws',
      {
        summary: 's',
        get usage(): unknown {
          throw new Error('no usage today')
        },
      },
      /could not be read: no usage today/,
    ],
  ]
  for (const [label, answer, message] of badAnswers) {
    it(`CP-3: a summariser answering ${label} fails the compaction INVALID_RESPONSE, naming what was wrong; the agent keeps serving`, async () => {
      const model = windowedModel(100_000)
      const agent = track(createAgent({ model, compaction: { keepRecent: 0.001, summarise: () => answer as string } }))
      for (let n = 1; n <= 2; n++) await agent.run(m(`p${n}`, `question ${n}`))
      const result = await agent.compact()
      expect(result).toMatchObject({ compacted: false, record: { reason: 'manual', failure: { code: 'INVALID_RESPONSE' } } })
      const failure = (result as { record: { failure: { message: string } } }).record.failure
      expect(failure.message).toMatch(/^the compaction summariser's answer /)
      expect(failure.message).toMatch(message)
      expect(agent.session.events.at(-1)!.type).toBe('compaction/failed')
      expect(summaryEvents(agent.session.events)).toEqual([])
      expect(ofType(agent, 'compaction/completed')).toEqual([])
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      // still serving, on the whole history
      expect((await agent.run(m('p3', 'question 3'))).end).toEqual({ kind: 'completed' })
      expect(turnRequests(model.requests).at(-1)!.messages).toHaveLength(5)
    })
  }

  it('CP-3: a bad usage from the summariser before a step fails that compaction and the turn runs on the full history', async () => {
    const model = windowedModel(800)
    const agent = track(createAgent({ model, compaction: { summarise: () => ({ summary: 's', usage: { inputTokens: 'many', outputTokens: 1 } as never }) } }))
    for (let n = 1; n <= 7; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const failed = ofType(agent, 'compaction/failed')
    expect(failed.length).toBeGreaterThan(0)
    expect(failed[0].data).toMatchObject({
      reason: 'auto',
      failure: { code: 'INVALID_RESPONSE', message: expect.stringMatching(/usage\.inputTokens/) as unknown },
    })
    expect(ofType(agent, 'compaction/completed')).toEqual([])
    expect(ofType(agent, 'turn/end').map((e) => e.data.reason.kind)).toEqual(Array(7).fill('completed'))
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  // docs/compaction.md "When the record is refused": the session appends one event at a time, so a refusal of the
  // record alone (the session's own gate: failNextAppend, the conformance suite's fail-append) comes after the summary
  // is logged; a store's commit takes both in one batch, so a store that fails it keeps neither
  it('CP-2: a refused compaction/completed leaves the summary logged and in effect, without a record; compact() resolves not compacted and the agent keeps serving', async () => {
    const model = windowedModel(100_000)
    // not tracked: its log breaks compaction-record on purpose
    const agent = createAgent({ model, compaction: { keepRecent: 0.001, summarise: () => 'the short story' }, logger: { error: () => {} } })
    for (let n = 1; n <= 2; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const errors: unknown[] = []
    agent.on('agent/error', ({ error }) => void errors.push(error))
    const before = agent.session.length
    agent.session.failNextAppend('compaction/completed')
    await expect(agent.compact()).resolves.toEqual({ compacted: false })
    const added = agent.session.events.slice(before)
    expect(added.map((e) => [e.type, e.surfaceOp])).toEqual([['user/message', { op: 'replace', start: 4, end: agent.session.at(before - 3)!.seq }]])
    expect(ofType(agent, 'compaction/completed')).toEqual([])
    expect(ofType(agent, 'compaction/failed')).toEqual([])
    expect(errors).toEqual([expect.objectContaining({ code: 'SESSION_APPEND_REFUSED' })])
    expect(checkSessionInvariants(agent.session.events)).toEqual([{ rule: 'compaction-record', seq: before, message: expect.any(String) as unknown }])
    // the replacement took effect: the next request carries the summary, not the shadowed exchanges
    expect((await agent.run(m('p3', 'question 3'))).end).toEqual({ kind: 'completed' })
    const request = turnRequests(model.requests).at(-1)!
    expect(request.messages.map((message) => textOfMessage(message))).toEqual([expect.stringContaining('the short story'), 'question 3'])
    await agent.dispose()
  })

  it('CP-2: a compaction/completed refused before a step ends that turn with the error, reported on agent/error; the next turn runs on the summary', async () => {
    const model = windowedModel(800)
    // not tracked: its log breaks compaction-record on purpose
    const agent = createAgent({ model, compaction: { summarise: () => 'the short story' }, logger: { error: () => {} } })
    const errors: unknown[] = []
    agent.on('agent/error', ({ error }) => void errors.push(error))
    agent.session.failNextAppend('compaction/completed', new Error('record refused'))
    for (let n = 1; n <= 8; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const summary = summaryEvents(agent.session.events)[0]
    expect(agent.session.at(summary.seq + 1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'error', error: { message: 'record refused' } } } })
    expect(errors).toEqual([expect.objectContaining({ message: 'record refused' })])
    expect(ofType(agent, 'turn/end').map((e) => e.data.reason.kind)).toEqual([...Array(6).fill('completed'), 'error', 'completed'])
    expect(textOfMessage(turnRequests(model.requests).at(-1)!.messages[0])).toContain('the short story')
    expect(checkSessionInvariants(agent.session.events)).toEqual([{ rule: 'compaction-record', seq: summary.seq, message: expect.any(String) as unknown }])
    await agent.dispose()
  })

  it('CP-2: a store that fails the commit holding the summary stores neither it nor its record; the reopened session is the log before the compaction', async () => {
    const inner = memoryStore()
    let refusing = false
    // a store whose commits fail while `refusing` (a full disk, a lost connection)
    const store: SessionStore = {
      kind: 'refusing',
      open: async (id, options) => {
        const handle = await inner.open(id, options)
        return {
          sessionId: handle.sessionId,
          created: handle.created,
          events: handle.events,
          lease: handle.lease,
          renew: () => handle.renew(),
          release: () => handle.release(),
          append: (events) => {
            if (refusing) throw new Error('disk full')
            return handle.append(events)
          },
        }
      },
      load: (id) => inner.load(id),
      list: (options) => inner.list(options),
      close: () => inner.close(),
    }
    const options = { compaction: { keepRecent: 0.001, summarise: () => 'the short story' }, store, sessionId: 'refused', logger: { error: () => {} } }
    const agent = track(await createAgent({ model: windowedModel(100_000), ...options }))
    for (let n = 1; n <= 2; n++) await agent.run(m(`p${n}`, `question ${n}`))
    await agent.whenIdle()
    const stored = agent.session.events
    refusing = true
    await agent.compact()
    await agent.dispose()
    expect((await inner.load('refused'))!.map((e) => (e as SessionEvent).type)).toEqual(stored.map((e) => e.type))
    refusing = false
    const reopened = track(await createAgent({ model: windowedModel(100_000), ...options }))
    const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown
    expect(plain(reopened.session.events.slice(0, stored.length))).toEqual(plain(stored))
    expect(reopened.session.events.slice(stored.length).map((e) => e.type)).toEqual(['session/end-seed'])
    expect(checkSessionInvariants(reopened.session.events)).toEqual([])
    expect((await reopened.run(m('p3', 'question 3'))).end).toEqual({ kind: 'completed' })
  })

  it('CP-2: a full commit batch is never cut between the summary and its record, whatever the batch size', async () => {
    // followups sent while the summariser runs are logged before the summary, so the summary can fill a batch
    for (let maxEvents = 2; maxEvents <= 6; maxEvents++) {
      const inner = memoryStore()
      const batches: SessionEvent[][] = []
      const store: SessionStore = {
        ...inner,
        open: async (id, options) => {
          const handle = await inner.open(id, options)
          return {
            ...handle,
            append: (events) => {
              batches.push([...events])
              return handle.append(events)
            },
          }
        },
      }
      let agent!: Awaited<ReturnType<typeof createAgent>>
      const summarise = async () => {
        for (let i = 0; i < 4; i++) agent.followup(m(`late${i}`))
        await Promise.resolve()
        return 'the short story'
      }
      agent = track(
        await createAgent({ model: windowedModel(100_000), compaction: { keepRecent: 0.001, summarise }, store, sessionId: 's', commits: { maxEvents } }),
      )
      for (let n = 1; n <= 2; n++) await agent.run(m(`p${n}`, `question ${n}`))
      expect(await agent.compact()).toMatchObject({ compacted: true })
      await agent.whenIdle()
      const summary = summaryEvents(agent.session.events)[0]
      const holding = batches.find((batch) => batch.some((e) => e.seq === summary.seq))!
      expect(
        holding.map((e) => e.seq),
        `maxEvents ${maxEvents}`,
      ).toContain(summary.seq + 1)
      expect(agent.session.at(summary.seq + 1)?.type).toBe('compaction/completed')
      await agent.dispose()
    }
  })

  // the model summariser's stream is checked chunk by chunk as a turn's is, so a malformed stream is no summary
  const badChunks: Array<[string, unknown, RegExp]> = [
    ['a negative index', { type: 'text-delta', index: -1, text: 'x' }, /malformed stream chunk: index: /],
    ['a chunk that is not an object', 'garbage', /malformed stream chunk: /],
    ['a bad usage', { type: 'usage', usage: { inputTokens: -1, outputTokens: 1 } }, /malformed stream chunk: usage\.inputTokens: /],
  ]
  for (const [label, chunk, message] of badChunks) {
    it(`CP-3: the model summariser streaming ${label} fails the compaction MALFORMED_RESPONSE and replaces nothing`, async () => {
      const entry = (request: ModelRequest): readonly StreamChunk[] =>
        isSummaryRequest(request) ? [chunk as StreamChunk, ...textResponse('a summary')] : answer(1)
      const model = scriptedModel(
        Array.from({ length: 10 }, () => entry),
        { contextWindow: 100_000 },
      )
      const agent = track(createAgent({ model, compaction: { keepRecent: 0.001 } }))
      for (let n = 1; n <= 2; n++) await agent.run(m(`p${n}`, `question ${n}`))
      const result = await agent.compact()
      expect(result).toMatchObject({ compacted: false, record: { failure: { code: 'MALFORMED_RESPONSE' } } })
      expect((result as { record: { failure: { message: string } } }).record.failure.message).toMatch(message)
      expect(summaryEvents(agent.session.events)).toEqual([])
      expect((await agent.run(m('p3', 'question 3'))).end).toEqual({ kind: 'completed' })
    })
  }

  it('CP-4: agent.compact() from idle compacts now, status stays idle, and resolves with the record', async () => {
    const model = windowedModel(100_000)
    const agent = track(createAgent({ model, compaction: { keepRecent: 0.001 } }))
    for (let n = 1; n <= 3; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const statuses: string[] = []
    agent.on('agent/status', ({ status }) => void statuses.push(status))
    const before = agent.messages().length
    const pending = agent.compact()
    expect(agent.status).toBe('idle')
    expect(() => agent.runMaintenance(async () => {})).toThrow(AgentStateError)
    const result = await pending
    expect(result).toMatchObject({ compacted: true, record: { reason: 'manual' } })
    expect(statuses).toEqual([])
    expect(before).toBe(6)
    expect(agent.messages()).toHaveLength(1)
    expect(agent.session.events.at(-1)!.type).toBe('compaction/completed')
    // nothing left to compact: a second call replaces nothing
    await expect(agent.compact()).resolves.toEqual({ compacted: false })
  })

  it('CP-4: agent.compact() is refused while a turn runs, and when compaction is off', async () => {
    const { agent } = scriptedAgent(['hang'], { model: scriptedModel(['hang'], { contextWindow: 800 }) })
    agent.followup('go')
    await expect(agent.compact()).rejects.toThrow(/idle/)
    agent.cancel()
    await agent.whenIdle()
    const off = scriptedAgent([], { model: scriptedModel([], { contextWindow: 800 }), compaction: false }).agent
    await expect(off.compact()).rejects.toMatchObject({ code: 'COMPACTION_OFF' })
    const unknownWindow = scriptedAgent([]).agent
    await expect(unknownWindow.compact()).rejects.toMatchObject({ code: 'COMPACTION_OFF' })
  })

  it('CP-5: a cancel while the summariser runs ends the turn aborted, with nothing replaced or recorded', async () => {
    let started!: () => void
    const running = new Promise<void>((resolve) => (started = resolve))
    const model = windowedModel(800)
    const agent = track(
      createAgent({
        model,
        logger: { error: () => {} },
        compaction: {
          summarise: ({ signal }) => {
            started()
            return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('stopped'))))
          },
        },
      }),
    )
    for (let n = 1; n <= 6; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const run = agent.run(m('p7'))
    await running
    agent.cancel()
    const result = await run
    expect(result.end).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    expect(summaryEvents(agent.session.events)).toEqual([])
    expect(ofType(agent, 'compaction/failed')).toEqual([])
    expect(trace(agent).slice(-2)).toEqual([expect.stringMatching(/^spliced/), 'turn/end{7,aborted}'])
  })

  it('CP-5: a cancel during agent.compact() ends it with nothing replaced', async () => {
    const model = windowedModel(100_000)
    const agent = track(
      createAgent({
        model,
        compaction: { summarise: ({ signal }) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')))) },
      }),
    )
    for (let n = 1; n <= 3; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const pending = agent.compact()
    await Promise.resolve()
    agent.cancel()
    await expect(pending).resolves.toEqual({ compacted: false })
    expect(summaryEvents(agent.session.events)).toEqual([])
    // the agent serves the next turn as usual
    await expect(agent.run('next')).resolves.toMatchObject({ end: { kind: 'completed' } })
  })

  it('CP-6: CONTEXT_WINDOW_EXCEEDED is recovered by compacting and retrying in the same step', async () => {
    const overflow = errorResponse({ message: 'prompt is too long', code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 })
    let overflowed = false
    const model = windowedModel(100_000, (_request, n) => {
      if (n === 4 && !overflowed) {
        overflowed = true
        return overflow
      }
      return answer(n)
    })
    const agent = track(createAgent({ model, compaction: { auto: false, keepRecent: 0.001 } }))
    for (let n = 1; n <= 4; n++) await agent.run(m(`p${n}`, `question ${n}`))
    const turn4 = agent.session.events.slice(agent.session.events.findLastIndex((e) => e.type === 'turn/start'))
    expect(trace(turn4)).toEqual([
      'turn/start{4}',
      'spliced(next-turn -1)',
      'step/start{4,1}',
      'user/message(question 4)',
      expect.stringMatching(/^user\/message\(\[Summary/),
      'compaction/completed',
      'assistant/message',
      'step/end{4,1}',
      'turn/end{4,completed}',
    ])
    expect(ofType(agent, 'compaction/completed')[0].data.reason).toBe('overflow')
    // the retry carried the summary and the prompt of this step
    const last = turnRequests(model.requests).at(-1)!
    expect(last.messages.map((x) => x.role)).toEqual(['user', 'user'])
    expect(last.messages[1].id).toBe('p4')
  })

  it('CP-6: a second overflow in the same step goes to request recovery and ends the turn error', async () => {
    const overflow = errorResponse({ message: 'prompt is too long', code: 'CONTEXT_WINDOW_EXCEEDED' })
    const model = windowedModel(100_000, (_request, n) => (n >= 3 ? overflow : answer(n)))
    const agent = track(createAgent({ model, logger: { error: () => {} }, compaction: { auto: false, keepRecent: 0.001 } }))
    await agent.run(m('p1'))
    await agent.run(m('p2'))
    const result = await agent.run(m('p3'))
    expect(result.end).toMatchObject({ kind: 'error', error: { code: 'CONTEXT_WINDOW_EXCEEDED' } })
    expect(ofType(agent, 'compaction/completed')).toHaveLength(1)
    expect(turnRequests(model.requests)).toHaveLength(4)
  })

  it('CP-7: compaction is on by default exactly when the window is known; false turns it off; bad options are refused by name', async () => {
    const run = async (options: Parameters<typeof createAgent>[0]) => {
      const agent = track(createAgent(options))
      for (let n = 1; n <= 7; n++) await agent.run(m(`p${n}`, `question ${n}`))
      return ofType(agent, 'compaction/completed').length
    }
    expect(await run({ model: windowedModel(800) })).toBe(1)
    expect(await run({ model: windowedModel(800), compaction: false })).toBe(0)
    expect(await run({ model: scriptedModel(Array.from({ length: 7 }, (_, n) => answer(n))) })).toBe(0)
    expect(await run({ model: scriptedModel(Array.from({ length: 20 }, (_, n) => answer(n))), compaction: { contextWindow: 800, summarise: () => 's' } })).toBe(
      1,
    )
    expect(() => createAgent({ model: scriptedModel([]), compaction: {} })).toThrow(ConfigError)
    expect(() => createAgent({ model: scriptedModel([]), compaction: { contextWindow: 0 } })).toThrow(/compaction.contextWindow/)
    expect(() => createAgent({ model: windowedModel(800), compaction: { threshold: 2 } })).toThrow(/compaction.threshold/)
    expect(() => createAgent({ model: windowedModel(800), compaction: { threshold: 0.5, keepRecent: 0.6 } })).toThrow(/compaction.keepRecent/)
    expect(() => createAgent({ model: windowedModel(800), compaction: { summarise: 'no' as never } })).toThrow(/compaction.summarise/)
    // baseTokens replaces the estimate of the system prompt and tool schemas: a heavier fixed part compacts sooner
    expect(await run({ model: windowedModel(800), compaction: { baseTokens: 500 } })).toBeGreaterThan(1)
    expect(() => createAgent({ model: windowedModel(800), compaction: { baseTokens: -1 } })).toThrow(/compaction.baseTokens/)
  })

  it('CP-7: a token estimate that throws or answers no count ends the turn error before its step, and the agent serves the next turn', async () => {
    for (const bad of [
      () => {
        throw new Error('estimator broke')
      },
      () => 10.5,
      () => '3',
      () => Number.NaN,
      () => -1,
    ]) {
      let broken = true
      const estimateTokens = (message: Message) => (broken ? (bad() as number) : estimateMessageTokens(message))
      const agent = track(createAgent({ model: windowedModel(100_000), logger: { error: () => {} }, compaction: { estimateTokens } }))
      const errors: unknown[] = []
      agent.on('agent/error', ({ error }) => errors.push(error))
      const result = await agent.run(m('p1'))
      const message = errors[0] instanceof Error ? errors[0].message : ''
      expect(message).toMatch(/estimator broke|compaction.estimateTokens must return a non-negative safe integer/)
      expect(result.end).toMatchObject({ kind: 'error', error: { message } })
      // as after a throwing pre-step (HK-4): no step opened, the claimed prompt was not entered, nothing of compaction was logged
      const events = agent.session.events.slice(agent.session.events.findIndex((e) => e.type === 'turn/start'))
      expect(trace(events)).toEqual(['turn/start{1}', 'spliced(next-turn -1)', 'turn/end{1,error}'])
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      broken = false
      await expect(agent.run(m('p2'))).resolves.toMatchObject({ end: { kind: 'completed' } })
    }
  })

  it('CP-7: a token estimate that fails in an overflow compaction ends the attempt error with that failure; in agent.compact() it rejects', async () => {
    const overflow = errorResponse({ message: 'prompt is too long', code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 })
    let broken = false
    const estimateTokens = (message: Message) => {
      if (broken) throw new ConfigError('no estimate today', { path: 'estimate' })
      return estimateMessageTokens(message)
    }
    const model = windowedModel(100_000, (_request, n) => (n === 3 ? overflow : answer(n)))
    const agent = track(createAgent({ model, logger: { error: () => {} }, compaction: { auto: false, keepRecent: 0.001, estimateTokens } }))
    await agent.run(m('p1'))
    await agent.run(m('p2'))
    broken = true
    const result = await agent.run(m('p3'))
    expect(result.end).toMatchObject({ kind: 'error', error: { message: 'no estimate today' } })
    expect(ofType(agent, 'compaction/completed')).toHaveLength(0)
    expect(ofType(agent, 'compaction/failed')).toHaveLength(0)
    const errors: unknown[] = []
    agent.on('agent/error', ({ error }) => errors.push(error))
    const compacting = agent.compact()
    await expect(compacting).rejects.toThrow('no estimate today')
    expect(errors).toEqual([await compacting.catch((error: unknown) => error)])
    expect(agent.status).toBe('idle')
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
    broken = false
    await expect(agent.compact()).resolves.toMatchObject({ compacted: true })
    await expect(agent.run(m('p4'))).resolves.toMatchObject({ end: { kind: 'completed' } })
  })

  it('CP-7: the tail never starts with a tool result: a call and its results stay together', async () => {
    const model = windowedModel(1200, (_request, n) => (n % 2 === 1 ? toolCallResponse([{ id: `c${n}`, name: 'look', arguments: '{}' }]) : answer(n)))
    const look = { name: 'look', description: 'look', input: { jsonSchema: { type: 'object' } }, execute: () => 'seen '.padEnd(300, 'y') }
    const agent = track(createAgent({ model, tools: [look as never], compaction: { keepRecent: 0.2 } }))
    for (let n = 1; n <= 8; n++) await agent.run(m(`p${n}`, `question ${n}`))
    expect(ofType(agent, 'compaction/completed').length).toBeGreaterThan(0)
    for (const request of turnRequests(model.requests)) {
      request.messages.forEach((message, k) => {
        if (message.source.kind !== 'tool') return
        const before = request.messages
          .slice(0, k)
          .reverse()
          .find((x) => x.source.kind !== 'tool')
        expect(before?.role).toBe('assistant')
      })
    }
  })

  it('CP-8: a 200-turn conversation with a small window compacts on its own, stays under the window, and resumes from a store with the same history', async () => {
    const contextWindow = 1500
    const system = 'You answer questions.'
    const dir = mkdtempSync(join(tmpdir(), 'agentchart-cp8-'))
    const path = join(dir, 'long.db')
    const store = sqliteStore({ path })
    const model = windowedModel(contextWindow)
    const agent = track(await createAgent({ model, systemPrompt: system, store, sessionId: 'long' }))
    for (let n = 1; n <= 200; n++) await agent.run(m(`p${n}`, `question number ${n}: what comes next?`))
    const events = agent.session.events
    expect(ofType(agent, 'turn/end').map((e) => e.data.reason.kind)).toEqual(Array(200).fill('completed'))
    expect(ofType(agent, 'compaction/completed').length).toBeGreaterThan(10)
    const base = Math.ceil(system.length / 4)
    for (const request of turnRequests(model.requests)) expect(base + tokensOf(request.messages)).toBeLessThan(contextWindow)
    expect(checkSessionInvariants(events)).toEqual([])
    // the full log keeps every prompt and answer
    expect(ofType(agent, 'user/message').filter((e) => e.surfaceOp === 'append')).toHaveLength(200)
    expect(ofType(agent, 'assistant/message')).toHaveLength(200)
    // one more compaction by hand, then the log as it stands is forked into the store: a second session to resume below
    await expect(agent.compact()).resolves.toMatchObject({ compacted: true })
    const history = agent.messages()
    await agent.fork({ upTo: agent.session.length - 1, id: 'long-resumed' })
    // the original's next request, then it stops (its process ends)
    await agent.run(m('p201', 'one more'))
    const original = turnRequests(model.requests).at(-1)!
    await agent.dispose()
    await store.close()
    // another process opens the file: both sessions resume from what the store kept, with the history the original had
    const reopened = sqliteStore({ path })
    const resumedModel = windowedModel(contextWindow)
    const resumed = track(await createAgent({ model: resumedModel, systemPrompt: system, store: reopened, sessionId: 'long-resumed' }))
    expect(resumed.messages()).toEqual(history)
    await resumed.run(m('p201', 'one more'))
    // the first request after resume is the one the original sent
    expect(turnRequests(resumedModel.requests)[0].messages).toEqual(original.messages)
    expect(checkSessionInvariants(resumed.session.events)).toEqual([])
    const same = track(await createAgent({ model: windowedModel(contextWindow), systemPrompt: system, store: reopened, sessionId: 'long' }))
    const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown
    // every event the original logged, then the resume's end-seed marker (SS-9)
    expect(plain(same.session.events.slice(0, agent.session.length))).toEqual(plain(agent.session.events))
    expect(same.session.events.slice(agent.session.length).map((e) => e.type)).toEqual(['session/end-seed'])
    expect(same.messages()).toEqual(agent.messages())
    expect(checkSessionInvariants(same.session.events)).toEqual([])
    await resumed.dispose()
    await same.dispose()
    await reopened.close()
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)
})

function textOfMessage(message: Message): string {
  return message.content.map((b) => ('text' in b ? b.text : '')).join('')
}

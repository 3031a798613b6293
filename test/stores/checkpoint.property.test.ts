// Opening from a checkpoint: for random stored sessions (turns with and without
// tool calls, pending inbox items, compactions, reopens), an open from the
// latest checkpoint gives the same session state and the same next request as
// an open that validates and replays the whole log; a checkpoint that
// disagrees with the log is refused and the open validates the whole log; a
// tail after the checkpoint that breaks a rule (a structure rule included) is
// refused with the very error a full open gives, without that fallback.
import { createHash } from 'node:crypto'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defineTool, type Agent } from '../../src/index.js'
import { AgentchartError, type StoredLogError } from '../../src/errors.js'
import { sqliteStore } from '../../src/stores/index.js'
import { RESTORE_LIMIT } from '../../src/stores/writer.js'
import { deriveMessagesFrom } from '../session/fixtures.js'
import { longLog, recordCycle, seedLongSession } from './long-log.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'
import { propertyRuns } from '../helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'agentchart-checkpoint-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const fresh = () => join(dir, `s${++files}.db`)

type Op = { kind: 'text' } | { kind: 'tool' } | { kind: 'tools' } | { kind: 'pending' } | { kind: 'compact' } | { kind: 'reopen' }
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'text' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'tool' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'pending' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'compact' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
)

const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({ n: z.number() }), execute: ({ n }) => `echo ${n}` })
const quiet = { error: () => {} }
const compaction = { contextWindow: 600, auto: false, keepRecent: 0.1, summarise: () => 'what was said so far' } as const

function open(path: string, script: ScriptEntry[], extra: { validate?: 'full' | 'checkpoint'; logger?: { error: (m: string, e: unknown) => void } } = {}) {
  const store = sqliteStore({ path })
  const model = scriptedModel(script)
  const { validate, logger } = extra
  return createAgent({ model, store, sessionId: 'p', tools: [echo], compaction, logger: logger ?? quiet, validate: validate ?? 'checkpoint' }).then(
    (agent) => ({
      agent,
      model,
      store,
    }),
  )
}

/** Drives a stored session (new, or the one at `path`) through `ops`, reopening where asked; returns the file once everything is committed and closed. */
async function storedSession(ops: readonly Op[], path = fresh()): Promise<string> {
  let n = 0
  let current = await open(path, [])
  const drive = async (script: ScriptEntry[], act: (agent: Agent) => Promise<unknown> | void) => {
    const { agent, store } = current
    await agent.dispose({ keepInbox: true })
    await store.close()
    current = await open(path, script)
    await act(current.agent)
    await current.agent.whenIdle()
  }
  for (const step of ops) {
    n++
    if (step.kind === 'text') await drive([textResponse(`answer ${n}`)], (a) => a.followup(`question ${n}`))
    else if (step.kind === 'tool')
      await drive([toolCallResponse([{ id: `c${n}`, name: 'echo', arguments: JSON.stringify({ n }) }]), textResponse(`done ${n}`)], (a) =>
        a.followup(`use the tool ${n}`),
      )
    else if (step.kind === 'tools')
      await drive(
        [
          toolCallResponse([
            { id: `c${n}a`, name: 'echo', arguments: JSON.stringify({ n }) },
            { id: `c${n}b`, name: 'echo', arguments: JSON.stringify({ n: -n }) },
          ]),
          textResponse(`both done ${n}`),
        ],
        (a) => a.followup(`use the tool twice ${n}`),
      )
    else if (step.kind === 'pending') await drive([], (a) => a.send(`later ${n}`, 'next-turn', false))
    else if (step.kind === 'compact') await drive([], (a) => a.compact())
    else await drive([], () => {})
  }
  await current.agent.dispose({ keepInbox: true })
  await current.store.close()
  return path
}

/**
 * What an opened session is: its log (times aside: each open stamps its end-seed), history, request history, inbox,
 * next turn. `sound`: the log keeps every invariant (a damaged one may keep only those a seed must).
 */
async function stateOf(path: string, validate: 'full' | 'checkpoint', logger?: { error: (m: string, e: unknown) => void }, sound = true) {
  const { agent, model, store } = await open(path, [textResponse('next')], { validate, ...(logger ? { logger } : {}) })
  const untimed = (events: readonly unknown[]) => (plain(events) as { time: number }[]).map(({ time: _time, ...rest }) => rest)
  const before = {
    events: untimed(agent.session.events),
    surface: agent.session.surface(),
    history: plain(agent.session.deriveMessages()),
    messages: plain(agent.messages()),
    inbox: plain([agent.inbox.nextTurn, agent.inbox.nextStep]),
  }
  agent.followup('one more')
  await agent.whenIdle()
  const after = { request: plain(model.requests[0]), events: untimed(agent.session.events) }
  if (sound) expect(checkSessionInvariants(agent.session.events)).toEqual([])
  await agent.dispose()
  await store.close()
  return canonicalIds({ before, after })
}

const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null))

/** Ids minted after the open (random per process) named by first appearance, so two opens compare. */
function canonicalIds<T>(value: T): T {
  const names = new Map<string, string>()
  const minted = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-z]{8}-[a-z]+\d+)$/
  return JSON.parse(JSON.stringify(value), (_key, v: unknown) => {
    if (typeof v !== 'string' || !minted.test(v)) return v
    if (!names.has(v)) names.set(v, `id#${names.size}`)
    return names.get(v)
  }) as T
}

const copy = (path: string) => {
  const to = fresh()
  copyFileSync(path, to)
  return to
}

const hash = (text: string) => createHash('sha256').update(text).digest('base64url')

type Tamper = 'last-seq' | 'stale-length' | 'drop-node' | 'foreign-node' | 'facts-undigested' | 'older-length'

/** Rewrites the stored checkpoint as `tamper` says; every tamper but `facts-undigested` signs it again. */
function tamper(path: string, how: Tamper): boolean {
  const db = new Database(path)
  try {
    const row = db.prepare('SELECT session_id, body FROM agentchart_checkpoints').get() as { session_id: number; body: string } | undefined
    if (row === undefined) return false
    const { digest: _digest, ...cp } = JSON.parse(row.body) as {
      digest: string
      length: number
      last: { seq: number }
      surface: number[]
      facts: { lastTurn: number }
    }
    const nonSurface = [...Array(cp.length).keys()].find((seq) => !cp.surface.includes(seq))
    if (how === 'last-seq') cp.last.seq += 1
    else if (how === 'stale-length' || how === 'older-length') cp.length -= 1
    else if (how === 'drop-node') {
      if (cp.surface.length === 0) return false
      cp.surface = cp.surface.slice(1)
    } else if (how === 'foreign-node') {
      if (cp.surface.length === 0 || nonSurface === undefined) return false
      cp.surface = [nonSurface, ...cp.surface.slice(1)]
    } else cp.facts.lastTurn += 3
    const body = how === 'facts-undigested' ? { ...cp, digest: _digest } : { ...cp, digest: hash(JSON.stringify(cp)) }
    db.prepare('UPDATE agentchart_checkpoints SET body = ?, length = ? WHERE session_id = ?').run(JSON.stringify(body), cp.length, row.session_id)
    return true
  } finally {
    db.close()
  }
}

describe('opening a stored session from its checkpoint', () => {
  it('RS-1: for random sessions, a checkpoint open gives the state and next request of a full-validation open', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 8 }), fc.boolean(), async (ops, leavePending) => {
        // an item still pending when the last checkpoint is taken (at the open after it)
        const path = await storedSession(leavePending ? [...ops, { kind: 'pending' }, { kind: 'reopen' }] : ops)
        const refusals: string[] = []
        const full = await stateOf(copy(path), 'full')
        const fromCheckpoint = await stateOf(copy(path), 'checkpoint', { error: (message) => refusals.push(message) })
        expect(fromCheckpoint).toEqual(full)
        expect(refusals).toEqual([])
      }),
      { numRuns: propertyRuns(12) },
    )
  }, 240_000)

  it('RS-1: a checkpoint that disagrees with the log (wrong seq, wrong nodes, stale length, unsigned facts) is refused and the whole log is validated instead', async () => {
    const hows = fc.constantFrom<Tamper>('last-seq', 'stale-length', 'drop-node', 'foreign-node', 'facts-undigested')
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 6 }), hows, async (ops, how) => {
        const path = await storedSession([{ kind: 'text' }, ...ops])
        const full = await stateOf(copy(path), 'full')
        const tampered = copy(path)
        fc.pre(tamper(tampered, how))
        const refusals: string[] = []
        const opened = await stateOf(tampered, 'checkpoint', { error: (message) => refusals.push(message) })
        expect(opened).toEqual(full)
        expect(refusals.some((message) => /checkpoint/.test(message))).toBe(true)
      }),
      { numRuns: propertyRuns(10) },
    )
  }, 240_000)
})

describe('what a checkpoint open reads', () => {
  /** A two-turn stored session whose checkpoint covers both turns. */
  async function threeTurns() {
    const path = fresh()
    const first = await open(path, [textResponse('a'), textResponse('b')])
    first.agent.followup('one')
    await first.agent.whenIdle()
    first.agent.followup('two')
    await first.agent.whenIdle()
    await first.agent.dispose()
    await first.store.close()
    // an open takes a checkpoint of where the log stands (turns take one only every few hundred events)
    const again = await open(path, [])
    await again.agent.dispose()
    await again.store.close()
    return { path, events: first.agent.session.events }
  }

  const damage = (path: string, seq: number, find: string, replace: string) => {
    const db = new Database(path)
    db.prepare('UPDATE agentchart_events SET event = replace(event, ?, ?) WHERE seq = ?').run(find, replace, seq)
    db.close()
  }

  it('SS-7: an opened idle session reads its history back from the store: the same messages, the events of its nodes carry the very values, and the next request holds them', async () => {
    const { path, events } = await threeTurns()
    const logged = plain(
      events.filter((e) => e.surfaceOp !== undefined).map((e) => (e.type === 'user/message' ? e.data : (e.data as { message: unknown }).message)),
    )
    const { agent, model, store } = await open(path, [textResponse('c')])
    const session = agent.session
    const history = session.deriveMessages()
    expect(plain(history)).toEqual(logged)
    const nodes = session.surface()
    expect(nodes).toHaveLength(4)
    nodes.forEach((seq, i) => {
      const event = session.at(seq)!
      expect(event.type === 'user/message' ? event.data : (event.data as { message: unknown }).message).toBe(history[i])
    })
    agent.followup('three')
    await agent.whenIdle()
    expect(plain(model.requests[0].messages.slice(0, 4))).toEqual(logged)
    expect(plain(session.deriveMessages().slice(0, 4))).toEqual(logged)
    expect(checkSessionInvariants(session.events)).toEqual([])
    await agent.dispose()
    await store.close()
  })

  it('SS-7: a long stored session opened and disposed unused still gives its history once its store is closed', async () => {
    const recorded = await recordCycle()
    const events = [...longLog(recorded, 12_000)].flat()
    const path = fresh()
    const store = sqliteStore({ path })
    await seedLongSession(store, 'long', recorded, 12_000)
    const agent = await createAgent({ model: scriptedModel([]), store, sessionId: 'long', compaction, logger: quiet })
    await agent.dispose()
    await store.close()
    expect(agent.session.length).toBeGreaterThan(RESTORE_LIMIT)
    expect(plain(agent.session.deriveMessages())).toEqual(plain(deriveMessagesFrom(events)))
  })

  it('RS-8: a row made malformed before the checkpoint does not stop the open; reading it through the store names its seq', async () => {
    const { path, events } = await threeTurns()
    const seq = events.find((e) => e.type === 'step/start')!.seq
    damage(path, seq, '"type":"step/start"', '"type":step/start"')
    const { agent, store } = await open(path, [textResponse('c')])
    expect(agent.session.deriveMessages()).toHaveLength(4)
    expect(() => agent.session.at(seq)).toThrow(expect.objectContaining({ code: 'STORED_LOG_INVALID' }) as Error)
    await agent.dispose()
    await store.close()
    // a full open finds it, by seq
    const refused = await open(path, [], { validate: 'full' }).catch((error: unknown) => error)
    expect(refused).toMatchObject({ code: 'STORED_LOG_INVALID', seq })
  })

  it('RS-8: by default a short stored log is validated whole: damage before its checkpoint fails the open by seq', async () => {
    const { path, events } = await threeTurns()
    const seq = events.find((e) => e.type === 'step/start')!.seq
    damage(path, seq, '"type":"step/start"', '"type":"step/strat"')
    const store = sqliteStore({ path })
    const refused = await createAgent({ model: scriptedModel([]), store, sessionId: 'p', tools: [echo], compaction, logger: quiet }).catch(
      (error: unknown) => error,
    )
    await store.close()
    expect(refused).toMatchObject({ code: 'STORED_LOG_INVALID', seq })
    // the same log opened from its checkpoint does not read that row
    const { agent, store: again } = await open(path, [textResponse('c')], { validate: 'checkpoint' })
    expect(agent.session.deriveMessages()).toHaveLength(4)
    await agent.dispose()
    await again.close()
  })

  it('RS-8: a row damaged after the checkpoint fails the open by seq, as a full open does', async () => {
    const { path } = await threeTurns()
    const checkpointRow = () => {
      const db = new Database(path)
      const row = db.prepare('SELECT length, body FROM agentchart_checkpoints').get() as { length: number; body: string }
      db.close()
      return row
    }
    const older = checkpointRow()
    const next = await open(path, [textResponse('c')])
    next.agent.followup('three')
    await next.agent.whenIdle()
    const turnStart = next.agent.session.events.findLast((e) => e.type === 'turn/start')!.seq
    await next.agent.dispose()
    await next.store.close()
    // the older checkpoint back (one a crash could leave): the third turn is in its tail
    const db = new Database(path)
    db.prepare('UPDATE agentchart_checkpoints SET length = ?, body = ?').run(older.length, older.body)
    db.close()
    expect(older.length).toBeLessThan(turnStart)
    damage(path, turnStart, '"type":"turn/start"', '"type":"turn/stXrt"')
    const logged: string[] = []
    const refused = await open(path, [], { logger: { error: (message) => logged.push(message) } }).catch((error: unknown) => error)
    expect(refused).toMatchObject({ code: 'STORED_LOG_INVALID', seq: turnStart })
    expect((refused as Error).message).toMatch(/unknown event type "turn\/stXrt"/)
    // the tail is judged on top of the checkpoint: no fallback to a whole-log validation was needed
    expect(logged).toEqual([])
  })
})

describe('the tail after a checkpoint is judged as a full open judges it', () => {
  type Stored = { seq: number; type: string; data: Record<string, unknown> } & Record<string, unknown>

  /** The stored session's row key and length, and its checkpoint row. */
  const rowsOf = (path: string) => {
    const db = new Database(path)
    try {
      const session = db.prepare("SELECT key, length FROM agentchart_sessions WHERE id = 'p'").get() as { key: number; length: number }
      const checkpoint = db.prepare('SELECT length, body FROM agentchart_checkpoints WHERE session_id = ?').get(session.key) as { length: number; body: string }
      return { ...session, checkpoint }
    } finally {
      db.close()
    }
  }

  /**
   * A stored session driven through `before`, then `after` on top, with the checkpoint taken before `after` put back
   * (one a crash before the next checkpoint leaves): what `after` logged is the tail a checkpoint open validates.
   */
  async function withTail(before: readonly Op[], after: readonly Op[]) {
    // an open takes a checkpoint of where the log stands
    const path = await storedSession([...before, { kind: 'reopen' }])
    const older = rowsOf(path).checkpoint
    await storedSession(after, path)
    const db = new Database(path)
    db.prepare('UPDATE agentchart_checkpoints SET length = ?, body = ?').run(older.length, older.body)
    db.close()
    // the whole stored log, read by a full open of a copy (the oracle), without the end-seed that open adds
    const { length } = rowsOf(path)
    const reader = await open(copy(path), [], { validate: 'full' })
    const events = plain(reader.agent.session.events.slice(0, length)) as Stored[]
    await reader.agent.dispose()
    await reader.store.close()
    return { path, base: older.length, events }
  }

  /** Stores `tail` as the log from `base` on, one row per event, in a copy of `path`. */
  function rewritten(path: string, base: number, tail: readonly Stored[]): string {
    const to = copy(path)
    const db = new Database(to)
    const { key } = db.prepare("SELECT key FROM agentchart_sessions WHERE id = 'p'").get() as { key: number }
    db.transaction(() => {
      db.prepare('DELETE FROM agentchart_events WHERE session_id = ? AND seq >= ?').run(key, base)
      const insert = db.prepare('INSERT INTO agentchart_events (session_id, seq, event) VALUES (?, ?, ?)')
      tail.forEach((event, i) => insert.run(key, base + i, JSON.stringify(event)))
      db.prepare('UPDATE agentchart_sessions SET length = ? WHERE key = ?').run(base + tail.length, key)
    })()
    db.close()
    return to
  }

  type Damage = 'orphan-result' | 'duplicate-call' | 'step-outside-turn' | 'after-turn-end' | 'second-turn-start' | 'turn-renumbered' | 'bad-seq' | 'copy'
  const clone = (event: Stored, seq: number): Stored => ({ ...(structuredClone(event) as Stored), seq })

  /** The tail with `how` done to it at the `pick`-th place it applies to; undefined when it applies nowhere. */
  function damaged(tail: readonly Stored[], how: Damage, pick: number, other: number): Stored[] | undefined {
    const out = tail.map((event) => structuredClone(event))
    const places = (test: (event: Stored, i: number) => boolean) => out.flatMap((event, i) => (test(event, i) ? [i] : []))
    const choose = (at: number[]) => (at.length === 0 ? undefined : at[pick % at.length])
    const seqAt = (i: number) => out[i].seq
    switch (how) {
      case 'orphan-result': {
        // a result naming a call that was never made
        const i = choose(places((e) => e.type === 'tool/result' && e.surfaceOp === 'append'))
        if (i === undefined) return undefined
        const message = out[i].data.message as { source: { callId: string }; content: [{ toolCallId: string }] }
        message.source.callId = 'ghost'
        message.content[0].toolCallId = 'ghost'
        return out
      }
      case 'duplicate-call': {
        // the second call of a step takes the first one's id
        const i = choose(
          places(
            (e, k) =>
              e.type === 'tool/call' &&
              k > 0 &&
              out.slice(0, k).some((p) => p.type === 'tool/call' && p.data.turn === e.data.turn && p.data.step === e.data.step),
          ),
        )
        if (i === undefined) return undefined
        const first = out.find((p) => p.type === 'tool/call' && p.data.turn === out[i].data.turn && p.data.step === out[i].data.step)!
        out[i].data.callId = first.data.callId
        return out
      }
      case 'step-outside-turn': {
        // a turn/start lost (an end-seed marker in its place): its steps start outside any turn
        const i = choose(places((e) => e.type === 'turn/start'))
        if (i === undefined) return undefined
        out[i] = { seq: seqAt(i), time: out[i].time, type: 'session/end-seed', data: {} } as Stored
        return out
      }
      case 'after-turn-end': {
        // an event of a finished step or turn logged again after the end of everything
        const i = choose(places((e) => ['step/start', 'step/end', 'turn/end', 'assistant/chunk', 'tool/call'].includes(e.type)))
        if (i === undefined) return undefined
        return [...out, clone(out[i], tail[0].seq + out.length)]
      }
      case 'second-turn-start': {
        // a step/start replaced by a turn/start while its turn is open
        const i = choose(places((e) => e.type === 'step/start'))
        if (i === undefined) return undefined
        out[i] = { seq: seqAt(i), time: out[i].time, type: 'turn/start', data: { turn: (out[i].data.turn as number) + 1 } } as Stored
        return out
      }
      case 'turn-renumbered': {
        // a turn/start numbered as the turn before it (the first of the tail: as the checkpoint's last turn)
        const i = choose(places((e) => e.type === 'turn/start'))
        if (i === undefined) return undefined
        out[i].data.turn = (out[i].data.turn as number) - 1
        return out
      }
      case 'bad-seq': {
        const i = pick % out.length
        out[i].seq += other % 2 === 0 ? 1 : -1
        return out
      }
      case 'copy': {
        // any event in place of another (what it breaks, if anything, is up to the rules)
        const i = pick % out.length
        out[i] = clone(out[other % out.length], seqAt(i))
        return out
      }
    }
  }

  /** What an open of (a copy of) `path` gives: the opened state, or the refusal (its class, code, seq, path and message). */
  async function outcome(path: string, validate: 'full' | 'checkpoint', logged: string[], sound = true) {
    try {
      return { state: await stateOf(copy(path), validate, { error: (message) => logged.push(message) }, sound) }
    } catch (error) {
      if (!(error instanceof AgentchartError)) throw error
      const { name, code, seq, path: at, message } = error as StoredLogError
      return { refused: { name, code, seq, path: at, message } }
    }
  }

  const before = fc.array(op, { minLength: 0, maxLength: 3 })
  const after = fc.array(fc.constantFrom<Op>({ kind: 'text' }, { kind: 'tool' }, { kind: 'tools' }, { kind: 'pending' }, { kind: 'compact' }), {
    minLength: 1,
    maxLength: 4,
  })

  it('RS-8: for random sessions, a tail that breaks a structure rule is refused by a checkpoint open with the error a full open gives', async () => {
    const hows = fc.constantFrom<Damage>(
      'orphan-result',
      'duplicate-call',
      'step-outside-turn',
      'after-turn-end',
      'second-turn-start',
      'turn-renumbered',
      'bad-seq',
    )
    await fc.assert(
      fc.asyncProperty(before, after, hows, fc.nat(), fc.nat(), async (ops, more, how, pick, other) => {
        const { path, base, events } = await withTail([{ kind: 'text' }, ...ops], [{ kind: 'tools' }, ...more])
        const tail = damaged(events.slice(base), how, pick, other)
        fc.pre(tail !== undefined)
        const broken = rewritten(path, base, tail!)
        const logged: string[] = []
        const full = await outcome(broken, 'full', [])
        const fromCheckpoint = await outcome(broken, 'checkpoint', logged)
        expect(full.refused).toMatchObject({ name: 'StoredLogError', code: 'STORED_LOG_INVALID' })
        expect(full.refused!.seq).toBeGreaterThanOrEqual(base)
        expect(fromCheckpoint).toEqual(full)
        // refused on the tail itself, not after a fallback to the whole log
        expect(logged).toEqual([])
      }),
      { numRuns: propertyRuns(16) },
    )
  }, 480_000)

  it('RS-1: for random sessions, a checkpoint that disagrees with the log is refused before its tail is judged on it: the whole log is validated instead', async () => {
    const hows = fc.constantFrom<Tamper>('last-seq', 'stale-length', 'drop-node', 'foreign-node', 'facts-undigested')
    await fc.assert(
      fc.asyncProperty(before, after, hows, async (ops, more, how) => {
        const { path } = await withTail([{ kind: 'text' }, ...ops], [{ kind: 'tools' }, ...more])
        const tampered = copy(path)
        fc.pre(tamper(tampered, how))
        const logged: string[] = []
        const full = await outcome(path, 'full', [])
        expect(full.refused).toBeUndefined()
        expect(await outcome(tampered, 'checkpoint', logged)).toEqual(full)
        expect(logged.some((message) => /checkpoint/.test(message))).toBe(true)
      }),
      { numRuns: propertyRuns(10) },
    )
  }, 480_000)

  it('RS-1: a checkpoint taken before any end-seed: a tail turn numbered past a gap before the first end-seed opens as from the whole log', async () => {
    // one instance from the first event: its first checkpoint comes at a turn end 256 events on, with no end-seed before it
    const path = fresh()
    const first = await open(
      path,
      Array.from({ length: 40 }, (_, i) => textResponse(`answer ${i}`)),
    )
    for (let i = 0; i < 40; i++) {
      first.agent.followup(`question ${i}`)
      await first.agent.whenIdle()
    }
    await first.agent.dispose()
    await first.store.close()
    const older = rowsOf(path).checkpoint
    // the next open logs the first end-seed, after the checkpoint's tail
    const again = await open(path, [])
    await again.agent.dispose()
    await again.store.close()
    const db = new Database(path)
    db.prepare('UPDATE agentchart_checkpoints SET length = ?, body = ?').run(older.length, older.body)
    db.close()
    const { length } = rowsOf(path)
    const reader = await open(copy(path), [], { validate: 'full' })
    const events = plain(reader.agent.session.events.slice(0, length)) as Stored[]
    await reader.agent.dispose()
    await reader.store.close()
    const tail = events.slice(older.length)
    expect(events.slice(0, older.length).some((e) => e.type === 'session/end-seed')).toBe(false)
    const last = tail.findLast((e) => e.type === 'turn/start')!.data.turn as number
    expect(tail.findIndex((e) => e.type === 'turn/start')).toBeLessThan(tail.findIndex((e) => e.type === 'session/end-seed'))
    // the tail's last turn renumbered one past the next number: before the first end-seed, numbers only increase
    const renumbered = tail.map((e) => (e.data.turn === last ? { ...e, data: { ...e.data, turn: last + 1 } } : e))
    const stored = rewritten(path, older.length, renumbered)
    const logged: string[] = []
    const full = await outcome(stored, 'full', [])
    expect(full.refused).toBeUndefined()
    expect(await outcome(stored, 'checkpoint', logged)).toEqual(full)
    expect(logged).toEqual([])
  }, 60_000)

  it('RS-1: for random sessions, a tail with any event put in place of another opens from the checkpoint as from the whole log, or is refused alike', async () => {
    await fc.assert(
      fc.asyncProperty(before, after, fc.boolean(), fc.nat(), fc.nat(), async (ops, more, intact, pick, other) => {
        const { path, base, events } = await withTail([{ kind: 'text' }, ...ops], [{ kind: 'text' }, ...more])
        const tail = intact ? events.slice(base) : damaged(events.slice(base), 'copy', pick, other)!
        const stored = rewritten(path, base, tail)
        const logged: string[] = []
        const full = await outcome(stored, 'full', [], intact)
        const fromCheckpoint = await outcome(stored, 'checkpoint', logged, intact)
        if (intact) expect(full.refused).toBeUndefined()
        expect(fromCheckpoint).toEqual(full)
        expect(logged).toEqual([])
      }),
      { numRuns: propertyRuns(12) },
    )
  }, 480_000)
})

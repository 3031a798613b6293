// Forks (SS-14): a session seeded with another's prefix up to a boundary
// outside any turn, recording its lineage; inherited splices are ignored on
// resume (IN-14); with a store the fork is stored too.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createAgent, createSession, ForkError, forkLineageOf, forkSession, type Agent, type SessionEvent } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { z } from 'zod/v4'
import { defineTool } from '../../src/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { track } from '../helpers.js'

const quiet = { error: () => {} }
const answers = (...texts: string[]) => scriptedModel(texts.map((t) => textResponse(t)))
const turnEnds = (events: readonly SessionEvent[]) => events.filter((e) => e.type === 'turn/end').map((e) => e.seq)
const texts = (agent: Agent) => agent.messages().map((m) => m.content.map((b) => ('text' in b ? b.text : b.type)).join(''))

/** A parent agent that ran two turns ("one", "two"). */
async function parentOfTwoTurns() {
  const parent = track(createAgent({ model: answers('first answer', 'second answer', 'parent goes on'), logger: quiet }))
  await parent.run('one')
  await parent.run('two')
  return parent
}

describe('forks (SS-14)', () => {
  it('SS-14: a fork at a turn boundary has the parent prefix as its history and its lineage in the seed marker', async () => {
    const parent = await parentOfTwoTurns()
    const upTo = turnEnds(parent.session.events)[0]
    const fork = forkSession(parent.session, { upTo, id: 'try-again' })
    expect(fork.id).toBe('try-again')
    expect(fork.events.slice(0, upTo + 1)).toEqual(parent.session.events.slice(0, upTo + 1))
    expect(fork.seedLength).toBe(upTo + 2)
    expect(fork.events[upTo + 1]).toMatchObject({ type: 'session/end-seed', data: { fork: { parent: parent.id, upTo, seedLength: upTo + 2 } } })
    expect(forkLineageOf(fork.events)).toEqual({ parent: parent.id, upTo, seedLength: upTo + 2, seq: upTo + 1 })
    expect(fork.deriveMessages()).toEqual(createSession({ seed: parent.session.events.slice(0, upTo + 1) }).deriveMessages())
    expect(checkSessionInvariants(fork.events)).toEqual([])
  })

  it('SS-14: forking inside an open turn, at an unknown seq, or under the parent id is refused with a typed error', async () => {
    const parent = await parentOfTwoTurns()
    const events = parent.session.events
    const secondStart = events.findLast((e) => e.type === 'turn/start')!.seq
    const stepEnd = events.findLast((e) => e.type === 'step/end')!.seq
    for (const upTo of [secondStart, stepEnd]) {
      expect(() => forkSession(parent.session, { upTo })).toThrow(ForkError)
      expect(() => forkSession(parent.session, { upTo })).toThrow(expect.objectContaining({ code: 'FORK_INSIDE_TURN', path: 'upTo' }))
    }
    for (const upTo of [-1, events.length, 1.5, Number.NaN]) {
      expect(() => forkSession(parent.session, { upTo })).toThrow(expect.objectContaining({ code: 'FORK_UNKNOWN_SEQ' }))
    }
    expect(() => forkSession(parent.session, { upTo: turnEnds(events)[0], id: parent.id })).toThrow(expect.objectContaining({ code: 'FORK_ID_TAKEN' }))
    // nothing was written anywhere
    expect(parent.session.events).toBe(events)
  })

  it('SS-14: agent.fork is refused inside the turn that is running', async () => {
    const model = scriptedModel(['hang'])
    const agent = track(createAgent({ model, logger: quiet }))
    agent.followup('wait')
    await new Promise((resolve) => setImmediate(resolve))
    expect(agent.status).toBe('running')
    await expect(agent.fork({ upTo: agent.session.length - 1 })).rejects.toMatchObject({ name: 'ForkError', code: 'FORK_INSIDE_TURN' })
    agent.cancel()
    await agent.whenIdle()
  })

  it('SS-14: parent and fork continue independently', async () => {
    const parent = await parentOfTwoTurns()
    const upTo = turnEnds(parent.session.events)[0]
    const fork = await parent.fork({ upTo, id: 'branch' })
    const child = track(createAgent({ model: answers('another second answer'), session: fork, logger: quiet }))
    const run = await child.run('two, differently')
    expect(run.text).toBe('another second answer')
    await parent.run('three')
    expect(texts(child)).toEqual(['one', 'first answer', 'two, differently', 'another second answer'])
    expect(texts(parent)).toEqual(['one', 'first answer', 'two', 'second answer', 'three', 'parent goes on'])
    // the fork numbers its turns after the inherited ones
    expect(child.session.events.filter((e) => e.type === 'turn/start').map((e) => e.data)).toEqual([{ turn: 1 }, { turn: 2 }])
  })

  it('IN-14: splices inherited through a fork seed are ignored on resume: the fork starts with empty lists', async () => {
    const parent = track(createAgent({ model: answers('ok'), logger: quiet }))
    await parent.run('one')
    // a parked item at the boundary: injected context waits in next-step of the parent
    parent.inject('parent-only context')
    parent.inbox.splice('next-turn', 0, 0, 'parent-only prompt')
    const upTo = parent.session.length - 1
    expect(parent.inbox.hasPending).toBe(true)
    const fork = forkSession(parent.session, { upTo })
    const child = track(createAgent({ model: answers('fork answer'), session: fork, logger: quiet }))
    expect(child.inbox.nextTurn).toEqual([])
    expect(child.inbox.nextStep).toEqual([])
    await child.run('fork prompt')
    expect(texts(child).slice(2)).toEqual(['fork prompt', 'fork answer'])
    // the parent still has both
    expect(parent.inbox.nextStep.map((m) => m.content)).toEqual([[{ type: 'text', text: 'parent-only context' }]])
    expect(checkSessionInvariants(child.session.events)).toEqual([])
  })

  describe('with a store', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentchart-forks-'))
    afterAll(() => rmSync(dir, { recursive: true, force: true }))

    it('SS-14: agent.fork stores the fork; both sessions resume from the store and continue independently', async () => {
      const store = sqliteStore({ path: join(dir, 'forks.db') })
      const parent = await createAgent({ model: answers('first answer', 'second answer'), store, sessionId: 'main', logger: quiet })
      await parent.run('one')
      await parent.run('two')
      const upTo = turnEnds(parent.session.events)[0]
      const fork = await parent.fork({ upTo, id: 'stored-branch' })
      expect(((await store.load('stored-branch')) as SessionEvent[]).length).toBe(fork.length)
      await expect(parent.fork({ upTo, id: 'stored-branch' })).rejects.toMatchObject({ code: 'FORK_ID_TAKEN' })
      // an id the store cannot key is named as the fork's own option, and nothing is stored
      await expect(parent.fork({ upTo, id: 'b'.repeat(513) })).rejects.toMatchObject({ name: 'ConfigError', path: 'id' })
      expect((await store.list()).map((s) => s.id).sort()).toEqual(['main', 'stored-branch'])
      await parent.dispose()

      // a later process: both come back from the store
      const child = await createAgent({ model: answers('another second answer'), store, sessionId: 'stored-branch', logger: quiet })
      expect(forkLineageOf(child.session.events)).toMatchObject({ parent: 'main', upTo })
      await child.run('two, differently')
      await child.dispose()
      const again = await createAgent({ model: answers('third answer'), store, sessionId: 'main', logger: quiet })
      await again.run('three')
      expect(texts(again)).toEqual(['one', 'first answer', 'two', 'second answer', 'three', 'third answer'])
      await again.dispose()
      const resumedChild = await createAgent({ model: answers('fork goes on'), store, sessionId: 'stored-branch', logger: quiet })
      await resumedChild.run('and on')
      expect(texts(resumedChild)).toEqual(['one', 'first answer', 'two, differently', 'another second answer', 'and on', 'fork goes on'])
      await resumedChild.dispose()
      for (const id of ['main', 'stored-branch']) expect(checkSessionInvariants((await store.load(id)) as SessionEvent[])).toEqual([])
      await store.close()
    })

    it("issue #15's check: a fork at a step boundary has the parent's prefix as history, a fork inside an open turn is refused, both go on and resume from a store", async () => {
      const path = join(dir, 'issue-15.db')
      const look = defineTool({ name: 'look', description: 'looks', input: z.object({}), execute: () => 'seen' })
      // turn 1 has two steps (a tool call, then the answer); its last step/end is followed by turn/end
      const parentModel = scriptedModel([
        toolCallResponse([{ id: 'call-1', name: 'look', arguments: '{}' }]),
        textResponse('first answer'),
        'hang',
        textResponse('parent again'),
      ])
      let store = sqliteStore({ path })
      const parent = await createAgent({ model: parentModel, tools: [look], store, sessionId: 'issue-parent', logger: quiet })
      await parent.run('one')
      const historyAtBoundary = structuredClone([...parent.messages()])
      const events = parent.session.events
      const boundary = turnEnds(events)[0]
      const innerStepEnd = events.find((e) => e.type === 'step/end')!.seq
      expect(events[boundary - 1].type).toBe('step/end') // the boundary closes turn 1's last step
      // a step boundary inside the turn (between its two steps) is refused, and so is the turn that runs now
      await expect(parent.fork({ upTo: innerStepEnd, id: 'issue-fork' })).rejects.toMatchObject({ name: 'ForkError', code: 'FORK_INSIDE_TURN' })
      parent.followup('two')
      await new Promise((resolve) => setImmediate(resolve))
      expect(parent.status).toBe('running')
      await expect(parent.fork({ upTo: parent.session.length - 1, id: 'issue-fork' })).rejects.toMatchObject({ code: 'FORK_INSIDE_TURN' })
      // forking at the closed turn's boundary while the parent runs its next turn is fine
      const fork = await parent.fork({ upTo: boundary, id: 'issue-fork' })
      expect(fork.deriveMessages()).toEqual(historyAtBoundary)
      expect(fork.events.slice(0, boundary + 1)).toEqual(events.slice(0, boundary + 1))
      parent.cancel()
      await parent.whenIdle()
      const child = await createAgent({ model: answers('fork answer'), tools: [look], store, sessionId: 'issue-fork', logger: quiet })
      await child.run('two, in the fork')
      await parent.run('two again')
      expect(texts(parent).slice(-2)).toEqual(['two again', 'parent again'])
      expect(texts(child).slice(historyAtBoundary.length)).toEqual(['two, in the fork', 'fork answer'])
      const parentLog = [...parent.session.events]
      const childLog = [...child.session.events]
      await parent.dispose()
      await child.dispose()
      await store.close()

      // another process: a new store over the same file; both sessions resume with their own histories and go on
      store = sqliteStore({ path })
      const parentAgain = await createAgent({ model: answers('parent, resumed'), tools: [look], store, sessionId: 'issue-parent', logger: quiet })
      const childAgain = await createAgent({ model: answers('fork, resumed'), tools: [look], store, sessionId: 'issue-fork', logger: quiet })
      expect(parentAgain.session.events.slice(0, parentLog.length)).toEqual(parentLog)
      expect(childAgain.session.events.slice(0, childLog.length)).toEqual(childLog)
      await parentAgain.run('three')
      await childAgain.run('three, in the fork')
      expect(texts(parentAgain).slice(-2)).toEqual(['three', 'parent, resumed'])
      expect(texts(childAgain).slice(historyAtBoundary.length)).toEqual(['two, in the fork', 'fork answer', 'three, in the fork', 'fork, resumed'])
      expect(forkLineageOf(childAgain.session.events)).toMatchObject({ parent: 'issue-parent', upTo: boundary, seedLength: boundary + 2 })
      await parentAgain.dispose()
      await childAgain.dispose()
      for (const id of ['issue-parent', 'issue-fork']) expect(checkSessionInvariants((await store.load(id)) as SessionEvent[])).toEqual([])
      await store.close()
    })
  })
})

// A disposal during an approval wait parks the question (TL-18, CX-17): the
// log keeps it pending with no turn/end, the lease goes at once, and an agent
// that reopens the session answers it and finishes the turn there.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { AgentStateError, createAgent, defineTool, type Agent, type SessionEvent } from '../../src/index.js'
import { memoryStore, sqliteStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { until } from '../stores/support.js'

const quiet = { error: () => {} }

function deployTool(executionMode: 'parallel' | 'exclusive' = 'exclusive') {
  const runs: unknown[] = []
  const tool = defineTool({
    name: 'deploy',
    description: 'deploys; a person approves each call',
    input: z.object({ env: z.string() }),
    executionMode,
    execute: (args) => {
      runs.push(args)
      return `deployed to ${args.env}`
    },
  })
  return { tool, runs }
}

const askForDeploy = (agent: Agent) =>
  agent.on('tools/pre-execute', ({ name }, next) => (name === 'deploy' ? { kind: 'ask', reason: 'deploying needs a person' } : next()))

function asked(agent: Agent): Promise<string> {
  return new Promise((resolve) => {
    const off = agent.on('tools/approval-requested', ({ callId }) => {
      off()
      resolve(callId)
    })
  })
}

const types = (events: readonly SessionEvent[]) => events.map((e) => e.type).filter((t) => t !== 'assistant/chunk')
const turnEnds = (events: readonly SessionEvent[]) => events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: unknown }).reason)

describe('parked approvals without a store', () => {
  it('TL-18: dispose during ask leaves the question pending in the session; a new agent over it approves and the turn completes', async () => {
    const { tool, runs } = deployTool()
    const first = createAgent({
      model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' }])]),
      tools: [tool],
      approvals: true,
      logger: quiet,
    })
    askForDeploy(first)
    const question = asked(first)
    const run = first.run('deploy to prod')
    expect(await question).toBe('c1')
    await first.dispose()
    expect(first.actor.getSnapshot().value).toBe('disposed')
    expect(await run).toMatchObject({ turn: 1, end: { kind: 'awaiting-approval', callId: 'c1' } })
    expect(turnEnds(first.session.events)).toEqual([])
    expect(types(first.session.events).slice(-2)).toEqual(['tool/call', 'tool/approval-request'])
    expect(() => first.approve('c1')).toThrow(AgentStateError)

    // the same Session object (what a process keeps without a store) carries the wait to the next agent
    const second = createAgent({ model: scriptedModel([textResponse('deployed')]), tools: [tool], session: first.session, logger: quiet })
    expect(second.status).toBe('running')
    expect(second.pendingApprovals.map((p) => p.callId)).toEqual(['c1'])
    second.approve('c1')
    await second.whenIdle()
    expect(runs).toEqual([{ env: 'prod' }])
    expect(turnEnds(second.session.events)).toEqual([{ kind: 'completed' }])
    expect(checkSessionInvariants(second.session.events)).toEqual([])
    await second.dispose()
  })

  it('TL-18: a disposal waits for the calls that started before the waiting one, commits their results, then parks', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const slow = defineTool({
      name: 'lookup',
      description: 'reads something slowly',
      input: z.object({}),
      executionMode: 'parallel',
      execute: async () => {
        await gate
        return 'found'
      },
    })
    const { tool, runs } = deployTool('parallel')
    const model = scriptedModel([
      toolCallResponse([
        { id: 'c0', name: 'lookup', arguments: '{}' },
        { id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' },
      ]),
    ])
    const agent = createAgent({ model, tools: [slow, tool], approvals: true, maxParallelToolCalls: 4, logger: quiet })
    askForDeploy(agent)
    const question = asked(agent)
    agent.followup('look up, then deploy')
    await question
    const disposed = agent.dispose()
    let done = false
    void disposed.then(() => (done = true))
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(done).toBe(false)
    release()
    await disposed
    const events = agent.session.events
    const lookup = events.find((e) => e.type === 'tool/result' && e.data.message.source.callId === 'c0')
    expect(lookup).toMatchObject({ data: { message: { content: [{ content: 'found', isError: false }] } } })
    expect(turnEnds(events)).toEqual([])
    expect(agent.pendingApprovals.map((p) => p.callId)).toEqual(['c1'])
    expect(runs).toEqual([])
  })

  it('TL-18: dispose({ force }) abandons an earlier call that never settles (TOOL_OUTCOME_UNKNOWN), then parks the question', async () => {
    const stuck = defineTool({
      name: 'lookup',
      description: 'never answers and ignores its signal',
      input: z.object({}),
      executionMode: 'parallel',
      execute: () => new Promise<string>(() => {}),
    })
    const { tool, runs } = deployTool('parallel')
    const model = scriptedModel([
      toolCallResponse([
        { id: 'c0', name: 'lookup', arguments: '{}' },
        { id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' },
      ]),
    ])
    const agent = createAgent({ model, tools: [stuck, tool], approvals: true, logger: quiet })
    askForDeploy(agent)
    const question = asked(agent)
    agent.followup('look up, then deploy')
    await question
    await agent.dispose({ force: true, graceMs: 5 })
    const events = agent.session.events
    const lookup = events.find((e) => e.type === 'tool/result' && e.data.message.source.callId === 'c0')
    expect(lookup).toMatchObject({ data: { error: { code: 'TOOL_OUTCOME_UNKNOWN' } } })
    expect(turnEnds(events)).toEqual([])
    expect(agent.pendingApprovals.map((p) => p.callId)).toEqual(['c1'])
    expect(runs).toEqual([])
  })

  it('CX-17: a cancel of a parked-then-reopened wait still ends the turn aborted; a cancel before dispose is not parked', async () => {
    const { tool, runs } = deployTool()
    const first = createAgent({
      model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' }])]),
      tools: [tool],
      approvals: true,
      logger: quiet,
    })
    askForDeploy(first)
    const question = asked(first)
    first.followup('deploy')
    await question
    await first.dispose()
    const second = createAgent({ model: scriptedModel([]), tools: [tool], session: first.session, logger: quiet })
    second.cancel()
    await second.whenIdle()
    expect(turnEnds(second.session.events)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    expect(second.pendingApprovals).toEqual([])
    expect(runs).toEqual([])
    await second.dispose()

    // an agent that is cancelled first and disposed after ends the turn as before (the cancel wins)
    const third = createAgent({
      model: scriptedModel([toolCallResponse([{ id: 'c2', name: 'deploy', arguments: '{"env":"prod"}' }])]),
      tools: [tool],
      approvals: true,
      logger: quiet,
    })
    askForDeploy(third)
    const again = asked(third)
    third.followup('deploy')
    await again
    third.cancel()
    await third.dispose()
    expect(turnEnds(third.session.events)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
  })

  it('TL-18: dispose({ force }) parks the question too; a memory store keeps it for the next agent of the process', async () => {
    const store = memoryStore()
    const { tool, runs } = deployTool()
    const first = await createAgent({
      model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' }])]),
      tools: [tool],
      approvals: true,
      store,
      sessionId: 'ops',
      logger: quiet,
    })
    askForDeploy(first)
    const question = asked(first)
    first.followup('deploy')
    await question
    await first.dispose({ force: true, graceMs: 0 })
    const second = await createAgent({ model: scriptedModel([textResponse('done')]), tools: [tool], store, sessionId: 'ops', logger: quiet })
    expect(second.pendingApprovals.map((p) => p.callId)).toEqual(['c1'])
    second.deny('c1', 'not today')
    await second.whenIdle()
    expect(runs).toEqual([])
    expect(turnEnds(second.session.events)).toEqual([{ kind: 'completed' }])
    await second.dispose()
    const stored = (await store.load('ops')) as SessionEvent[]
    expect(stored.filter((e) => e.type === 'tool/approval-answer').map((e) => e.data)).toMatchObject([{ callId: 'c1', decision: 'deny', reason: 'not today' }])
    expect(checkSessionInvariants(stored)).toEqual([])
  })
})

describe('parked approvals across processes on SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentchart-parked-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const child = fileURLToPath(new URL('./approval-child.ts', import.meta.url))

  /** A child that asks, then disposes gracefully; resolves once it printed DISPOSED (it stays alive, holding nothing). */
  async function disposedChild(path: string, sessionId: string): Promise<{ proc: ChildProcess; out: () => string }> {
    const proc = spawn(process.execPath, ['--import', 'tsx', child, path, sessionId, 'dispose'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    proc.stdout!.on('data', (d: Buffer) => (out += String(d)))
    proc.stderr!.on('data', (d: Buffer) => (err += String(d)))
    await until(() => out.includes('DISPOSED') || proc.exitCode !== null, 30_000, `the child to ask and dispose (${err})`)
    return { proc, out: () => out }
  }

  async function stop(proc: ChildProcess): Promise<void> {
    if (proc.exitCode !== null) return
    const exited = new Promise((resolve) => proc.on('exit', resolve))
    proc.kill('SIGKILL')
    await exited
  }

  it('TL-18: a graceful dispose during ask, then a new process approves: the tool runs once, the turn completes', async () => {
    const path = join(dir, 'approve.db')
    const { proc, out } = await disposedChild(path, 'ops')
    try {
      expect(out()).toContain('DISPOSED status=disposed turn-end=false')
      // the child is alive and its lease would last 15 s: opening at once works only because disposal released it
      const store = sqliteStore({ path })
      const { tool, runs } = deployTool()
      const agent = await createAgent({ model: scriptedModel([textResponse('deployed')]), tools: [tool], store, sessionId: 'ops', logger: quiet })
      expect(agent.pendingApprovals).toMatchObject([{ callId: 'c1', name: 'deploy', reason: 'deploying to prod needs a person' }])
      expect(agent.status).toBe('running')
      agent.approve('c1')
      await agent.whenIdle()
      expect(runs).toEqual([{ env: 'prod' }])
      await agent.dispose()
      const stored = (await store.load('ops')) as SessionEvent[]
      expect(out()).not.toContain('DEPLOYED-IN-CHILD')
      expect(stored.filter((e) => e.type === 'tool/result')).toHaveLength(1)
      expect(turnEnds(stored)).toEqual([{ kind: 'completed' }])
      expect(checkSessionInvariants(stored)).toEqual([])
      await store.close()
    } finally {
      await stop(proc)
    }
  }, 60_000)

  it('TL-18: deny after a reopen: the model reads the denial and the turn completes; the tool never runs', async () => {
    const path = join(dir, 'deny.db')
    const { proc } = await disposedChild(path, 'ops-deny')
    try {
      const store = sqliteStore({ path })
      const { tool, runs } = deployTool()
      const model = scriptedModel([textResponse('not deployed')])
      const agent = await createAgent({ model, tools: [tool], store, sessionId: 'ops-deny', logger: quiet })
      agent.deny('c1', 'freeze week')
      await agent.whenIdle()
      expect(runs).toEqual([])
      const last = model.requests[0].messages.at(-1)!
      expect(last.content).toMatchObject([{ type: 'tool-result', toolCallId: 'c1', content: 'Error: freeze week', isError: true }])
      await agent.dispose()
      const stored = (await store.load('ops-deny')) as SessionEvent[]
      expect(turnEnds(stored)).toEqual([{ kind: 'completed' }])
      expect(checkSessionInvariants(stored)).toEqual([])
      await store.close()
    } finally {
      await stop(proc)
    }
  }, 60_000)

  it('TL-18: cancel after a reopen ends the turn aborted, the call closed as never started', async () => {
    const path = join(dir, 'cancel.db')
    const { proc } = await disposedChild(path, 'ops-cancel')
    try {
      const store = sqliteStore({ path })
      const { tool, runs } = deployTool()
      const agent = await createAgent({ model: scriptedModel([]), tools: [tool], store, sessionId: 'ops-cancel', logger: quiet })
      agent.cancel()
      await agent.whenIdle()
      await agent.dispose()
      expect(runs).toEqual([])
      const stored = (await store.load('ops-cancel')) as SessionEvent[]
      const result = stored.find((e) => e.type === 'tool/result')
      expect(result).toMatchObject({ data: { error: { code: 'ABORTED_BEFORE_DISPATCH' } } })
      expect(turnEnds(stored)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
      expect(checkSessionInvariants(stored)).toEqual([])
      await store.close()
    } finally {
      await stop(proc)
    }
  }, 60_000)

  it('TL-18: store.close() during ask keeps the question and frees the session at once for another opener', async () => {
    const path = join(dir, 'close.db')
    const { tool, runs } = deployTool()
    const storeA = sqliteStore({ path })
    const first = await createAgent({
      model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' }])]),
      tools: [tool],
      approvals: true,
      store: storeA,
      sessionId: 'ops-close',
      logger: quiet,
    })
    askForDeploy(first)
    const question = asked(first)
    first.followup('deploy')
    await question
    await storeA.close()
    // the process shuts its agent down after its store (RS-7 keeps a live agent's open turn to itself in-process)
    await first.dispose()
    expect(turnEnds(first.session.events)).toEqual([])
    const storeB = sqliteStore({ path })
    const second = await createAgent({ model: scriptedModel([textResponse('deployed')]), tools: [tool], store: storeB, sessionId: 'ops-close', logger: quiet })
    expect(second.pendingApprovals.map((p) => p.callId)).toEqual(['c1'])
    second.approve('c1')
    await second.whenIdle()
    expect(runs).toEqual([{ env: 'prod' }])
    await second.dispose()
    const stored = (await storeB.load('ops-close')) as SessionEvent[]
    expect(turnEnds(stored)).toEqual([{ kind: 'completed' }])
    expect(checkSessionInvariants(stored)).toEqual([])
    await storeB.close()
  }, 60_000)
})

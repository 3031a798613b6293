// Tool approvals (TL-18): a pre-execute `ask` makes the call wait for a
// person; the wait is in the log, so it survives a restart over a store.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ApprovalError, createAgent, createSession, defineTool, SessionInUseError, type Agent, type SessionEvent } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { track, trace } from '../helpers.js'
import { controlledStore, until, type PendingCommit } from '../stores/support.js'

const quiet = { error: () => {} }

/** A deploy tool that counts its runs, and the ask that guards it. */
function deployTool() {
  const runs: unknown[] = []
  const tool = defineTool({
    name: 'deploy',
    description: 'deploys; a person approves each call',
    input: z.object({ env: z.string() }),
    execute: (args) => {
      runs.push(args)
      return `deployed to ${args.env}`
    },
  })
  return { tool, runs }
}

const askForDeploy = (agent: Agent) =>
  agent.on('tools/pre-execute', ({ name }, next) => (name === 'deploy' ? { kind: 'ask', reason: 'deploying needs a person' } : next()))

const oneCall = () => [toolCallResponse([{ id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' }]), textResponse('done')]

/** Resolves once a call waits for approval. */
function asked(agent: Agent): Promise<{ callId: string; reason: string }> {
  return new Promise((resolve) => {
    const off = agent.on('tools/approval-requested', (p) => {
      off()
      resolve({ callId: p.callId, reason: p.reason })
    })
  })
}

const resultOf = (events: readonly SessionEvent[], callId: string) =>
  events.find((e) => e.type === 'tool/result' && e.data.message.source.callId === callId) as Extract<SessionEvent, { type: 'tool/result' }> | undefined

describe('approvals (TL-18)', () => {
  it('TL-18: an ask waits in awaiting-approval, is listed as pending, and an approval runs the tool once', async () => {
    const { tool, runs } = deployTool()
    const agent = track(createAgent({ model: scriptedModel(oneCall()), tools: [tool], approvals: true, logger: quiet }))
    askForDeploy(agent)
    const question = asked(agent)
    agent.followup('deploy')
    expect(await question).toEqual({ callId: 'c1', reason: 'deploying needs a person' })
    expect(agent.status).toBe('running')
    expect(agent.actor.getSnapshot().matches({ running: { turn: { step: { toolBatch: { dispatch: 'awaitingApproval' } } } } })).toBe(true)
    expect(agent.pendingApprovals).toEqual([
      { turn: 1, step: 1, callId: 'c1', name: 'deploy', arguments: { env: 'prod' }, reason: 'deploying needs a person', seq: expect.any(Number) },
    ])
    expect(runs).toEqual([])
    agent.approve('c1')
    await agent.whenIdle()
    expect(runs).toEqual([{ env: 'prod' }])
    expect(agent.pendingApprovals).toEqual([])
    expect(trace(agent).slice(7, 13)).toEqual([
      'assistant/message',
      'tool/call(c1)',
      'tool/approval-request',
      'tool/approval-answer',
      'tool/result(c1)',
      'step/end{1,1}',
    ])
    expect(resultOf(agent.session.events, 'c1')!.data.message.content[0].content).toBe('deployed to prod')
    expect(agent.session.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
  })

  it('TL-18: a denied ask produces the denial result, the body never runs, and the model reads the reason', async () => {
    const { tool, runs } = deployTool()
    const model = scriptedModel(oneCall())
    const agent = track(createAgent({ model, tools: [tool], approvals: true, logger: quiet }))
    askForDeploy(agent)
    const question = asked(agent)
    agent.followup('deploy')
    await question
    agent.deny('c1', 'not on a Friday')
    await agent.whenIdle()
    expect(runs).toEqual([])
    const result = resultOf(agent.session.events, 'c1')!
    expect(result.data.error).toEqual({ name: 'ToolDeniedError', code: 'DENIED' })
    expect(result.data.message.content[0]).toMatchObject({ content: 'Error: not on a Friday', isError: true })
    expect(agent.session.events.find((e) => e.type === 'tool/approval-answer')!.data).toEqual({
      turn: 1,
      step: 1,
      callId: 'c1',
      decision: 'deny',
      reason: 'not on a Friday',
    })
    // the second request carries the denial as the call's result
    expect(JSON.stringify(model.requests[1].messages)).toContain('not on a Friday')
  })

  it('TL-18: a cancel during the wait ends the turn aborted with the call closed as not started', async () => {
    const { tool, runs } = deployTool()
    const agent = track(createAgent({ model: scriptedModel(oneCall()), tools: [tool], approvals: true, logger: quiet }))
    askForDeploy(agent)
    const question = asked(agent)
    agent.followup('deploy')
    await question
    agent.cancel()
    await agent.whenIdle()
    expect(runs).toEqual([])
    expect(resultOf(agent.session.events, 'c1')!.data.error).toEqual({ name: 'AbortError', code: 'ABORTED_BEFORE_DISPATCH' })
    expect(trace(agent).slice(-4)).toEqual(['tool/approval-request', 'tool/result(c1)', 'step/end{1,1}', 'turn/end{1,aborted}'])
    expect(agent.pendingApprovals).toEqual([])
    // the question is closed: answering it now is refused by name
    expect(() => agent.approve('c1')).toThrow(ApprovalError)
    expect(() => agent.approve('c1')).toThrow(expect.objectContaining({ code: 'APPROVAL_ALREADY_ANSWERED' }))
  })

  it('TL-18: with no approver configured (no approvals option, no approval listener) an ask behaves as deny', async () => {
    const { tool, runs } = deployTool()
    const agent = track(createAgent({ model: scriptedModel(oneCall()), tools: [tool], logger: quiet }))
    askForDeploy(agent)
    agent.followup('deploy')
    await agent.whenIdle()
    expect(runs).toEqual([])
    expect(agent.session.events.some((e) => e.type === 'tool/approval-request')).toBe(false)
    const result = resultOf(agent.session.events, 'c1')!
    expect(result.data.error).toEqual({ name: 'ToolDeniedError', code: 'DENIED' })
    expect(result.data.message.content[0].content).toBe('Error: approval required, and no approver is configured: deploying needs a person')
  })

  it('TL-18: a tools/approval-requested listener makes the agent an approver without the option', async () => {
    const { tool, runs } = deployTool()
    const agent = track(createAgent({ model: scriptedModel(oneCall()), tools: [tool], logger: quiet }))
    askForDeploy(agent)
    agent.on('tools/approval-requested', ({ callId }) => queueMicrotask(() => agent.approve(callId)))
    agent.followup('deploy')
    await agent.whenIdle()
    expect(runs).toHaveLength(1)
  })

  it('TL-18: answering an unknown or an already answered call id is a typed error; an ask without a reason fails the call', async () => {
    const { tool } = deployTool()
    const agent = track(createAgent({ model: scriptedModel(oneCall()), tools: [tool], approvals: true, logger: quiet }))
    expect(() => agent.approve('nope')).toThrow(expect.objectContaining({ name: 'ApprovalError', code: 'APPROVAL_UNKNOWN', callId: 'nope' }))
    askForDeploy(agent)
    const question = asked(agent)
    agent.followup('deploy')
    await question
    expect(() => agent.deny('c1', 42 as unknown as string)).toThrow(/string reason/)
    agent.approve('c1')
    expect(() => agent.deny('c1', 'too late')).toThrow(expect.objectContaining({ code: 'APPROVAL_ALREADY_ANSWERED' }))
    await agent.whenIdle()

    const other = track(createAgent({ model: scriptedModel(oneCall()), tools: [deployTool().tool], approvals: true, logger: quiet }))
    other.on('tools/pre-execute', () => ({ kind: 'ask' }) as never)
    other.followup('deploy')
    await other.whenIdle()
    expect(resultOf(other.session.events, 'c1')!.data.message.content[0].content).toMatch(/must give an ask a string reason/)
  })

  it('TL-18: parallel calls ask one at a time in model order; earlier results commit before the waiting call', async () => {
    const seen: string[] = []
    const read = defineTool({
      name: 'read',
      description: 'a parallel read',
      input: z.object({}).loose(),
      executionMode: 'parallel',
      execute: (_a, { callId }) => (seen.push(callId), `read ${callId}`),
    })
    const model = scriptedModel([
      toolCallResponse([
        { id: 'a', name: 'read', arguments: '{}' },
        { id: 'b', name: 'read', arguments: '{}' },
        { id: 'c', name: 'read', arguments: '{}' },
      ]),
      textResponse('done'),
    ])
    const agent = track(createAgent({ model, tools: [read], approvals: true, logger: quiet }))
    agent.on('tools/pre-execute', ({ callId }, next) => (callId === 'a' ? next() : { kind: 'ask', reason: `may I read ${callId}?` }))
    const answered: string[] = []
    agent.on('tools/approval-requested', ({ callId }) => {
      expect(agent.pendingApprovals.map((p) => p.callId)).toEqual([callId])
      answered.push(callId)
      queueMicrotask(() => (callId === 'b' ? agent.approve('b') : agent.deny('c', 'no')))
    })
    agent.followup('read three')
    await agent.whenIdle()
    expect(answered).toEqual(['b', 'c'])
    expect(seen.sort()).toEqual(['a', 'b'])
    const results = agent.session.events.filter((e) => e.type === 'tool/result').map((e) => (e as Extract<SessionEvent, { type: 'tool/result' }>).data)
    expect(results.map((r) => [r.message.source.callId, r.message.content[0].content])).toEqual([
      ['a', 'read a'],
      ['b', 'read b'],
      ['c', 'Error: no'],
    ])
  })

  it('TL-18: a new instance over a log that stops in the wait resumes with the question pending (not repaired away)', async () => {
    const { tool } = deployTool()
    const first = createAgent({ model: scriptedModel(oneCall()), tools: [tool], approvals: true, logger: quiet })
    askForDeploy(first)
    const question = asked(first)
    first.followup('deploy')
    await question
    const stored = first.session.events.map((e) => ({ ...e }))
    // a second process: a fresh session over the same stored log
    const second = deployTool()
    const agent = track(
      createAgent({ model: scriptedModel([textResponse('deployed, done')]), tools: [second.tool], session: createSession({ seed: stored }), logger: quiet }),
    )
    expect(agent.status).toBe('running')
    expect(agent.pendingApprovals.map((p) => p.callId)).toEqual(['c1'])
    expect(agent.session.events.some((e) => e.type === 'turn/end')).toBe(false)
    agent.approve('c1')
    await agent.whenIdle()
    expect(second.runs).toEqual([{ env: 'prod' }])
    const after = agent.session.events.slice(agent.session.seedLength)
    expect(trace(after)[0]).toBe('tool/approval-answer')
    expect(after.find((e) => e.type === 'request/header')!.data).toMatchObject({ reason: 'resume' })
    expect(agent.session.events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } } })
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
    await first.dispose()
  })
})

describe('approval events in the invariants (TL-18)', () => {
  it('TL-18: approval-sequence: a question follows its call, its one answer follows the question, both before the result', async () => {
    const { tool } = deployTool()
    const agent = track(createAgent({ model: scriptedModel(oneCall()), tools: [tool], approvals: true, logger: quiet }))
    askForDeploy(agent)
    const question = asked(agent)
    agent.followup('deploy')
    await question
    agent.approve('c1')
    await agent.whenIdle()
    const log = agent.session.events
    expect(checkSessionInvariants(log)).toEqual([])
    const at = (type: string) => log.findIndex((e) => e.type === type)
    const without = (i: number) => [...log.slice(0, i), ...log.slice(i + 1)].map((e, seq) => ({ ...e, seq }))
    const swap = (i: number, j: number) => {
      const copy = [...log]
      ;[copy[i], copy[j]] = [copy[j], copy[i]]
      return copy.map((e, seq) => ({ ...e, seq }))
    }
    const rules = (events: unknown[]) => checkSessionInvariants(events).map((v) => v.rule)
    // an answer with no question
    expect(rules(without(at('tool/approval-request')))).toContain('approval-sequence')
    // a question before its call
    expect(rules(swap(at('tool/call'), at('tool/approval-request')))).toContain('approval-sequence')
    // an answer after the result
    expect(rules(swap(at('tool/approval-answer'), at('tool/approval-answer') + 1))).toContain('approval-sequence')
    // a stored log that breaks it is refused as a seed, naming the rule
    const late = swap(at('tool/approval-answer'), at('tool/approval-answer') + 1)
    expect(() => createSession({ seed: late })).toThrow(expect.objectContaining({ name: 'SeedRefusedError', rule: 'approval-sequence' }))
  })
})

describe('approvals across a real process restart on SQLite (TL-18)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentchart-approvals-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const child = fileURLToPath(new URL('./approval-child.ts', import.meta.url))

  it('TL-18: an ask approved after a process restart runs the tool once, in the new process', async () => {
    const path = join(dir, 'approvals.db')
    const proc = spawn(process.execPath, ['--import', 'tsx', child, path, 'ops'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    proc.stdout.on('data', (d: Buffer) => (out += String(d)))
    proc.stderr.on('data', (d: Buffer) => (err += String(d)))
    const exited = new Promise((resolve) => proc.on('exit', resolve))
    try {
      await until(() => out.includes('APPROVAL-PENDING') || proc.exitCode !== null, 30_000, `the child to ask (${err})`)
    } finally {
      proc.kill('SIGKILL')
    }
    await exited
    expect(out).toContain('APPROVAL-PENDING')
    expect(out).not.toContain('DEPLOYED-IN-CHILD')

    const store = sqliteStore({ path })
    const { tool, runs } = deployTool()
    let agent: Agent | undefined
    while (!agent) {
      try {
        agent = await createAgent({ model: scriptedModel([textResponse('deployed')]), tools: [tool], store, sessionId: 'ops', logger: quiet })
      } catch (error) {
        if (!(error instanceof SessionInUseError)) throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    expect(agent.pendingApprovals).toMatchObject([{ callId: 'c1', name: 'deploy', reason: 'deploying to prod needs a person' }])
    expect(agent.session.events.some((e) => e.type === 'tool/result' || e.type === 'turn/end')).toBe(false)
    agent.approve('c1')
    await agent.whenIdle()
    expect(runs).toEqual([{ env: 'prod' }])
    await agent.dispose()

    // a third process sees the whole story, once
    const stored = (await store.load('ops')) as SessionEvent[]
    expect(stored.filter((e) => e.type === 'tool/result')).toHaveLength(1)
    expect(stored.filter((e) => e.type === 'tool/approval-answer')).toHaveLength(1)
    expect(stored.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
    expect(checkSessionInvariants(stored)).toEqual([])
    await store.close()
  }, 60_000)
})

describe('a question is reported only once it is committed (TL-18, issue 30)', () => {
  it('TL-18: tools/approval-requested fires, and pendingApprovals lists the call, only once the question is in the store', async () => {
    const control = controlledStore('manual')
    const { tool, runs } = deployTool()
    const agent = await createAgent({ model: scriptedModel(oneCall()), tools: [tool], approvals: true, store: control.store, sessionId: 'ops', logger: quiet })
    track(agent)
    askForDeploy(agent)
    const heard: { committedLength: number; questionSeq: number; stored: boolean; pending: string[] }[] = []
    agent.on('tools/approval-requested', ({ callId }) => {
      const question = agent.session.events.find((e) => e.type === 'tool/approval-request' && e.data.callId === callId)!
      const batch = control.batches.find((b) => b.events.some((e) => e.seq === question.seq))
      heard.push({
        committedLength: agent.committedLength,
        questionSeq: question.seq,
        stored: batch?.outcome === 'committed',
        pending: agent.pendingApprovals.map((p) => p.callId),
      })
    })
    agent.followup('deploy')
    // every commit goes through at once, except the one that holds the question
    let held: PendingCommit | undefined
    while (held === undefined) {
      const commit = await control.nextCommit()
      if (commit.events.some((e) => e.type === 'tool/approval-request')) held = commit
      else commit.resolve()
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
    // the question is in memory, not in the store: nobody has heard of it
    expect(agent.session.events.some((e) => e.type === 'tool/approval-request')).toBe(true)
    expect(heard).toEqual([])
    expect(agent.pendingApprovals).toEqual([])
    held.resolve()
    await until(() => heard.length > 0, 5_000, 'the approval notification')
    expect(heard).toEqual([{ committedLength: expect.any(Number), questionSeq: expect.any(Number), stored: true, pending: ['c1'] }])
    expect(heard[0].committedLength).toBeGreaterThan(heard[0].questionSeq)
    expect(agent.pendingApprovals.map((p) => p.callId)).toEqual(['c1'])
    control.mode = 'auto'
    for (const commit of [...control.waiting]) commit.resolve()
    agent.approve('c1')
    await agent.whenIdle()
    expect(runs).toEqual([{ env: 'prod' }])
    expect(checkSessionInvariants((await control.store.load('ops')) as SessionEvent[])).toEqual([])
  })

  it('TL-18: a question whose commit fails is never announced', async () => {
    const control = controlledStore('manual')
    const { tool, runs } = deployTool()
    const agent = await createAgent({
      model: scriptedModel(oneCall()),
      tools: [tool],
      approvals: true,
      store: control.store,
      sessionId: 'ops-failing',
      logger: quiet,
    })
    askForDeploy(agent)
    const heard: string[] = []
    agent.on('tools/approval-requested', ({ callId }) => void heard.push(callId))
    agent.followup('deploy')
    for (;;) {
      const commit = await control.nextCommit()
      if (!commit.events.some((e) => e.type === 'tool/approval-request')) {
        commit.resolve()
        continue
      }
      control.mode = 'auto'
      commit.reject(new Error('disk full'))
      break
    }
    await until(() => agent.status === 'idle', 5_000, 'the halted turn to end')
    expect(heard).toEqual([])
    expect(agent.pendingApprovals).toEqual([])
    expect(runs).toEqual([])
    await agent.dispose()
  })
})

describe('a process killed right after the notification (TL-18, issue 30)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentchart-approvals-kill-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const child = fileURLToPath(new URL('./approval-child.ts', import.meta.url))

  it('TL-18: a process SIGKILLed inside its tools/approval-requested listener reopens with the question pending', async () => {
    const path = join(dir, 'killed.db')
    const proc = spawn(process.execPath, ['--import', 'tsx', child, path, 'ops-killed', 'kill-on-notify'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    proc.stdout.on('data', (d: Buffer) => (out += String(d)))
    proc.stderr.on('data', (d: Buffer) => (err += String(d)))
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => proc.on('exit', (_code, s) => resolve(s)))
    expect(signal, err).toBe('SIGKILL')
    expect(out).toContain('NOTIFIED c1')

    const store = sqliteStore({ path })
    const { tool, runs } = deployTool()
    let agent: Agent | undefined
    while (!agent) {
      try {
        agent = await createAgent({ model: scriptedModel([textResponse('deployed')]), tools: [tool], store, sessionId: 'ops-killed', logger: quiet })
      } catch (error) {
        if (!(error instanceof SessionInUseError)) throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    expect(agent.pendingApprovals).toMatchObject([{ callId: 'c1', name: 'deploy', reason: 'deploying to prod needs a person' }])
    expect(agent.session.events.some((e) => e.type === 'turn/end')).toBe(false)
    agent.approve('c1')
    await agent.whenIdle()
    expect(runs).toEqual([{ env: 'prod' }])
    await agent.dispose()
    await store.close()
  }, 60_000)
})

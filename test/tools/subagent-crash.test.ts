// Subagents after a SIGKILL on SQLite (issue 25): resuming the parent repairs the
// child too, or picks up the answer of a child that finished before the crash.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { agentTool, createAgent, type Agent, type SessionEvent } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse } from '../../src/testing/index.js'

const quiet = { error: () => {} }
const child = fileURLToPath(new URL('./subagent-crash-child.ts', import.meta.url))

/** Runs the crash child until it prints `signal`, then makes sure it is dead. */
async function crashAt(path: string, mode: string, signal: string): Promise<void> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, path, mode], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  proc.stdout.on('data', (d: Buffer) => (out += String(d)))
  proc.stderr.on('data', (d: Buffer) => (err += String(d)))
  const exited = new Promise((resolve) => proc.on('exit', resolve))
  const deadline = Date.now() + 30_000
  while (!out.includes(signal) && proc.exitCode === null && proc.signalCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
  proc.kill('SIGKILL')
  await exited
  expect(out, err).toContain(signal)
}

/** Opens the parent again once the killed process's lease has lapsed. */
async function reopen(path: string, options: { tools: ReturnType<typeof agentTool>[]; answer: string }): Promise<Agent> {
  const store = sqliteStore({ path })
  for (;;) {
    try {
      return await createAgent({ model: scriptedModel([textResponse(options.answer)]), tools: options.tools, store, sessionId: 'planner', logger: quiet })
    } catch (error) {
      if ((error as { code?: string }).code !== 'SESSION_IN_USE') throw error
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}

const research = agentTool({
  name: 'research',
  description: 'researches a question in a child agent',
  input: z.object({ prompt: z.string() }),
  agent: () => ({ model: scriptedModel([textResponse('never asked')]) }),
})

const resultOf = (events: readonly SessionEvent[], callId: string) =>
  events.flatMap((e) => (e.type === 'tool/result' && e.data.message.source.callId === callId ? [e.data] : []))

describe('subagents across a SIGKILL on SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentchart-subagent-crash-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('RS-4/RS-5: killed mid-child, resuming the parent repairs parent and child; the call names the child and the next turn runs', async () => {
    const path = join(dir, 'mid-child.db')
    await crashAt(path, 'mid-child', 'CHILD-STREAMING')
    const parent = await reopen(path, { tools: [research], answer: 'Lisbon it is.' })
    const [result] = resultOf(parent.session.events, 'c1')
    expect(result?.error?.code).toBe('TOOL_OUTCOME_UNKNOWN')
    expect(result?.meta).toMatchObject({ subagent: { sessionId: 'planner.c1', turn: 1, end: 'interrupted' } })
    const store = sqliteStore({ path })
    const childLog = (await store.load('planner.c1')) as SessionEvent[]
    expect(childLog.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(['interrupted'])
    expect(checkSessionInvariants(childLog)).toEqual([])
    const next = await parent.run('And the weather?')
    expect(next.end.kind).toBe('completed')
    expect(checkSessionInvariants(parent.session.events)).toEqual([])
    await parent.dispose()
    await store.close()
  })

  it('a child that finished before the crash: the resumed parent closes the call with the child’s answer, not an unknown outcome', async () => {
    const path = join(dir, 'child-done.db')
    await crashAt(path, 'child-done', 'CHILD-DONE')
    const parent = await reopen(path, { tools: [research], answer: 'Lisbon it is.' })
    const [result] = resultOf(parent.session.events, 'c1')
    expect(result?.error).toBeUndefined()
    expect(result?.message.content[0]).toMatchObject({ content: 'Lisbon has 545,000 people.', isError: false })
    expect(result?.meta).toMatchObject({ subagent: { sessionId: 'planner.c1', turn: 1, end: 'completed', steps: 1 } })
    expect(parent.session.events.findLast((e) => e.type === 'turn/end')?.data).toMatchObject({ reason: { kind: 'interrupted' } })
    expect(checkSessionInvariants(parent.session.events)).toEqual([])
    expect((await parent.run('Book it')).end.kind).toBe('completed')
    await parent.dispose()
  })

  it('RS-5: a second turn reusing a call id, killed before its child starts, keeps the unknown outcome, not the first child’s answer', async () => {
    const path = join(dir, 'reused-before-child.db')
    await crashAt(path, 'reused-before-child', 'SECOND-CALL')
    const parent = await reopen(path, { tools: [research], answer: 'Lisbon it is.' })
    const [first, second] = resultOf(parent.session.events, 'c1')
    expect(first?.meta).toMatchObject({ subagent: { sessionId: 'planner.c1', turn: 1, end: 'completed' } })
    expect(second?.turn).toBe(2)
    expect(second?.error?.code).toBe('TOOL_OUTCOME_UNKNOWN')
    expect(second?.meta).toBeUndefined()
    expect(checkSessionInvariants(parent.session.events)).toEqual([])
    await parent.dispose()
  })

  it('RS-4/RS-5: a second turn reusing a call id, killed mid-child, repairs that turn’s own child (planner.c1~2), not the first', async () => {
    const path = join(dir, 'reused-mid-child.db')
    await crashAt(path, 'reused-mid-child', 'CHILD-STREAMING 2')
    const parent = await reopen(path, { tools: [research], answer: 'Lisbon it is.' })
    const [, second] = resultOf(parent.session.events, 'c1')
    expect(second?.error?.code).toBe('TOOL_OUTCOME_UNKNOWN')
    expect(second?.meta).toMatchObject({ subagent: { sessionId: 'planner.c1~2', turn: 1, end: 'interrupted' } })
    const store = sqliteStore({ path })
    const firstChild = (await store.load('planner.c1')) as SessionEvent[]
    const secondChild = (await store.load('planner.c1~2')) as SessionEvent[]
    const ends = (log: SessionEvent[]) => log.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
    expect(ends(firstChild)).toEqual(['completed'])
    expect(ends(secondChild)).toEqual(['interrupted'])
    expect(checkSessionInvariants(secondChild)).toEqual([])
    await parent.dispose()
    await store.close()
  })
})

// Any driver reads its mail: an agent opened with createAgent({ store }) (no worker) applies what a session client
// sends while it holds the lease — a steer joins the running turn's next step, a cancel ends the turn aborted, an
// approval answers a pending ask — and a subagent stored beside its parent is steered by its session id.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { agentTool, createAgent, defineTool, subagentsOf, type Agent } from '../../src/index.js'
import { createSessionClient, memoryStore, sqliteStore, type SessionStore } from '../../src/service/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, tick } from '../helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'agentchart-driver-mail-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })
const quiet = { error: () => {} }

/** A driver store and a client store that share only the data (two SQLite connections, or one memory store). */
const stores: Record<string, () => { driver: SessionStore; client: SessionStore }> = {
  memory: () => {
    const store = memoryStore()
    return { driver: store, client: store }
  },
  sqlite: () => {
    const path = join(dir, `${Math.random().toString(36).slice(2)}.db`)
    return { driver: sqliteStore({ path }), client: sqliteStore({ path }) }
  },
}

/** A tool the test releases, so the turn is still running when the client's message arrives. */
function gatedTool() {
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => (release = resolve))
  const tool = defineTool({ name: 'work', description: 'work', input: z.object({}), execute: () => gate.then(() => 'worked') })
  return { tool, release }
}

async function until(done: () => boolean): Promise<void> {
  for (let turn = 0; turn < 2000 && !done(); turn++) await tick(2)
}

describe.each(Object.keys(stores))('a driver opened with createAgent reads its mailbox (%s)', (kind) => {
  it('IN-12: a steer sent by a client while the turn runs joins the next step of the same turn', async () => {
    const { driver, client: clientStore } = stores[kind]()
    const { tool, release } = gatedTool()
    const model = scriptedModel([toolCallResponse([call('w1', 'work', {})]), (request) => textResponse(`saw ${request.messages.length} messages`)])
    const agent = await createAgent({ store: driver, sessionId: 'chat', model, tools: [tool], logger: quiet })
    const client = createSessionClient({ store: clientStore })
    const run = agent.run('start')
    await until(() => ofType(agent, 'tool/call').length > 0)
    await client.steer('chat', 'also this')
    await until(() => ofType(agent, 'agent/inbox/spliced').some((e) => e.data.target === 'next-step' && 'inserted' in e.data))
    release()
    const result = await run
    expect(result.end.kind).toBe('completed')
    expect(ofType(agent, 'turn/start')).toHaveLength(1)
    const users = ofType(agent, 'user/message').map((e) => e.data.content)
    expect(users).toEqual([[{ type: 'text', text: 'start' }], [{ type: 'text', text: 'also this' }]])
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
    await agent.dispose()
    await client.close()
    if (clientStore !== driver) await clientStore.close()
    await driver.close()
  })

  it('CX-5: a cancel sent by a client ends the running turn aborted with its cause', async () => {
    const { driver, client: clientStore } = stores[kind]()
    const cooperative = defineTool({
      name: 'work',
      description: 'work',
      input: z.object({}),
      execute: (_args, { signal }) => new Promise<string>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
    })
    const agent = await createAgent({
      store: driver,
      sessionId: 'chat',
      model: scriptedModel([toolCallResponse([call('w1', 'work', {})])]),
      tools: [cooperative],
      logger: quiet,
    })
    const client = createSessionClient({ store: clientStore })
    const run = agent.run('start')
    await until(() => ofType(agent, 'tool/call').length > 0)
    await client.cancel('chat', { kind: 'user' })
    expect((await run).end).toMatchObject({ kind: 'aborted', reason: { kind: 'user' } })
    await agent.dispose()
    await client.close()
    if (clientStore !== driver) await clientStore.close()
    await driver.close()
  })

  it('TL-18: an approval sent by a client answers the pending ask and the call runs once', async () => {
    const { driver, client: clientStore } = stores[kind]()
    let runs = 0
    const deploy = defineTool({ name: 'deploy', description: 'deploy', input: z.object({}), execute: () => `deployed ${++runs}` })
    const agent = await createAgent({
      store: driver,
      sessionId: 'chat',
      model: scriptedModel([toolCallResponse([call('d1', 'deploy', {})]), textResponse('done')]),
      tools: [deploy],
      approvals: true,
      logger: quiet,
    })
    agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'Deploy?' }))
    const client = createSessionClient({ store: clientStore })
    const run = agent.run('ship it')
    await until(() => ofType(agent, 'tool/approval-request').length > 0)
    await client.approve('chat', 'd1')
    expect((await run).end.kind).toBe('completed')
    expect(runs).toBe(1)
    await agent.dispose()
    await client.close()
    if (clientStore !== driver) await clientStore.close()
    await driver.close()
  })

  it('with mailbox: false the agent leaves its mail for the next driver', async () => {
    const { driver, client: clientStore } = stores[kind]()
    const agent = await createAgent({
      store: driver,
      sessionId: 'quiet',
      model: scriptedModel([textResponse('a'), textResponse('b')]),
      mailbox: false,
      logger: quiet,
    })
    const client = createSessionClient({ store: clientStore })
    await client.inject('quiet', 'for later')
    await tick(50)
    expect(ofType(agent, 'agent/inbox/spliced')).toEqual([])
    await agent.dispose()
    const next = await createAgent({ store: driver, sessionId: 'quiet', model: scriptedModel([textResponse('a')]), logger: quiet })
    await until(() => ofType(next, 'agent/inbox/spliced').length > 0)
    expect(next.inbox.nextStep.map((m) => m.content)).toEqual([[{ type: 'text', text: 'for later' }]])
    await next.dispose()
    await client.close()
    if (clientStore !== driver) await clientStore.close()
    await driver.close()
  })
})

describe('a subagent by its session id', () => {
  it("a client steers a running child stored beside its parent; the child's answer saw the steer", async () => {
    const store = memoryStore()
    const { tool: work, release } = gatedTool()
    const research = agentTool({
      name: 'research',
      description: 'Research',
      input: z.object({ task: z.string() }),
      agent: () => ({
        model: scriptedModel([
          toolCallResponse([call('w1', 'work', {})]),
          (request) => textResponse(`child saw ${request.messages.filter((m) => m.role === 'user').length} user messages`),
        ]),
        tools: [work],
        logger: quiet,
      }),
    })
    const parent: Agent = await createAgent({
      store,
      sessionId: 'planner',
      model: scriptedModel([toolCallResponse([call('r1', 'research', { task: 'x' })]), textResponse('done')]),
      tools: [research],
      logger: quiet,
    })
    const client = createSessionClient({ store })
    const run = parent.run('plan')
    await until(() => subagentsOf(parent).length > 0 && ofType(subagentsOf(parent)[0], 'tool/call').length > 0)
    const [child] = subagentsOf(parent)
    await client.steer(child.sessionId, 'focus on y')
    await until(() => ofType(child, 'agent/inbox/spliced').some((e) => e.data.target === 'next-step' && 'inserted' in e.data))
    release()
    await run
    // the prompt, the work result and the steer
    expect(ofType(parent, 'tool/result')[0].data.message.content[0].content).toBe('child saw 3 user messages')
    await parent.dispose()
    await client.close()
    await store.close()
  })
})

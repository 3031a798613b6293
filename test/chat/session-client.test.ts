// The chat endpoint through the real session client of agentchart/stores: the endpoint only talks to the store
// (mailbox and committed log); the session is driven by an agent that holds its lease and reads its mail.
import { lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createChatHandler } from '../../src/chat/index.js'
import { createAgent, defineTool } from '../../src/index.js'
import { createSessionClient, memoryStore } from '../../src/service/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { chatFor, gate, heldStream, logged, textOf, typesOf, until } from './helpers.js'

const quiet = { error: () => {} }
const echo = defineTool({ name: 'echo', description: 'say it back', input: z.object({ text: z.string() }), execute: ({ text }) => `echo: ${text}` })

describe('chat endpoint over createSessionClient', () => {
  it('IN-12: a turn streams from the committed log, and a message while it runs steers it: one turn', async () => {
    const store = memoryStore()
    const held = gate()
    const model = scriptedModel([(request) => heldStream(textResponse('First part.'), 2, held, request.signal), textResponse('Second part.')])
    const agent = await createAgent({ store, sessionId: 'c1', model, logger: quiet })
    const client = createSessionClient({ store })
    const chat = chatFor(createChatHandler({ client }), 'c1')
    const first = chat.sendMessage({ text: 'one' })
    await logged(agent, (e) => e.type === 'assistant/chunk')
    await until(() => textOf(chat.messages[1]).length > 0, 'the first answer streaming')
    const second = chat.sendMessage({ text: 'two' })
    await logged(agent, (e) => e.type === 'agent/inbox/spliced' && e.data.target === 'next-step' && e.data.inserted.length > 0)
    held.open()
    await Promise.all([first, second])
    await agent.whenIdle()
    expect(typesOf(agent, 'turn/start')).toHaveLength(1)
    expect(chat.messages.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'one'],
      ['assistant', 'First part.'],
      ['user', 'two'],
      ['assistant', 'Second part.'],
    ])
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
    await agent.dispose()
    await client.close()
  })

  it('the same message POSTed twice at once, before the driver reads its mail, is sent once, and both responses show its turn', async () => {
    const store = memoryStore()
    const model = scriptedModel([textResponse('Only once.'), textResponse('A second turn.')])
    const client = createSessionClient({ store })
    await client.create('c3')
    const handler = createChatHandler({ client, keepAliveMs: 0 })
    const body = JSON.stringify({ id: 'c3', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] })
    const post = () => handler(new Request('http://chat.test/api/chat', { method: 'POST', body }))
    const responses = await Promise.all([post(), post()])
    // the driver picks up its mail only now (a worker that polls): the log showed neither request the message
    const agent = await createAgent({ store, sessionId: 'c3', model, logger: quiet })
    const texts = await Promise.all(responses.map((r) => r.text()))
    await agent.whenIdle()
    expect(typesOf(agent, 'user/message').map((e) => (e.data as { id: string }).id)).toEqual(['u1'])
    expect(typesOf(agent, 'turn/start')).toHaveLength(1)
    const streamed = (raw: string) =>
      raw
        .split('\n\n')
        .filter((frame) => frame.startsWith('data: {'))
        .map((frame) => JSON.parse(frame.slice(6)) as { type: string; delta?: string })
        .map((chunk) => (chunk.type === 'text-delta' ? chunk.delta : ''))
        .join('')
    expect(texts.map(streamed)).toEqual(['Only once.', 'Only once.'])
    await agent.dispose()
    await client.close()
  })

  it('TL-18: an approval answered in the page reaches the driver through the mailbox; Stop then aborts the turn', async () => {
    const store = memoryStore()
    const held = gate()
    const model = scriptedModel([
      toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"a"}' }]),
      (request) => heldStream(textResponse('After the approval, a long answer.'), 3, held, request.signal),
    ])
    const agent = await createAgent({ store, sessionId: 'c2', model, tools: [echo], approvals: true, logger: quiet })
    agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'yes?' }))
    const client = createSessionClient({ store })
    const handler = createChatHandler({ client })
    const chat = chatFor(handler, 'c2', { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
    await chat.sendMessage({ text: 'echo a' })
    const asking = chat.messages[1].parts.find((p) => p.type === 'tool-echo') as { state: string; approval: { id: string } }
    expect(asking.state).toBe('approval-requested')
    await chat.addToolApprovalResponse({ id: asking.approval.id, approved: true })
    await until(() => textOf(chat.messages[1]).length > 0, 'the answer after the approval')
    const stop = await handler(new Request('http://chat.test/api/chat/c2/stop', { method: 'POST' }))
    expect(await stop.json()).toEqual({ stopped: true, ended: true })
    await agent.whenIdle()
    expect(typesOf(agent, 'tool/result')).toHaveLength(1)
    expect(typesOf(agent, 'turn/end').at(-1)!.data).toMatchObject({ reason: { kind: 'aborted', reason: { kind: 'user' } } })
    expect(model.requests).toHaveLength(2)
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
    await agent.dispose()
    await client.close()
  })
})

// The chat endpoint driven by the AI SDK's own client code: `Chat` (what
// `useChat` wraps) with DefaultChatTransport, and readUIMessageStream over a
// raw response. Every assertion reads the agent's log or the chat's messages.
import { readUIMessageStream, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage, type UIMessageChunk } from 'ai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { chatMessages, createChatHandler } from '../../src/chat/index.js'
import { createAgent, defineTool, type Agent, type ModelAdapter, type ModelRequest } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { checkSessionInvariants, errorResponse, reasoningResponse, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { API, chatFor, gate, heldStream, logged, textOf, transportFor, typesOf, until } from './helpers.js'

const quiet = { error: () => {} }

const echo = defineTool({
  name: 'echo',
  description: 'say it back',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => `echo: ${text}`,
})

/** One agent per chat id, as an app would keep them. */
function agents(make: (chatId: string) => Agent) {
  const made = new Map<string, Agent>()
  return {
    lookup: (chatId: string) => {
      let agent = made.get(chatId)
      if (!agent) made.set(chatId, (agent = make(chatId)))
      return agent
    },
    get: (chatId: string) => made.get(chatId)!,
  }
}

/** One agent per chat whose echo tool asks a person before it runs; `ran` lists what it echoed. */
function askingEcho(modelFor: () => ModelAdapter) {
  const ran: string[] = []
  const tracked = defineTool({
    name: 'echo',
    description: 'say it back',
    input: z.object({ text: z.string() }),
    execute: ({ text }) => (ran.push(text), text),
  })
  const chats = agents((id) => {
    const agent = createAgent({ model: modelFor(), id, tools: [tracked], approvals: true, logger: quiet })
    agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'a person decides' }))
    return agent
  })
  return { ran, chats }
}

const userText = (request: ModelRequest) =>
  request.messages.filter((m) => m.role === 'user' && m.source.kind === 'user').map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''))

describe('chat endpoint over local agents', () => {
  it('streams a text turn as the UI message stream protocol (headers, chunks, [DONE])', async () => {
    const model = scriptedModel([textResponse('Hello there, friend.')])
    const chats = agents((id) => createAgent({ model, id, logger: quiet }))
    const handler = createChatHandler({ agent: chats.lookup })
    const response = await handler(
      new Request(API, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'c1', trigger: 'submit-message', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }),
      }),
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1')
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const raw = await response.text()
    expect(raw.trimEnd().endsWith('data: [DONE]')).toBe(true)
    const chunks = raw
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .map((f) => JSON.parse(f.slice(6)) as UIMessageChunk)
    expect(chunks.map((c) => c.type)).toEqual([
      'start',
      'data-turn',
      'start-step',
      'text-start',
      ...Array(chunks.filter((c) => c.type === 'text-delta').length).fill('text-delta'),
      'text-end',
      'finish-step',
      'data-turn',
      'finish',
    ])
    // the AI SDK's reader builds the message the page shows
    const stream = new ReadableStream<UIMessageChunk>({
      start(c) {
        for (const chunk of chunks) c.enqueue(chunk)
        c.close()
      },
    })
    let message: UIMessage | undefined
    for await (const m of readUIMessageStream({ stream })) message = m
    expect(textOf(message)).toBe('Hello there, friend.')
    const agent = chats.get('c1')
    expect(typesOf(agent, 'user/message').map((e) => (e.data as { id: string }).id)).toEqual(['u1'])
    expect(typesOf(agent, 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(['completed'])
  })

  it('shows tool calls as tool parts with their input and output, one step-start per step', async () => {
    const model = scriptedModel([
      toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"ping"}' }], 'Let me echo.'),
      textResponse('It said ping.'),
    ])
    const chats = agents((id) => createAgent({ model, id, tools: [echo], logger: quiet }))
    const chat = chatFor(createChatHandler({ agent: chats.lookup }), 'c2')
    await chat.sendMessage({ text: 'echo ping' })
    expect(chat.status).toBe('ready')
    const [user, assistant] = chat.messages
    expect(user.role).toBe('user')
    expect(chat.messages).toHaveLength(2)
    const tool = assistant.parts.find((p) => p.type === 'tool-echo') as { state: string; input: unknown; output: unknown; toolCallId: string }
    expect(tool).toMatchObject({ toolCallId: 'call-1', state: 'output-available', input: { text: 'ping' }, output: 'echo: ping' })
    expect(assistant.parts.filter((p) => p.type === 'step-start')).toHaveLength(2)
    expect(textOf(assistant)).toBe('Let me echo.It said ping.')
    expect(checkSessionInvariants(chats.get('c2').session.events)).toEqual([])
  })

  it('IN-12: a second message while the turn runs steers it: one turn/start, the steer enters the next step, its response shows the rest', async () => {
    const held = gate()
    const model = scriptedModel([
      (request) => heldStream(toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"a"}' }], 'Working on it.'), 2, held, request.signal),
      (request) => textResponse(`Answering: ${userText(request).join(' / ')}`),
    ])
    const chats = agents((id) => createAgent({ model, id, tools: [echo], logger: quiet }))
    const chat = chatFor(createChatHandler({ agent: chats.lookup }), 'c3')
    const first = chat.sendMessage({ text: 'first' })
    const agent = await until(() => chats.get('c3') !== undefined, 'the agent').then(() => chats.get('c3'))
    await logged(agent, (e) => e.type === 'assistant/chunk')
    const second = chat.sendMessage({ text: 'and also this' })
    await logged(agent, (e) => e.type === 'agent/inbox/spliced' && e.data.inserted.some((m) => textOfBlocks(m.content) === 'and also this'))
    held.open()
    await Promise.all([first, second])
    await agent.whenIdle()

    expect(typesOf(agent, 'turn/start')).toHaveLength(1)
    const steps = typesOf(agent, 'step/start').map((e) => e.seq)
    const steer = agent.session.events.find((e) => e.type === 'user/message' && textOfBlocks(e.data.content) === 'and also this')!
    // the steer's user/message follows the second step/start: it joined the next step of the same turn
    expect(steps).toHaveLength(2)
    expect(steer.seq).toBeGreaterThan(steps[1])
    expect(model.requests).toHaveLength(2)
    expect(userText(model.requests[1])).toEqual(['first', 'and also this'])
    // in the chat: the first response holds step 1, the steer's response the rest of the turn
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
    expect(textOf(chat.messages[1])).toBe('Working on it.')
    expect(chat.messages[1].parts.find((p) => p.type === 'tool-echo')).toMatchObject({ state: 'output-available', output: 'echo: a' })
    expect(textOf(chat.messages[3])).toBe('Answering: first / and also this')
    // a page loaded afterwards reads the same chat from the log
    expect(chatMessagesOf(agent).map((m) => [m.id, m.role, textOf(m)])).toEqual(chat.messages.map((m) => [m.id, m.role, textOf(m)]))
  })

  it('a message marked mode: followup while the turn runs waits for its own turn', async () => {
    const held = gate()
    const model = scriptedModel([(request) => heldStream(textResponse('One.'), 1, held, request.signal), textResponse('Two.')])
    const chats = agents((id) => createAgent({ model, id, logger: quiet }))
    // keep-alive comments between the chunks (one a millisecond) are skipped by the AI SDK's parser
    const chat = chatFor(createChatHandler({ agent: chats.lookup, keepAliveMs: 1 }), 'c4')
    const first = chat.sendMessage({ text: 'first' })
    await until(() => chats.get('c4') !== undefined, 'the agent')
    const agent = chats.get('c4')
    await logged(agent, (e) => e.type === 'assistant/chunk')
    const second = chat.sendMessage({ text: 'later' }, { body: { mode: 'followup' } })
    await logged(agent, (e) => e.type === 'agent/inbox/spliced' && e.data.target === 'next-turn' && e.data.inserted.length > 0 && e.seq > 3)
    held.open()
    await Promise.all([first, second])
    await agent.whenIdle()
    expect(typesOf(agent, 'turn/start')).toHaveLength(2)
    expect(chat.messages.map((m) => textOf(m) || 'later')).toEqual(['first', 'One.', 'later', 'Two.'])
  })

  it('CX-5: Stop (the stop route) ends the server turn aborted, keeps the partial answer, and no further request is made', async () => {
    const held = gate()
    const model = scriptedModel([(request) => heldStream(textResponse('Partial answer and then much more'), 3, held, request.signal), textResponse('never')])
    const chats = agents((id) => createAgent({ model, id, logger: quiet }))
    const handler = createChatHandler({ agent: chats.lookup })
    const chat = chatFor(handler, 'c5')
    const sent = chat.sendMessage({ text: 'go' })
    await until(() => chats.get('c5') !== undefined, 'the agent')
    const agent = chats.get('c5')
    await until(() => textOf(chat.messages[1]).length > 0, 'streamed text in the chat')
    const stop = await handler(new Request(`${API}/c5/stop`, { method: 'POST' }))
    expect(stop.status).toBe(200)
    expect(await stop.json()).toEqual({ stopped: true, ended: true })
    // the stop route answers once the turn's end is logged
    expect(typesOf(agent, 'turn/end')).toHaveLength(1)
    await sent
    await agent.whenIdle()
    const end = typesOf(agent, 'turn/end').at(-1)!
    expect(end.data).toMatchObject({ reason: { kind: 'aborted', reason: { kind: 'user' } } })
    const partial = typesOf(agent, 'assistant/message').at(-1)!
    expect(partial.data).toMatchObject({ interrupted: true })
    expect(model.requests).toHaveLength(1)
    // the page keeps what streamed and learns the turn was stopped
    const kept = textOfBlocks((partial.data as { message: { content: { type: string; text?: string }[] } }).message.content)
    expect(kept.length).toBeGreaterThan(0)
    expect('Partial answer and then much more'.startsWith(kept) && kept !== 'Partial answer and then much more').toBe(true)
    expect(textOf(chat.messages[1])).toBe(kept)
    expect(chat.messages[1].parts.find((p) => p.type === 'data-turn')).toMatchObject({ data: { status: 'aborted' } })
    expect(chat.status).toBe('ready')
  })

  it('a dropped connection (the client aborts its request) does not cancel the turn; with cancelOnDisconnect it does', async () => {
    for (const cancelOnDisconnect of [false, true]) {
      const held = gate()
      const model = scriptedModel([(request) => heldStream(textResponse('Still going to the end.'), 2, held, request.signal)])
      const chats = agents((id) => createAgent({ model, id, logger: quiet }))
      const chat = chatFor(createChatHandler({ agent: chats.lookup, cancelOnDisconnect }), 'c6')
      const sent = chat.sendMessage({ text: 'go' })
      await until(() => chats.get('c6') !== undefined, 'the agent')
      const agent = chats.get('c6')
      await until(() => textOf(chat.messages[1]).length > 0, 'streamed text')
      await chat.stop() // useChat's stop(): aborts the fetch, nothing else
      await sent
      held.open()
      await agent.whenIdle()
      const end = typesOf(agent, 'turn/end').at(-1)!.data as { reason: { kind: string } }
      expect(end.reason.kind).toBe(cancelOnDisconnect ? 'aborted' : 'completed')
    }
  })

  it('resume: a reloaded page loads the messages and re-attaches to the running turn (GET {api}/{id}/stream); 204 when idle', async () => {
    const held = gate()
    const model = scriptedModel([
      textResponse('Earlier answer.'),
      (request) => heldStream(textResponse('The whole second answer arrives.'), 3, held, request.signal),
    ])
    const chats = agents((id) => createAgent({ model, id, logger: quiet }))
    const handler = createChatHandler({ agent: chats.lookup })
    const page = chatFor(handler, 'c7')
    await page.sendMessage({ text: 'one' })
    expect((await handler(new Request(`${API}/c7/stream`))).status).toBe(204)
    const running = page.sendMessage({ text: 'two' })
    const agent = chats.get('c7')
    await until(() => page.messages.length === 4 && textOf(page.messages[3]).length > 0, 'the second answer streaming')
    await page.stop() // the tab closes
    await running

    // the reloaded page: messages from the log, then resume
    const history = (await (await handler(new Request(`${API}/c7/messages`))).json()) as UIMessage[]
    expect(history.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'one'],
      ['assistant', 'Earlier answer.'],
      ['user', 'two'],
    ])
    const reloaded = chatFor(handler, 'c7', { messages: history })
    const resumed = reloaded.resumeStream()
    await until(() => reloaded.messages.length === 4, 'the replayed response')
    held.open()
    await resumed
    await agent.whenIdle()
    expect(textOf(reloaded.messages[3])).toBe('The whole second answer arrives.')
    expect(typesOf(agent, 'turn/start')).toHaveLength(2)
    // and once the turn is over, the history has it
    const after = (await (await handler(new Request(`${API}/c7/messages`))).json()) as UIMessage[]
    expect(after.map(textOf)).toEqual(['one', 'Earlier answer.', 'two', 'The whole second answer arrives.'])
  })

  it('TL-18: a call waiting on ask is a tool part the page approves or denies through the same endpoint', async () => {
    const model = scriptedModel([
      toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"prod"}' }]),
      (request) => textResponse(`Result: ${JSON.stringify(request.messages.at(-1)?.content)}`),
      toolCallResponse([{ id: 'call-2', name: 'echo', arguments: '{"text":"again"}' }]),
      textResponse('Understood, not run.'),
    ])
    const chats = agents((id) => {
      const agent = createAgent({ model, id, tools: [echo], approvals: true, logger: quiet })
      agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'echo needs a person' }))
      return agent
    })
    const chat = chatFor(createChatHandler({ agent: chats.lookup }), 'c8', { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
    await chat.sendMessage({ text: 'echo prod' })
    const agent = chats.get('c8')
    const asking = chat.messages[1].parts.find((p) => p.type === 'tool-echo') as { state: string; approval?: { id: string } }
    expect(asking.state).toBe('approval-requested')
    expect(agent.pendingApprovals.map((p) => p.callId)).toEqual(['call-1'])
    await chat.addToolApprovalResponse({ id: asking.approval!.id, approved: true })
    await until(() => chat.status === 'ready' && textOf(chat.messages[1]).startsWith('Result'), 'the approved call and the answer')
    await agent.whenIdle()
    expect(typesOf(agent, 'tool/approval-answer').map((e) => e.data)).toMatchObject([{ callId: 'call-1', decision: 'approve' }])
    expect(chat.messages[1].parts.find((p) => p.type === 'tool-echo')).toMatchObject({ state: 'output-available', output: 'echo: prod' })
    expect(typesOf(agent, 'turn/start')).toHaveLength(1)

    // denied: the model reads the refusal
    await chat.sendMessage({ text: 'echo again' })
    const second = chat.messages[3].parts.find((p) => p.type === 'tool-echo') as { state: string; approval?: { id: string } }
    expect(second.state).toBe('approval-requested')
    await chat.addToolApprovalResponse({ id: second.approval!.id, approved: false, reason: 'not today' })
    await until(() => chat.status === 'ready' && textOf(chat.messages[3]) === 'Understood, not run.', 'the denied call and the answer')
    await agent.whenIdle()
    expect(chat.messages[3].parts.find((p) => p.type === 'tool-echo')).toMatchObject({ state: 'output-denied' })
    expect(typesOf(agent, 'tool/approval-answer').at(-1)!.data).toMatchObject({ callId: 'call-2', decision: 'deny', reason: 'not today' })
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })

  it('a message while a call awaits approval denies the waiting call and steers the same turn', async () => {
    const model = scriptedModel([
      toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"x"}' }]),
      (request) => textResponse(`Then: ${userText(request).at(-1)}`),
    ])
    const chats = agents((id) => {
      const agent = createAgent({ model, id, tools: [echo], approvals: true, logger: quiet })
      agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'a person decides' }))
      return agent
    })
    const chat = chatFor(createChatHandler({ agent: chats.lookup }), 'c10')
    await chat.sendMessage({ text: 'echo x' })
    const agent = chats.get('c10')
    expect(agent.pendingApprovals).toHaveLength(1)
    await chat.sendMessage({ text: 'never mind, just say hi' })
    await agent.whenIdle()
    expect(typesOf(agent, 'turn/start')).toHaveLength(1)
    expect(typesOf(agent, 'tool/approval-answer').map((e) => e.data)).toMatchObject([{ callId: 'call-1', decision: 'deny' }])
    expect(typesOf(agent, 'tool/result')[0].data).toMatchObject({ error: { code: 'DENIED' } })
    expect(model.requests).toHaveLength(2)
    expect(textOf(chat.messages.at(-1))).toBe('Then: never mind, just say hi')
    // the log, reloaded, shows the call denied
    const history = chatMessagesOf(agent)
    expect(history[1].parts.find((p) => p.type === 'tool-echo')).toMatchObject({ state: 'output-denied' })
  })

  it('CX-3: a queued message that Stop discards ends its response with abort; a message posted twice is sent once', async () => {
    const held = gate()
    const model = scriptedModel([(request) => heldStream(textResponse('Busy for a while.'), 2, held, request.signal)])
    const chats = agents((id) => createAgent({ model, id, logger: quiet }))
    const handler = createChatHandler({ agent: chats.lookup })
    const chat = chatFor(handler, 'c11')
    const first = chat.sendMessage({ text: 'first' })
    await until(() => chats.get('c11') !== undefined, 'the agent')
    const agent = chats.get('c11')
    await logged(agent, (e) => e.type === 'assistant/chunk')
    // the same POST twice (a retried request): one message in the log, both attach to its response
    const body = JSON.stringify({ id: 'c11', mode: 'followup', messages: [{ id: 'queued-1', role: 'user', parts: [{ type: 'text', text: 'later' }] }] })
    const post = () => handler(new Request(API, { method: 'POST', body }))
    const [a, b] = [await post(), await post()]
    await handler(new Request(`${API}/c11/stop`, { method: 'POST' }))
    const [textA, textB] = await Promise.all([a.text(), b.text()])
    await first
    await agent.whenIdle()
    for (const text of [textA, textB]) expect(text).toContain('"type":"abort","reason":"discarded"')
    const inserted = typesOf(agent, 'agent/inbox/spliced').filter((e) => (e.data as { inserted: { id: string }[] }).inserted.some((m) => m.id === 'queued-1'))
    expect(inserted).toHaveLength(1)
    expect(typesOf(agent, 'agent/inbox/spliced').some((e) => (e.data as { outcome?: string }).outcome === 'canceled')).toBe(true)
    expect(typesOf(agent, 'turn/start')).toHaveLength(1)
  })

  it('reasoning arrives as reasoning parts; a failed turn as an error the chat reports', async () => {
    const model = scriptedModel([
      reasoningResponse('Think first.', 'Then answer.'),
      errorResponse({ message: 'the request was refused', code: 'INVALID_REQUEST' }),
    ])
    const chats = agents((id) => createAgent({ model, id, logger: quiet }))
    const errors: Error[] = []
    const chat = chatFor(createChatHandler({ agent: chats.lookup }), 'c12', { onError: (error) => errors.push(error) })
    await chat.sendMessage({ text: 'think' })
    expect(chat.messages[1].parts.filter((p) => p.type === 'reasoning' || p.type === 'text').map((p) => [p.type, (p as { text: string }).text])).toEqual([
      ['reasoning', 'Think first.'],
      ['text', 'Then answer.'],
    ])
    await chat.sendMessage({ text: 'again' })
    expect(chat.status).toBe('error')
    expect(errors.map((e) => e.message)).toEqual(['the request was refused'])
    expect(typesOf(chats.get('c12'), 'turn/end').at(-1)!.data).toMatchObject({ reason: { kind: 'error', error: { code: 'INVALID_REQUEST' } } })
  })

  it('RS-1: a chat over a store survives a restart: a new handler and agent find its messages and continue it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentchart-chat-store-'))
    const path = join(dir, 'chats.db')
    try {
      const firstStore = sqliteStore({ path })
      const firstAgents = new Map<string, Promise<Agent>>()
      const open = (store: ReturnType<typeof sqliteStore>, text: string, agents: Map<string, Promise<Agent>>) => (chatId: string) => {
        if (!agents.has(chatId)) agents.set(chatId, createAgent({ model: scriptedModel([textResponse(text)]), store, sessionId: chatId, logger: quiet }))
        return agents.get(chatId)!
      }
      const before = chatFor(createChatHandler({ agent: open(firstStore, 'Before the restart.', firstAgents) }), 'kept')
      await before.sendMessage({ text: 'one' })
      const first = await firstAgents.get('kept')!
      await first.whenIdle()
      await first.dispose()
      await firstStore.close()

      const secondStore = sqliteStore({ path })
      const secondAgents = new Map<string, Promise<Agent>>()
      const handler = createChatHandler({ agent: open(secondStore, 'After the restart.', secondAgents) })
      const history = (await (await handler(new Request(`${API}/kept/messages`))).json()) as UIMessage[]
      expect(history.map(textOf)).toEqual(['one', 'Before the restart.'])
      const after = chatFor(handler, 'kept', { messages: history })
      await after.sendMessage({ text: 'two' })
      const second = await secondAgents.get('kept')!
      await second.whenIdle()
      expect(after.messages.map(textOf)).toEqual(['one', 'Before the restart.', 'two', 'After the restart.'])
      expect(typesOf(second, 'turn/start').map((e) => (e.data as { turn: number }).turn)).toEqual([1, 2])
      await second.dispose()
      await secondStore.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('TL-18: Stop while a call awaits approval ends the turn aborted and the call never runs', async () => {
    const model = scriptedModel([toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"x"}' }]), textResponse('never')])
    const { ran, chats } = askingEcho(() => model)
    const handler = createChatHandler({ agent: chats.lookup })
    const chat = chatFor(handler, 'c13')
    await chat.sendMessage({ text: 'echo x' })
    const stop = await handler(new Request(`${API}/c13/stop`, { method: 'POST' }))
    expect(await stop.json()).toEqual({ stopped: true, ended: true })
    const agent = chats.get('c13')
    expect(typesOf(agent, 'turn/end').at(-1)!.data).toMatchObject({ reason: { kind: 'aborted' } })
    expect(typesOf(agent, 'tool/result')[0].data).toMatchObject({ error: { code: 'ABORTED_BEFORE_DISPATCH' } })
    expect(ran).toEqual([])
    expect(model.requests).toHaveLength(1)
    expect(chatMessagesOf(agent)[1].parts.find((p) => p.type === 'tool-echo')).toMatchObject({ state: 'output-error' })
  })

  it('refuses bad requests with a typed error naming what was wrong', async () => {
    const handler = createChatHandler({ agent: () => createAgent({ model: scriptedModel([]), logger: quiet }) })
    const post = (body: unknown) => handler(new Request(API, { method: 'POST', body: JSON.stringify(body) }))
    const noMessages = await post({ id: 'x', messages: [] })
    expect(noMessages.status).toBe(400)
    expect(await noMessages.json()).toMatchObject({ error: { code: 'CHAT_NO_MESSAGE' } })
    const noId = await post({ messages: [{ id: 'u', role: 'user', parts: [] }] })
    expect(await noId.json()).toMatchObject({ error: { code: 'CHAT_BAD_REQUEST', message: expect.stringContaining('body.id') } })
    const regenerate = await post({ id: 'x', trigger: 'regenerate-message', messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'a' }] }] })
    expect(regenerate.status).toBe(501)
    const wrongMethod = await handler(new Request(`${API}/x/stop`))
    expect(await wrongMethod.json()).toMatchObject({ error: { code: 'CHAT_METHOD' } })
    expect(() => createChatHandler({} as never)).toThrow(/exactly one of agent/)
  })

  it('refuses a null message part (naming it) and a chat id that is not valid %-encoding with a 400', async () => {
    const handler = createChatHandler({ agent: (id) => createAgent({ model: scriptedModel([textResponse('ok')]), id, logger: quiet }) })
    const post = (body: unknown) => handler(new Request(API, { method: 'POST', body: JSON.stringify(body) }))
    const userPart = await post({ id: 'a', messages: [{ id: 'u', role: 'user', parts: [null, { type: 'text', text: 'hi' }] }] })
    expect(userPart.status).toBe(400)
    expect(await userPart.json()).toMatchObject({ error: { code: 'CHAT_BAD_REQUEST', message: expect.stringContaining('messages[0].parts[0]') } })
    const answerPart = await post({
      id: 'b',
      messages: [
        { id: 'u', role: 'user', parts: [] },
        { id: 'm', role: 'assistant', parts: [{ type: 'step-start' }, null] },
      ],
    })
    expect(answerPart.status).toBe(400)
    expect(await answerPart.json()).toMatchObject({ error: { code: 'CHAT_BAD_REQUEST', message: expect.stringContaining('messages[1].parts[1]') } })
    for (const request of [new Request(`${API}/%E0%A4%A/stop`, { method: 'POST' }), new Request(`${API}/%ZZ/messages`), new Request(`${API}/%/stream`)]) {
      const response = await handler(request)
      expect(response.status).toBe(400)
      expect(await response.json()).toMatchObject({ error: { code: 'CHAT_BAD_REQUEST', message: expect.stringContaining('chat id') } })
    }
  })

  it('the same message POSTed twice at once (a double submit) is sent once, and both responses show its turn', async () => {
    const model = scriptedModel([textResponse('Only once.'), textResponse('A second turn.')])
    const chats = agents((id) => createAgent({ model, id, logger: quiet }))
    const handler = createChatHandler({ agent: chats.lookup, keepAliveMs: 0 })
    const body = JSON.stringify({ id: 'c14', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] })
    const post = () => handler(new Request(API, { method: 'POST', body }))
    const texts = await Promise.all((await Promise.all([post(), post()])).map((r) => r.text()))
    const agent = chats.get('c14')
    await agent.whenIdle()
    expect(typesOf(agent, 'user/message').map((e) => (e.data as { id: string }).id)).toEqual(['u1'])
    expect(typesOf(agent, 'turn/start')).toHaveLength(1)
    expect(model.requests).toHaveLength(1)
    for (const text of texts) {
      expect(streamedText(text)).toBe('Only once.')
      expect(text).toContain('"type":"finish","finishReason":"stop"')
    }
  })

  it('the same approval answer POSTed twice at once is applied once: the first response continues the turn, the second finds it answered', async () => {
    const model = scriptedModel([toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"x"}' }]), textResponse('Done.')])
    const { ran, chats } = askingEcho(() => model)
    const handler = createChatHandler({ agent: chats.lookup, keepAliveMs: 0 })
    const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'echo x' }] }
    const post = (messages: unknown[]) => handler(new Request(API, { method: 'POST', body: JSON.stringify({ id: 'c15', messages }) }))
    await (await post([user])).text()
    const approved = { type: 'tool-echo', toolCallId: 'call-1', state: 'approval-responded', approval: { id: 'call-1', approved: true } }
    const answer = [user, { id: 'msg-3', role: 'assistant', parts: [approved] }]
    const responses = await Promise.all([post(answer), post(answer)])
    expect(responses.map((r) => r.status)).toEqual([200, 200])
    const texts = await Promise.all(responses.map((r) => r.text()))
    const agent = chats.get('c15')
    await agent.whenIdle()
    expect(texts[0]).toContain('"type":"tool-output-available"')
    // what a reload that posts the answer again gets: nothing waits for it, nothing to continue
    expect(texts[1]).toBe('data: {"type":"start"}\n\ndata: {"type":"finish","finishReason":"other"}\n\ndata: [DONE]\n\n')
    expect(typesOf(agent, 'tool/approval-answer')).toHaveLength(1)
    expect(ran).toEqual(['x'])
  })

  it('TL-18: several answers for one call in one message: the first applies, the rest are ignored, and the response shows the first', async () => {
    const { ran, chats } = askingEcho(() =>
      scriptedModel([toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"x"}' }]), textResponse('Done.')]),
    )
    const handler = createChatHandler({ agent: chats.lookup, keepAliveMs: 0 })
    const part = (approved: boolean) => ({ type: 'tool-echo', toolCallId: 'call-1', state: 'approval-responded', approval: { id: 'call-1', approved } })
    const cases = [
      { chatId: 'c16', parts: [part(true), part(true)], shown: 'tool-output-available', decision: 'approve', ran: ['x'] },
      { chatId: 'c17', parts: [part(true), part(false)], shown: 'tool-output-available', decision: 'approve', ran: ['x', 'x'] },
      { chatId: 'c18', parts: [part(false), part(true)], shown: 'tool-output-denied', decision: 'deny', ran: ['x', 'x'] },
    ]
    for (const { chatId, parts, shown, decision, ran: expected } of cases) {
      const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'echo x' }] }
      const post = (messages: unknown[]) => handler(new Request(API, { method: 'POST', body: JSON.stringify({ id: chatId, messages }) }))
      await (await post([user])).text()
      const response = await post([user, { id: 'msg-3', role: 'assistant', parts }])
      expect(response.status).toBe(200)
      expect(await response.text()).toContain(`"type":"${shown}"`)
      const agent = chats.get(chatId)
      await agent.whenIdle()
      expect(typesOf(agent, 'tool/approval-answer').map((e) => e.data)).toMatchObject([{ callId: 'call-1', decision }])
      expect(ran).toEqual(expected)
      expect(typesOf(agent, 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(['completed'])
    }
  })

  it('cancelOnDisconnect: a client that left before its response was built (during an async agent lookup) still cancels the turn', async () => {
    const held = gate()
    const model = scriptedModel([(request) => heldStream(textResponse('A long answer.'), 1, held, request.signal)])
    let agent: Agent | undefined
    const opened = gate()
    const handler = createChatHandler({
      // an app that opens the chat's agent asynchronously (from a store, say)
      agent: async (id) => {
        await opened.wait(new AbortController().signal)
        return (agent ??= createAgent({ model, id, logger: quiet }))
      },
      cancelOnDisconnect: true,
      keepAliveMs: 0,
    })
    const tab = new AbortController()
    const body = JSON.stringify({ id: 'c19', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] })
    const pending = handler(new Request(API, { method: 'POST', body, signal: tab.signal }))
    tab.abort() // the tab closes while the agent is being opened
    opened.open()
    const response = await pending
    try {
      await until(() => agent !== undefined && typesOf(agent, 'turn/end').length > 0, 'the turn to end without its client')
    } finally {
      held.open()
    }
    await agent!.whenIdle()
    expect(typesOf(agent!, 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(['aborted'])
    expect(model.requests).toHaveLength(1)
    expect(await response.text()).not.toContain('A long answer.')
  })

  it('uses the chat id as the session id, so the transport body and the log agree', async () => {
    const model = scriptedModel([textResponse('ok')])
    const chats = agents((id) => createAgent({ model, id, logger: quiet }))
    const transport = transportFor(createChatHandler({ agent: chats.lookup }))
    const stream = await transport.sendMessages({
      chatId: 'c9',
      messages: [{ id: 'u9', role: 'user', parts: [{ type: 'text', text: 'hello' }] }],
      abortSignal: undefined,
      trigger: 'submit-message',
      messageId: undefined,
    })
    let message: UIMessage | undefined
    for await (const m of readUIMessageStream({ stream })) message = m
    expect(textOf(message)).toBe('ok')
    expect(chats.get('c9').session.id).toBe('c9')
  })
})

const chatMessagesOf = (agent: Agent) => chatMessages(agent.session.events) as unknown as UIMessage[]

/** The text a raw UI message stream streamed. */
const streamedText = (raw: string) =>
  raw
    .split('\n\n')
    .filter((f) => f.startsWith('data: {'))
    .map((f) => JSON.parse(f.slice(6)) as UIMessageChunk)
    .map((c) => (c.type === 'text-delta' ? c.delta : ''))
    .join('')

function textOfBlocks(content: readonly { type: string; text?: string }[]): string {
  return content.map((b) => (b.type === 'text' ? b.text : '')).join('')
}

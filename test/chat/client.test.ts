// The chat endpoint over the session-client interface (`createSessionClient`
// of agentchart/stores names it): the endpoint never touches the agent, only
// a client whose sends, cancels and answers arrive later (as through a
// mailbox) and whose watch delivers committed events one timer tick apart
// (as from a store). The turns must read the same as over a local agent.
import { lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai'
import { Observable } from 'rxjs'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createChatHandler, type ChatSessionClient } from '../../src/chat/index.js'
import { createAgent, defineTool, type Agent, type SessionEvent } from '../../src/index.js'
import { checkSessionInvariants, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { API, chatFor, gate, heldStream, logged, textOf, typesOf, until } from './helpers.js'

const later = (fn: () => void) => void setTimeout(fn, 1)

/** A client of one agent driven elsewhere: every call lands a tick later, every event is seen a tick after its commit. */
function clientOver(agent: Agent): ChatSessionClient & { sent: number } {
  const client = {
    sent: 0,
    send: (_id: string, message: Parameters<Agent['send']>[0], target: 'next-turn' | 'next-step', wakeup: boolean) => {
      client.sent++
      later(() => agent.send(message, target, wakeup))
    },
    cancel: (_id: string, cause?: { kind: 'user' }, options?: { keepInbox?: boolean }) => later(() => agent.cancel(cause, options)),
    approve: (_id: string, callId: string) => later(() => agent.approve(callId)),
    deny: (_id: string, callId: string, reason: string) => later(() => agent.deny(callId, reason)),
    status: () => ({ phase: agent.status, committedLength: agent.committedLength }),
    watch: (_id: string, options?: { fromSeq?: number }) =>
      new Observable<SessionEvent>((subscriber) => {
        let next = options?.fromSeq ?? 0
        let timer: ReturnType<typeof setTimeout> | null = null
        const pump = () => {
          timer = null
          const event = agent.session.at(next)
          if (event === undefined || subscriber.closed) return
          next++
          subscriber.next(event)
          timer = setTimeout(pump, 0)
        }
        const subscription = agent.session.events$.subscribe(() => {
          if (timer === null) timer = setTimeout(pump, 0)
        })
        timer = setTimeout(pump, 0)
        return () => {
          subscription.unsubscribe()
          if (timer) clearTimeout(timer)
        }
      }),
  }
  return client
}

const echo = defineTool({ name: 'echo', description: 'say it back', input: z.object({ text: z.string() }), execute: ({ text }) => `echo: ${text}` })
const quiet = { error: () => {} }

describe('chat endpoint over a session client', () => {
  it('IN-12: streams a turn, and a message while it runs steers it (one turn) through the client', async () => {
    const held = gate()
    const model = scriptedModel([(request) => heldStream(textResponse('First part.'), 2, held, request.signal), textResponse('Second part.')])
    const agent = createAgent({ model, id: 'k1', logger: quiet })
    const client = clientOver(agent)
    const chat = chatFor(createChatHandler({ client }), 'k1')
    const first = chat.sendMessage({ text: 'one' })
    await logged(agent, (e) => e.type === 'assistant/chunk')
    await until(() => agent.status === 'running' && textOf(chat.messages[1]).length > 0, 'the first answer streaming')
    const second = chat.sendMessage({ text: 'two' })
    await logged(agent, (e) => e.type === 'agent/inbox/spliced' && e.data.target === 'next-step' && e.data.inserted.length > 0)
    held.open()
    await Promise.all([first, second])
    await agent.whenIdle()
    expect(client.sent).toBe(2)
    expect(typesOf(agent, 'turn/start')).toHaveLength(1)
    expect(chat.messages.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'one'],
      ['assistant', 'First part.'],
      ['user', 'two'],
      ['assistant', 'Second part.'],
    ])
  })

  it('TL-18: approvals go through the client; a reload after the answer replays through it, then Stop aborts the turn', async () => {
    const held = gate()
    const model = scriptedModel([
      toolCallResponse([{ id: 'call-1', name: 'echo', arguments: '{"text":"a"}' }]),
      (request) => heldStream(textResponse('After the approval, a long answer.'), 3, held, request.signal),
    ])
    const agent = createAgent({ model, id: 'k2', tools: [echo], approvals: true, logger: quiet })
    agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'yes?' }))
    const handler = createChatHandler({ client: clientOver(agent) })
    const chat = chatFor(handler, 'k2', { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
    await chat.sendMessage({ text: 'echo a' })
    const asking = chat.messages[1].parts.find((p) => p.type === 'tool-echo') as { state: string; approval: { id: string } }
    expect(asking.state).toBe('approval-requested')
    await chat.addToolApprovalResponse({ id: asking.approval.id, approved: true })
    await until(() => textOf(chat.messages[1]).length > 0, 'the answer after the approval')
    await chat.stop() // the tab closes: the turn goes on

    // reload: the history holds the prompt; the resume replays the response through its answered question
    const history = (await (await handler(new Request(`${API}/k2/messages`))).json()) as UIMessage[]
    expect(history.map((m) => m.role)).toEqual(['user'])
    const reloaded = chatFor(handler, 'k2', { messages: history })
    const resumed = reloaded.resumeStream()
    await until(() => reloaded.messages.length === 2 && textOf(reloaded.messages[1]).length > 0, 'the replayed response')
    expect(reloaded.messages[1].parts.find((p) => p.type === 'tool-echo')).toMatchObject({ state: 'output-available', output: 'echo: a' })
    const stop = await handler(new Request(`${API}/k2/stop`, { method: 'POST' }))
    expect(await stop.json()).toEqual({ stopped: true, ended: true })
    await resumed
    await agent.whenIdle()
    expect(typesOf(agent, 'turn/end').at(-1)!.data).toMatchObject({ reason: { kind: 'aborted', reason: { kind: 'user' } } })
    expect(reloaded.messages[1].parts.find((p) => p.type === 'data-turn')).toMatchObject({ data: { status: 'aborted' } })
    expect(model.requests).toHaveLength(2)
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
  })
})

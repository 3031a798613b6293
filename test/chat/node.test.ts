// The chat endpoint mounted in Node's http server with toNodeListener, over
// loopback, driven by the AI SDK's transport with the real fetch: a closed
// connection reaches the handler as an abort (so cancelOnDisconnect works),
// and without it the turn goes on.
import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import { afterEach, describe, expect, it } from 'vitest'
import { createChatHandler, toNodeListener } from '../../src/chat/index.js'
import { createAgent, type Agent } from '../../src/index.js'
import { scriptedModel, textResponse } from '../../src/testing/index.js'
import { gate, heldStream, logged, textOf, until } from './helpers.js'

const servers: Server[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

async function serve(agent: Agent, cancelOnDisconnect: boolean): Promise<string> {
  return listen(toNodeListener(createChatHandler({ agent: () => agent, cancelOnDisconnect })))
}

async function listen(listener: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(listener)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`
}

/** What the server answers to one raw HTTP request (written as is, so it may be one `fetch` would refuse to send). */
function rawRequest(api: string, text: string): Promise<string> {
  const { port } = new URL(api)
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text))
    let reply = ''
    socket.on('data', (chunk) => (reply += chunk))
    socket.on('close', () => resolve(reply))
    setTimeout(() => socket.destroy(), 1000)
  })
}

describe('the chat endpoint in node:http', () => {
  it('streams over loopback, and a dropped connection cancels only with cancelOnDisconnect', async () => {
    for (const cancelOnDisconnect of [false, true]) {
      const held = gate()
      const model = scriptedModel([(request) => heldStream(textResponse('A streamed answer over a real socket.'), 3, held, request.signal)])
      const agent = createAgent({ model, id: `n-${cancelOnDisconnect}`, logger: { error: () => {} } })
      const api = await serve(agent, cancelOnDisconnect)
      const transport = new DefaultChatTransport<UIMessage>({ api })
      const abort = new AbortController()
      const stream = await transport.sendMessages({
        chatId: agent.id,
        messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'go' }] }],
        abortSignal: abort.signal,
        trigger: 'submit-message',
        messageId: undefined,
      })
      let seen = ''
      try {
        for await (const message of readUIMessageStream({ stream })) {
          seen = textOf(message)
          if (seen.length > 0) abort.abort()
        }
      } catch {
        // the aborted read
      }
      expect(seen.length).toBeGreaterThan(0)
      if (cancelOnDisconnect) await logged(agent, (e) => e.type === 'turn/end')
      held.open()
      await agent.whenIdle()
      const end = agent.session.events.filter((e) => e.type === 'turn/end').at(-1)!.data as { reason: { kind: string } }
      expect(end.reason.kind).toBe(cancelOnDisconnect ? 'aborted' : 'completed')
    }
  })

  it('answers a request whose URL does not parse (a malformed Host, a bad target) with 400, and keeps serving', async () => {
    const uncaught: unknown[] = []
    const onUncaught = (error: unknown) => uncaught.push(error)
    process.prependListener('uncaughtException', onUncaught)
    try {
      const agent = createAgent({ model: scriptedModel([textResponse('Done.')]), id: 'n-host' })
      const api = await serve(agent, false)
      for (const head of [
        'GET /api/chat/n-host/messages HTTP/1.1\r\nHost: a b',
        'GET /x HTTP/1.1\r\nHost: [',
        'GET http://[/x HTTP/1.1\r\nHost: h',
        'GET /x HTTP/1.1\r\nHost: user:pw@h',
        'TRACE /x HTTP/1.1\r\nHost: h',
      ]) {
        expect(await rawRequest(api, `${head}\r\nConnection: close\r\n\r\n`)).toMatch(/^HTTP\/1\.1 400 /)
      }
      expect((await fetch(`${api}/n-host/messages`)).status).toBe(200)
      expect(uncaught).toEqual([])
    } finally {
      process.off('uncaughtException', onUncaught)
    }
  })

  it('cancels the response body of a client that left before the handler answered', async () => {
    let cancelled = false
    const left = gate()
    const api = await listen(
      toNodeListener(async (request) => {
        await new Promise((resolve) => request.signal.addEventListener('abort', resolve))
        left.open()
        // a body that would stay open until it is cancelled (a stream that follows a long turn)
        return new Response(new ReadableStream<Uint8Array>({ cancel: () => void (cancelled = true) }))
      }),
    )
    const client = new AbortController()
    const sent = fetch(api, { method: 'POST', body: 'x', signal: client.signal }).catch(() => {})
    await new Promise((resolve) => setTimeout(resolve, 50))
    client.abort()
    await sent
    await left.wait(new AbortController().signal)
    await until(() => cancelled, 'the body to be cancelled')
  })

  it('answers the resume route with 204 when no turn runs, and the messages route with the chat', async () => {
    const agent = createAgent({ model: scriptedModel([textResponse('Done.')]), id: 'n-idle' })
    const api = await serve(agent, false)
    await agent.run('hello')
    const resume = await fetch(`${api}/n-idle/stream`)
    expect(resume.status).toBe(204)
    const messages = (await (await fetch(`${api}/n-idle/messages`)).json()) as UIMessage[]
    expect(messages.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'hello'],
      ['assistant', 'Done.'],
    ])
  })
})

// A loopback chat-completions server for adapter tests: each request is
// recorded and answered by the test's `answer` function (SSE, or a status
// with a JSON body), so a test can enforce a provider's rules on what it gets.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Reply =
  | { kind: 'sse'; events: readonly unknown[]; headers?: Record<string, string> }
  | { kind: 'status'; status: number; body: unknown; headers?: Record<string, string> }
  /** A status with a body sent as it is (not JSON), e.g. a proxy's plain-text error page. */
  | { kind: 'text'; status: number; text: string; headers?: Record<string, string> }

export interface Received {
  path: string
  headers: IncomingHttpHeaders
  body: Record<string, any>
  /** What the server answered. */
  status: number
}

export interface ChatServer {
  readonly baseURL: string
  readonly received: Received[]
  close(): Promise<void>
}

/** No response is held open longer than this. */
const HOLD_CAP_MS = 4_000

/** Starts a server on 127.0.0.1 that answers every request with `answer(body, received so far, its headers)`. */
export async function startChatServer(
  answer: (body: Record<string, any>, received: readonly Received[], headers: IncomingHttpHeaders) => Reply,
): Promise<ChatServer> {
  const received: Received[] = []
  const open = new Set<ServerResponse>()
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    open.add(res)
    res.on('close', () => open.delete(res))
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8')
      const body = text ? (JSON.parse(text) as Record<string, any>) : {}
      let reply: Reply
      try {
        reply = answer(body, received, req.headers)
      } catch (error) {
        reply = { kind: 'status', status: 500, body: { error: { message: `test server: ${(error as Error).message}` } } }
      }
      received.push({ path: req.url ?? '', headers: req.headers, body, status: reply.kind === 'sse' ? 200 : reply.status })
      if (reply.kind === 'text') {
        res.writeHead(reply.status, { 'content-type': 'text/plain', 'x-request-id': `req-${received.length}`, ...reply.headers })
        res.end(reply.text)
        return
      }
      const cap = setTimeout(() => res.destroy(), HOLD_CAP_MS)
      res.on('close', () => clearTimeout(cap))
      if (reply.kind === 'status') {
        res.writeHead(reply.status, { 'content-type': 'application/json', 'x-request-id': `req-${received.length}`, ...reply.headers })
        res.end(JSON.stringify(reply.body))
        return
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': `req-${received.length}`, ...reply.headers })
      for (const event of reply.events) res.write(`data: ${JSON.stringify(event)}\n\n`)
      res.write('data: [DONE]\n\n')
      res.end()
    })
  }
  const server: Server = createServer(handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    received,
    async close() {
      for (const res of open) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

// ---- chunk builders -----------------------------------------------------------

const meta = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' }

export const delta = (d: Record<string, unknown>, finish_reason: string | null = null) => ({ ...meta, choices: [{ index: 0, delta: d, finish_reason }] })
export const finishChunk = (reason: string) => delta({}, reason)
export const usageChunk = (usage: Record<string, unknown>) => ({ ...meta, choices: [], usage })
export const sse = (...events: unknown[]): Reply => ({ kind: 'sse', events })

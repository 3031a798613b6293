// A loopback server for the AI SDK provider tests: each request is recorded
// and answered by the next scripted reply, either server-sent events (each
// written as `event: <type>` plus its JSON `data:` line, as OpenAI's Responses
// API and Anthropic's Messages API stream) or a status with a JSON body.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type ScriptedReply =
  /** Events, then the end of the response; `hold` keeps it open after the events (until the client leaves). */
  | { kind: 'sse'; events: readonly Record<string, unknown>[]; hold?: boolean; done?: string }
  | { kind: 'status'; status: number; body: unknown; headers?: Record<string, string> }

export interface RecordedRequest {
  path: string
  headers: IncomingHttpHeaders
  body: Record<string, any>
}

export interface SseServer {
  readonly baseURL: string
  readonly received: RecordedRequest[]
  /** Paths of responses whose client went away before they ended. */
  readonly dropped: string[]
  reply(...replies: ScriptedReply[]): void
  /** Resolves once a held response has written its events (the stream is mid-way). */
  whenHolding(): Promise<void>
  close(): Promise<void>
}

/** No response is held open longer than this, whatever a test does. */
const HOLD_CAP_MS = 4_000
const MAX_REQUESTS = 100

export async function startSseServer(): Promise<SseServer> {
  const replies: ScriptedReply[] = []
  const received: RecordedRequest[] = []
  const dropped: string[] = []
  const open = new Set<ServerResponse>()
  let holding: (() => void) | undefined
  let held = new Promise<void>((resolve) => (holding = resolve))
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    open.add(res)
    res.on('close', () => {
      open.delete(res)
      if (!res.writableEnded) dropped.push(req.url ?? '')
    })
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      if (received.length >= MAX_REQUESTS) {
        res.writeHead(500).end()
        return
      }
      const text = Buffer.concat(parts).toString('utf8')
      received.push({ path: req.url ?? '', headers: req.headers, body: text ? (JSON.parse(text) as Record<string, any>) : {} })
      const next = replies.shift() ?? { kind: 'status', status: 500, body: { error: { message: 'no reply scripted' } } }
      const cap = setTimeout(() => res.destroy(), HOLD_CAP_MS)
      res.on('close', () => clearTimeout(cap))
      if (next.kind === 'status') {
        res.writeHead(next.status, { 'content-type': 'application/json', 'request-id': `req-${received.length}`, ...next.headers })
        res.end(JSON.stringify(next.body))
        return
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': `req-${received.length}`, 'x-request-id': `req-${received.length}` })
      for (const event of next.events) res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`)
      if (next.hold === true) {
        holding?.()
        held = new Promise<void>((resolve) => (holding = resolve))
        return
      }
      if (next.done !== undefined) res.write(`data: ${next.done}\n\n`)
      res.end()
    })
  }
  const server: Server = createServer(handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    received,
    dropped,
    reply: (...next) => void replies.push(...next),
    whenHolding: () => held,
    async close() {
      for (const res of open) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

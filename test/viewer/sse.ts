// A small Server-Sent Events reader for tests: collects the viewer's messages
// and waits for one that matches.
import { request } from 'node:http'
import type { ServerMessage } from '../../src/viewer/page/protocol.js'

export interface LiveChannel {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly messages: ServerMessage[]
  /** Ids the server put on its messages (the event count after each batch). */
  readonly ids: number[]
  /** Resolves with the first message (already received or coming) that matches. */
  until<K extends ServerMessage['kind']>(kind: K, match?: (m: Extract<ServerMessage, { kind: K }>) => boolean): Promise<Extract<ServerMessage, { kind: K }>>
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>
  close(): void
}

/** GET `url` with raw headers (Host and Origin included, which fetch would not let a test set). */
export function get(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

export function openLive(url: string, headers: Record<string, string> = {}): Promise<LiveChannel> {
  return new Promise((resolve, reject) => {
    const messages: ServerMessage[] = []
    const ids: number[] = []
    const waiters: Array<() => void> = []
    let endedResolve!: () => void
    const ended = new Promise<void>((r) => (endedResolve = r))
    const req = request(url, { headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) ids.push(Number(line.slice(4)))
            if (line.startsWith('data: ')) messages.push(JSON.parse(line.slice(6)) as ServerMessage)
          }
        }
        for (const w of waiters.splice(0)) w()
      })
      res.on('end', () => {
        endedResolve()
        for (const w of waiters.splice(0)) w()
      })
      res.on('error', () => endedResolve())
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        messages,
        ids,
        ended,
        close: () => req.destroy(),
        until: (kind, match = () => true) =>
          new Promise((found, fail) => {
            const look = () => {
              const hit = messages.find((m) => m.kind === kind && match(m as never))
              if (hit) return found(hit as never)
              if (res.readableEnded) return fail(new Error(`the stream ended without a ${kind} message`))
              waiters.push(look)
            }
            look()
          }),
      })
    })
    req.on('error', reject)
    req.end()
  })
}

// Mounting a web-standard handler in Node's http server (and Express, which
// hands over the same request and response objects): the request becomes a
// `Request` whose signal aborts when the client goes away, and the
// `Response` is written back as it streams.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'

/** A `(req, res)` listener for `http.createServer` or Express around a web-standard handler. */
export function toNodeListener(handler: (request: Request) => Promise<Response>): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const controller = new AbortController()
    // the client left before the response ended: a dropped connection, told apart from a stop by the route it takes
    res.on('close', () => {
      if (!res.writableFinished) controller.abort()
    })
    let request: Request
    try {
      request = toRequest(req, controller.signal)
    } catch {
      // a Host header or target that makes no URL, or a method `Request` refuses (TRACE): the client's fault, answered here
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' })
      return void res.end('bad request: its URL or method cannot be read\n')
    }
    handler(request).then(
      async (response) => {
        res.writeHead(response.status, Object.fromEntries(response.headers))
        if (!response.body) return void res.end()
        res.flushHeaders()
        const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader()
        const cancel = () => void reader.cancel().catch(() => {})
        // the client may have left while the handler was still working on its answer
        if (controller.signal.aborted) cancel()
        else controller.signal.addEventListener('abort', cancel)
        try {
          for (;;) {
            const { done, value } = await reader.read()
            if (done) break
            res.write(value)
          }
        } catch {
          // the body was cancelled because the client left
        }
        res.end()
      },
      () => {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      },
    )
  }
}

/** The web `Request` of a Node request; throws when its Host header or target makes no URL, or its method is one `Request` refuses. */
function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const path = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/'
  const url = new URL(path, `http://${req.headers.host ?? 'localhost'}`)
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    else if (value !== undefined) headers.set(name, value)
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
  const init: RequestInit & { duplex?: 'half' } = { method: req.method, headers, signal }
  if (hasBody) Object.assign(init, { body: Readable.toWeb(req), duplex: 'half' })
  return new Request(url, init)
}

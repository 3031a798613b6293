// The viewer's HTTP server (node:http, no dependencies): the page's own files,
// and one live channel (Server-Sent Events) carrying the session it was given.
// Loopback by default; every request must name this server in its Host header
// (no DNS rebinding), the live channel needs the URL's token and refuses other
// origins, and nothing a request says ever becomes a file path.
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { AnyStateMachine } from 'xstate'
import { Agent } from '../agent/agent.js'
import { ConfigError } from '../errors.js'
import { agentMachine } from '../machines/index.js'
import type { SessionEvent } from '../session/schemas.js'
import { Session } from '../session/session.js'
import { loadAssets, type Asset } from './assets.js'
import { chartOf } from './chart.js'
import { withLayout } from './layout.js'
import { liveFeed, sessionFeed, storedFeed, type SessionLookup, type ViewerFeed } from './feed.js'
import type { ChartMachine, ServerMessage, WireEvent } from './page/protocol.js'

/** What a viewer can show: a running agent, a session being written, or a stored log. */
export type ViewerSource = Agent | Session | readonly SessionEvent[] | { readonly events: readonly WireEvent[]; readonly id?: string }

export interface ViewerOptions {
  /** The address to bind; default `127.0.0.1`. Anything but loopback exposes the session to the network. */
  host?: string
  /** Default 0: a free port chosen by the system. */
  port?: number
  /** The secret the live channel requires (it travels in the printed URL); default a random one, `false` for none. */
  token?: string | false
  /** Shown in the page header; default the session id. */
  title?: string
  /** Print the URL when listening: true (default) prints `agentchart viewer: <url>` to stdout, or pass a printer. */
  print?: boolean | ((line: string) => void)
  /** The compiled page (dist/viewer/assets by default). */
  assetsDir?: string
  /** The machine drawn for a log without an agent; default agentMachine. */
  machine?: AnyStateMachine
  /**
   * Finds the stored log of a session this one links to (a subagent's, named by a call's `meta.subagent`), so
   * the page can open it; e.g. a store's other sessions. A live agent's children need none: they are followed as they start.
   */
  sessions?: (sessionId: string) => readonly SessionEvent[] | undefined
}

export interface ViewerHandle {
  /** The page's address, token included. */
  readonly url: string
  readonly host: string
  readonly port: number
  /** Ends the live channels and stops listening; the agent is left alone. */
  close(): Promise<void>
}

/** Events per SSE message: big enough to load 10,000 events quickly, small enough to keep the page responsive. */
const BATCH = 500
/** A client this far behind is dropped; its page reconnects and resumes from its last event. */
const MAX_BUFFERED = 16 * 1024 * 1024
const HEARTBEAT_MS = 15_000
const FLUSH_MS = 16

const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])
const WILDCARD = new Set(['0.0.0.0', '::', ''])

interface Client {
  readonly res: ServerResponse
  readonly channel: Channel
  events: number
  links: number
  configs: number
  charts: number
  arrivals: number
  cancels: number
  transition: number
  state: string
  ended: boolean
}

/** One session the server shows: its feed, its machines as laid out so far, and the pages reading it. */
interface Channel {
  readonly feed: ViewerFeed
  readonly laidOut: ChartMachine[]
  layoutsAsked: number
  readonly clients: Set<Client>
}

function feedOf(source: ViewerSource, machine: AnyStateMachine, lookup: SessionLookup | undefined): ViewerFeed {
  if (source instanceof Agent) return liveFeed(source)
  const charts = [chartOf(machine)]
  if (source instanceof Session) return sessionFeed(source, charts, lookup)
  if (Array.isArray(source)) return storedFeed(source as readonly WireEvent[], 'stored session', charts, lookup)
  const stored = source as { events?: unknown; id?: unknown }
  if (stored && typeof stored === 'object' && Array.isArray(stored.events)) {
    return storedFeed(stored.events as readonly WireEvent[], typeof stored.id === 'string' ? stored.id : 'stored session', charts, lookup)
  }
  throw new ConfigError('serveViewer needs an Agent, a Session, an array of session events or { events }', { path: 'source' })
}

const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host)

function sameSecret(given: string | null, expected: string): boolean {
  if (given === null) return false
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * Serve the viewer for an agent (live: the statechart lit up, the timeline and the log as they grow),
 * a session, or a stored log (read-only). Resolves once listening; why: the one call an app, a test or
 * the CLI needs to watch a session in a browser, offline.
 */
export async function serveViewer(source: ViewerSource, options: ViewerOptions = {}): Promise<ViewerHandle> {
  const host = options.host ?? '127.0.0.1'
  if (typeof host !== 'string') throw new ConfigError('host must be a string', { path: 'host' })
  const port = options.port ?? 0
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`port must be an integer from 0 to 65535, got ${String(port)}`, { path: 'port' })
  const token = options.token === undefined ? randomBytes(18).toString('base64url') : options.token
  if (token !== false && (typeof token !== 'string' || token === '')) throw new ConfigError('token must be a non-empty string or false', { path: 'token' })
  const assets = loadAssets(options.assetsDir)
  if (options.sessions !== undefined && typeof options.sessions !== 'function')
    throw new ConfigError('sessions must be a function from a session id to its events', { path: 'sessions' })
  const lookup = options.sessions as SessionLookup | undefined
  const feed = feedOf(source, options.machine ?? agentMachine, lookup)
  const title = options.title ?? feed.sessionId

  // every session shown: the source's, and the children its calls started (found as the feed meets them)
  const channels = new Map<string, Channel>()
  const register = (f: ViewerFeed): void => {
    if (!channels.has(f.sessionId)) channels.set(f.sessionId, { feed: f, laidOut: [], layoutsAsked: 0, clients: new Set() })
    for (const child of f.children) register(child)
  }
  register(feed)

  // each machine goes out with its drawing; a machine met later is sent once it is laid out
  const layOut = (channel: Channel): Promise<unknown> => {
    const asked: Promise<void>[] = []
    const charts = channel.feed.charts
    for (; channel.layoutsAsked < charts.length; channel.layoutsAsked++) {
      const i = channel.layoutsAsked
      asked.push(
        withLayout(charts[i]).then(
          (chart) => {
            channel.laidOut[i] = chart
            if (!closed) feedChanged()
          },
          (error: unknown) => console.error(`agentchart viewer: cannot lay out machine ${charts[i].id}`, error),
        ),
      )
    }
    return Promise.all(asked)
  }
  /** The laid-out charts with no gap before them: those a client may be sent, in order. */
  const readyCharts = (channel: Channel): number => {
    let n = 0
    while (n < channel.feed.charts.length && channel.laidOut[n] !== undefined) n++
    return n
  }

  let boundPort = 0
  let flushTimer: NodeJS.Timeout | null = null
  let closed = false

  // DNS rebinding: a page on another site that resolves its name to 127.0.0.1 still sends its own Host
  const hostAllowed = (value: string | undefined): boolean => {
    if (WILDCARD.has(host)) return true // bound to every interface on purpose: the token is the guard
    if (value === undefined) return false
    const names = LOOPBACK.has(host) ? [...LOOPBACK] : [host]
    return names.some((name) => value.toLowerCase() === `${urlHost(name)}:${boundPort}`)
  }

  const send = (client: Client, message: ServerMessage, id?: number): void => {
    const head = id === undefined ? '' : `id: ${id}\n`
    client.res.write(`${head}data: ${JSON.stringify(message)}\n\n`)
  }

  const flush = (client: Client): void => {
    if (client.ended) return
    const { feed, laidOut } = client.channel
    // first, as it may name a configuration (or a child machine) not met before: those go out ahead of it
    const current = feed.current()
    const { configs, arrivals, cancels, eventConfigs, links } = feed
    for (const ready = readyCharts(client.channel); client.charts < ready; client.charts++) send(client, { kind: 'chart', chart: laidOut[client.charts] })
    if (client.links < links.length) {
      send(client, { kind: 'links', links: links.slice(client.links) })
      client.links = links.length
    }
    if (client.configs < configs.length) {
      send(client, { kind: 'configs', configs: configs.slice(client.configs) })
      client.configs = configs.length
    }
    if (client.arrivals < arrivals.length || client.cancels < cancels.length) {
      send(client, { kind: 'notes', arrivals: arrivals.slice(client.arrivals), cancels: cancels.slice(client.cancels) })
      client.arrivals = arrivals.length
      client.cancels = cancels.length
    }
    const events = feed.events()
    while (client.events < events.length) {
      const end = Math.min(events.length, client.events + BATCH)
      const batch = events.slice(client.events, end)
      const cited = feed.mode === 'live' ? eventConfigs.slice(client.events, end) : []
      send(client, { kind: 'events', events: batch, ...(cited.length === batch.length ? { configs: cited } : {}) }, end)
      client.events = end
    }
    if (current) {
      const fresh = feed.transitions.filter((t) => t.n > client.transition).slice(-8)
      const key = JSON.stringify(current)
      if (fresh.length > 0 || key !== client.state) {
        send(client, { kind: 'state', ...current, transitions: fresh })
        client.state = key
        if (fresh.length > 0) client.transition = fresh[fresh.length - 1].n
      }
    }
    if (feed.mode === 'stored') {
      send(client, { kind: 'end', reason: 'stored session' })
      client.ended = true
    }
    if (client.res.writableLength > MAX_BUFFERED) client.res.destroy()
  }

  const flushAll = (): void => {
    flushTimer = null
    for (const channel of channels.values()) for (const client of channel.clients) flush(client)
  }
  function feedChanged(): void {
    register(feed)
    for (const channel of channels.values()) if (channel.layoutsAsked < channel.feed.charts.length) void layOut(channel)
    if (flushTimer === null && !closed) {
      flushTimer = setTimeout(flushAll, FLUSH_MS)
      flushTimer.unref()
    }
  }
  const unwatch = feed.onChange(feedChanged)
  const heartbeat = setInterval(() => {
    for (const channel of channels.values()) for (const client of channel.clients) if (!client.ended) client.res.write(': ping\n\n')
  }, HEARTBEAT_MS)
  heartbeat.unref()

  const refuse = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers })
    res.end(`${message}\n`)
  }

  const live = (req: IncomingMessage, res: ServerResponse, url: URL): void => {
    if (token !== false && !sameSecret(url.searchParams.get('token'), token)) return refuse(res, 403, 'missing or wrong token')
    // the live channel is for this page only: refuse any other origin, and any cross-site fetch
    const origin = req.headers.origin
    if (origin !== undefined && origin !== `http://${req.headers.host ?? ''}`) return refuse(res, 403, 'cross-origin requests are refused')
    const site = req.headers['sec-fetch-site']
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return refuse(res, 403, 'cross-site requests are refused')
    const asked = url.searchParams.get('session')
    const channel = asked === null ? channels.get(feed.sessionId) : channels.get(asked)
    if (!channel) return refuse(res, 404, 'no such session here')
    const shown = channel.feed
    const resume = Number(req.headers['last-event-id'] ?? url.searchParams.get('from') ?? 0)
    const from = Number.isSafeInteger(resume) && resume > 0 ? Math.min(resume, shown.events().length) : 0
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    })
    if (req.method === 'HEAD') return void res.end()
    res.socket?.setNoDelay(true)
    const ready = readyCharts(channel)
    const client: Client = { res, channel, events: from, links: 0, configs: 0, charts: ready, arrivals: 0, cancels: 0, transition: 0, state: '', ended: false }
    channel.clients.add(client)
    res.on('close', () => channel.clients.delete(client))
    res.write('retry: 1000\n\n')
    const name = shown === feed ? title : shown.sessionId
    send(client, { kind: 'hello', protocol: 1, sessionId: shown.sessionId, mode: shown.mode, title: name, from, charts: channel.laidOut.slice(0, ready) })
    flush(client)
  }

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    if (!hostAllowed(req.headers.host)) return refuse(res, 421, 'this server answers only to its own address')
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, 'read-only: GET and HEAD only', { Allow: 'GET, HEAD' })
    const url = new URL(req.url ?? '/', 'http://viewer.invalid')
    if (url.pathname === '/api/live') return live(req, res, url)
    const name = url.pathname === '/' || url.pathname === '/index.html' ? 'index.html' : url.pathname.startsWith('/assets/') ? url.pathname.slice(8) : null
    const asset: Asset | undefined = name === null || name.includes('/') ? undefined : assets.get(name)
    if (!asset) return refuse(res, 404, 'not found')
    res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': asset.type, 'Content-Length': asset.body.length, 'Cache-Control': 'no-cache' })
    res.end(req.method === 'HEAD' ? undefined : asset.body)
  }

  // the page draws the agent's machine from the first message: lay it out before listening
  await Promise.all([...channels.values()].map(layOut))

  const server = createServer((req, res) => {
    try {
      handle(req, res)
    } catch (error) {
      console.error('agentchart viewer: a request failed', error)
      if (!res.headersSent) refuse(res, 500, 'internal error')
      else res.destroy()
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  }).catch((error: unknown) => {
    unwatch()
    clearInterval(heartbeat)
    feed.close()
    throw error
  })
  boundPort = (server.address() as AddressInfo).port
  const shown = WILDCARD.has(host) ? '127.0.0.1' : host
  const url = `http://${urlHost(shown)}:${boundPort}/${token === false ? '' : `?token=${token}`}`

  const print = options.print ?? true
  if (print === true) console.log(`agentchart viewer: ${url}`)
  else if (typeof print === 'function') print(url)

  return {
    url,
    host,
    port: boundPort,
    close: async () => {
      if (closed) return
      closed = true
      unwatch()
      if (flushTimer !== null) clearTimeout(flushTimer)
      clearInterval(heartbeat)
      feed.close()
      for (const channel of channels.values()) {
        for (const client of channel.clients) {
          if (!client.ended) send(client, { kind: 'end', reason: 'viewer closed' })
          client.res.end()
        }
        channel.clients.clear()
      }
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}

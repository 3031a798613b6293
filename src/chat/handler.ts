// The chat endpoint: web-standard Request in, Response out, speaking the AI
// SDK's UI message stream so `useChat` works against an agentchart agent.
// Every response is read from the chat's log, so a response, a second
// message that steers the same turn, and a reload that re-attaches all show
// the same events; Stop is a route that ends the server's turn.
import type { Subscription } from 'rxjs'
import type { Agent } from '../agent/agent.js'
import { AgentchartError, ConfigError } from '../errors.js'
import { userMessage } from '../request/messages.js'
import { pendingApprovals } from '../session/approvals.js'
import { openTurnOf } from '../session/repair.js'
import type { ContentBlock, InboxTarget, SessionEvent, UserMessage } from '../session/schemas.js'
import { isRecordLike } from '../values/foreign.js'
import { agentBackend, clientBackend, type ChatBackend, type ChatSessionClient } from './backend.js'
import { ChatError } from './errors.js'
import { chatMessages } from './history.js'
import { SSE_DONE, sseFrame, UI_MESSAGE_STREAM_HEADERS, type UIMessageChunk } from './protocol.js'
import { ResponseView, segmentsOf, type ResponseStart } from './segments.js'

/** What `createChatHandler` serves: one of `agent`, `client` or `backend` says who drives the chats. */
export interface ChatHandlerOptions {
  /** The agent of a chat (its session id is the chat id); called once per chat id, the result is kept. */
  agent?: (chatId: string) => Agent | Promise<Agent>
  /** A session client (`createSessionClient({ store })`): the turns run in whichever process drives the session. */
  client?: ChatSessionClient
  /** Your own implementation of the few calls the endpoint makes. */
  backend?: ChatBackend
  /** What a message does while a turn runs, unless the request's body says (`mode`): default `'steer'`. */
  whileRunning?: 'steer' | 'followup'
  /**
   * What a message does while a call waits for approval: `'deny'` (default) refuses the waiting calls (the person
   * wrote instead of answering) and the message steers the turn; `'steer'` leaves the question open.
   */
  whileAwaitingApproval?: 'deny' | 'steer'
  /** End the turn when the client drops a response's connection (a closed tab, `useChat`'s `stop()`); default false. */
  cancelOnDisconnect?: boolean
  /** Keep queued messages when Stop ends the turn; default false (they are discarded with it). */
  keepInboxOnStop?: boolean
  /** Stop abandons tool bodies that ignore the abort after this many milliseconds (`cancel`'s `graceMs`); default 1000. */
  stopGraceMs?: number
  /** Milliseconds between keep-alive comments on an open stream; default 15000, 0 for none. */
  keepAliveMs?: number
}

/** The chat endpoint as a function: mount it for `POST {api}`, `POST {api}/{chatId}/stop`, `GET {api}/{chatId}/stream` and `GET {api}/{chatId}/messages`. */
export type ChatHandler = (request: Request) => Promise<Response>

/** The body `useChat`'s DefaultChatTransport posts, plus our `mode`. */
interface ChatRequestBody {
  id: string
  messages: { id: string; role: string; parts: Record<string, unknown>[] }[]
  trigger?: string
  mode?: 'steer' | 'followup'
}

/** The reason a waiting call is refused with when a person sends a message instead of answering. */
const DENIED_BY_MESSAGE = 'not approved: the user sent a new message instead of answering'

/** How long past the grace the stop route waits for the turn's end before it answers anyway. */
const STOP_MARGIN_MS = 1000

/** How long a message sent here is remembered while the log does not show it yet (a session client's mailbox delivers it later). */
const SENT_MEMORY_MS = 60_000

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }

const json = (value: unknown, status = 200): Response => new Response(JSON.stringify(value), { status, headers: JSON_HEADERS })

function errorResponse(error: unknown): Response {
  if (error instanceof ChatError) return json({ error: { code: error.code, message: error.message } }, error.status)
  if (error instanceof AgentchartError) {
    const status = error.code.startsWith('INVALID') || error.code === 'NOT_LOSSLESS_JSON' ? 400 : 409
    return json({ error: { code: error.code, message: error.message } }, status)
  }
  return json({ error: { code: 'CHAT_INTERNAL', message: 'the chat endpoint failed' } }, 500)
}

async function readBody(request: Request): Promise<ChatRequestBody> {
  let body: unknown
  try {
    body = await request.json()
  } catch (cause) {
    throw new ChatError('CHAT_BAD_REQUEST', 'the request body must be JSON ({ id, messages })', { cause })
  }
  if (!isRecordLike(body)) throw new ChatError('CHAT_BAD_REQUEST', 'the request body must be a JSON object ({ id, messages })')
  if (typeof body.id !== 'string' || body.id === '') throw new ChatError('CHAT_BAD_REQUEST', 'body.id must be the chat id (a non-empty string)', { path: 'id' })
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw new ChatError('CHAT_NO_MESSAGE', 'body.messages must be a non-empty array of UI messages', { path: 'messages' })
  const last = body.messages.at(-1) as unknown
  if (!isRecordLike(last) || typeof last.id !== 'string' || last.id === '' || (last.role !== 'user' && last.role !== 'assistant') || !Array.isArray(last.parts))
    throw new ChatError('CHAT_BAD_REQUEST', 'the last message must be a UI message { id, role: "user" | "assistant", parts: [] }', {
      path: `messages[${body.messages.length - 1}]`,
    })
  const badPart = (last.parts as unknown[]).findIndex((part) => !isRecordLike(part))
  if (badPart >= 0) {
    const path = `messages[${body.messages.length - 1}].parts[${badPart}]`
    throw new ChatError('CHAT_BAD_REQUEST', `${path} must be a UI message part (an object with a type)`, { path })
  }
  if (body.mode !== undefined && body.mode !== 'steer' && body.mode !== 'followup')
    throw new ChatError('CHAT_BAD_REQUEST', `body.mode must be 'steer' or 'followup', got ${JSON.stringify(body.mode)}`, { path: 'mode' })
  if (body.trigger !== undefined && body.trigger !== 'submit-message')
    throw new ChatError('CHAT_UNSUPPORTED', `trigger ${JSON.stringify(body.trigger)} is not supported: the log is append-only, send a new message instead`, {
      path: 'trigger',
    })
  return body as unknown as ChatRequestBody
}

/** The content blocks of a UI message a person typed: its text parts, and image files given by URL. */
function contentOf(parts: readonly Record<string, unknown>[]): ContentBlock[] {
  const blocks: ContentBlock[] = []
  for (const part of parts) {
    if (part.type === 'text' && typeof part.text === 'string') blocks.push({ type: 'text', text: part.text })
    else if (part.type === 'file' && typeof part.mediaType === 'string' && part.mediaType.startsWith('image/') && typeof part.url === 'string')
      blocks.push({ type: 'image', attachment: { mediaType: part.mediaType, url: part.url } })
  }
  return blocks
}

/** Route of a request, from the end of its path (so any mount point works). */
type Route = { kind: 'send' } | { kind: 'stop' | 'stream' | 'messages'; chatId: string }

/** The chat id of a route, from its path segment. */
function chatIdOf(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch (cause) {
    throw new ChatError('CHAT_BAD_REQUEST', `the chat id in the path is not valid %-encoding: ${JSON.stringify(segment)}`, { path: 'chatId', cause })
  }
}

function routeOf(request: Request): Route {
  const segments = new URL(request.url).pathname.split('/').filter((s) => s !== '')
  const action = segments.at(-1)
  const chatId = segments.length >= 2 ? segments.at(-2)! : undefined
  const method = request.method.toUpperCase()
  if (chatId !== undefined && (action === 'stream' || action === 'messages')) {
    if (method !== 'GET') throw new ChatError('CHAT_METHOD', `${action} is read with GET, not ${method}`)
    return { kind: action, chatId: chatIdOf(chatId) }
  }
  if (chatId !== undefined && action === 'stop') {
    if (method !== 'POST') throw new ChatError('CHAT_METHOD', `stop is a POST, not ${method}`)
    return { kind: 'stop', chatId: chatIdOf(chatId) }
  }
  if (method === 'POST') return { kind: 'send' }
  throw new ChatError('CHAT_NOT_FOUND', `no chat route for ${method} ${new URL(request.url).pathname}`)
}

/**
 * The chat endpoint for `useChat`. Routes (by the end of the path, so it mounts anywhere):
 * `POST {api}` a message (a followup when idle, a steer while a turn runs) or approval answers, answered with the
 * UI message stream of its response; `POST {api}/{chatId}/stop` ends the running turn (`aborted`, the partial
 * answer kept); `GET {api}/{chatId}/stream` re-attaches to the running turn (204 when none runs);
 * `GET {api}/{chatId}/messages` the chat's messages as UI messages.
 */
export function createChatHandler(options: ChatHandlerOptions): ChatHandler {
  if (typeof options !== 'object' || options === null) throw new ConfigError('createChatHandler needs an options object ({ agent } or { client })')
  const given = [options.agent, options.client, options.backend].filter((v) => v !== undefined).length
  if (given !== 1) throw new ConfigError('createChatHandler needs exactly one of agent (a function of the chat id), client or backend', { path: 'agent' })
  const backend = options.backend ?? (options.client ? clientBackend(options.client) : agentBackend(options.agent!))
  const whileRunning = options.whileRunning ?? 'steer'
  if (whileRunning !== 'steer' && whileRunning !== 'followup')
    throw new ConfigError(`whileRunning must be 'steer' or 'followup', got ${JSON.stringify(whileRunning)}`, { path: 'whileRunning' })
  const whileAwaitingApproval = options.whileAwaitingApproval ?? 'deny'
  if (whileAwaitingApproval !== 'deny' && whileAwaitingApproval !== 'steer')
    throw new ConfigError(`whileAwaitingApproval must be 'deny' or 'steer', got ${JSON.stringify(whileAwaitingApproval)}`, { path: 'whileAwaitingApproval' })
  const keepAliveMs = options.keepAliveMs ?? 15_000
  if (typeof keepAliveMs !== 'number' || !(keepAliveMs >= 0))
    throw new ConfigError('keepAliveMs must be a number of milliseconds >= 0', { path: 'keepAliveMs' })
  const cancelOnDisconnect = options.cancelOnDisconnect === true
  const keepInbox = options.keepInboxOnStop === true
  const graceMs = options.stopGraceMs ?? 1000
  if (typeof graceMs !== 'number' || !(graceMs >= 0)) throw new ConfigError('stopGraceMs must be a number of milliseconds >= 0', { path: 'stopGraceMs' })

  /** A response that follows the log from `fromSeq` through `view`, until the view ends or the client leaves. */
  function stream(request: Request, chatId: string, fromSeq: number, start: ResponseStart, known: readonly SessionEvent[]): Response {
    const answered = new Set(
      known.flatMap((e) => (e.type === 'tool/approval-answer' ? [e.data.callId] : e.type === 'tool/result' ? [e.data.message.source.callId] : [])),
    )
    const encoder = new TextEncoder()
    let closed = false
    let subscription: Subscription | null = null
    let keepAlive: ReturnType<typeof setInterval> | null = null
    let view: ResponseView
    let controller!: ReadableStreamDefaultController<Uint8Array>
    const write = (text: string) => {
      if (!closed) controller.enqueue(encoder.encode(text))
    }
    const cleanup = () => {
      closed = true
      subscription?.unsubscribe()
      if (keepAlive) clearInterval(keepAlive)
      request.signal?.removeEventListener('abort', onAbort)
    }
    const finish = () => {
      if (closed) return
      write(SSE_DONE)
      cleanup()
      controller.close()
    }
    const onAbort = () => {
      if (closed) return
      const running = !view.done
      cleanup()
      try {
        controller.close()
      } catch {
        // the consumer already cancelled the body
      }
      if (running && cancelOnDisconnect) backend.cancel(chatId, { keepInbox, graceMs }).catch(() => {})
    }
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c
        view = new ResponseView(start, (chunk: UIMessageChunk) => write(sseFrame(chunk)))
        request.signal?.addEventListener('abort', onAbort)
        if (keepAliveMs > 0) keepAlive = setInterval(() => write(': keep-alive\n\n'), keepAliveMs)
        const settle = () => {
          if (view.done) return finish()
          // a question the log already answers is replayed through, however slowly its answer arrives
          if (view.awaitingApproval !== null && !answered.has(view.awaitingApproval)) {
            // end the response once the question is the last thing logged: the answer comes back as a new request
            setImmediate(() => {
              if (!closed && view.awaitingApproval !== null) {
                view.pause()
                finish()
              }
            })
          }
        }
        subscription = backend.watch(chatId, fromSeq).subscribe({
          next: (event: SessionEvent) => {
            if (closed) return
            view.push(event)
            settle()
          },
          error: (error: unknown) => {
            write(sseFrame({ type: 'error', errorText: error instanceof Error ? error.message : 'the chat log could not be read' }))
            finish()
          },
        })
        if (closed) subscription?.unsubscribe()
        // the client may have left before this response was built (while its body, the agent or the log was read)
        if (request.signal?.aborted) onAbort()
      },
      cancel: onAbort,
    })
    return new Response(body, { status: 200, headers: UI_MESSAGE_STREAM_HEADERS })
  }

  /** A response that has nothing to follow: `start`, then its end. */
  function ended(last: UIMessageChunk): Response {
    const text = sseFrame({ type: 'start' }) + sseFrame(last) + SSE_DONE
    return new Response(text, { status: 200, headers: UI_MESSAGE_STREAM_HEADERS })
  }

  /** Per chat, the end of the sends and answers under way: each runs once the one before it is applied. */
  const lanes = new Map<string, Promise<void>>()
  /** Messages sent here, by `[chatId, messageId]`, oldest first: the seq their response follows from, and when they were sent. */
  const sent = new Map<string, { fromSeq: number; at: number }>()

  async function inLane<T>(chatId: string, work: () => Promise<T>): Promise<T> {
    const before = lanes.get(chatId)
    let release!: () => void
    const mine = new Promise<void>((resolve) => (release = resolve))
    const tail = before === undefined ? mine : before.then(() => mine)
    lanes.set(chatId, tail)
    try {
      await before
      return await work()
    } finally {
      release()
      if (lanes.get(chatId) === tail) lanes.delete(chatId)
    }
  }

  async function send(request: Request): Promise<Response> {
    const body = await readBody(request)
    // one at a time per chat, so a request sent twice at once reads the log (and what was sent) after the first
    return inLane(body.id, () => deliver(request, body))
  }

  async function deliver(request: Request, body: ChatRequestBody): Promise<Response> {
    const chatId = body.id
    const last = body.messages.at(-1)!
    const events = await backend.read(chatId)
    if (last.role === 'assistant') return answer(request, chatId, events, last.parts)
    const content = contentOf(last.parts)
    if (content.length === 0) throw new ChatError('CHAT_NO_MESSAGE', 'the last message has no text (or image) part to send', { path: 'messages' })
    // the UI message id is the logged message id: a request sent twice attaches to the first one's response
    const logged = events.find((e) => e.type === 'user/message' && e.data.id === last.id)
    if (logged) {
      const segment = segmentsOf(events).findLast((s) => s.start <= logged.seq)
      if (segment) return stream(request, chatId, segment.start, { kind: 'segment', start: segment.start }, events)
    }
    const queued = events.find((e) => e.type === 'agent/inbox/spliced' && e.data.inserted.some((m) => m.id === last.id))
    if (queued) return stream(request, chatId, queued.seq, { kind: 'prompt', messageId: last.id }, events)
    const now = Date.now()
    // forget, oldest first, what the log has had long enough to show
    for (const [key, { at }] of sent) {
      if (now - at < SENT_MEMORY_MS) break
      sent.delete(key)
    }
    const key = JSON.stringify([chatId, last.id])
    // sent here but not in the log yet (a mailbox delivers it): the first request's response, from where it follows
    const earlier = sent.get(key)
    if (earlier) return stream(request, chatId, earlier.fromSeq, { kind: 'prompt', messageId: last.id }, events)
    const mode = body.mode ?? ((await backend.running(chatId)) ? whileRunning : 'followup')
    const target: InboxTarget = mode === 'steer' ? 'next-step' : 'next-turn'
    const message: UserMessage = userMessage(content, { id: last.id })
    sent.set(key, { fromSeq: events.length, at: now })
    try {
      await backend.send(chatId, message, target)
    } catch (error) {
      sent.delete(key)
      throw error
    }
    // after the send, so the step that reads the refusal also enters the message
    if (whileAwaitingApproval === 'deny') {
      for (const waiting of pendingApprovals(events)) await backend.deny(chatId, waiting.callId, DENIED_BY_MESSAGE)
    }
    return stream(request, chatId, events.length, { kind: 'prompt', messageId: last.id }, events)
  }

  /** Approval answers: the tool parts of the last assistant message that a person approved or denied. */
  async function answer(request: Request, chatId: string, events: readonly SessionEvent[], parts: readonly Record<string, unknown>[]): Promise<Response> {
    const waiting = new Set(pendingApprovals(events).map((p) => p.callId))
    const answers = parts.flatMap((part) => {
      const approval = part.approval
      if (!(typeof part.type === 'string' && part.type.startsWith('tool-')) && part.type !== 'dynamic-tool') return []
      if (part.state !== 'approval-responded' || !isRecordLike(approval) || typeof approval.id !== 'string') return []
      return [{ callId: approval.id, approved: approval.approved === true, reason: typeof approval.reason === 'string' ? approval.reason : undefined }]
    })
    if (answers.length === 0)
      throw new ChatError('CHAT_NO_MESSAGE', 'the last message is an assistant message with no approval answer to send', { path: 'messages' })
    let answered = 0
    for (const a of answers) {
      // a waiting call takes the first answer the message gives it: a repeated or contradicting one is ignored
      if (!waiting.delete(a.callId)) continue
      if (a.approved) await backend.approve(chatId, a.callId)
      else await backend.deny(chatId, a.callId, a.reason ?? 'the user denied this call')
      answered++
    }
    // nothing waited for these answers (answered before, or closed by a Stop or a message): nothing to continue
    if (answered === 0) return ended({ type: 'finish', finishReason: 'other' })
    return stream(request, chatId, events.length, { kind: 'continue' }, events)
  }

  async function resume(request: Request, chatId: string): Promise<Response> {
    const events = await backend.read(chatId)
    const open = openTurnOf(events)
    if (open === null) return new Response(null, { status: 204 })
    const current = segmentsOf(events).at(-1)
    const from = current && current.end === undefined ? current.start : open.turnSeq
    return stream(request, chatId, from, { kind: 'segment', start: from }, events)
  }

  /** Resolves once the turn open at `open` has its `turn/end` in the log, or after `waitMs`. */
  function turnEnded(chatId: string, open: { turn: number; turnSeq: number }, waitMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      let subscription: Subscription | null = null
      let settled = false
      const done = (ended: boolean) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        queueMicrotask(() => subscription?.unsubscribe())
        resolve(ended)
      }
      const timer = setTimeout(() => done(false), waitMs)
      subscription = backend.watch(chatId, open.turnSeq).subscribe({
        next: (event) => {
          if (event.type === 'turn/end' && event.data.turn === open.turn) done(true)
        },
        error: () => done(false),
      })
      if (settled) subscription.unsubscribe()
    })
  }

  async function stop(chatId: string): Promise<Response> {
    const events = await backend.read(chatId)
    const open = openTurnOf(events)
    const running = open !== null || (await backend.running(chatId))
    await backend.cancel(chatId, { keepInbox, graceMs })
    // answer once the turn has ended, so a page that reads the chat next finds it closed
    const ended = open === null ? !running : await turnEnded(chatId, open, graceMs + STOP_MARGIN_MS)
    return json({ stopped: running, ended })
  }

  return async (request: Request): Promise<Response> => {
    try {
      const route = routeOf(request)
      if (route.kind === 'send') return await send(request)
      if (route.kind === 'stop') return await stop(route.chatId)
      if (route.kind === 'stream') return await resume(request, route.chatId)
      return json(chatMessages(await backend.read(route.chatId), { includeOpen: new URL(request.url).searchParams.get('open') === '1' }))
    } catch (error) {
      return errorResponse(error)
    }
  }
}

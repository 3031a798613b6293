// createSessionClient({ store }): talk to any session of a store from any
// process. Messages, cancels and approval answers become mailbox rows that the
// session's driver applies; run(), watch() and status() read committed logs.
import { Observable } from 'rxjs'
import { ConfigError, StoreError } from '../errors.js'
import { toInboxMessage } from '../request/messages.js'
import { OutputSchemas } from '../request/options.js'
import { LogIndex, zeroUsage, type RunResult } from '../agent/results.js'
import { AgentCancelCauseSchema, type AgentCancelCause, type InboxTarget, type SessionEvent, type UserMessage } from '../session/schemas.js'
import { createSession } from '../session/session.js'
import { checkSessionId } from '../stores/lease.js'
import { mailboxOf, MailboxError, wakes, type MailBody, type MailboxBackend } from '../stores/mailbox.js'
import type { SessionStore } from '../stores/types.js'

/** What a client learns about a session from the store. */
export interface SessionStatus {
  readonly sessionId: string
  /** The lease holder driving the session now, or null when nobody does. */
  readonly driver: string | null
  /** From the committed log: a turn is open (`running`), waits for a person's answer, or none is open. */
  readonly phase: 'idle' | 'running' | 'awaiting-approval'
  /** Committed events. */
  readonly length: number
  /** Mailbox rows no driver has consumed yet. */
  readonly pendingMail: number
}

/** What a send hands back: the mailbox row and the id of the message it carries. */
export interface SentMessage {
  readonly mailId: string
  readonly messageId: string
}

export interface SessionClient {
  /** Queue a prompt as its own turn (IN-1), from anywhere. */
  followup(sessionId: string, message: UserMessage | string): Promise<SentMessage>
  /** Steer the running turn at its next step boundary, waking an idle session. */
  steer(sessionId: string, message: UserMessage | string): Promise<SentMessage>
  /** Add context for the next step without waking. */
  inject(sessionId: string, message: UserMessage | string): Promise<SentMessage>
  /** The general form, applied by the driver as `agent.send(message, target, wakeup)`. */
  send(sessionId: string, message: UserMessage | string, target: InboxTarget, wakeup: boolean): Promise<SentMessage>
  /** Cancel the session's activity as `agent.cancel(cause, { keepInbox })` would (CX-1..CX-4). */
  cancel(sessionId: string, cause?: AgentCancelCause, options?: { keepInbox?: boolean }): Promise<{ mailId: string }>
  /** Approve a pending ask (TL-18) through the driver. */
  approve(sessionId: string, callId: string): Promise<{ mailId: string }>
  /** Deny a pending ask; the model reads `reason`. */
  deny(sessionId: string, callId: string, reason: string): Promise<{ mailId: string }>
  /** Queue `input` as its own turn and resolve once that turn's end is committed, wherever it ran. */
  run<T = unknown>(sessionId: string, input: UserMessage | string): Promise<RunResult<T>>
  /** The session's committed events from `fromSeq` (default 0), then each one as it is committed, by any driver. */
  watch(sessionId: string, options?: { fromSeq?: number }): Observable<SessionEvent>
  /** Who drives the session, whether a turn is open, how long the committed log is. */
  status(sessionId: string): Promise<SessionStatus>
  /** Creates an empty session (so mail can be sent to it); resolves with its id. Refuses an id in use. */
  create(sessionId?: string): Promise<string>
  /** Stops the client's watchers and pending runs (the store stays open: it is the caller's). */
  close(): Promise<void>
}

/** A client over a store that has a mailbox (memoryStore, sqliteStore, postgresStore). */
export function createSessionClient(options: { store: SessionStore }): SessionClient {
  if (!options || typeof options !== 'object' || typeof options.store?.open !== 'function') {
    throw new ConfigError('createSessionClient needs { store }: a SessionStore', { path: 'store' })
  }
  const { store } = options
  const backend = mailboxOf(store)
  let closed = false
  const teardowns = new Set<() => void>()
  const assertOpen = (id: string) => {
    if (closed) throw new StoreError('STORE_CLOSED', id, 'this session client is closed')
  }

  async function post(sessionId: string, body: MailBody) {
    const id = checkSessionId(sessionId)
    assertOpen(id)
    const posted = await backend.post(id, body)
    // a waking row with nobody driving the session asks the queue for a worker
    if (wakes(body) && !posted.held) await backend.queue().offer(id)
    return posted
  }

  async function send(sessionId: string, message: UserMessage | string, target: InboxTarget, wakeup: boolean): Promise<SentMessage> {
    checkSessionId(sessionId)
    if (target !== 'next-turn' && target !== 'next-step') {
      throw new ConfigError(`target must be 'next-turn' or 'next-step', got ${JSON.stringify(target)}`, { path: 'target' })
    }
    if (typeof wakeup !== 'boolean') throw new ConfigError(`wakeup must be a boolean, got ${typeof wakeup}`, { path: 'wakeup' })
    const checked = toInboxMessage(message)
    const posted = await post(sessionId, { kind: 'send', message: checked, target, wakeup })
    return { mailId: posted.id, messageId: checked.id }
  }

  function watch(sessionId: string, watchOptions?: { fromSeq?: number }): Observable<SessionEvent> {
    const id = checkSessionId(sessionId)
    const fromSeq = watchOptions?.fromSeq ?? 0
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 0)
      throw new ConfigError(`fromSeq must be a non-negative integer, got ${String(fromSeq)}`, { path: 'fromSeq' })
    return new Observable<SessionEvent>((subscriber) => {
      let next = fromSeq
      let reading = false
      let again = false
      let done = false
      const read = async () => {
        if (reading) {
          again = true
          return
        }
        reading = true
        try {
          do {
            again = false
            const events = await backend.tail(id, next)
            if (done) return
            if (events === undefined) {
              subscriber.error(new MailboxError('SESSION_UNKNOWN', `no session ${id} in the ${store.kind} store`, { path: 'sessionId' }))
              return
            }
            // the stored log only grows by commits, so what lies from `next` on is new and in order
            for (const event of events) {
              if (done) return
              if ((event as SessionEvent).seq !== next) continue
              subscriber.next(event as SessionEvent)
              next++
            }
          } while (again && !done)
        } catch (error) {
          if (!done) subscriber.error(error)
        } finally {
          reading = false
        }
      }
      const unsubscribe = backend.subscribe((signal) => {
        if (signal.kind === 'commit' && (signal.sessionId === id || signal.sessionId === '*')) void read()
        else if (signal.sessionId === '*') void read()
      })
      const teardown = () => {
        done = true
        unsubscribe()
        subscriber.complete()
      }
      teardowns.add(teardown)
      // listening first, then reading: a commit between the two is read again, never missed
      backend.ready().then(read, (error: unknown) => subscriber.error(error))
      return () => {
        done = true
        teardowns.delete(teardown)
        unsubscribe()
      }
    })
  }

  async function run<T>(sessionId: string, input: UserMessage | string): Promise<RunResult<T>> {
    const id = checkSessionId(sessionId)
    assertOpen(id)
    const message = toInboxMessage(input)
    // this send's message is inserted after what is committed now: an earlier send of the same id is not followed
    const follower = new RunFollower(message.id, (await backend.info(id))?.length ?? 0)
    const events: SessionEvent[] = []
    return new Promise<RunResult<T>>((resolve, reject) => {
      let settled = false
      const subscription = watch(id).subscribe({
        next: (event) => {
          events.push(event)
          const outcome = follower.see(event)
          if (outcome === undefined || settled) return
          settled = true
          subscription.unsubscribe()
          resolve(outcome === 'discarded' ? (discarded(event.seq) as RunResult<T>) : turnResult<T>(id, events, follower.turn!, event.seq))
        },
        error: (error: unknown) => {
          if (!settled) reject(error instanceof Error ? error : new Error(String(error)))
        },
        complete: () => {
          if (!settled) reject(new StoreError('STORE_CLOSED', id, 'the session client was closed before the run ended'))
        },
      })
      send(id, message, 'next-turn', true).catch((error: unknown) => {
        settled = true
        subscription.unsubscribe()
        reject(error instanceof Error ? error : new Error(String(error)))
      })
    })
  }

  async function status(sessionId: string): Promise<SessionStatus> {
    const id = checkSessionId(sessionId)
    assertOpen(id)
    const [info, events] = await Promise.all([backend.info(id), store.load(id)])
    if (info === undefined || events === undefined)
      throw new MailboxError('SESSION_UNKNOWN', `no session ${id} in the ${store.kind} store`, { path: 'sessionId' })
    return {
      sessionId: id,
      driver: info.lease?.holder ?? null,
      phase: phaseOf(events as SessionEvent[]),
      length: events.length,
      pendingMail: await backend.pendingCount(id),
    }
  }

  return {
    followup: (sessionId, message) => send(sessionId, message, 'next-turn', true),
    steer: (sessionId, message) => send(sessionId, message, 'next-step', true),
    inject: (sessionId, message) => send(sessionId, message, 'next-step', false),
    send,
    async cancel(sessionId, cause = { kind: 'user' }, cancelOptions) {
      const parsed = AgentCancelCauseSchema.safeParse(cause)
      if (!parsed.success) throw new ConfigError(`invalid cancel cause: ${parsed.error.issues[0].message}`, { path: 'cause' })
      const posted = await post(sessionId, { kind: 'cancel', cause, keepInbox: cancelOptions?.keepInbox === true })
      return { mailId: posted.id }
    },
    async approve(sessionId, callId) {
      if (typeof callId !== 'string' || callId === '') throw new ConfigError('callId must be a non-empty string', { path: 'callId' })
      return { mailId: (await post(sessionId, { kind: 'approve', callId })).id }
    },
    async deny(sessionId, callId, reason) {
      if (typeof callId !== 'string' || callId === '') throw new ConfigError('callId must be a non-empty string', { path: 'callId' })
      if (typeof reason !== 'string') throw new ConfigError('deny needs a string reason (the model reads it)', { path: 'reason' })
      return { mailId: (await post(sessionId, { kind: 'deny', callId, reason })).id }
    },
    run,
    watch,
    status,
    async create(sessionId) {
      const id = checkSessionId(sessionId ?? crypto.randomUUID())
      assertOpen(id)
      if ((await backend.info(id)) !== undefined) throw new ConfigError(`session ${id} exists already`, { path: 'sessionId' })
      const handle = await store.open(id, {
        check: (events) => {
          if (events.length > 0) throw new ConfigError(`session ${id} exists already`, { path: 'sessionId' })
        },
      })
      await handle.release()
      return id
    },
    close() {
      closed = true
      for (const teardown of [...teardowns]) teardown()
      teardowns.clear()
      return Promise.resolve()
    },
  }
}

/**
 * Follows one queued message through the log: the splice at or after `from` that inserts it, then the turn that
 * claims that very entry, that turn's end, or its discard.
 */
class RunFollower {
  readonly #lists: { 'next-turn': UserMessage[]; 'next-step': UserMessage[] } = { 'next-turn': [], 'next-step': [] }
  #openTurn = 0
  /** The inbox entry of this send, once its insert is seen. */
  #ours: UserMessage | undefined
  turn: number | null = null

  constructor(
    readonly id: string,
    readonly from: number,
  ) {}

  see(event: SessionEvent): 'ended' | 'discarded' | undefined {
    if (event.type === 'turn/start') this.#openTurn = event.data.turn
    else if (event.type === 'turn/end' && this.turn !== null && event.data.turn === this.turn) return 'ended'
    else if (event.type === 'agent/inbox/spliced') {
      const { target, start, removedCount, inserted, outcome } = event.data
      const removed = this.#lists[target].splice(start, removedCount ?? 0, ...inserted)
      if (this.turn !== null) return undefined
      if (this.#ours === undefined) {
        if (event.seq >= this.from) this.#ours = inserted.find((m) => m.id === this.id)
      } else if (removed.includes(this.#ours)) {
        // a cancel that keeps the inbox puts the entry back: follow it there
        const back = outcome === 'canceled' ? inserted.find((m) => m.id === this.id) : undefined
        if (outcome !== 'canceled') this.turn = this.#openTurn
        else if (back === undefined) return 'discarded'
        else this.#ours = back
      }
    }
    return undefined
  }
}

const discarded = (seq: number): RunResult => ({ turn: null, end: { kind: 'discarded', seq }, text: '', message: undefined, usage: zeroUsage(), steps: 0 })

/** The result of `turn`, read from the committed log the way agent.run() reads its own. */
function turnResult<T>(sessionId: string, events: readonly SessionEvent[], turn: number, endSeq: number): RunResult<T> {
  const session = createSession({ id: sessionId, seed: events.slice(0, endSeq + 1) })
  return new LogIndex(session).turnResult<T>(turn, endSeq, new OutputSchemas())
}

/** Whether the committed log leaves a turn open, and whether that turn waits for an approval. */
function phaseOf(events: readonly SessionEvent[]): SessionStatus['phase'] {
  let open = false
  const asked = new Set<string>()
  for (const event of events) {
    if (event.type === 'turn/start') open = true
    else if (event.type === 'turn/end') {
      open = false
      asked.clear()
    } else if (event.type === 'tool/approval-request') asked.add(event.data.callId)
    else if (event.type === 'tool/approval-answer' || event.type === 'tool/result') asked.delete((event.data as { callId: string }).callId)
  }
  if (!open) return 'idle'
  return asked.size > 0 ? 'awaiting-approval' : 'running'
}

export type { MailboxBackend }

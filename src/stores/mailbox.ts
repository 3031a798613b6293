// The mailbox: messages, cancels and approval answers sent to a session from
// any process, kept as rows beside its log. The driver holding the lease
// consumes each row in the same commit as the events that record it, so a row
// enters the log exactly once (agent/mail-reader.ts applies them).
import { AgentchartError } from '../errors.js'
import type { AgentCancelCause, InboxTarget, UserMessage } from '../session/schemas.js'
import type { SessionHandle, SessionInfo, SessionStore } from './types.js'

/** What one mailbox row asks of the session's driver. */
export type MailBody =
  | { readonly kind: 'send'; readonly message: UserMessage; readonly target: InboxTarget; readonly wakeup: boolean }
  | { readonly kind: 'cancel'; readonly cause: AgentCancelCause; readonly keepInbox: boolean }
  | { readonly kind: 'approve'; readonly callId: string }
  | { readonly kind: 'deny'; readonly callId: string; readonly reason: string }

/** A stored mailbox row: ids grow in the order rows were written. */
export interface MailRecord {
  readonly id: string
  readonly sessionId: string
  readonly body: MailBody
}

/** Whether a row needs a driver to act: everything but an inject (a send that does not wake). */
export function wakes(body: MailBody): boolean {
  return body.kind !== 'send' || body.wakeup
}

/** A store-side signal: new mail for a session, or a commit that grew its log. */
export interface StoreSignal {
  readonly kind: 'mail' | 'commit'
  readonly sessionId: string
}

/** Consumption that rides on a commit: the rows are marked consumed by the transaction that stores seq `length`. */
interface MailTicket {
  /** The send appended nothing: consume the rows on their own (fenced by the lease), after what is stored. */
  standalone(): Promise<void>
  /** The rows were not applied after all: no commit consumes them (they stay for the next driver). */
  withdraw(): void
  /** Settles when the rows are consumed; rejects when the commit carrying them failed. */
  readonly done: Promise<void>
}

/** The mailbox side of one opened session, kept by the store beside the handle. */
export interface HeldMail {
  /** Consume `ids` with the first commit that stores seq `length` (register before the send that appends it). */
  expect(ids: readonly string[], length: number): MailTicket
}

/** What a store offers the client and the workers; stores without it have no mailbox. */
export interface MailboxBackend {
  /** Writes a row and signals it, in one transaction; SESSION_UNKNOWN when the session was never created. */
  post(sessionId: string, body: MailBody): Promise<MailRecord & { readonly held: boolean }>
  /** The session's unconsumed rows, oldest first. */
  pending(sessionId: string): Promise<MailRecord[]>
  /** How many of the session's rows no driver consumed yet. */
  pendingCount(sessionId: string): Promise<number>
  /** The committed events from seq `fromSeq` on, read without reading the rest; undefined for an unknown session. */
  tail(sessionId: string, fromSeq: number): Promise<unknown[] | undefined>
  /** One stored session's row as `list()` would report it; undefined when unknown. */
  info(sessionId: string): Promise<SessionInfo | undefined>
  /** The mailbox side of a handle this store opened. */
  held(handle: SessionHandle): HeldMail
  /**
   * Live signals of every session in the store; returns the unsubscriber. A subscription keeps the process alive
   * (like a LISTEN connection) unless `keepAlive` is false.
   */
  subscribe(listener: (signal: StoreSignal) => void, options?: { keepAlive?: boolean }): () => void
  /**
   * Sessions that need a driver and have none: unconsumed waking mail and no live lease, or a lease a worker
   * (holder starting `workerPrefix`) left to lapse without releasing it (the worker died). With `sessionId`,
   * only that session is looked at.
   */
  orphans(workerPrefix: string, limit: number, sessionId?: string): Promise<string[]>
  /** Resolves once the store's listeners are set up (signals sent after it are heard). */
  ready(): Promise<void>
  /** How sessions are handed to workers in this store. */
  queue(): SessionQueue
}

/** Hands sessions that need a driver to workers: one offer per session at a time, whoever asks. */
export interface SessionQueue {
  /** Asks for some worker to take the session. */
  offer(sessionId: string): Promise<void>
  /**
   * Starts handing offered sessions to `take`, up to `concurrency` at a time: more are fetched once those `take`
   * calls resolve (each resolves when the worker had a free slot and tried to open the session). `nudge()` fetches at once.
   */
  work(take: (sessionId: string) => Promise<void>, concurrency?: number): Promise<{ nudge(): void; stop(): Promise<void> }>
}

/**
 * The takes a queue has under way: at most `concurrency`, one per session. Why: a take waits on the app's agent
 * factory and the store's open, so one slow session must hold up no other, and `stop()` must not wait for it.
 */
export class Takes {
  readonly #under = new Map<string, Promise<void>>()
  #stopped = false
  #halt!: () => void
  readonly #halted = new Promise<void>((resolve) => (this.#halt = resolve))
  constructor(
    readonly take: (sessionId: string) => Promise<void>,
    readonly concurrency: number,
  ) {}

  /** Starts a take of `sessionId` once fewer than `concurrency` are under way (none if one for it is); false once stopped. */
  async start(sessionId: string): Promise<boolean> {
    while (this.#under.size >= this.concurrency && !this.#stopped) await Promise.race([this.#halted, ...this.#under.values()])
    if (this.#stopped) return false
    if (!this.#under.has(sessionId)) {
      const settled = this.take(sessionId)
        .catch(() => {})
        .finally(() => this.#under.delete(sessionId))
      this.#under.set(sessionId, settled)
    }
    return true
  }

  /** Starts no more; a take still opening its session finds the worker closing and gives it back. */
  stop(): void {
    this.#stopped = true
    this.#halt()
  }
}

export const MAILBOX: unique symbol = Symbol.for('agentchart.mailbox') as never

/** The store's mailbox, or undefined for a store that has none. */
export function mailboxIn(store: SessionStore): MailboxBackend | undefined {
  return (store as { [MAILBOX]?: MailboxBackend })?.[MAILBOX]
}

/** The store's mailbox, or a typed error for a store that has none. */
export function mailboxOf(store: SessionStore): MailboxBackend {
  const backend = (store as { [MAILBOX]?: MailboxBackend })?.[MAILBOX]
  if (backend === undefined)
    throw new MailboxError('MAILBOX_UNSUPPORTED', `the ${String(store?.kind)} store has no mailbox (use memoryStore, sqliteStore or postgresStore)`)
  return backend
}

/** A mailbox request that cannot be carried out: an unknown session, a store without a mailbox. */
export class MailboxError extends AgentchartError {
  constructor(code: 'SESSION_UNKNOWN' | 'MAILBOX_UNSUPPORTED', message: string, options?: { path?: string }) {
    super(code, message, options)
    this.name = 'MailboxError'
  }
}

/** Consumption waiting for its commit, shared by the stores' handles. */
export class RidingMail {
  #waiting: { ids: readonly string[]; length: number; resolve: () => void; reject: (error: unknown) => void }[] = []

  /** Registers rows to consume with the commit storing seq `length`; `alone` consumes them by themselves. */
  expect(ids: readonly string[], length: number, alone: (ids: readonly string[]) => Promise<void>): MailTicket {
    let resolve!: () => void
    let reject!: (error: unknown) => void
    const done = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)))
    done.catch(() => {})
    const entry = { ids, length, resolve, reject }
    this.#waiting.push(entry)
    return {
      done,
      withdraw: () => {
        this.#waiting = this.#waiting.filter((e) => e !== entry)
      },
      standalone: () => {
        if (!this.#waiting.includes(entry)) return done
        this.#waiting = this.#waiting.filter((e) => e !== entry)
        alone(ids).then(resolve, reject)
        return done
      },
    }
  }

  /** The rows a commit of events up to `end` (exclusive) consumes, and how to settle them after it. */
  take(end: number): { ids: string[]; settle(error?: unknown): void } {
    const riding = this.#waiting.filter((e) => e.length < end)
    if (riding.length === 0) return { ids: [], settle: () => {} }
    this.#waiting = this.#waiting.filter((e) => e.length >= end)
    return {
      ids: riding.flatMap((e) => e.ids),
      settle: (error?: unknown) => {
        for (const e of riding)
          if (error === undefined) e.resolve()
          else e.reject(error)
      },
    }
  }
}

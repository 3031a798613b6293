// A stored agent's mail reader: while it holds the session's lease, it applies
// the mailbox rows through the agent's own methods as the store signals them.
import { AgentStateError, StoreError } from '../errors.js'
import type { HookLogger } from '../runtime/hooks.js'
import type { HeldMail, MailboxBackend, MailRecord } from '../stores/mailbox.js'
import type { SessionHandle } from '../stores/types.js'
import type { Agent } from './agent.js'

/** Errors after which a row is left for the session's next driver (this one can no longer record it). */
function driverGone(error: unknown): boolean {
  return error instanceof StoreError || (error instanceof AgentStateError && error.code === 'AGENT_DISPOSED')
}

/**
 * The driver's end of the mailbox: applies a session's rows to its agent in row order, each as the local call
 * would (followup/steer/inject/send, cancel, approve, deny), skipping rows it applied already. A row the agent
 * refuses (a duplicate pending id, an unknown approval) is consumed without effect.
 */
export class SessionMailbox {
  readonly #agent: Agent
  readonly #backend: MailboxBackend
  readonly #held: HeldMail
  readonly #applied = new Set<string>()
  #draining: Promise<void> | null = null
  #again = false
  #stopped = false
  /** Called after each row is applied (workers note activity). */
  onApplied: (() => void) | undefined
  /** Where delivery troubles go. */
  onError: (error: unknown) => void = () => {}

  constructor(agent: Agent, backend: MailboxBackend, held: HeldMail) {
    this.#agent = agent
    this.#backend = backend
    this.#held = held
  }

  /** Reads and applies what is pending; concurrent calls coalesce into one more pass. */
  drain(): Promise<void> {
    if (this.#stopped) return Promise.resolve()
    if (this.#draining !== null) {
      this.#again = true
      return this.#draining
    }
    this.#draining = (async () => {
      try {
        do {
          this.#again = false
          const rows = await this.#backend.pending(this.#agent.sessionId)
          for (const row of rows) {
            if (this.#stopped) return
            if (this.#applied.has(row.id)) continue
            if (!this.#apply(row)) return
          }
        } while (this.#again && !this.#stopped)
      } catch (error) {
        this.onError(error)
      } finally {
        this.#draining = null
      }
    })()
    return this.#draining
  }

  /** No more rows are applied; resolves once the pass in progress is over. */
  async stop(): Promise<void> {
    this.#stopped = true
    await this.#draining
  }

  /** Applies one row; false when the driver can no longer record anything (the row stays for the next one). */
  #apply(row: MailRecord): boolean {
    const agent = this.#agent
    const before = agent.session.length
    const running = agent.status === 'running'
    const ticket = this.#held.expect([row.id], before)
    this.#applied.add(row.id)
    try {
      const body = row.body
      switch (body.kind) {
        case 'send':
          agent.send(body.message, body.target, body.wakeup)
          break
        case 'cancel':
          agent.cancel(body.cause, { keepInbox: body.keepInbox })
          break
        case 'approve':
          agent.approve(body.callId)
          break
        case 'deny':
          agent.deny(body.callId, body.reason)
          break
      }
    } catch (error) {
      if (driverGone(error)) {
        this.#applied.delete(row.id)
        ticket.withdraw()
        return false
      }
      this.onError(error)
    }
    if (agent.session.length === before) void ticket.standalone().catch((error: unknown) => this.onError(error))
    else {
      ticket.done.catch((error: unknown) => this.onError(error))
      // a send into a running turn only inserts: commit it now rather than at the writer's next batch (a send that
      // woke the agent is committed by the turn it opened, before any work leaves the process)
      if (running && row.body.kind === 'send') agent.flush().catch(() => {})
    }
    this.onApplied?.()
    return true
  }
}

/** Applies the session's mail now and whenever the store signals more; returns what stops it. */
export function readMail(agent: Agent, backend: MailboxBackend, handle: SessionHandle, logger: HookLogger): (() => Promise<void>) | undefined {
  let held: HeldMail
  try {
    held = backend.held(handle)
  } catch {
    // a handle the mailbox's store did not open (a wrapping store): this agent cannot consume rows with its commits
    return undefined
  }
  const mailbox = new SessionMailbox(agent, backend, held)
  mailbox.onError = (error) => logger.error(`agentchart: delivering mail to session ${agent.sessionId} failed`, error)
  // a reading agent keeps no process alive by itself: dispose() or the end of the program stops it
  const unsubscribe = backend.subscribe(
    (signal) => {
      if (signal.kind === 'mail' && (signal.sessionId === agent.sessionId || signal.sessionId === '*')) void mailbox.drain()
    },
    { keepAlive: false },
  )
  void backend.ready().then(
    () => mailbox.drain(),
    (error: unknown) => mailbox.onError(error),
  )
  return async () => {
    unsubscribe()
    await mailbox.stop()
  }
}

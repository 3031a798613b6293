// serveSessions({ store, agent, concurrency, idleMs }): a worker process's
// side of the mailbox. Sessions with waking mail and no driver reach it
// through the store's queue; it opens each one (the lease still guarantees
// one driver), applies its mail until the session rests idle for idleMs,
// then disposes it and gives the lease back.
import type { Agent } from '../agent/agent.js'
import { createAgent } from '../agent/create.js'
import { SessionMailbox } from '../agent/mail-reader.js'
import type { StoredAgentOptions } from '../agent/options.js'
import { ConfigError, SessionInUseError } from '../errors.js'
import { describeValue } from '../values/foreign.js'
import { defaultHolder, WORKER_PREFIX } from '../stores/lease.js'
import { mailboxOf, wakes, type MailboxBackend } from '../stores/mailbox.js'
import type { SessionHandle, SessionStore } from '../stores/types.js'

/** What a worker needs to make a session's agent: everything createAgent takes except the store and the id. */
export type ServedAgentOptions = Omit<StoredAgentOptions, 'store' | 'sessionId' | 'id'>

export interface ServeSessionsOptions {
  store: SessionStore
  /** The agent options of a session (its model, tools, ...); may be async. */
  agent: (sessionId: string) => ServedAgentOptions | Promise<ServedAgentOptions>
  /** Sessions this worker drives at once (default 8). */
  concurrency?: number
  /** How long a session stays open once idle before it is disposed (default 1000 ms). */
  idleMs?: number
  /** The lease of each opened session (default 15 000 ms): a killed worker's sessions are taken over once it lapses. */
  leaseMs?: number
  /** How often the worker looks for sessions whose driver died, ms (default: half the lease). */
  rescueMs?: number
  /** Names this worker in leases (default `worker:<host>:<pid>:<random>`; it always starts with `worker:`). */
  name?: string
  /** Called with each agent the worker opens, before its mail is applied (register listeners here). */
  onOpen?: (agent: Agent) => void
  /** Where a session's troubles are reported (default console.error). */
  onError?: (error: unknown, sessionId: string | undefined) => void
}

/** A running worker. */
export interface SessionWorkers {
  /** Holder name of this worker's leases. */
  readonly name: string
  /** Ids of the sessions this worker drives now. */
  readonly sessions: readonly string[]
  /**
   * Stops taking sessions, lets each one it drives finish its work (or, past `graceMs`, disposes it, handing
   * queued mail and inbox back to the next driver), then gives every lease back.
   */
  close(options?: { graceMs?: number }): Promise<void>
}

interface Served {
  readonly agent: Agent
  readonly mailbox: SessionMailbox
  /** Resolves when the session was disposed. */
  readonly finished: Promise<void>
  /** Something happened: restart the idle clock. */
  poke(): void
  /** Dispose now (after the work in progress, or, with `force`, abandoning what still runs after `graceMs`), keeping the inbox for the next driver. */
  stop(force?: { graceMs: number }): void
}

/** Starts a worker over `store`; resolves once it takes sessions. */
export async function serveSessions(options: ServeSessionsOptions): Promise<SessionWorkers> {
  if (!options || typeof options !== 'object' || typeof options.store?.open !== 'function')
    throw new ConfigError('serveSessions needs { store }', { path: 'store' })
  if (typeof options.agent !== 'function') throw new ConfigError('serveSessions needs agent: (sessionId) => agent options', { path: 'agent' })
  const concurrency = options.concurrency ?? 8
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new ConfigError(`concurrency must be a positive integer, got ${String(concurrency)}`, { path: 'concurrency' })
  const idleMs = checkMs(options.idleMs ?? 1000, 'idleMs', 0)
  const leaseMs = checkMs(options.leaseMs ?? 15_000, 'leaseMs', 10)
  const rescueMs = checkMs(options.rescueMs ?? Math.max(5, Math.floor(leaseMs / 2)), 'rescueMs', 5)
  const store = options.store
  const backend: MailboxBackend = mailboxOf(store)
  const name = `${WORKER_PREFIX}${options.name ?? defaultHolder()}`
  const report = options.onError ?? ((error: unknown, sessionId?: string) => console.error(`[agentchart] worker ${name}, session ${sessionId ?? '-'}:`, error))
  const served = new Map<string, Served>()
  let closing = false
  /** Slots taken: sessions being opened or driven. */
  let busy = 0
  /** Waiters for a free slot. */
  let slotWaiters: (() => void)[] = []
  /** Takes a slot once one is free; false when the worker closes first. */
  async function reserve(): Promise<boolean> {
    while (busy >= concurrency && !closing) await new Promise<void>((resolve) => slotWaiters.push(resolve))
    if (closing) return false
    busy++
    return true
  }
  const slotFreed = () => {
    const waiters = slotWaiters
    slotWaiters = []
    for (const waiter of waiters) waiter()
  }
  const releaseSlot = () => {
    busy--
    slotFreed()
  }

  /** Opens and drives one session; resolves once it is open (or could not be). */
  async function take(sessionId: string): Promise<void> {
    if (served.has(sessionId) || !(await reserve())) return
    let driving = false
    try {
      // a stale offer (the work was done meanwhile, or another worker holds the session) opens nothing
      if (served.has(sessionId) || (await backend.orphans(WORKER_PREFIX, 1, sessionId)).length === 0) return
      driving = await drive(sessionId)
    } catch (error) {
      if (!(error instanceof SessionInUseError)) report(error, sessionId)
    } finally {
      // a driven session gives its slot back when it is disposed
      if (!driving) releaseSlot()
    }
  }

  /** True once the session is open and driven (its slot is then released by its retirement). */
  async function drive(sessionId: string): Promise<boolean> {
    const agentOptions: unknown = await options.agent(sessionId)
    if (typeof agentOptions !== 'object' || agentOptions === null)
      throw new ConfigError(`serveSessions: agent(${JSON.stringify(sessionId)}) must return agent options, got ${describeValue(agentOptions)}`, {
        path: 'agent',
      })
    let handle: SessionHandle | undefined
    // the agent's handle, so the mailbox can ride on its commits
    const capturing: SessionStore = Object.create(store, {
      open: {
        value: async (id: string, openOptions: Parameters<SessionStore['open']>[1]) => {
          const opened = await store.open(id, openOptions)
          if (id === sessionId) handle = opened
          return opened
        },
      },
    }) as SessionStore
    const given = agentOptions as ServedAgentOptions
    const agent = await createAgent({ ...given, store: capturing, sessionId, lease: { ...given.lease, holder: name, leaseMs }, mailbox: false })
    if (closing) {
      // close() began while this session was being opened: give it straight back
      await agent.dispose({ keepInbox: true })
      return false
    }
    try {
      options.onOpen?.(agent)
    } catch (error) {
      await agent.dispose({ keepInbox: true })
      throw error
    }
    const mailbox = new SessionMailbox(agent, backend, backend.held(handle!))
    mailbox.onError = (error) => report(error, sessionId)
    let timer: ReturnType<typeof setTimeout> | null = null
    let stopped = false
    let finish!: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    const entry: Served = {
      agent,
      mailbox,
      finished,
      poke: () => {
        if (timer !== null) clearTimeout(timer)
        timer = null
        if (!stopped) void agent.whenIdle().then(arm)
      },
      stop: (force) => {
        stopped = true
        if (timer !== null) clearTimeout(timer)
        // a forced stop escalates a disposal already under way: a body that ignores its signal holds no lease
        if (force) agent.dispose({ keepInbox: true, force: true, graceMs: force.graceMs }).catch((error: unknown) => report(error, sessionId))
        void retire()
      },
    }
    mailbox.onApplied = () => entry.poke()
    served.set(sessionId, entry)
    const arm = () => {
      if (stopped || timer !== null) return
      if (agent.status === 'running') return entry.poke()
      timer = setTimeout(() => {
        timer = null
        if (agent.status === 'running') return entry.poke()
        entry.stop()
      }, idleMs)
    }
    let retiring: Promise<void> | null = null
    const retire = () =>
      (retiring ??= (async () => {
        await mailbox.stop()
        await agent.dispose({ keepInbox: true }).catch((error: unknown) => report(error, sessionId))
        served.delete(sessionId)
        releaseSlot()
        finish()
        // mail that arrived while the session was being given back asks for the next driver
        if (!closing) await handBack(sessionId)
      })().catch((error: unknown) => report(error, sessionId)))
    await mailbox.drain()
    entry.poke()
    return true
  }

  /** Once released: a session with waking mail goes back to the queue. */
  async function handBack(sessionId: string): Promise<void> {
    const pending = await backend.pending(sessionId)
    if (pending.some((row) => wakes(row.body))) await backend.queue().offer(sessionId)
  }

  const unsubscribe = backend.subscribe((signal) => {
    if (signal.kind !== 'mail') return
    if (signal.sessionId === '*') {
      for (const entry of served.values()) void entry.mailbox.drain()
      void rescue()
      return
    }
    const entry = served.get(signal.sessionId)
    if (entry !== undefined) void entry.mailbox.drain()
    else work?.nudge()
  })
  await backend.ready()

  /** Sessions nobody drives though they have waking mail, or whose worker died: offered to the queue. */
  let rescuing: Promise<void> | null = null
  function rescue(): Promise<void> {
    if (rescuing !== null || closing) return rescuing ?? Promise.resolve()
    rescuing = (async () => {
      try {
        for (const id of await backend.orphans(WORKER_PREFIX, 100)) if (!served.has(id) && !closing) await backend.queue().offer(id)
      } catch (error) {
        if (!closing) report(error, undefined)
      } finally {
        rescuing = null
      }
    })()
    return rescuing
  }
  const work: { nudge(): void; stop(): Promise<void> } | undefined = await backend.queue().work(take, concurrency)
  const rescueTimer = setInterval(() => void rescue(), rescueMs)
  rescueTimer.unref()
  void rescue()

  return {
    name,
    get sessions() {
      return [...served.keys()]
    },
    async close(closeOptions) {
      if (closing) return
      closing = true
      clearInterval(rescueTimer)
      unsubscribe()
      slotFreed()
      await rescuing
      await work?.stop()
      const graceMs = closeOptions?.graceMs ?? 10_000
      const all = [...served.values()]
      const finishedAll = Promise.all(all.map((entry) => entry.agent.whenIdle().then(() => entry.stop())))
      let timer: ReturnType<typeof setTimeout> | undefined
      const lapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))
      await Promise.race([finishedAll, lapsed])
      clearTimeout(timer)
      // past the grace, what still runs is cancelled (abandoned if it ignores the cancel as long again, at most 1 s) and its inbox kept
      for (const entry of all) entry.stop({ graceMs: Math.min(graceMs, 1000) })
      await Promise.all(all.map((entry) => entry.finished))
      // hand back whatever mail came in meanwhile
      for (const entry of all) await handBack(entry.agent.sessionId).catch(() => {})
    },
  }
}

function checkMs(value: number, path: string, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    throw new ConfigError(`${path} must be an integer number of ms of at least ${min}, got ${String(value)}`, { path })
  return value
}

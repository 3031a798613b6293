// Opening an agent over a store: the lease, the validated seed, crash recovery, the first commit and the mailbox reader.
import { AgentchartError, ConfigError } from '../errors.js'
import { OutputSchemas, seedConfig } from '../request/options.js'
import { createSession, type Session } from '../session/session.js'
import { checkSessionId, DEFAULT_LEASE_MS, leaseRequest } from '../stores/lease.js'
import { mailboxIn } from '../stores/mailbox.js'
import type { SessionHandle } from '../stores/types.js'
import { SessionWriter } from '../stores/writer.js'
import { factsOf, FULL_OPEN_UP_TO, openedSession, recentEvents, storedLogError } from '../stores/checkpoint.js'
import { describeValue, isRecordLike } from '../values/foreign.js'
import { MAX_TIMER_MS } from '../values/timer.js'
import { Agent, announceLater } from './agent.js'
import { recoverCalls, type RecoveredResult } from './durable.js'
import { readMail } from './mail-reader.js'
import { checkOptions, type StoredAgentOptions } from './options.js'
import { mailReaders } from './registry.js'

/**
 * Opens (or creates) the session in the store under a lease, rebuilds it as a seed (validated, structure
 * checked, then repaired by the new instance: RS-1..RS-7), and commits the end-seed and repair closers
 * before the agent is handed out. Damaged stored data is refused by seq and left as it was.
 */
export async function openStoredAgent(options: StoredAgentOptions): Promise<Agent> {
  const { model, maxTokens } = checkOptions(options)
  // the request options too are refused before the store is touched (RQ-3)
  seedConfig({ provider: model.provider, model: model.model }, model.defaultConfig, options.request, maxTokens, new OutputSchemas())
  const { store } = options
  if (!isRecordLike(store) || typeof store.open !== 'function') {
    throw new ConfigError(`options.store must be a SessionStore, got ${describeValue(store)}`, { path: 'store' })
  }
  checkStoredOptions(options)
  if ((options as { session?: unknown }).session !== undefined) throw new ConfigError('give either a session or a store, not both', { path: 'session' })
  if (options.sessionId !== undefined && options.id !== undefined && options.sessionId !== options.id) {
    throw new ConfigError(`options.id ${options.id} differs from options.sessionId ${options.sessionId}`, { path: 'id' })
  }
  const sessionId = checkSessionId(options.sessionId ?? options.id ?? crypto.randomUUID())
  if (options.validate !== undefined && options.validate !== 'auto' && options.validate !== 'checkpoint' && options.validate !== 'full') {
    throw new ConfigError(`validate must be 'auto', 'checkpoint' or 'full', got ${describeValue(options.validate)}`, { path: 'validate' })
  }
  const logger = options.logger ?? { error: (message: string, error: unknown) => console.error(`[agentchart] ${message}:`, error) }
  let session: Session | undefined
  const handle: SessionHandle = await store.open(sessionId, {
    ...(options.lease?.holder !== undefined ? { holder: options.lease.holder } : {}),
    ...(options.lease?.leaseMs !== undefined ? { leaseMs: options.lease.leaseMs } : {}),
    checkpoint: options.validate !== 'full',
    // runs before the store writes anything: a refusal leaves the stored data as it was
    check: (events, stored) => {
      session = openedSession(
        sessionId,
        events,
        stored,
        (all) => seedSession(sessionId, all),
        (refusal) => logger.error(`agentchart: ${refusal.message}; validating the whole log instead`, refusal),
        options.validate === 'checkpoint' ? 0 : FULL_OPEN_UP_TO,
      )
    },
  })
  let recovered: Map<string, RecoveredResult>
  try {
    // the open turn, if any, is among the events in memory (they start at a safe point)
    recovered = await recoverCalls(recentEvents(session!), options.tools, store, sessionId, logger)
  } catch (error) {
    await handle.release().catch(() => {})
    throw error
  }
  let agent: Agent | undefined
  let writer: SessionWriter
  try {
    writer = new SessionWriter(handle, session!, (handle.from ?? 0) + handle.events.length, {
      ...options.commits,
      leaseMs: options.lease?.leaseMs ?? DEFAULT_LEASE_MS,
      logger,
      onFault: (error) => logger.error(`agentchart: the store failed; session ${sessionId} accepts no more appends (reopen it to repair and continue)`, error),
    })
    const { store: _store, sessionId: _id, lease: _lease, commits: _commits, mailbox: _mailbox, validate: _validate, ...agentOptions } = options
    agent = new Agent({ ...agentOptions, session: session! }, { store, writer, recovered })
  } catch (error) {
    await handle.release().catch(() => {})
    throw error
  }
  try {
    // the end-seed marker and any repair closers are durable before anyone drives the agent
    await writer.flush()
    writer.trim()
  } catch (error) {
    await agent.dispose().catch(() => {})
    throw error
  }
  if (options.mailbox !== false) {
    const backend = mailboxIn(store)
    const stop = backend === undefined ? undefined : readMail(agent, backend, handle, logger)
    if (stop !== undefined) mailReaders.set(agent, stop)
  }
  announceLater(agent)
  return agent
}

/** The stored events as a validated seed; any refusal becomes a StoredLogError naming the session and seq. */
function seedSession(sessionId: string, events: readonly unknown[]): Session {
  try {
    const session = createSession({ id: sessionId, seed: events })
    factsOf(session) // IN-14: splices that do not replay are damage too
    return session
  } catch (error) {
    if (!(error instanceof AgentchartError)) throw error
    throw storedLogError(sessionId, error)
  }
}

/** The store-only options, refused by name before the store is touched: commits, lease and mailbox. */
function checkStoredOptions(options: StoredAgentOptions): void {
  for (const name of ['commits', 'lease'] as const) {
    if (options[name] !== undefined && !isRecordLike(options[name])) {
      throw new ConfigError(`${name} must be an object, got ${describeValue(options[name])}`, { path: name })
    }
  }
  try {
    leaseRequest(options.lease)
  } catch (error) {
    // the store's own check, named where createAgent took it
    if (error instanceof ConfigError) throw new ConfigError(`lease.${error.message}`, { path: `lease.${error.path}` })
    throw error
  }
  const { maxEvents, maxDelayMs } = options.commits ?? {}
  if (maxEvents !== undefined && !(Number.isSafeInteger(maxEvents) && maxEvents > 0)) {
    throw new ConfigError(`commits.maxEvents must be a positive integer, got ${describeValue(maxEvents)}`, { path: 'commits.maxEvents' })
  }
  if (maxDelayMs !== undefined && !(typeof maxDelayMs === 'number' && maxDelayMs >= 0 && maxDelayMs <= MAX_TIMER_MS)) {
    throw new ConfigError(`commits.maxDelayMs must be a number of milliseconds from 0 to ${MAX_TIMER_MS}, got ${describeValue(maxDelayMs)}`, {
      path: 'commits.maxDelayMs',
    })
  }
  if (options.mailbox !== undefined && typeof options.mailbox !== 'boolean') {
    throw new ConfigError(`mailbox must be true or false, got ${describeValue(options.mailbox)}`, { path: 'mailbox' })
  }
}

// Typed errors: every refusal names what was wrong and, where it applies, the
// path inside the offending value.

/** Base class of every error agentchart throws on purpose. */
export class AgentchartError extends Error {
  readonly code: string
  readonly path?: string
  constructor(code: string, message: string, options?: { path?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'AgentchartError'
    this.code = code
    if (options?.path !== undefined) this.path = options.path
  }
}

/** A value that would not survive a JSON round trip unchanged (SS-2). */
export class LosslessJsonError extends AgentchartError {
  constructor(path: string, what: string) {
    super('NOT_LOSSLESS_JSON', `not lossless JSON at ${path}: ${what}`, { path })
    this.name = 'LosslessJsonError'
  }
}

/** An append or seed the session log refuses (bad envelope, surface, enclosure). */
export class SessionAppendError extends AgentchartError {
  constructor(message: string, options?: { path?: string; cause?: unknown; code?: string }) {
    super(options?.code ?? 'SESSION_APPEND_REFUSED', message, options)
    this.name = 'SessionAppendError'
  }
}

/** A seed (a stored log) whose structure the loop cannot continue: it names the first offending seq and the rule. */
export class SeedRefusedError extends SessionAppendError {
  readonly seq: number
  readonly rule: string
  constructor(seq: number, rule: string, detail: string) {
    super(`seed[${seq}]: breaks the ${rule} rule: ${detail}`, { path: `seed[${seq}]`, code: 'SESSION_SEED_REFUSED' })
    this.name = 'SeedRefusedError'
    this.seq = seq
    this.rule = rule
  }
}

/** An inbox mutation that is not allowed (duplicate id, bad message). */
export class InboxError extends AgentchartError {
  constructor(code: string, message: string, options?: { path?: string }) {
    super(code, message, options)
    this.name = 'InboxError'
  }
}

/** A bad option or argument at a public entry point. */
export class ConfigError extends AgentchartError {
  constructor(message: string, options?: { path?: string; cause?: unknown }) {
    super('INVALID_CONFIG', message, options)
    this.name = 'ConfigError'
  }
}

/** A refused agent operation (maintenance while busy, use after dispose). */
export class AgentStateError extends AgentchartError {
  constructor(code: string, message: string) {
    super(code, message)
    this.name = 'AgentStateError'
  }
}

/** A session driven elsewhere: its lease is live. Names the holder so an operator can find it. */
export class SessionInUseError extends AgentchartError {
  readonly sessionId: string
  readonly holder: string
  /** When the holder's lease runs out (epoch ms) unless it renews it. */
  readonly expiresAt: number
  constructor(sessionId: string, holder: string, expiresAt: number) {
    super('SESSION_IN_USE', `session ${sessionId} is in use: its lease is held by ${holder} until ${new Date(expiresAt).toISOString()}`)
    this.name = 'SessionInUseError'
    this.sessionId = sessionId
    this.holder = holder
    this.expiresAt = expiresAt
  }
}

/** Stored data a session cannot be opened from (a seq gap, malformed JSON, an unknown type, a broken structure); nothing was changed. */
export class StoredLogError extends AgentchartError {
  readonly sessionId: string
  /** The first offending seq (-1 when the failure is not one event's, e.g. an unreadable file). */
  readonly seq: number
  constructor(sessionId: string, seq: number, detail: string, options?: { cause?: unknown; path?: string }) {
    super('STORED_LOG_INVALID', `session ${sessionId}${seq >= 0 ? ` seq ${seq}` : ''}: ${detail}`, options)
    this.name = 'StoredLogError'
    this.sessionId = sessionId
    this.seq = seq
  }
}

/**
 * A store that failed to commit, or a writer that lost its lease (code `LEASE_LOST`) or met events it
 * did not expect (`STORE_CONFLICT`), or a store operation that outlived its bound (`STORE_TIMEOUT`; also a
 * commit a forced disposal abandoned). The session stops accepting appends: what was committed stays.
 */
export class StoreError extends AgentchartError {
  readonly sessionId: string
  constructor(
    code: 'STORE_FAULT' | 'LEASE_LOST' | 'STORE_CONFLICT' | 'STORE_CLOSED' | 'STORE_TIMEOUT',
    sessionId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options)
    this.name = 'StoreError'
    this.sessionId = sessionId
  }
}

/**
 * An approval answer that cannot be given (TL-18): `APPROVAL_UNKNOWN` when no call of the open step waits for
 * one under that id, `APPROVAL_ALREADY_ANSWERED` when its question was answered or closed (cancelled) already.
 */
export class ApprovalError extends AgentchartError {
  readonly callId: string
  constructor(code: 'APPROVAL_UNKNOWN' | 'APPROVAL_ALREADY_ANSWERED', callId: string, message: string) {
    super(code, message, { path: 'callId' })
    this.name = 'ApprovalError'
    this.callId = callId
  }
}

/**
 * A fork that cannot be made (SS-14): `FORK_UNKNOWN_SEQ` (the boundary is not a seq of the log),
 * `FORK_INSIDE_TURN` (the prefix would end inside an open turn), `FORK_ID_TAKEN` (the child id is the
 * parent's, a live agent's, or already stored), `FORK_DETACHED` (the source session is halted).
 */
export class ForkError extends AgentchartError {
  constructor(code: 'FORK_UNKNOWN_SEQ' | 'FORK_INSIDE_TURN' | 'FORK_ID_TAKEN' | 'FORK_DETACHED', message: string, options?: { path?: string }) {
    super(code, message, options)
    this.name = 'ForkError'
  }
}

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
  constructor(message: string, options?: { path?: string; cause?: unknown }) {
    super('SESSION_APPEND_REFUSED', message, options)
    this.name = 'SessionAppendError'
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

// `agentchart replay <file>`: load a stored session log, validate it the way a
// resumed session would, check the loop's invariants, and render it as a tree.
import { readFile } from 'node:fs/promises'
import { AgentchartError } from '../errors.js'
import type { SessionEvent } from '../session/schemas.js'
import { createSession } from '../session/session.js'
import { checkSessionInvariants } from '../session/invariants.js'
import type { SessionInvariantViolation } from '../session/invariants.js'
import { escapeTerminal } from './escape.js'
import { formatSessionTree } from './tree.js'

/** A log the session refused, or text that is not a log at all. */
export interface ReplayInvalid {
  readonly ok: false
  readonly kind: 'invalid'
  /** The seq (position) of the offending event, when one is to blame. */
  readonly seq?: number
  /** Where inside the log, e.g. `seed[3].data.turn`, or `line 4` for JSONL that does not parse. */
  readonly path?: string
  readonly message: string
}

/** A log the session accepted; `ok` is false when it breaks an invariant. */
export interface ReplayChecked {
  readonly ok: boolean
  readonly kind: 'checked'
  readonly events: readonly SessionEvent[]
  /** Number of `turn/start` events. */
  readonly turns: number
  readonly violations: readonly SessionInvariantViolation[]
  /** The turn/step tree (formatSessionTree). */
  readonly tree: string
}

export type ReplayResult = ReplayInvalid | ReplayChecked

/** Text that is not a session log; `line` is the 1-based JSONL line that does not parse. */
export class SessionLogSyntaxError extends SyntaxError {
  readonly line?: number
  constructor(message: string, line?: number) {
    super(message)
    this.name = 'SessionLogSyntaxError'
    if (line !== undefined) this.line = line
  }
}

/**
 * Parse a session log: a JSON array of events, or JSONL with one event per line (blank lines skipped).
 * Throws a SessionLogSyntaxError (naming the JSONL line) on text that is neither.
 */
export function parseSessionLog(text: string): unknown[] {
  const body = text.replace(/^\uFEFF/, '').trim()
  if (body === '') return []
  if (body.startsWith('[')) {
    let parsed: unknown
    try {
      parsed = JSON.parse(body)
    } catch (err) {
      throw new SessionLogSyntaxError(err instanceof Error ? err.message : String(err))
    }
    if (!Array.isArray(parsed)) throw new SessionLogSyntaxError('expected a JSON array of events')
    return parsed
  }
  const events: unknown[] = []
  const lines = body.split(/\r?\n/)
  lines.forEach((line, i) => {
    if (line.trim() === '') return
    try {
      events.push(JSON.parse(line))
    } catch (err) {
      throw new SessionLogSyntaxError(err instanceof Error ? err.message : String(err), i + 1)
    }
  })
  return events
}

/** Validate and check an already parsed log. */
export function replayEvents(raw: readonly unknown[]): ReplayResult {
  let events: readonly SessionEvent[]
  try {
    // every structural violation is reported below, so the seed check does not stop at the first
    const session = createSession({ seed: raw, checkSeed: false })
    // the session closes a seed with session/end-seed unless the log already ends with one; leave it out
    events = session.events.slice(0, raw.length)
  } catch (err) {
    if (!(err instanceof AgentchartError)) throw err
    const at = /^seed\[(\d+)\]/.exec(err.path ?? err.message)
    return {
      ok: false,
      kind: 'invalid',
      ...(at ? { seq: Number(at[1]) } : {}),
      ...(err.path !== undefined ? { path: err.path } : {}),
      message: err.message,
    }
  }
  const violations = checkSessionInvariants(events)
  const turns = events.filter((e) => e.type === 'turn/start').length
  return { ok: violations.length === 0, kind: 'checked', events, turns, violations, tree: formatSessionTree(events) }
}

/** Read, validate and check the session log in `file` (JSON array or JSONL). */
export async function replayFile(file: string): Promise<ReplayResult> {
  const text = await readFile(file, 'utf8')
  let raw: unknown[]
  try {
    raw = parseSessionLog(text)
  } catch (err) {
    if (!(err instanceof SessionLogSyntaxError)) throw err
    return { ok: false, kind: 'invalid', ...(err.line !== undefined ? { path: `line ${err.line}` } : {}), message: `not a session log: ${err.message}` }
  }
  return replayEvents(raw)
}

/** The lines `agentchart replay` prints: the tree, each violation, then the summary (or the validation error); all escaped for the terminal. */
export function formatReplay(result: ReplayResult): string[] {
  if (result.kind === 'invalid') {
    const where = [result.seq !== undefined ? ` at seq ${result.seq}` : '', result.path !== undefined ? ` (${result.path})` : ''].join('')
    return [escapeTerminal(`invalid session log${where}: ${result.message}`)]
  }
  const lines = result.tree === '' ? [] : [result.tree]
  for (const v of result.violations) lines.push(escapeTerminal(`violation ${v.rule} at seq ${v.seq}: ${v.message}`))
  const n = (count: number, what: string) => `${count} ${what}${count === 1 ? '' : 's'}`
  lines.push(`${n(result.events.length, 'event')}, ${n(result.turns, 'turn')}, ${n(result.violations.length, 'violation')}`)
  return lines
}

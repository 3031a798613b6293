// `agentchart replay <file>`: load a stored session log, validate it the way a
// resumed session would, check the loop's invariants, and render it as a tree.
import { createReadStream } from 'node:fs'
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

/**
 * The longest line a log file may hold, in bytes (256 MiB). Why: a line is decoded into one string, and V8
 * refuses strings past about 512 MiB with a bare "Invalid string length"; a line this long is refused first,
 * by its number. A JSON array log (one document) is bounded the same way as a whole.
 */
export const MAX_LINE_BYTES = 256 * 1024 * 1024

/** Bytes read from a log file at a time. */
const READ_CHUNK_BYTES = 1024 * 1024

export interface ReadLogOptions {
  /** Refuse a line (or a JSON array document) longer than this many bytes; default MAX_LINE_BYTES. */
  maxLineBytes?: number
}

/**
 * Read a session log file line by line: each line must be valid UTF-8 and at most `maxLineBytes` long, and
 * JSONL lines are parsed as they come. Why: bytes that are not UTF-8 must not turn silently into U+FFFD in a
 * log that is replayed as the truth, and one huge line must fail with its number, not exhaust the process.
 * Throws a SessionLogSyntaxError naming the line.
 */
export async function readSessionLog(file: string, options: ReadLogOptions = {}): Promise<unknown[]> {
  const limit = options.maxLineBytes ?? MAX_LINE_BYTES
  const events: unknown[] = []
  // a log that opens with '[' is one JSON array, parsed whole once every line is in
  const doc: { lines: string[] | null; bytes: number } = { lines: null, bytes: 0 }
  let number = 0
  const line = (bytes: Buffer) => {
    number++
    let text: string
    try {
      // fatal: invalid bytes are refused, not replaced; ignoreBOM keeps U+FEFF, which only line 1 may start with
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
    } catch {
      throw new SessionLogSyntaxError(`line ${number} is not valid UTF-8 (byte ${firstInvalidByte(bytes) + 1} of the line)`, number)
    }
    if (number === 1 && text.startsWith('\uFEFF')) text = text.slice(1)
    if (text.endsWith('\r')) text = text.slice(0, -1)
    if (doc.lines !== null) {
      doc.bytes += bytes.length + 1
      if (doc.bytes > limit) throw tooLong(`the JSON array reaches past ${limit} bytes at line ${number}; write the log as JSONL`, number)
      doc.lines.push(text)
      return
    }
    if (text.trim() === '') return
    if (events.length === 0 && text.trimStart().startsWith('[')) {
      doc.lines = [text]
      doc.bytes = bytes.length
      return
    }
    try {
      events.push(JSON.parse(text))
    } catch (err) {
      throw new SessionLogSyntaxError(err instanceof Error ? err.message : String(err), number)
    }
  }
  let pending: Buffer[] = []
  let pendingBytes = 0
  for await (const chunk of createReadStream(file, { highWaterMark: READ_CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    let start = 0
    for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, end)
      if (pendingBytes + piece.length > limit) throw tooLong(`line ${number + 1} is longer than ${limit} bytes`, number + 1)
      line(pending.length === 0 ? piece : Buffer.concat([...pending, piece]))
      pending = []
      pendingBytes = 0
      start = end + 1
    }
    const rest = chunk.subarray(start)
    pendingBytes += rest.length
    // the line is refused while it is read, before it is whole: it is never held past the limit
    if (pendingBytes > limit) throw tooLong(`line ${number + 1} is longer than ${limit} bytes`, number + 1)
    if (rest.length > 0) pending.push(rest)
  }
  if (pending.length > 0) line(Buffer.concat(pending))
  if (doc.lines === null) return events
  let parsed: unknown
  try {
    parsed = JSON.parse(doc.lines.join('\n'))
  } catch (err) {
    throw new SessionLogSyntaxError(err instanceof Error ? err.message : String(err))
  }
  if (!Array.isArray(parsed)) throw new SessionLogSyntaxError('expected a JSON array of events')
  return parsed as unknown[]
}

function tooLong(message: string, line: number): SessionLogSyntaxError {
  return new SessionLogSyntaxError(message, line)
}

/** The offset of the first byte where `bytes` stops being UTF-8 (a fatal decoder says only that it did). */
function firstInvalidByte(bytes: Buffer): number {
  let i = 0
  while (i < bytes.length) {
    const b = bytes[i]
    const size = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0
    if (size === 0 || i + size > bytes.length) return i
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(i, i + size))
    } catch {
      return i
    }
    i += size
  }
  return i
}

/** Read, validate and check the session log in `file` (JSON array or JSONL). */
export async function replayFile(file: string, options: ReadLogOptions = {}): Promise<ReplayResult> {
  let raw: unknown[]
  try {
    raw = await readSessionLog(file, options)
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

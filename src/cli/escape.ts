// Terminal-safe text: everything the CLI prints that came from a model, a tool
// or a stored log goes through escapeTerminal, so no byte of foreign data can
// move the cursor, retitle the window, ring the bell or reorder the line.

export interface EscapeOptions {
  /**
   * Keep line breaks (`\n`, and `\r\n` folded to `\n`) and turn tabs into two spaces, for
   * multi-line text such as an answer. Default false: every control character is escaped.
   */
  multiline?: boolean
}

/**
 * What is escaped: C0 controls (U+0000–U+001F), DEL and the C1 controls (U+007F–U+009F),
 * the bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E,
 * U+2066–U+2069), the line and paragraph separators (U+2028, U+2029), and lone surrogates.
 * Built from strings, so the lint rule against control characters in regex literals stays on elsewhere.
 */
const FORMAT = '\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069'
const CONTROLS = `\\u0000-\\u001f\\u007f-\\u009f${FORMAT}`
/** The same without `\n`, which multi-line text keeps. */
const CONTROLS_BUT_NEWLINE = `\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f${FORMAT}`
const LONE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]'
const UNSAFE = new RegExp(`[${CONTROLS}]|${LONE}`, 'g')
const UNSAFE_MULTILINE = new RegExp(`\\r\\n|[${CONTROLS_BUT_NEWLINE}]|${LONE}`, 'g')
const HAS_UNSAFE = new RegExp(`[${CONTROLS}]|${LONE}`)
const HAS_UNSAFE_MULTILINE = new RegExp(`[${CONTROLS_BUT_NEWLINE}]|${LONE}`)
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** The visible stand-in of one unsafe character: `\n`, `\r`, `\t`, else `\uXXXX` (valid inside a JSON string too). */
function escapeOne(ch: string): string {
  return NAMED[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`
}

/**
 * Make foreign text safe to print: each unsafe character becomes a visible escape
 * (`\u001b`, `\u202e`, `\n`…). Why: model output, tool results and stored logs are
 * untrusted, and a raw ESC or bidi override would let them rewrite the terminal.
 * Printable text, including astral characters, passes unchanged; the result is itself
 * safe, so escaping twice changes nothing, and the escapes are valid JSON string escapes.
 */
export function escapeTerminal(text: string, options: EscapeOptions = {}): string {
  if (options.multiline) {
    return text.replace(UNSAFE_MULTILINE, (ch) => (ch === '\r\n' ? '\n' : ch === '\t' ? '  ' : escapeOne(ch)))
  }
  return text.replace(UNSAFE, escapeOne)
}

/** Whether `text` would print unchanged (no control, bidi or lone-surrogate character; line breaks allowed when multiline). */
export function isTerminalSafe(text: string, options: EscapeOptions = {}): boolean {
  return !(options.multiline ? HAS_UNSAFE_MULTILINE : HAS_UNSAFE).test(text)
}

/** One JSON value on one line, safe for a terminal: JSON.stringify leaves DEL, C1 and bidi characters raw; they become `\uXXXX`. */
export function jsonLine(value: unknown): string {
  return escapeTerminal(JSON.stringify(value))
}

/** Escape, then shorten to `max` characters with an ellipsis (the clip counts what is printed and never splits a surrogate pair). */
export function clipText(text: string, max: number): string {
  const safe = escapeTerminal(text)
  if (safe.length <= max) return safe
  let cut = safe.slice(0, Math.max(0, max - 1))
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1)
  return `${cut}…`
}

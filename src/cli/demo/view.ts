// The live tree: turns, their steps, each step's attempts and tool calls, the
// streamed text, and a summary; drawn on a Screen from Progress events. Every
// string that came from the model, a tool or the user is escaped here.
import { escapeTerminal, clipText } from '../escape.js'
import type { LlmFailure, TurnEndReason } from '../../index.js'
import type { Screen } from './screen.js'
import type { Progress, ToolCallView, Totals } from './tracker.js'

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

/** Indentation of each level: turn lines, step lines, attempt and tool lines, streamed text. */
const PAD = ['', '  ', '    ', '      ']

export const formatCount = (n: number) => n.toLocaleString('en-US')
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
}
const plural = (n: number, word: string, many = `${word}s`) => `${formatCount(n)} ${n === 1 ? word : many}`

/** One line of totals: `1 turn · 3 steps · 3 requests · 0 retries · 3 tool calls (3 parallel) · 1,234 tokens (1,100 in, 134 out) · 0.42 s`. */
export function formatTotals(t: Totals, withTurns = true): string {
  const lanes =
    t.toolCalls > 0
      ? ` (${[t.parallelCalls ? `${t.parallelCalls} parallel` : '', t.exclusiveCalls ? `${t.exclusiveCalls} exclusive` : ''].filter(Boolean).join(', ')})`
      : ''
  const extra = [
    t.cacheReadTokens ? `${formatCount(t.cacheReadTokens)} cached` : '',
    t.reasoningTokens ? `${formatCount(t.reasoningTokens)} reasoning` : '',
  ].filter(Boolean)
  const tokens = `${plural(t.inputTokens + t.outputTokens, 'token')} (${formatCount(t.inputTokens)} in, ${formatCount(t.outputTokens)} out${extra.length ? `, ${extra.join(', ')}` : ''})`
  return [
    ...(withTurns ? [plural(t.turns, 'turn')] : []),
    plural(t.steps, 'step'),
    plural(t.requests, 'request'),
    plural(t.retries, 'retry', 'retries'),
    `${plural(t.toolCalls, 'tool call')}${lanes}`,
    tokens,
    formatMs(t.wallMs),
  ].join(' · ')
}

/** How a turn ended, in words. */
export function describeEnd(reason: TurnEndReason): string {
  switch (reason.kind) {
    case 'error':
      return `failed: ${escapeTerminal(reason.error.code)}: ${clipText(reason.error.message, 160)}`
    case 'aborted':
      return `aborted (${escapeTerminal(reason.reason.kind)})`
    case 'max-steps':
      return `stopped after ${reason.limit} steps (maxSteps)`
    default:
      return reason.kind
  }
}

interface LiveCall extends ToolCallView {
  readonly since: number
}

/** Hints and input shown at the bottom of the live region by the chat. */
export interface InputLine {
  /** The lines to show (prompt and typed text), or none. */
  lines(): string[]
}

/**
 * Draws Progress on a Screen. Why: one renderer for the terminal (live region, spinner) and
 * for plain output (the same lines, printed once complete), so what a test reads is what a person sees.
 */
export class TreeView {
  #frame = 0
  #timer: NodeJS.Timeout | null = null
  #redrawQueued = false
  /** When the open attempt started waiting for its first chunk (null once it streams, or when none is open). */
  #waitingSince: number | null = null
  #label: string
  /** The line being streamed, not yet committed. */
  #partial = ''
  #streaming: 'text' | 'reasoning' | null = null
  readonly #running = new Map<string, LiveCall>()
  #notes: string[] = []
  #input: InputLine | null = null
  #inTurn = false

  constructor(
    private readonly screen: Screen,
    /** `provider/model`, shown on each attempt. */
    label: string,
  ) {
    this.#label = escapeTerminal(label)
  }

  /** Show the chat's input line under the live region. */
  setInput(input: InputLine | null): void {
    this.#input = input
    this.redraw()
  }

  /** Print lines outside the tree (headers, notices), escaped by the caller. */
  print(...lines: string[]): void {
    this.#flushPartial()
    this.screen.commit(lines)
  }

  /** A short-lived note in the live region (e.g. "cancelling…"), cleared when the turn ends. */
  note(text: string): void {
    this.#notes = [text]
    this.redraw()
  }

  get style() {
    return this.screen.style
  }

  on(p: Progress): void {
    const s = this.screen.style
    switch (p.type) {
      case 'turn-start':
        this.#inTurn = true
        this.screen.commit([s.bold(`turn ${p.turn}`)])
        break
      case 'user': {
        const who = p.role === 'prompt' ? s.cyan('you ›') : p.role === 'steer' ? s.yellow('steer ›') : s.dim('context ›')
        this.#commitWrapped(`${PAD[2]}${who} `, escapeTerminal(p.text, { multiline: true }), PAD[3])
        break
      }
      case 'step-start':
        this.screen.commit([`${PAD[1]}${s.bold(`step ${p.step}`)}`])
        break
      case 'attempt-start':
        this.#waitingSince = Date.now()
        this.#streaming = null
        this.screen.commit([`${PAD[2]}${s.dim(`attempt ${p.attempt} · ${this.#label}`)}`])
        break
      case 'delta':
        this.#waitingSince = null
        if (this.#streaming !== p.kind) {
          this.#flushPartial()
          this.#streaming = p.kind
        }
        this.#stream(escapeTerminal(p.text, { multiline: true }))
        break
      case 'attempt-end': {
        this.#waitingSince = null
        this.#flushPartial()
        this.#streaming = null
        if (p.outcome === 'interrupted')
          this.screen.commit([`${PAD[3]}${s.yellow(`⏹ interrupted: the ${plural(p.chars, 'character')} streamed so far are kept`)}`])
        break
      }
      case 'attempt-failed':
        this.#waitingSince = null
        this.#flushPartial()
        this.screen.commit([`${PAD[3]}${s.red(`✗ ${describeFailure(p.failure)}`)}${p.retry ? s.dim(' · retrying') : ''}`])
        break
      case 'tool-start':
        this.#running.set(p.call.callId, { ...p.call, since: Date.now() })
        break
      case 'tool-settled': {
        const live = this.#running.get(p.call.callId)
        if (live) this.#running.set(p.call.callId, { ...live, durationMs: p.call.durationMs, isError: p.call.isError })
        break
      }
      case 'tool-result':
        this.#running.delete(p.call.callId)
        this.screen.commit([this.#toolLine(p.call)])
        break
      case 'turn-end':
        this.#inTurn = false
        this.#waitingSince = null
        this.#flushPartial()
        this.#running.clear()
        this.#notes = []
        this.screen.commit([this.#endLine(p.turn, p.reason, p.totals)])
        break
      default:
        return
    }
    this.#tick()
  }

  /** The final summary line of the run. */
  summary(totals: Totals): string {
    return `${this.screen.style.bold('summary')}  ${formatTotals(totals)}`
  }

  #endLine(turn: number, reason: TurnEndReason, totals: Totals): string {
    const s = this.screen.style
    const word = describeEnd(reason)
    const colored = reason.kind === 'completed' ? s.green(word) : reason.kind === 'error' ? s.red(word) : s.yellow(word)
    return `${s.bold(`turn ${turn}`)} ${colored} ${s.dim(`· ${formatTotals(totals, false)}`)}`
  }

  #toolLine(call: ToolCallView, live?: LiveCall): string {
    const s = this.screen.style
    const lane = call.lane === 'parallel' ? s.cyan('parallel ') : s.magenta('exclusive')
    const head = `${escapeTerminal(call.name)} ${clipText(call.args, 70)}`
    const timing = s.dim(`+${formatMs(call.offsetMs)}`)
    if (live) {
      if (live.durationMs === undefined) {
        return `${PAD[2]}${s.yellow(SPINNER[this.#frame % SPINNER.length])} ${head}  ${lane} ${timing}  ${s.dim(`running ${formatMs(Date.now() - live.since)}`)}`
      }
      const mark = live.isError ? s.red('✗') : s.green('✓')
      return `${PAD[2]}${mark} ${head}  ${lane} ${timing}  ${formatMs(live.durationMs)} ${s.dim('· result waits for the calls before it')}`
    }
    const mark = call.isError ? s.red('✗') : s.green('✓')
    const preview = call.preview ? ` ${s.dim('→')} ${call.isError ? s.red(clipText(call.preview, 90)) : clipText(call.preview, 60)}` : ''
    return `${PAD[2]}${mark} ${head}  ${lane} ${timing}  ${formatMs(call.durationMs ?? 0)}${preview}`
  }

  /** Commit `text` after `first`, wrapped to the width, continuation lines indented by `rest`. */
  #commitWrapped(first: string, text: string, rest: string): void {
    const out: string[] = []
    for (const line of text.split('\n')) {
      for (const piece of wrap(line, this.screen.width() - rest.length)) out.push(`${out.length === 0 ? first : rest}${piece}`)
    }
    this.screen.commit(out)
  }

  #stream(text: string): void {
    const parts = text.split('\n')
    parts.forEach((part, i) => {
      if (i > 0) {
        this.#commitPartial()
      }
      this.#partial += part
      const max = this.screen.width() - PAD[3].length
      while (this.#partial.length > max) {
        const cut = this.#partial.lastIndexOf(' ', max)
        const at = cut > max / 2 ? cut : max
        this.screen.commit([this.#streamLine(this.#partial.slice(0, at))])
        this.#partial = this.#partial.slice(at).replace(/^ /, '')
      }
    })
  }

  #streamLine(text: string): string {
    if (text === '') return ''
    return `${PAD[3]}${this.#streaming === 'reasoning' ? this.screen.style.dim(text) : text}`
  }

  #commitPartial(): void {
    this.screen.commit([this.#streamLine(this.#partial)])
    this.#partial = ''
  }

  #flushPartial(): void {
    if (this.#partial !== '') this.#commitPartial()
  }

  /** Redraw the live region now (coalesced to one write per tick). */
  redraw(): void {
    if (!this.screen.interactive || this.#redrawQueued) return
    this.#redrawQueued = true
    setImmediate(() => {
      this.#redrawQueued = false
      this.screen.live(this.#liveLines())
    })
  }

  #liveLines(): string[] {
    const s = this.screen.style
    const lines: string[] = []
    const spin = s.yellow(SPINNER[this.#frame % SPINNER.length])
    if (this.#waitingSince !== null) lines.push(`${PAD[3]}${spin} ${s.dim(`waiting for ${this.#label} · ${formatMs(Date.now() - this.#waitingSince)}`)}`)
    if (this.#partial !== '') lines.push(`${this.#streamLine(this.#partial)}${s.dim('▍')}`)
    for (const call of this.#running.values()) lines.push(this.#toolLine(call, call))
    for (const note of this.#notes) lines.push(`${PAD[1]}${note}`)
    if (this.#input) lines.push(...this.#input.lines())
    return lines
  }

  /** Keep the spinner turning while something is waited on. */
  #tick(): void {
    if (!this.screen.interactive) return
    const busy = this.#inTurn || this.#waitingSince !== null || this.#running.size > 0
    if (busy && this.#timer === null) {
      this.#timer = setInterval(() => {
        this.#frame++
        this.redraw()
      }, 80)
      this.#timer.unref()
    } else if (!busy && this.#timer !== null) {
      clearInterval(this.#timer)
      this.#timer = null
    }
    this.redraw()
  }

  /** Stop the spinner and remove the live region. */
  close(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    this.#flushPartial()
    this.screen.close()
  }
}

/** A failed attempt in one line: its code, HTTP status and message. */
export function describeFailure(failure: LlmFailure): string {
  const status = failure.status !== undefined ? ` (HTTP ${failure.status})` : ''
  return `${escapeTerminal(failure.code)}${status}: ${clipText(failure.message, 160)}`
}

/** Word-wrap one line to `width` columns (long words are cut). */
function wrap(line: string, width: number): string[] {
  if (line.length <= width) return [line]
  const out: string[] = []
  let rest = line
  while (rest.length > width) {
    const cut = rest.lastIndexOf(' ', width)
    const at = cut > width / 2 ? cut : width
    out.push(rest.slice(0, at))
    rest = rest.slice(at).replace(/^ /, '')
  }
  out.push(rest)
  return out
}

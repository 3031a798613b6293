// The chat's keyboard: a one-line editor in raw mode, so typing never fights
// the live tree for the screen. Enter hands the line over, Ctrl-C and Ctrl-D
// are reported as keys (raw mode turns off the terminal's own signals).
import { emitKeypressEvents } from 'node:readline'

/** What the editor reports. */
export interface KeyboardHandlers {
  /** Enter on a non-empty line. */
  line(text: string): void
  /** Ctrl-C. */
  interrupt(): void
  /** Ctrl-D on an empty line. */
  end(): void
  /** The buffer changed (redraw the input line). */
  changed(): void
}

/** The stdin of a terminal. */
export interface KeyboardStream extends NodeJS.EventEmitter {
  readonly isTTY?: boolean
  setRawMode?(mode: boolean): unknown
  resume(): unknown
  pause(): unknown
}

// eslint-disable-next-line no-control-regex -- keys that are control characters are not typed text
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

interface Key {
  name?: string
  ctrl?: boolean
  meta?: boolean
  sequence?: string
}

/** A line editor over a terminal's stdin in raw mode. */
export class Keyboard {
  #buffer = ''
  readonly #onKey: (str: string | undefined, key: Key | undefined) => void

  constructor(
    private readonly stdin: KeyboardStream,
    private readonly handlers: KeyboardHandlers,
  ) {
    this.#onKey = (str, key) => this.#key(str, key ?? {})
  }

  /** The text typed so far. */
  get buffer(): string {
    return this.#buffer
  }

  /** Take over the terminal: raw mode, keypress events. */
  start(): void {
    emitKeypressEvents(this.stdin as NodeJS.ReadableStream)
    this.stdin.setRawMode?.(true)
    this.stdin.on('keypress', this.#onKey)
    this.stdin.resume()
  }

  /** Drop the typed text. */
  clear(): void {
    this.#buffer = ''
    this.handlers.changed()
  }

  /** Act as if Ctrl-C was pressed (a SIGINT from outside the terminal). */
  interruptKey(): void {
    this.handlers.interrupt()
  }

  /** Give the terminal back as it was. */
  stop(): void {
    this.stdin.off('keypress', this.#onKey)
    this.stdin.setRawMode?.(false)
    this.stdin.pause()
  }

  #key(str: string | undefined, key: Key): void {
    if (key.ctrl && key.name === 'c') return this.handlers.interrupt()
    if (key.ctrl && key.name === 'd') {
      if (this.#buffer === '') this.handlers.end()
      return
    }
    if (key.name === 'return' || key.name === 'enter') {
      const text = this.#buffer.trim()
      this.#buffer = ''
      this.handlers.changed()
      if (text !== '') this.handlers.line(text)
      return
    }
    if (key.name === 'backspace') {
      this.#buffer = [...this.#buffer].slice(0, -1).join('')
    } else if (key.ctrl && key.name === 'u') {
      this.#buffer = ''
    } else if (key.ctrl && key.name === 'w') {
      this.#buffer = this.#buffer.replace(/\S*\s*$/, '')
    } else if (str && !key.ctrl && !key.meta && !CONTROL.test(str)) {
      this.#buffer += str
    } else {
      return
    }
    this.handlers.changed()
  }
}

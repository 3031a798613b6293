// Where the demo draws. A terminal gets a live region at the bottom (the
// spinner, the line being streamed, running tools, the input line), redrawn in
// place under the lines already printed; anything else (a pipe, a file, a test)
// gets the printed lines only, with no escape sequences at all.

/** Styling for the lines the view composes; identity functions when colour is off. */
export interface Style {
  bold(s: string): string
  dim(s: string): string
  green(s: string): string
  red(s: string): string
  yellow(s: string): string
  cyan(s: string): string
  magenta(s: string): string
}

const sgr = (open: number, close: number) => (s: string) => `\u001b[${open}m${s}\u001b[${close}m`
const plain = (s: string) => s

export const COLOR: Style = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  green: sgr(32, 39),
  red: sgr(31, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
  magenta: sgr(35, 39),
}
export const NO_COLOR: Style = { bold: plain, dim: plain, green: plain, red: plain, yellow: plain, cyan: plain, magenta: plain }

/** The surface the view writes to. */
export interface Screen {
  /** Whether `live()` draws anything (a terminal) or is ignored (plain output). */
  readonly interactive: boolean
  readonly style: Style
  /** Columns available for one line. */
  width(): number
  /** Print lines for good, above the live region. */
  commit(lines: readonly string[]): void
  /** Replace the live region with these lines (each is cut to the width). */
  live(lines: readonly string[]): void
  /** Remove the live region and leave the cursor on a fresh line. */
  close(): void
}

/** Columns one character takes: 2 for wide East Asian characters and emoji, 0 for combining marks. */
function charWidth(cp: number): number {
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || cp === 0xfe0f) return 0
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  )
    return 2
  return 1
}

/** Cut a styled line to `width` visible columns (SGR sequences take none), closing any open style. */
export function fitLine(line: string, width: number): string {
  let out = ''
  let used = 0
  let cut = false
  for (let i = 0; i < line.length;) {
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    const sgrMatch = /^\u001b\[[0-9;]*m/.exec(line.slice(i, i + 16))
    if (sgrMatch) {
      out += sgrMatch[0]
      i += sgrMatch[0].length
      continue
    }
    const cp = line.codePointAt(i)!
    const ch = String.fromCodePoint(cp)
    const w = charWidth(cp)
    if (used + w > width) {
      cut = true
      break
    }
    out += ch
    used += w
    i += ch.length
  }
  return cut && out.includes('\u001b[') ? `${out}\u001b[0m` : out
}

/** Visible columns of a styled line. */
export function visibleWidth(line: string): number {
  let used = 0
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  const bare = line.replace(/\u001b\[[0-9;]*m/g, '')
  for (const ch of bare) used += charWidth(ch.codePointAt(0)!)
  return used
}

/** A writable terminal (process.stdout when it is a TTY). */
export interface TerminalStream {
  write(text: string): unknown
  readonly columns?: number
}

/**
 * A terminal screen with a live region. Why: the tree must grow above while the spinner,
 * the streamed line and the input line change in place below it, without flicker or scroll.
 */
export function terminalScreen(stream: TerminalStream, color = true): Screen {
  let liveRows = 0
  let lastLive: readonly string[] = []
  const width = () => Math.max(20, (stream.columns ?? 80) - 1)
  /** Move to the start of the live region and clear from there down. */
  const clearLive = () => (liveRows > 1 ? `\r\u001b[${liveRows - 1}A\u001b[J` : '\r\u001b[J')
  const draw = (lines: readonly string[]) => {
    const fitted = lines.map((l) => fitLine(l, width()))
    liveRows = fitted.length
    return fitted.join('\n')
  }
  return {
    interactive: true,
    style: color ? COLOR : NO_COLOR,
    width,
    commit(lines) {
      if (lines.length === 0) return
      stream.write(`${clearLive()}${lines.join('\n')}\n${draw(lastLive)}`)
    },
    live(lines) {
      lastLive = lines
      stream.write(`${clearLive()}${draw(lines)}`)
    },
    close() {
      lastLive = []
      stream.write(clearLive())
      liveRows = 0
    },
  }
}

/** Plain output: committed lines only, through `out`. */
export function plainScreen(out: (line: string) => void, columns = 100): Screen {
  return {
    interactive: false,
    style: NO_COLOR,
    width: () => columns,
    commit(lines) {
      for (const line of lines) out(line)
    },
    live() {},
    close() {},
  }
}

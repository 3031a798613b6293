// How the statechart's transitions read as text: the event, and the guard in
// logic notation (`isRetry ∧ hasRetryDelay`), wrapped into short lines. Pure:
// the server sizes edge labels with it for the layout, the page draws them.

/** How an event type reads on an edge: `always` for eventless, `done` for an onDone. */
export function eventLabel(event: string): string {
  if (event === '') return 'always'
  if (event.startsWith('xstate.done.state.')) return 'done'
  if (event.startsWith('xstate.done.actor.')) return 'done (actor)'
  return event
}

/** A guard name as the chart walk writes it (`and(a, not(b))`) in logic notation (`a ∧ ¬b`). */
export function guardText(guard: string): string {
  const tokens = guard.match(/and\(|or\(|not\(|\(|\)|,|[^(),\s]+/g) ?? []
  let at = 0
  const parse = (): string => {
    const token = tokens[at++] ?? ''
    if (token === 'and(' || token === 'or(') {
      const parts: string[] = []
      while (at < tokens.length && tokens[at] !== ')') {
        // and(a, and(b, c)) reads as a ∧ b ∧ c
        const same = tokens[at] === token
        const part = parse()
        parts.push(same && part.startsWith('(') && part.endsWith(')') ? part.slice(1, -1) : part)
        if (tokens[at] === ',') at++
      }
      at++
      const joined = parts.join(token === 'and(' ? ' ∧ ' : ' ∨ ')
      return parts.length > 1 ? `(${joined})` : joined
    }
    if (token === 'not(') {
      const inner = parse()
      at++
      return `¬${inner}`
    }
    return token
  }
  const text = parse()
  return at >= tokens.length && text.startsWith('(') && text.endsWith(')') ? text.slice(1, -1) : text || guard
}

/** One transition as one string: `hook.done [isAwaited ∧ isRetry ∧ hasRetryDelay]`. */
export function transitionText(event: string, guard?: string): string {
  return guard ? `${eventLabel(event)} [${guardText(guard)}]` : eventLabel(event)
}

/** The longest label line, in characters: longer guards wrap at their operators. */
export const LABEL_COLUMNS = 30
/** The most lines an edge label shows; the rest is counted and left to the hover text. */
export const LABEL_LINES = 4

/** Wrap one transition's text at the guard's operators (continuation lines indented), cutting what still does not fit. */
export function wrapTransition(text: string, columns = LABEL_COLUMNS): string[] {
  const cut = (line: string) => (line.length > columns ? `${line.slice(0, columns - 1)}…` : line)
  if (text.length <= columns) return [text]
  const pieces = text.split(/(?<= [∧∨]) /)
  const lines: string[] = []
  let line = ''
  for (const piece of pieces) {
    if (line !== '' && line.length + piece.length + 1 > columns) {
      lines.push(line)
      line = `  ${piece}`
    } else line = line === '' ? piece : `${line} ${piece}`
  }
  if (line !== '') lines.push(line)
  return lines.map(cut)
}

/** The lines of an edge label for the transitions one edge stands for, at most `maxLines` of them. */
export function labelLines(texts: readonly string[], maxLines = LABEL_LINES): string[] {
  const out: string[] = []
  for (const [i, text] of texts.entries()) {
    const wrapped = wrapTransition(text)
    const left = texts.length - i
    // room for this transition and, when more follow, the line that counts them
    if (out.length + wrapped.length + (left > 1 ? 1 : 0) > maxLines && out.length > 0) {
      out.push(`+${left} more…`)
      return out
    }
    out.push(...wrapped.slice(0, maxLines - out.length))
  }
  return out
}

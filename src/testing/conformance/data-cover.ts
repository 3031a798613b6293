// Coverage of data beside coverage of transitions: the answers a scenario's
// environment gives and the shapes its expected log holds, as keys the
// suite's greedy cover must reach too. A rule about data (what a thrown tool
// body gives, where `interrupted` goes, which cause an aborted turn names)
// takes no transition of its own, so a transition cover alone can leave it
// out of the suite.
import type { ExpectedEvent, ScenarioInput } from './format.js'

/** Fields whose string values are part of a shape (the rest are free text: a string is a string). */
const NAMED = new Set(['kind', 'code', 'target', 'type', 'outcome', 'decision', 'reason', 'name', 'role', 'blockType', 'op'])

/** The shape of a JSON value: keys, booleans, named string values and item shapes, never the free text or numbers. */
function shape(value: unknown, field = ''): string {
  if (Array.isArray(value)) return `[${[...new Set(value.map((v) => shape(v)))].sort().join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))
    return `{${entries.map(([k, v]) => `${k}:${shape(v, k)}`).join(',')}}`
  }
  if (typeof value === 'string') return NAMED.has(field) ? JSON.stringify(value) : value === '' ? "''" : /\S/.test(value) ? 's' : 'blank'
  if (typeof value === 'number') return 'n'
  return String(value)
}

/** One input as a key: its type and how it answers, with the flags the rules read. */
function inputKey(input: ScenarioInput, afterCancel: boolean): string {
  const after = afterCancel ? ':after-cancel' : ''
  switch (input.type) {
    case 'send':
      return `send:${input.target}:${input.wakeup}${after}`
    case 'cancel':
      return `cancel:${input.cause.kind}:${input.keepInbox}${after}`
    case 'cancel-on':
      return `cancel-on:${input.trigger}:${input.cause.kind}:${input.keepInbox}`
    case 'model': {
      // the stream's chunk types in order, runs collapsed: each malformed or cut stream is its own key
      const types = input.chunks.map((c) => (c.type === 'finish' ? `finish-${c.reason.kind}` : c.type === 'block-start' ? `start-${c.blockType}` : c.type))
      return `model:${types.filter((t, i) => t !== types[i - 1]).join('>')}:${input.end}`
    }
    case 'tool':
      return `tool:${shape(input.action === 'return' ? input.value : 'throw')}:${input.afterAbort}`
    case 'tool-pre':
    case 'tool-post':
    case 'pre-step':
    case 'request':
    case 'request-error':
    case 'summary':
      return `${input.type}:${input.action}:${input.action === 'return' ? shape(input.value) : ''}${after}`
    case 'turn-stopping':
      return `turn-stopping:${input.action}:${input.action === 'return' && input.steer !== undefined}${after}`
    case 'approval':
      return `approval:${input.decision}${after}`
    default:
      return `${input.type}${after}`
  }
}

/**
 * The data keys of a scenario: each input's answer (and whether a cancel came before it), each expected event's
 * shape, and each pair of consecutive event types. Why: the suite's greedy cover takes these beside transitions.
 */
export function dataKeys(scenario: { script: readonly ScenarioInput[]; trace: ReadonlyArray<Pick<ExpectedEvent, 'type' | 'data'>> }): string[] {
  const keys = new Set<string>()
  let cancelled = false
  for (const input of scenario.script) {
    keys.add(`in:${inputKey(input, cancelled)}`)
    if (input.type === 'cancel' || input.type === 'cancel-on' || input.type === 'dispose') cancelled = true
  }
  scenario.trace.forEach((event, i) => {
    keys.add(`ev:${event.type}:${shape(event.data)}`)
    if (i > 0) keys.add(`seq:${scenario.trace[i - 1].type}>${event.type}`)
  })
  return [...keys]
}

// Coverage of data beside coverage of transitions: the answers a scenario's
// environment gives, what follows each, and the shapes its expected log
// holds, as keys the suite's greedy cover must reach too. A rule about data
// (what a thrown tool body gives, where `interrupted` goes, which cause an
// aborted turn names) takes no transition of its own, so a transition cover
// alone can leave it out of the suite.
import type { ExpectedEvent, ScenarioInput } from './format.js'

/** Fields whose string values are part of a shape (the rest are free text: a string is a string). */
const NAMED = new Set(['kind', 'code', 'target', 'type', 'outcome', 'decision', 'reason', 'name', 'role', 'blockType', 'op'])
/** How many events after an input its key names. */
const WINDOW = 2

type Traced = Pick<ExpectedEvent, 'type' | 'data'>

/** The inputs whose key names the events after them: the user's calls and the store's refusals. */
const ACTIONS = new Set<string>(['send', 'cancel', 'cancel-on', 'remove', 'replace', 'clear', 'splice', 'maintenance', 'dispose', 'compact', 'fail-append', 'fork', 'resume'])

/** The shape of a JSON value: keys, booleans, named string values, zero or not, and item shapes; never free text. */
function shape(value: unknown, field = ''): string {
  if (Array.isArray(value)) return `[${[...new Set(value.map((v) => shape(v)))].sort().join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))
    return `{${entries.map(([k, v]) => `${k}:${shape(v, k)}`).join(',')}}`
  }
  if (typeof value === 'string') return NAMED.has(field) ? JSON.stringify(value) : value === '' ? "''" : /\S/.test(value) ? 's' : 'blank'
  if (typeof value === 'number') return value === 0 ? '0' : 'n'
  return String(value)
}

/** An event in a few characters: its type and the one field that says most about it. */
function label(event: Traced): string {
  const d = (event.data ?? {}) as { target?: string; removedCount?: number; turn?: number; reason?: { kind?: string; reason?: { kind?: string } }; message?: { content?: Array<{ isError?: boolean }> } }
  switch (event.type) {
    case 'agent/inbox/spliced':
      return `spliced(${d.target}${d.removedCount ? '-' : '+'})`
    case 'turn/start':
      return `turn/start(${d.turn})`
    case 'turn/end':
      return `turn/end(${d.reason?.kind}${d.reason?.reason ? `:${d.reason.reason.kind}` : ''})`
    case 'tool/result':
      return `tool/result(${d.message?.content?.[0]?.isError ? 'error' : 'ok'})`
    default:
      return event.type
  }
}

/** One input as a key: its type and how it answers, with the flags the rules read. */
function inputKey(input: ScenarioInput, aborted: boolean): string {
  const after = aborted ? ':aborted' : ''
  switch (input.type) {
    case 'send':
      return `send:${input.target}:${input.wakeup}${after}`
    case 'cancel':
      return `cancel:${input.cause.kind}:${input.keepInbox}${after}`
    case 'cancel-on':
      return `cancel-on:${input.trigger}:${input.cause.kind}:${input.keepInbox}`
    case 'model': {
      // the stream's chunks in order, runs of deltas collapsed: each malformed or cut stream is its own key
      const types = input.chunks.map((c) =>
        c.type === 'finish' ? `finish-${c.reason.kind}` : c.type === 'block-start' ? `start-${c.blockType}` : c.type === 'block-end' ? `end-${c.index}` : c.type,
      )
      return `model:${types.filter((t, i) => !(t.endsWith('-delta') && t === types[i - 1])).join('>')}:${input.end}`
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
    case 'fail-append':
      return `fail-append:${input.eventType}`
    default:
      return `${input.type}${after}`
  }
}

/**
 * The data keys of a scenario: each input's answer (and whether the turn's signal had aborted when it came), alone
 * and with the events that follow it; each expected event's shape; each pair of consecutive
 * events; a setup that differs from the usual. Why: the suite's greedy cover takes these beside transitions.
 */
export function dataKeys(scenario: {
  script: readonly ScenarioInput[]
  scriptAborted?: readonly boolean[]
  scriptAt?: readonly number[]
  trace: readonly Traced[]
  setup?: { maxParallelToolCalls?: number }
}): string[] {
  const keys = new Set<string>()
  // chunks echo the model inputs: the events around them say what the loop made of them
  const told = scenario.trace.map((e, seq) => ({ seq, label: label(e) })).filter((e) => e.label !== 'assistant/chunk')
  scenario.script.forEach((input, i) => {
    const key = inputKey(input, scenario.scriptAborted?.[i] === true)
    keys.add(`in:${key}`)
    const at = scenario.scriptAt?.[i]
    // what follows says most after the user's own calls and the store's refusals; an answer's effect is in its events' shapes
    if (at === undefined || !ACTIONS.has(input.type)) return
    const next = told.filter((e) => e.seq >= at).slice(0, WINDOW)
    keys.add(`then:${key}=>${next.map((e) => e.label).join('>')}`)
  })
  scenario.trace.forEach((event, i) => {
    keys.add(`ev:${event.type}:${shape(event.data)}`)
    if (i > 0) keys.add(`seq:${label(scenario.trace[i - 1])}>${label(event)}`)
  })
  if (scenario.setup?.maxParallelToolCalls !== undefined) keys.add(`setup:maxParallelToolCalls=${scenario.setup.maxParallelToolCalls}`)
  return [...keys]
}

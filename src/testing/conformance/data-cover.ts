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
const ACTIONS = new Set<string>([
  'send',
  'cancel',
  'cancel-on',
  'remove',
  'replace',
  'clear',
  'splice',
  'maintenance',
  'dispose',
  'compact',
  'fail-append',
  'fork',
  'resume',
])

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
  const d = (event.data ?? {}) as {
    target?: string
    removedCount?: number
    turn?: number
    reason?: { kind?: string; reason?: { kind?: string } }
    message?: { content?: Array<{ isError?: boolean }> }
  }
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

/** Each traced event's label and shape key, made once: the states of a walk share their events, so a state repeats its parent's. */
const TRACED = new WeakMap<Traced, { label: string; key: string }>()

function traced(event: Traced): { label: string; key: string } {
  let known = TRACED.get(event)
  if (known === undefined) TRACED.set(event, (known = { label: label(event), key: `ev:${event.type}:${shape(event.data)}` }))
  return known
}

/** One input as a key: its type and how it answers, with the flags the rules read. */
function inputKey(input: ScenarioInput, flags: string): string {
  const after = flags ? `:${flags}` : ''
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
        c.type === 'finish'
          ? `finish-${c.reason.kind}`
          : c.type === 'block-start'
            ? `start-${c.blockType}`
            : c.type === 'block-end'
              ? `end-${c.index}`
              : (c.type === 'text-delta' || c.type === 'reasoning-delta') && !/\S/.test(c.text)
                ? `${c.type}-blank`
                : c.type,
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
  scriptFlags?: readonly string[]
  scriptAt?: readonly number[]
  notes?: readonly string[]
  trace: readonly Traced[]
  setup?: { maxParallelToolCalls?: number; compaction?: boolean }
}): string[] {
  const keys = new Set<string>()
  // chunks echo the model inputs: the events around them say what the loop made of them
  const told = scenario.trace.map((e, seq) => ({ seq, label: traced(e).label })).filter((e) => e.label !== 'assistant/chunk')
  // the answer a call's body gave, for the key of its post-execute (a decision applies to the outcome it is given)
  const bodies = new Map<string, string>()
  let lastModel = ''
  // with a smaller pool or compaction on, what follows every answer is keyed: the order of calls and attempts differs
  const unusual = scenario.setup?.maxParallelToolCalls !== undefined || scenario.setup?.compaction === true
  const tag = unusual ? `[${scenario.setup?.maxParallelToolCalls ?? ''}${scenario.setup?.compaction ? 'c' : ''}]` : ''
  scenario.script.forEach((input, i) => {
    const flags = scenario.scriptFlags?.[i] ?? ''
    let key = inputKey(input, flags)
    if (input.type === 'model') lastModel = key
    // an input made while a stream is cut short names that stream (what a cancel keeps of it depends on its text)
    if (flags.includes('cut') && input.type !== 'model') key = `${key}|${lastModel}`
    if (input.type === 'tool') bodies.set(input.callId, key)
    if (input.type === 'tool-post') key = `${key}|${bodies.get(input.callId) ?? ''}`
    keys.add(`in:${key}`)
    const at = scenario.scriptAt?.[i]
    // what follows says most after the user's own calls and the store's refusals; an answer's effect is in its events' shapes
    if (at === undefined || !(ACTIONS.has(input.type) || unusual)) return
    // an armed listener cancel shows only later, so its inputs look further ahead
    const next = told.filter((e) => e.seq >= at).slice(0, flags.includes('armed') ? 2 * WINDOW : WINDOW)
    // with compaction on, a failed attempt is keyed with what came before it too (the step's earlier compaction)
    const before = scenario.setup?.compaction && input.type === 'model' ? `${told.filter((e) => e.seq < at).at(-1)?.label ?? ''}<` : ''
    keys.add(`then${tag}:${before}${key}=>${next.map((e) => e.label).join('>')}`)
  })
  scenario.trace.forEach((event, i) => {
    keys.add(traced(event).key)
    if (i > 0) keys.add(`seq:${traced(scenario.trace[i - 1]).label}>${traced(event).label}`)
  })
  for (const note of scenario.notes ?? []) keys.add(`note:${note}`)
  return [...keys]
}

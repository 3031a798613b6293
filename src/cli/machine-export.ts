// The machines as data and as one literal source file each, for editors and
// static tools: `agentchart diagram` writes, per machine, `<name>.json` (the
// whole definition, its events and the names of its actions and guards) and
// `<name>.machine.ts` (one `createMachine({...})` call with every state
// spelled out and every action and guard referred to by name). Static
// extractors (the XState editor tooling among them) read the literal config;
// the live machines spread their nested parts in from other files, which those
// tools cannot follow.
//
// Both are read off the live machine (`machine.root`), not from the sources,
// so they say exactly what runs. The test in test/cli/machine-export.test.ts
// loads each generated source back and compares its states and transitions
// with the live machine's.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AnyStateMachine } from 'xstate'
import { agentMachine, attemptMachine, stepMachine, toolBatchMachine, turnMachine } from '../machines/index.js'

/** The slice of XState's StateNode this reads. */
interface Node {
  id: string
  key: string
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history'
  parent?: Node
  states: Record<string, Node>
  initial?: { target?: readonly Node[] }
  entry: readonly unknown[]
  exit: readonly unknown[]
  always?: readonly Transition[]
  transitions: Map<string, readonly Transition[]>
}

interface Transition {
  target?: readonly Node[]
  guard?: unknown
  actions: readonly unknown[]
  reenter?: boolean
}

/** A guard as data: a name, or `{ type: 'and' | 'or' | 'not', guards }`. */
export type GuardDefinition = string | { type: 'and' | 'or' | 'not'; guards: GuardDefinition[] }

export interface TransitionDefinition {
  target?: string
  guard?: GuardDefinition
  actions?: string[]
  reenter?: true
}

export interface StateDefinition {
  id?: string
  type?: 'parallel' | 'final'
  initial?: string
  entry?: string[]
  exit?: string[]
  on?: Record<string, TransitionDefinition[]>
  always?: TransitionDefinition[]
  onDone?: TransitionDefinition[]
  states?: Record<string, StateDefinition>
}

/** One machine as data: what `<name>.json` holds. */
export interface MachineDefinition {
  /** The export name in agentchart/machines. */
  machine: string
  generatedBy: string
  /** Every event type some transition handles (done events aside). */
  events: string[]
  /** Every named action and guard the definition refers to. */
  actions: string[]
  guards: string[]
  config: StateDefinition & { id: string }
}

const EXPORTS: ReadonlyArray<{ file: string; exportName: string; machine: AnyStateMachine }> = [
  { file: 'agent', exportName: 'agentMachine', machine: agentMachine },
  { file: 'turn', exportName: 'turnMachine', machine: turnMachine },
  { file: 'step', exportName: 'stepMachine', machine: stepMachine },
  { file: 'attempt', exportName: 'attemptMachine', machine: attemptMachine },
  { file: 'tool-batch', exportName: 'toolBatchMachine', machine: toolBatchMachine },
]

const GENERATED_BY = 'agentchart diagram (src/cli/machine-export.ts) from src/machines/'

function nameOf(ref: unknown): string {
  if (typeof ref === 'string') return ref
  if (typeof ref === 'object' && ref !== null && 'type' in ref) return String(ref.type)
  throw new Error(`an inline implementation has no name: ${String(ref)}`)
}

function guardOf(guard: unknown): GuardDefinition {
  if (typeof guard === 'function' && Array.isArray((guard as { guards?: unknown }).guards)) {
    const op = guard.name.split('(')[0]
    if (op !== 'and' && op !== 'or' && op !== 'not') throw new Error(`an unnamed compound guard: ${guard.name}`)
    return { type: op, guards: (guard as unknown as { guards: unknown[] }).guards.map(guardOf) }
  }
  return nameOf(guard)
}

const isWithin = (node: Node, ancestor: Node): boolean => {
  for (let p = node.parent; p; p = p.parent) if (p === ancestor) return true
  return false
}

/** A target as the config would write it: a sibling by key, a child of the source as `.path`, anything else by `#id`. */
function targetOf(from: Node, to: Node): string {
  if (to.parent === from.parent && to !== from) return to.key
  if (isWithin(to, from)) {
    const path: string[] = []
    for (let n: Node | undefined = to; n && n !== from; n = n.parent) path.unshift(n.key)
    return `.${path.join('.')}`
  }
  return `#${to.id}`
}

function transitionOf(from: Node, t: Transition): TransitionDefinition {
  const targets = t.target ?? []
  if (targets.length > 1) throw new Error(`${from.id}: a transition with several targets`)
  const out: TransitionDefinition = {}
  if (targets.length === 1) out.target = targets[0] === from ? from.key : targetOf(from, targets[0])
  if (t.guard !== undefined) out.guard = guardOf(t.guard)
  if (t.actions.length > 0) out.actions = t.actions.map(nameOf)
  if (t.reenter) out.reenter = true
  return out
}

/** The id XState gives a state that names none: the machine's id, then the keys down to it. */
function pathId(node: Node): string {
  const keys: string[] = []
  let n = node
  for (; n.parent; n = n.parent) keys.unshift(n.key)
  return [n.id, ...keys].join('.')
}

function stateOf(node: Node, root: boolean): StateDefinition {
  const out: StateDefinition = {}
  // a state with an id of its own (a target of transitions from other layers) keeps it; others have XState's path id
  if (root || node.id !== pathId(node)) out.id = node.id
  if (node.type === 'parallel' || node.type === 'final') out.type = node.type
  const initial = node.type === 'compound' ? node.initial?.target?.[0] : undefined
  if (initial) out.initial = initial.key
  if (node.entry.length > 0) out.entry = node.entry.map(nameOf)
  if (node.exit.length > 0) out.exit = node.exit.map(nameOf)
  const doneEvent = `xstate.done.state.${node.id}`
  const on: Record<string, TransitionDefinition[]> = {}
  for (const [event, list] of node.transitions) {
    if (event === doneEvent) out.onDone = list.map((t) => transitionOf(node, t))
    else on[event] = list.map((t) => transitionOf(node, t))
  }
  if (Object.keys(on).length > 0) out.on = on
  if (node.always && node.always.length > 0) out.always = node.always.map((t) => transitionOf(node, t))
  const children = Object.values(node.states)
  if (children.length > 0) out.states = Object.fromEntries(children.map((child) => [child.key, stateOf(child, false)]))
  return out
}

/** Every name a definition refers to. */
function namesIn(state: StateDefinition, actions: Set<string>, guards: Set<string>, events: Set<string>): void {
  const guard = (g: GuardDefinition | undefined): void => {
    if (g === undefined) return
    if (typeof g === 'string') guards.add(g)
    else g.guards.forEach(guard)
  }
  const transitions = (list: readonly TransitionDefinition[] | undefined) => {
    for (const t of list ?? []) {
      guard(t.guard)
      t.actions?.forEach((a) => actions.add(a))
    }
  }
  state.entry?.forEach((a) => actions.add(a))
  state.exit?.forEach((a) => actions.add(a))
  for (const [event, list] of Object.entries(state.on ?? {})) {
    events.add(event)
    transitions(list)
  }
  transitions(state.always)
  transitions(state.onDone)
  for (const child of Object.values(state.states ?? {})) namesIn(child, actions, guards, events)
}

/** One machine's definition as data. */
export function machineDefinition(machine: AnyStateMachine, exportName: string): MachineDefinition {
  const config = stateOf(machine.root, true) as StateDefinition & { id: string }
  const actions = new Set<string>()
  const guards = new Set<string>()
  const events = new Set<string>()
  namesIn(config, actions, guards, events)
  return { machine: exportName, generatedBy: GENERATED_BY, events: [...events].sort(), actions: [...actions].sort(), guards: [...guards].sort(), config }
}

// ---- the literal source ---------------------------------------------------------------

const KEY = /^[A-Za-z_$][\w$]*$/
const key = (k: string) => (KEY.test(k) ? k : `'${k}'`)
const str = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`

function guardSource(g: GuardDefinition): string {
  if (typeof g === 'string') return str(g)
  if (g.type === 'not') return `not(${guardSource(g.guards[0])})`
  return `${g.type}([${g.guards.map(guardSource).join(', ')}])`
}

function transitionSource(t: TransitionDefinition): string {
  const parts: string[] = []
  if (t.target !== undefined) parts.push(`target: ${str(t.target)}`)
  if (t.guard !== undefined) parts.push(`guard: ${guardSource(t.guard)}`)
  if (t.actions) parts.push(`actions: ${t.actions.length === 1 ? str(t.actions[0]) : `[${t.actions.map(str).join(', ')}]`}`)
  if (t.reenter) parts.push('reenter: true')
  return `{ ${parts.join(', ')} }`
}

function listSource(list: readonly TransitionDefinition[]): string {
  return list.length === 1 ? transitionSource(list[0]) : `[${list.map(transitionSource).join(', ')}]`
}

function stateSource(state: StateDefinition, depth: number): string {
  const pad = '  '.repeat(depth + 1)
  const lines: string[] = []
  const names = (list: readonly string[]) => (list.length === 1 ? str(list[0]) : `[${list.map(str).join(', ')}]`)
  if (state.id) lines.push(`id: ${str(state.id)},`)
  if (state.type) lines.push(`type: ${str(state.type)},`)
  if (state.initial) lines.push(`initial: ${str(state.initial)},`)
  if (state.entry) lines.push(`entry: ${names(state.entry)},`)
  if (state.exit) lines.push(`exit: ${names(state.exit)},`)
  if (state.on) {
    lines.push('on: {')
    for (const [event, list] of Object.entries(state.on)) lines.push(`  ${key(event)}: ${listSource(list)},`)
    lines.push('},')
  }
  if (state.always) lines.push(`always: ${listSource(state.always)},`)
  if (state.onDone) lines.push(`onDone: ${listSource(state.onDone)},`)
  if (state.states) {
    lines.push('states: {')
    for (const [name, child] of Object.entries(state.states)) lines.push(`  ${key(name)}: ${stateSource(child, depth + 2)},`)
    lines.push('},')
  }
  if (lines.length === 0) return '{}'
  return `{\n${lines.map((l) => `${pad}${l}`).join('\n')}\n${'  '.repeat(depth)}}`
}

/** One machine as a single TypeScript file: a literal `createMachine` config, implementations named by strings. */
export function machineSource(definition: MachineDefinition): string {
  const helpers = ['and', 'not', 'or'].filter((h) => JSON.stringify(definition.config).includes(`"type":"${h}"`))
  return [
    `// ${definition.machine}: generated by ${GENERATED_BY}. Do not edit by hand.`,
    '// Every action and guard is named; the running machine gets them from agentchart/machines',
    `// (\`${definition.machine}.implementations\`, or swapped with \`.provide()\`). Static tools read the literal config below.`,
    `import { ${[...helpers, 'createMachine'].join(', ')} } from 'xstate'`,
    '',
    `export const ${definition.machine} = createMachine(${stateSource(definition.config, 0)})`,
    '',
  ].join('\n')
}

/** Every machine's export: `<file>.json` and `<file>.machine.ts` contents, keyed by file name. */
export function machineExports(): Array<{ file: string; definition: MachineDefinition; json: string; source: string }> {
  return EXPORTS.map(({ file, exportName, machine }) => {
    const definition = machineDefinition(machine, exportName)
    return { file, definition, json: `${JSON.stringify(definition, null, 2)}\n`, source: machineSource(definition) }
  })
}

/** Write every machine's `<file>.json` and `<file>.machine.ts` into `outDir`; returns the paths written. */
export function writeMachineExports(outDir: string): string[] {
  mkdirSync(outDir, { recursive: true })
  const written: string[] = []
  for (const { file, json, source } of machineExports()) {
    for (const [name, text] of [
      [`${file}.json`, json],
      [`${file}.machine.ts`, source],
    ]) {
      const path = join(outDir, name)
      writeFileSync(path, text)
      written.push(path)
    }
  }
  return written
}

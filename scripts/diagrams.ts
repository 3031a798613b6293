// Generates one Mermaid stateDiagram-v2 per machine by walking the XState
// definitions, and writes them to docs/machines/ (one .mmd file each, plus a
// README.md that embeds them all). Run it with `npm run diagrams`.
//
// What the walk reads from each XState StateNode:
//   .states      the child nodes, in the order the config lists them
//   .initial     the initial transition of a compound node
//   .type        'atomic' | 'compound' | 'parallel' | 'final'
//   .always      eventless transitions, drawn with the label `always`
//   .transitions every evented transition (including the done events behind
//                `onDone`), keyed by event type, in priority order
//
// Edges are labelled with the event type, followed by `[guarded]` when the
// transition has a guard. `xstate.done.state.*` (an `onDone`) is drawn as
// `done`. Transitions without a target run actions and stay in the same state;
// a diagram has no good place for them, so they are listed in the README
// (and as comments in the .mmd file) instead of drawn.
//
// Each machine's diagram stops at the boundary of the next machine: inside
// the agent, `running.turn` is one box that points at the turn diagram, and
// so on down. `agent-full.mmd` draws the whole composition in one picture.
//
// The output is deterministic: states keep their config order, events are
// sorted by name, transitions of one event keep their priority order, and
// repeated identical edges are drawn once.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AnyStateMachine } from 'xstate'
import { agentMachine, attemptMachine, stepMachine, toolBatchMachine, turnMachine } from '../src/machines/index.js'

/** The slice of XState's StateNode that the walk reads. */
interface Node {
  key: string
  id: string
  path: string[]
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history'
  states: Record<string, Node>
  initial?: { target?: readonly Node[] }
  always?: readonly Transition[]
  transitions: Map<string, readonly Transition[]>
}

interface Transition {
  target?: readonly Node[]
  guard?: unknown
  reenter?: boolean
}

interface DiagramSpec {
  /** File name without extension; matches the machine's file in src/machines/. */
  file: string
  /** The export name in agentchart/machines. */
  exportName: string
  machine: AnyStateMachine
  /** Paths (dot-joined keys below the root) drawn as one box because they are another machine. */
  collapse: Record<string, string>
  summary: string
}

const DIAGRAMS: DiagramSpec[] = [
  {
    file: 'agent',
    exportName: 'agentMachine',
    machine: agentMachine,
    collapse: { 'running.turn': 'turn' },
    summary:
      'The phases of one agent: idle, running (one turn at a time, then straight on to the next while work is pending), maintenance, and the final disposed.',
  },
  {
    file: 'turn',
    exportName: 'turnMachine',
    machine: turnMachine,
    collapse: { stepping: 'step' },
    summary: 'One turn: turn/start, the claim and agent/pre-step, zero or more steps, agent/turn-stopping, turn/end with its reason.',
  },
  {
    file: 'step',
    exportName: 'stepMachine',
    machine: stepMachine,
    collapse: { requesting: 'attempt', tools: 'tool-batch' },
    summary: 'One step: step/start and the entered messages, the model request (attempts), the tool calls, step/end.',
  },
  {
    file: 'attempt',
    exportName: 'attemptMachine',
    machine: attemptMachine,
    collapse: {},
    summary: 'One model request inside an open step: agent/request, the header and context records, the stream, and recovery.',
  },
  {
    file: 'tool-batch',
    exportName: 'toolBatchMachine',
    machine: toolBatchMachine,
    collapse: {},
    summary:
      'The tool calls of one step: a dispatch region that starts calls (barriers and a rolling pool) and a commit region that writes results in model order.',
  },
]

const FULL: DiagramSpec = {
  file: 'agent-full',
  exportName: 'agentMachine',
  machine: agentMachine,
  collapse: {},
  summary: 'The agent machine with every nested machine drawn in place, as the Stately inspector shows it.',
}

// ---- walking ---------------------------------------------------------------------

interface Edge {
  /** Diagram id of the composite the edge is declared in ('' for the top level). */
  scope: string
  from: string
  to: string
  label: string
}

interface InPlace {
  state: string
  label: string
}

/** The diagram id of a node: its path below the root, joined with `_`. */
function idOf(node: Node, rootPath: readonly string[]): string {
  const rel = node.path.slice(rootPath.length)
  return rel.length === 0 ? '' : rel.map((k) => k.replace(/[^A-Za-z0-9_]/g, '_')).join('_')
}

function relPath(node: Node, rootPath: readonly string[]): string {
  return node.path.slice(rootPath.length).join('.')
}

function labelOf(eventType: string, t: Transition): string {
  const event = eventType.startsWith('xstate.done.state.') ? 'done' : eventType
  return t.guard ? `${event} [guarded]` : event
}

class Walker {
  readonly edges: Edge[] = []
  readonly inPlace: InPlace[] = []
  readonly #seen = new Set<string>()

  constructor(
    readonly rootPath: readonly string[],
    readonly collapse: Record<string, string>,
  ) {}

  /** The node as drawn: the outermost collapsed ancestor, or the node itself. */
  shown(node: Node): Node {
    let shown = node
    for (let n: Node | undefined = node; n; n = parentOf(n)) {
      if (this.collapse[relPath(n, this.rootPath)] !== undefined) shown = n
      if (n.path.length <= this.rootPath.length) break
    }
    return shown
  }

  isCollapsed(node: Node): boolean {
    return this.collapse[relPath(node, this.rootPath)] !== undefined
  }

  /**
   * Record the transitions of `node` and everything below it. Below a collapsed box only the
   * edges that leave the box are kept (drawn from the box); the rest belong to the other diagram.
   */
  collect(node: Node, insideBox = false): void {
    const candidates: Array<[string, Transition]> = []
    for (const t of node.always ?? []) candidates.push(['always', t])
    const events = [...node.transitions.keys()].sort()
    for (const eventType of events) for (const t of node.transitions.get(eventType) ?? []) candidates.push([eventType, t])
    const from = this.shown(node)
    for (const [eventType, t] of candidates) {
      const label = labelOf(eventType, t)
      const targets = t.target ?? []
      if (targets.length === 0) {
        // listed by event name alone: whether a guard picks among them does not change the state
        if (!insideBox) this.#addInPlace(relPath(node, this.rootPath) || '(any state)', eventType === 'always' ? 'always' : eventType)
        continue
      }
      for (const target of targets) {
        const to = this.shown(target)
        if (insideBox && to === from) continue
        this.#addEdge(from, to, label)
      }
    }
    const box = insideBox || (this.isCollapsed(node) && node.path.length > this.rootPath.length)
    for (const child of Object.values(node.states)) this.collect(child, box)
  }

  #addEdge(from: Node, to: Node, label: string): void {
    const scopeNode = commonParent(from, to)
    const scope = scopeNode.path.length <= this.rootPath.length ? '' : idOf(scopeNode, this.rootPath)
    const edge = { scope, from: idOf(from, this.rootPath), to: idOf(to, this.rootPath), label }
    const key = JSON.stringify(edge)
    if (this.#seen.has(key)) return
    this.#seen.add(key)
    this.edges.push(edge)
  }

  #addInPlace(state: string, label: string): void {
    const key = `${state}\u0000${label}`
    if (this.#seen.has(key)) return
    this.#seen.add(key)
    this.inPlace.push({ state, label })
  }
}

function parentOf(node: Node): Node | undefined {
  return (node as unknown as { parent?: Node }).parent
}

/** The innermost compound or parallel node that contains both (neither itself), where Mermaid must declare the edge. */
function commonParent(a: Node, b: Node): Node {
  const ancestors = (n: Node): Node[] => {
    const out: Node[] = []
    for (let p = parentOf(n); p; p = parentOf(p)) out.push(p)
    return out
  }
  const ofB = new Set(ancestors(b))
  for (const p of ancestors(a)) if (ofB.has(p)) return p
  throw new Error(`no common parent of ${a.id} and ${b.id}`)
}

// ---- rendering -------------------------------------------------------------------

function quote(text: string): string {
  return `"${text.replace(/"/g, "'")}"`
}

function render(spec: DiagramSpec): { mermaid: string; inPlace: InPlace[] } {
  const root = spec.machine.root as unknown as Node
  const walker = new Walker(root.path, spec.collapse)
  walker.collect(root)

  const byScope = new Map<string, Edge[]>()
  for (const edge of walker.edges) {
    const list = byScope.get(edge.scope) ?? []
    list.push(edge)
    byScope.set(edge.scope, list)
  }

  const lines: string[] = []
  const put = (depth: number, text: string) => lines.push(`${'    '.repeat(depth)}${text}`)

  const emitChildren = (node: Node, depth: number): void => {
    const scope = idOf(node, root.path)
    const children = Object.values(node.states)
    if (node.type === 'parallel') {
      // Mermaid draws orthogonal regions separated by `--`
      children.forEach((child, i) => {
        if (i > 0) put(depth, '--')
        emitState(child, depth)
      })
    } else {
      const initial = node.initial?.target?.[0]
      if (initial) put(depth, `[*] --> ${idOf(initial, root.path)}`)
      for (const child of children) emitState(child, depth)
    }
    for (const edge of byScope.get(scope) ?? []) put(depth, `${edge.from} --> ${edge.to} : ${edge.label}`)
  }

  const emitState = (node: Node, depth: number): void => {
    const id = idOf(node, root.path)
    const collapsedAs = spec.collapse[relPath(node, root.path)]
    if (collapsedAs !== undefined) {
      put(depth, `state ${quote(`${node.key} · the ${collapsedAs} machine`)} as ${id}`)
      return
    }
    const label = node.type === 'parallel' ? `${node.key} (parallel)` : node.key
    const nested = node.type === 'compound' || node.type === 'parallel'
    if (nested) {
      put(depth, `state ${quote(label)} as ${id} {`)
      emitChildren(node, depth + 1)
      put(depth, '}')
    } else {
      put(depth, `state ${quote(label)} as ${id}`)
    }
    if (node.type === 'final') put(depth, `${id} --> [*]`)
  }

  put(0, `%% ${spec.exportName}: generated by scripts/diagrams.ts from src/machines/. Do not edit by hand.`)
  for (const { state, label } of walker.inPlace) put(0, `%% in place (no state change): ${state}: ${label}`)
  put(0, 'stateDiagram-v2')
  emitChildren(root, 1)
  return { mermaid: `${lines.join('\n')}\n`, inPlace: walker.inPlace }
}

// ---- output ----------------------------------------------------------------------

function inPlaceTable(rows: InPlace[]): string {
  if (rows.length === 0) return '_None._\n'
  const byState = new Map<string, string[]>()
  for (const { state, label } of rows) byState.set(state, [...(byState.get(state) ?? []), label])
  const out = ['| state | events handled without leaving it |', '| --- | --- |']
  for (const [state, labels] of byState) out.push(`| \`${state}\` | ${labels.map((l) => `\`${l}\``).join(', ')} |`)
  return `${out.join('\n')}\n`
}

function main(): void {
  const here = dirname(fileURLToPath(import.meta.url))
  const outDir = join(here, '..', 'docs', 'machines')
  mkdirSync(outDir, { recursive: true })

  const readme: string[] = [
    '# Machine diagrams',
    '',
    'Generated by `npm run diagrams` (`scripts/diagrams.ts`) from the machine definitions in',
    '`src/machines/`. Do not edit these files by hand: change the machine, then run the script again.',
    '',
    'How to read them:',
    '',
    '- An edge is labelled with the event that takes it. `always` is an eventless transition,',
    '  taken as soon as its guard allows. `done` is the parent hearing that a child reached its',
    '  final state (`onDone` in the config).',
    '- `[guarded]` marks a transition with a guard. Several edges may leave a state on the same',
    '  event; XState tries them in the order the source lists them and takes the first whose guard',
    '  passes. Most guards compare the event id with the effect the machine is waiting for, so a late',
    '  result of an abandoned effect is dropped.',
    '- `[*]` inside a box is where it starts; an arrow to `[*]` marks a final state.',
    '- A box labelled "the X machine" is another machine drawn in its own diagram below.',
    '- Transitions with no target (they run actions, such as an inbox edit, and stay put) are not',
    '  drawn. Each diagram is followed by a table of them; `(any state)` means the machine handles',
    '  the event at its root, whatever state it is in.',
    '',
  ]

  for (const spec of [...DIAGRAMS, FULL]) {
    const { mermaid, inPlace } = render(spec)
    writeFileSync(join(outDir, `${spec.file}.mmd`), mermaid)
    const title = spec === FULL ? 'The whole composition' : `\`${spec.exportName}\``
    readme.push(`## ${title}`, '', spec.summary, '', `Source: [\`${spec.file}.mmd\`](${spec.file}.mmd).`, '')
    readme.push(fenced(mermaid), '')
    if (spec !== FULL) readme.push('Handled in place:', '', inPlaceTable(inPlace))
  }

  writeFileSync(join(outDir, 'README.md'), readme.join('\n'))
  console.log(`wrote ${DIAGRAMS.length + 1} diagrams and README.md to ${outDir}`)

  // Guides that embed a diagram mark the spot with a pair of comments; refresh what lies between.
  for (const guide of GUIDES) {
    const path = join(here, '..', guide)
    if (!existsSync(path)) continue
    const text = readFileSync(path, 'utf8')
    const next = text.replace(MARKED, (_all, name: string) => {
      const spec = [...DIAGRAMS, FULL].find((d) => d.file === name)
      if (!spec) throw new Error(`${guide}: no diagram named ${name}`)
      return `<!-- diagram:${name} -->\n${fenced(render(spec).mermaid)}\n<!-- /diagram:${name} -->`
    })
    if (next !== text) {
      writeFileSync(path, next)
      console.log(`refreshed the diagrams embedded in ${guide}`)
    }
  }
}

/** Files under the repository root whose `<!-- diagram:NAME -->` blocks are kept in step with the machines. */
const GUIDES = ['docs/lifecycle.md']
const MARKED = /<!-- diagram:([a-z-]+) -->[\s\S]*?<!-- \/diagram:\1 -->/g

/** A .mmd text as a fenced mermaid block, without its `%%` comment lines. */
function fenced(mermaid: string): string {
  const body = mermaid
    .split('\n')
    .filter((line) => !line.startsWith('%%'))
    .join('\n')
    .trimEnd()
  return `\`\`\`mermaid\n${body}\n\`\`\``
}

main()

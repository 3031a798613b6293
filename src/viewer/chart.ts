// The statechart the page draws, read from a live machine object: the same
// walk over `machine.root` that the Mermaid diagrams come from (src/cli/diagram.ts),
// kept as data so the page can lay it out, light it up and draw its edges.
// Nothing here names a state: every key comes from the definition.
import type { AnyStateMachine } from 'xstate'
import type { ActorState, ChartMachine, ChartNode, ChartTransition } from './page/protocol.js'

/** The slice of XState's StateNode the walk reads. */
interface Node {
  key: string
  path: readonly string[]
  type: ChartNode['type']
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

/** A guard as a label: its name when it has one (named implementations, `and`/`or`/`not`), else `guard`. */
export function guardName(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined
  if (typeof guard === 'string') return guard
  if (typeof guard === 'function') {
    const fn = guard as { name?: string; guards?: unknown[] } & (() => unknown)
    // xstate's and()/or()/not() helpers are functions carrying their operands
    if (Array.isArray(fn.guards)) {
      // the machines name these after what they check, e.g. `and(isAwaited, isRejected)`
      const head = (fn.name ?? '').split('(')[0]
      const op = head === 'and' || head === 'or' || head === 'not' ? head : 'guard'
      return `${op}(${fn.guards.map((g) => guardName(g) ?? 'guard').join(', ')})`
    }
    return fn.name && fn.name !== 'guard' ? fn.name : 'guard'
  }
  if (typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string') return (guard as { type: string }).type
  return 'guard'
}

const pathOf = (node: Node, rootPath: readonly string[]) => node.path.slice(rootPath.length).join('.')

function transitionsOf(node: Node, rootPath: readonly string[]): ChartTransition[] {
  const out: ChartTransition[] = []
  const push = (event: string, t: Transition) => {
    const guard = guardName(t.guard)
    out.push({
      event,
      targets: (t.target ?? []).map((target) => pathOf(target, rootPath)),
      ...(guard !== undefined ? { guard } : {}),
      ...(t.reenter ? { reenter: true as const } : {}),
    })
  }
  for (const t of node.always ?? []) push('', t)
  for (const [event, list] of node.transitions) for (const t of list) push(event, t)
  return out
}

function walk(node: Node, rootPath: readonly string[]): ChartNode {
  const initial = node.type === 'compound' ? node.initial?.target?.[0] : undefined
  return {
    key: node.key,
    path: pathOf(node, rootPath),
    type: node.type,
    ...(initial ? { initial: pathOf(initial, rootPath) } : {}),
    children: Object.values(node.states).map((child) => walk(child, rootPath)),
    transitions: transitionsOf(node, rootPath),
  }
}

/** The definition of `machine` as the page draws it (states in config order, transitions in priority order). */
export function chartOf(machine: AnyStateMachine): ChartMachine {
  const root = machine.root as unknown as Node
  return { id: machine.id, root: walk(root, root.path) }
}

/** The leaf paths of a state value: `{ running: { turn: 'opening' } }` gives `['running.turn.opening']`. */
export function leafPaths(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [prefix === '' ? value : `${prefix}.${value}`]
  if (value === null || typeof value !== 'object') return prefix === '' ? [] : [prefix]
  const keys = Object.keys(value)
  if (keys.length === 0) return prefix === '' ? [] : [prefix]
  return keys.flatMap((key) => leafPaths((value as Record<string, unknown>)[key], prefix === '' ? key : `${prefix}.${key}`))
}

/** An actor's place in its machine, from its snapshot value. */
export function actorState(machineId: string, value: unknown): ActorState {
  return { machine: machineId, active: leafPaths(value) }
}

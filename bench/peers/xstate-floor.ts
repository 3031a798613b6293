// XState's own per-event cost on a minimal machine of agentchart's size: the
// agent machine's state tree mirrored node for node (same states, nesting,
// parallel regions and eventless transitions, whose guards never pass),
// parked in its deepest configuration, with one emit per event. What the
// agent machine costs per event beyond this is agentchart's, not XState's.
// `node --import tsx bench/peers/xstate-floor.ts [events] [reps]` prints one JSON line.
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { assign, createActor, emit, setup, type AnyStateNode } from 'xstate'
import { agentMachine } from '../../src/machines/index.js'
import { median } from './harness.js'

export interface MachineShape {
  states: number
  atomic: number
  compound: number
  parallel: number
  final: number
  depth: number
  always: number
  transitions: number
  /** Active state nodes in the parked (deepest) configuration. */
  active: number
}

export interface FloorResult {
  shape: MachineShape
  /** The real agent machine's shape, for comparison (its active count is the floor's parked configuration). */
  agentShape: MachineShape
  /** The parked configuration: the path to the agent machine's deepest state. */
  parkedAt: string
  /** µs per event, median of the repetitions, per variant. */
  perEventUs: Record<string, number>
  events: number
  reps: number
}

function depthOf(node: AnyStateNode): number {
  const children = Object.values(node.states) as AnyStateNode[]
  return children.length === 0 ? 0 : 1 + Math.max(...children.map(depthOf))
}

function shapeOf(root: AnyStateNode, active = 0): MachineShape {
  const s = { states: 0, atomic: 0, compound: 0, parallel: 0, final: 0, depth: depthOf(root), always: 0, transitions: 0, active }
  const walk = (node: AnyStateNode) => {
    s.states++
    if (node.type === 'atomic') s.atomic++
    else if (node.type === 'compound') s.compound++
    else if (node.type === 'parallel') s.parallel++
    else if (node.type === 'final') s.final++
    s.always += node.always?.length ?? 0
    for (const ts of node.transitions.values()) s.transitions += ts.length
    for (const child of Object.values(node.states) as AnyStateNode[]) walk(child)
  }
  walk(root)
  return s
}

/** The path of keys from the root to the deepest atomic state. */
function deepestPath(node: AnyStateNode): string[] {
  let best: string[] = []
  for (const [key, child] of Object.entries(node.states) as [string, AnyStateNode][]) {
    const path = [key, ...deepestPath(child)]
    if (path.length > best.length) best = path
  }
  return best
}

type Variant = 'targetless' | 'sibling'

/**
 * The agent machine's tree with its eventless transitions kept (guards that
 * never pass, so they are evaluated after every microstep as the real ones
 * are) and its own transitions dropped; one `tick` event handled at the
 * deepest atomic state, emitting once.
 */
function mirrorConfig(node: AnyStateNode, path: readonly string[], variant: Variant, depth = 0): Record<string, unknown> {
  const config: Record<string, unknown> = {}
  if (node.type === 'parallel' || node.type === 'final') config.type = node.type
  const keys = Object.keys(node.states)
  if (keys.length > 0) {
    const states: Record<string, unknown> = {}
    for (const key of keys) states[key] = mirrorConfig(node.states[key] as AnyStateNode, key === path[depth] ? path : [], variant, depth + 1)
    config.states = states
    if (node.type === 'compound') config.initial = keys.includes(path[depth] ?? '') ? path[depth] : (node.config.initial as string)
  }
  if (node.always?.length) config.always = node.always.map(() => ({ guard: 'never' }))
  const leaf = path.length > 0 && depth === path.length
  if (leaf) {
    config.on = variant === 'targetless' ? { tick: { actions: 'effect' } } : { tick: { target: 'twin', actions: ['effect', 'count'] } }
  }
  return config
}

function floorMachine(variant: Variant) {
  const path = deepestPath(agentMachine.root)
  const config = mirrorConfig(agentMachine.root, path, variant)
  if (variant === 'sibling') {
    // the deepest state and a twin beside it, the tick moving between them
    let parent = config
    for (const key of path.slice(0, -1)) parent = (parent.states as Record<string, Record<string, unknown>>)[key]
    const states = parent.states as Record<string, Record<string, unknown>>
    const leaf = path[path.length - 1]
    states.twin = { on: { tick: { target: leaf, actions: ['effect', 'count'] } } }
  }
  // seventeen context keys, like the agent's
  const context = Object.fromEntries(Array.from({ length: 17 }, (_, k) => [`k${k}`, 0]))
  return setup({
    types: { context: {} as Record<string, number>, events: {} as { type: 'tick' }, emitted: {} as { type: 'fx.append'; n: number } },
    guards: { never: () => false },
    actions: {
      effect: emit({ type: 'fx.append', n: 1 }),
      count: assign({ k0: ({ context }) => context.k0 + 1 }),
    },
  }).createMachine({ id: 'floor', context, ...config } as never)
}

/** µs per `tick`, with one handler receiving the emit, median of `reps` runs of `events` events. */
function perEvent(variant: Variant, events: number, reps: number): { us: number; active: number; shape: MachineShape } {
  const machine = floorMachine(variant)
  const actor = createActor(machine)
  let received = 0
  actor.on('fx.append', () => {
    received++
  })
  actor.start()
  const active = actor.getSnapshot()._nodes.length
  for (let i = 0; i < events; i++) actor.send({ type: 'tick' })
  const runs: number[] = []
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now()
    for (let i = 0; i < events; i++) actor.send({ type: 'tick' })
    runs.push(((performance.now() - t0) * 1000) / events)
  }
  if (received !== events * (reps + 1)) throw new Error(`the floor machine emitted ${received} times for ${events * (reps + 1)} events`)
  return { us: median(runs), active, shape: shapeOf(machine.root, active) }
}

/** The smallest machine there is: two states, one emit per event; XState's cost with nothing around it. */
function flatPerEvent(events: number, reps: number): number {
  const machine = setup({
    types: { events: {} as { type: 'tick' }, emitted: {} as { type: 'fx.append'; n: number } },
    actions: { effect: emit({ type: 'fx.append', n: 1 }) },
  }).createMachine({
    initial: 'a',
    states: { a: { on: { tick: { target: 'b', actions: 'effect' } } }, b: { on: { tick: { target: 'a', actions: 'effect' } } } },
  })
  const actor = createActor(machine)
  actor.on('fx.append', () => {})
  actor.start()
  for (let i = 0; i < events; i++) actor.send({ type: 'tick' })
  const runs: number[] = []
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now()
    for (let i = 0; i < events; i++) actor.send({ type: 'tick' })
    runs.push(((performance.now() - t0) * 1000) / events)
  }
  return median(runs)
}

export function measureFloor(events = 20_000, reps = 9): FloorResult {
  const flat = flatPerEvent(events, reps)
  const targetless = perEvent('targetless', events, reps)
  const sibling = perEvent('sibling', events, reps)
  return {
    shape: targetless.shape,
    agentShape: shapeOf(agentMachine.root, targetless.active),
    parkedAt: deepestPath(agentMachine.root).join('.'),
    perEventUs: {
      'two-state machine, transition + emit': flat,
      'targetless transition + emit': targetless.us,
      'sibling transition + assign + emit': sibling.us,
    },
    events,
    reps,
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [events, reps] = process.argv.slice(2).map(Number)
  process.stdout.write(`${JSON.stringify(measureFloor(events || undefined, reps || undefined))}\n`)
}

// XState's own per-event cost on a minimal machine of agentchart's size: the
// agent machine's state tree mirrored node for node (same states, nesting,
// parallel regions and eventless transitions, whose guards never pass),
// parked in its deepest configuration, with one emit per event. What the
// agent machine costs per event beyond this is agentchart's, not XState's.
// `node --import tsx bench/peers/xstate-floor.ts [events] [reps]` prints one JSON line.
import { fileURLToPath } from 'node:url'
import { assign, createActor, emit, setup, type AnyStateNode } from 'xstate'
import { agentMachine } from '../../src/machines/index.js'
import { CPU_CLOCK, cpuUs } from './clock.js'
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
  /** An event taking one targeted microstep, with an assign and an emit (the sibling variant). */
  eventUs: number
  /** What one more (eventless) microstep adds to an event: the bounce less the sibling variant. */
  perMicrostepUs: number
  /** What one more context assignment adds to an event: XState clones the snapshot and recomputes its state value for each. */
  perAssignUs: number
  events: number
  reps: number
  clock: string
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

export type Variant = 'targetless' | 'sibling' | 'bounce' | 'bare' | 'assign3'

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
  if (leaf) config.on = { tick: variant === 'targetless' ? { actions: 'effect' } : { target: 'twin', actions: tickActions(variant) } }
  return config
}

/** The actions of a tick that moves: an emit, and no, one or three assigns. */
function tickActions(variant: Variant): string[] {
  if (variant === 'bare') return ['effect']
  return variant === 'assign3' ? ['effect', 'count', 'count', 'count'] : ['effect', 'count']
}

export function floorMachine(variant: Variant) {
  const path = deepestPath(agentMachine.root)
  const config = mirrorConfig(agentMachine.root, path, variant)
  if (variant !== 'targetless') {
    // the deepest state and a twin beside it: the tick moves between them ('sibling'),
    // or moves to the twin and an eventless transition brings it back ('bounce': two microsteps)
    let parent = config
    for (const key of path.slice(0, -1)) parent = (parent.states as Record<string, Record<string, unknown>>)[key]
    const states = parent.states as Record<string, Record<string, unknown>>
    const leaf = path[path.length - 1]
    states.twin = variant === 'bounce' ? { always: { target: leaf, actions: 'count' } } : { on: { tick: { target: leaf, actions: tickActions(variant) } } }
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

/** The smallest machine there is: two states, one emit per event; XState's cost with nothing around it. */
function flatMachine() {
  return setup({
    types: { events: {} as { type: 'tick' }, emitted: {} as { type: 'fx.append'; n: number } },
    actions: { effect: emit({ type: 'fx.append', n: 1 }) },
  }).createMachine({
    initial: 'a',
    states: { a: { on: { tick: { target: 'b', actions: 'effect' } } }, b: { on: { tick: { target: 'a', actions: 'effect' } } } },
  })
}

const LABELS = {
  flat: 'two-state machine: transition + emit',
  targetless: 'targetless transition + emit',
  bare: 'sibling transition + emit, no assign (1 microstep)',
  sibling: 'sibling transition + assign + emit (1 microstep)',
  assign3: 'sibling transition + 3 assigns + emit (1 microstep)',
  bounce: 'sibling transition, eventless one back (2 microsteps), 2 assigns + emit',
} as const

/**
 * µs per `tick` for each variant, one handler receiving the emit; the
 * variants take turns within each repetition so a slow moment of a shared
 * machine lands on all of them.
 */
export function measureFloor(events = 20_000, reps = 9): FloorResult {
  const variants = {
    flat: flatMachine(),
    targetless: floorMachine('targetless'),
    bare: floorMachine('bare'),
    sibling: floorMachine('sibling'),
    assign3: floorMachine('assign3'),
    bounce: floorMachine('bounce'),
  }
  let received = 0
  const actors = Object.entries(variants).map(([name, machine]) => {
    const actor = createActor(machine as ReturnType<typeof flatMachine>)
    actor.on('fx.append', () => {
      received++
    })
    actor.start()
    for (let i = 0; i < events; i++) actor.send({ type: 'tick' })
    return { name: name as keyof typeof LABELS, actor, runs: [] as number[] }
  })
  for (let r = 0; r < reps; r++) {
    for (const v of actors) {
      const t0 = cpuUs()
      for (let i = 0; i < events; i++) v.actor.send({ type: 'tick' })
      v.runs.push((cpuUs() - t0) / events)
    }
  }
  if (received !== actors.length * events * (reps + 1))
    throw new Error(`the floor machines emitted ${received} times for ${actors.length * events * (reps + 1)} events`)
  const us = Object.fromEntries(actors.map((v) => [v.name, median(v.runs)])) as Record<keyof typeof LABELS, number>
  const active = actors.find((v) => v.name === 'targetless')!.actor.getSnapshot()._nodes.length
  return {
    shape: shapeOf(variants.targetless.root, active),
    agentShape: shapeOf(agentMachine.root, active),
    parkedAt: deepestPath(agentMachine.root).join('.'),
    perEventUs: Object.fromEntries(Object.entries(LABELS).map(([k, label]) => [label, us[k as keyof typeof LABELS]])),
    eventUs: us.sibling,
    perMicrostepUs: us.bounce - us.sibling,
    perAssignUs: (us.assign3 - us.sibling) / 2,
    events,
    reps,
    clock: CPU_CLOCK,
  }
}

/** XState's own cost of a turn of `events` events and `microsteps` microsteps, per step, on a machine of this shape. */
export function xstateFloorPerStep(floor: FloorResult, events: number, microsteps: number, steps: number): number {
  return (events * floor.eventUs + (microsteps - events) * floor.perMicrostepUs) / steps
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [events, reps] = process.argv.slice(2).map(Number)
  process.stdout.write(`${JSON.stringify(measureFloor(events || undefined, reps || undefined))}\n`)
}

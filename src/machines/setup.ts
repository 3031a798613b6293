// How a named implementation is written. An action is a pure function of a
// Draft: it reads the context and collects a context patch and the effects it
// wants, in order; `action()` turns it into an ordinary XState
// `enqueueActions` that assigns the patch once and emits the effects as one
// `effects` event. Each builder also records which events the implementation
// is written for, so that `attached()` (attachment.ts) can refuse, at compile
// time, a config that attaches it to another event.
import { assertEvent, setup } from 'xstate'
import type { EventData, SessionEventType, SurfaceOp } from '../session/schemas.js'
import type {
  ActivityContext,
  AgentContext,
  AgentEvent,
  AgentInput,
  CallerUndo,
  Effect,
  ActionEffects,
  HookName,
  NotificationName,
  RequestContext,
  ToolBatchContext,
} from './types.js'

/** The setup every layer extends with its own named implementations: context, events, effects and input. */
export const baseSetup = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    emitted: {} as ActionEffects,
    input: {} as AgentInput,
  },
})

type EventType = AgentEvent['type']
export type EventOf<T extends EventType> = Extract<AgentEvent, { type: T }>

/** Every field of `patch` already has that value in `current`. */
function sameFields<T extends object>(current: T, patch: Partial<T>): boolean {
  for (const key in patch) if (patch[key] !== current[key]) return false
  return true
}

/** Collects what one action wants: a context patch (read back through `get`) and effects in order. */
export class Draft {
  /** The keys this action changes, or null while it changes nothing. */
  patch: Partial<AgentContext> | null = null
  readonly effects: Effect[] = []
  constructor(readonly context: AgentContext) {}

  get<K extends keyof AgentContext>(key: K): AgentContext[K] {
    const patch = this.patch
    return patch !== null && key in patch ? (patch[key] as AgentContext[K]) : this.context[key]
  }
  /** Record the keys whose value changes: a key set to the value it has is left out, so a patch that changes nothing assigns nothing. */
  set(patch: Partial<AgentContext>): void {
    for (const key in patch) {
      const k = key as keyof AgentContext
      if (patch[k] === this.get(k)) continue
      if (this.patch === null) this.patch = {}
      ;(this.patch as Record<string, unknown>)[k] = patch[k]
    }
  }
  /** Update part of the request side. */
  setRequest(patch: Partial<RequestContext>): void {
    const request = this.get('request')
    if (!sameFields(request, patch)) this.set({ request: { ...request, ...patch } })
  }
  /** Update the activity's flags. */
  setActivity(patch: Partial<ActivityContext>): void {
    const activity = this.get('activity')
    if (!sameFields(activity, patch)) this.set({ activity: { ...activity, ...patch } })
  }
  /** Update part of the tool batch. */
  setToolBatch(patch: Partial<ToolBatchContext>): void {
    const batch = this.get('toolBatch')
    if (!sameFields(batch, patch)) this.set({ toolBatch: { ...batch, ...patch } })
  }
  emit(effect: Effect): void {
    this.effects.push(effect)
  }
  /** A fresh effect id that the machine now waits for; ids never repeat, so a late answer is told from the awaited one. */
  await(): number {
    const ids = this.get('ids')
    this.set({ ids: { next: ids.next + 1, waiting: ids.next } })
    return ids.next
  }
  /** A fresh id that does not replace what the machine waits for. */
  id(): number {
    const ids = this.get('ids')
    this.set({ ids: { next: ids.next + 1, waiting: ids.waiting } })
    return ids.next
  }
  append<T extends SessionEventType>(
    eventType: T,
    data: EventData<T>,
    extra?: { surfaceOp?: SurfaceOp; sourceEventSeqs?: readonly number[]; citeKeys?: readonly string[]; key?: string; caller?: CallerUndo },
  ): void {
    this.effects.push(extra ? { type: 'fx.append', eventType, data, ...extra } : { type: 'fx.append', eventType, data })
  }
  notify(name: NotificationName, payload: Record<string, unknown>): void {
    this.effects.push({ type: 'fx.notify', name, payload })
  }
  /** Ask to hear `appends.confirmed` once the appends so far are in the log (or `append.failed` if one was refused). */
  confirm(): void {
    this.effects.push({ type: 'fx.confirm', id: this.await() })
  }
  /** Run an extension point and wait for it; `abandonOnCancel` when a cancel ends the wait (turn-level hooks). */
  hook(name: HookName, payload: Record<string, unknown>, options: { fallback?: unknown; abandonOnCancel?: boolean } = {}): void {
    const effect: Effect = { type: 'fx.hook', id: this.await(), name, payload, abandonOnCancel: options.abandonOnCancel === true }
    if (options.fallback !== undefined) effect.fallback = options.fallback
    this.effects.push(effect)
  }
}

declare const ON: unique symbol
/** The events an implementation is written for, as a phantom type: `'*'` reads only the context. */
export interface WrittenFor<T> {
  readonly [ON]?: T
}

/** The name an action is declared under, set by `named()`: the effects it emits carry it, for inspectors. */
export interface Label {
  name: string
}

/** An action from its Draft steps, for the events it accepts (null: any). */
function draftAction(accepted: readonly EventType[] | null, run: (d: Draft, event: AgentEvent) => void) {
  const label: Label = { name: '' }
  const impl = baseSetup.enqueueActions(({ context, event, enqueue }) => {
    if (accepted !== null && !accepted.includes(event.type)) assertEvent(event, accepted)
    const d = new Draft(context)
    run(d, event)
    const patch = d.patch
    if (patch !== null) enqueue.assign(() => patch)
    if (d.effects.length > 0) enqueue.emit({ type: 'effects', action: label.name, effects: d.effects })
  })
  return Object.assign(impl, { label })
}

type ActionImpl = ReturnType<typeof draftAction>

/** Give each action of a set of implementations the name it is declared under; returns the set. */
export function named<I extends { actions: Record<string, unknown>; guards: Record<string, unknown> }>(implementations: I): I {
  for (const [name, impl] of Object.entries(implementations.actions)) {
    const label = (impl as Partial<{ label: Label }>).label
    if (label) label.name = name
  }
  return implementations
}

/** An action that reads only the context: it may sit on any transition, entry or exit. */
export function action(run: (d: Draft) => void) {
  return draftAction(null, run) as ActionImpl & WrittenFor<'*'>
}

/** An action written for these events (it reads them): attaching it to another event fails to compile. */
export function actionOn<const T extends EventType>(types: readonly T[], run: (d: Draft, event: EventOf<T>) => void) {
  return draftAction([...types], run as (d: Draft, event: AgentEvent) => void) as ActionImpl & WrittenFor<T>
}

type GuardArgs = { context: AgentContext; event: AgentEvent }

/** A guard that reads only the context. */
export function guard(test: (context: AgentContext) => boolean) {
  const impl = ({ context }: GuardArgs) => test(context)
  return impl as typeof impl & WrittenFor<'*'>
}

/** A guard written for these events (it reads them); `params` are the config's (`{ type, params }`), if any. */
export function guardOn<const T extends EventType, P = undefined>(types: readonly T[], test: (context: AgentContext, event: EventOf<T>, params: P) => boolean) {
  const accepted: readonly EventType[] = [...types]
  const impl = ({ context, event }: GuardArgs, params: P) => {
    if (!accepted.includes(event.type)) assertEvent(event, accepted)
    return test(context, event as EventOf<T>, params)
  }
  return impl as typeof impl & WrittenFor<T>
}

type Operator = { readonly name: string; readonly guards: readonly unknown[] }
const isOperator = (g: unknown): g is Operator => typeof g === 'function' && Array.isArray((g as { guards?: unknown }).guards)

/** A guard as it reads: its name, or `and(isAwaited, isRejected)` for and/or/not. */
function guardLabel(g: unknown): string {
  if (typeof g === 'string') return g
  if (isOperator(g)) return `${g.name.split('(')[0]}(${g.guards.map(guardLabel).join(', ')})`
  if (typeof g !== 'object' || g === null || !('type' in g)) return 'guard'
  const params = (g as { params?: Record<string, unknown> }).params
  return params ? `${String(g.type)}(${Object.values(params).join(', ')})` : String(g.type)
}

/**
 * Name every and/or/not guard of a state config after what it checks, e.g. `and(isAwaited, isRejected)`:
 * inspectors (the Stately inspector among them) show a guard function by its name. Returns the config.
 */
export function labelGuards<S>(config: S): S {
  const label = (g: unknown): void => {
    if (!isOperator(g)) return
    g.guards.forEach(label)
    Object.defineProperty(g, 'name', { value: guardLabel(g) })
  }
  const transitions = (t: unknown): void => {
    for (const one of Array.isArray(t) ? t : [t]) if (typeof one === 'object' && one !== null) label((one as { guard?: unknown }).guard)
  }
  const visit = (node: { on?: Record<string, unknown>; always?: unknown; onDone?: unknown; states?: Record<string, unknown> }): void => {
    for (const t of Object.values(node.on ?? {})) transitions(t)
    transitions(node.always)
    transitions(node.onDone)
    for (const child of Object.values(node.states ?? {})) visit(child as typeof node)
  }
  visit(config as Parameters<typeof visit>[0])
  return config
}

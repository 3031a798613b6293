// How a named implementation is written. Every action is a pure function of
// a Draft: it reads the context, collects context patches and the effects to
// emit, in order; the builders turn it into one XState action. Each builder
// also records which events the implementation is written for, so that
// `attached()` (attachment.ts) can refuse, at compile time, a config that
// attaches it to another event.
import { assertEvent, assign, createActor, emit, setup, type AnyActorScope, type EventObject, type ExecutableActionObject } from 'xstate'
import type { EventData, SessionEventType, SurfaceOp } from '../session/schemas.js'
import type { AgentContext, AgentEvent, AgentInput, CallerUndo, Effect, HookName, NotificationName, RequestContext, ToolBatchContext } from './types.js'

/** The setup every layer extends with its own named implementations: context, events, effects and input. */
export const baseSetup = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    emitted: {} as Effect,
    input: {} as AgentInput,
  },
})

export type EventType = AgentEvent['type']
export type EventOf<T extends EventType> = Extract<AgentEvent, { type: T }>

/** Collects what one action wants: context changes (read back through `get`) and effects in order. */
export class Draft {
  /** The context with this action's changes: a copy made at the first change (null: nothing changed yet). */
  next: AgentContext | null = null
  readonly effects: Effect[] = []
  constructor(readonly context: AgentContext) {}

  get<K extends keyof AgentContext>(key: K): AgentContext[K] {
    return (this.next ?? this.context)[key]
  }
  /** The copy this action changes, made at its first change: one copy per action whatever the number of changes. */
  private own(): AgentContext {
    return (this.next ??= { ...this.context })
  }
  set(patch: Partial<AgentContext>): void {
    // key by key: Object.assign onto an object that has properties takes V8's slow generic path
    for (const key in patch) (this.own() as unknown as Record<string, unknown>)[key] = patch[key as keyof AgentContext]
  }
  /** Update part of the request side. */
  setRequest(patch: Partial<RequestContext>): void {
    const next = this.own()
    next.request = { ...next.request, ...patch }
  }
  /** Update part of the tool batch. */
  setToolBatch(patch: Partial<ToolBatchContext>): void {
    const next = this.own()
    next.toolBatch = { ...next.toolBatch, ...patch }
  }
  emit(effect: Effect): void {
    this.effects.push(effect)
  }
  /** A fresh effect id that the machine now waits for; ids never repeat (late answers are dropped). */
  await(): number {
    const next = this.own()
    const id = next.ids.next
    next.ids = { next: id + 1, waiting: id }
    return id
  }
  /** A fresh id that does not replace what the machine waits for. */
  id(): number {
    const next = this.own()
    const id = next.ids.next
    next.ids = { next: id + 1, waiting: next.ids.waiting }
    return id
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
  /** Ask to hear `appends.confirmed` once the appends so far are in the log (or `append.failed`); `yieldFirst` lets the event loop run first. */
  confirm(options: { yieldFirst?: boolean } = {}): void {
    this.effects.push(options.yieldFirst ? { type: 'fx.confirm', id: this.await(), yieldFirst: true } : { type: 'fx.confirm', id: this.await() })
  }
  /** Run an extension point and wait for it; `abandonOnCancel` when a cancel ends the wait (turn-level hooks). */
  hook(name: HookName, payload: Record<string, unknown>, options: { fallback?: unknown; abandonOnCancel?: boolean } = {}): void {
    const effect: Effect = { type: 'fx.hook', id: this.await(), name, payload }
    if (options.fallback !== undefined) effect.fallback = options.fallback
    if (options.abandonOnCancel) effect.abandonOnCancel = true
    this.effects.push(effect)
  }
}

declare const ON: unique symbol
/** The events an implementation is written for, as a phantom type: `'*'` reads only the context. */
export interface WrittenFor<T> {
  readonly [ON]?: T
}

/** Where a builder keeps the name its implementation is declared under (set by `named`). */
interface Named {
  readonly label: { name: string; marker?: () => void }
}

/** A snapshot as a built-in action's `resolve` sees it: what a context commit reads and copies. */
type ResolvedSnapshot = { readonly context: AgentContext }

/** What a named action is to XState: a built-in action, resolved through its `resolve` (see resolveDraftAction). */
interface DraftAction {
  (): void
  type: string
  label: Named['label']
  accepted: readonly string[] | null
  run: (d: Draft, event: AgentEvent) => void
  resolve: (
    scope: AnyActorScope,
    snapshot: ResolvedSnapshot,
    args: { event: AgentEvent },
    params: unknown,
    self: DraftAction,
  ) => [ResolvedSnapshot, undefined, undefined]
}

/** XState's own `emit` action, read once: its type and the `execute` that delivers what it emits. */
const EMIT = emit({ type: 'fx.signal' }) as unknown as { type?: unknown; execute?: (scope: AnyActorScope, params: { event: Effect }) => void }
const executeEmit = EMIT.execute as (scope: AnyActorScope, params: { event: Effect }) => void

/**
 * The one `resolve` of every named action (shared: resolving allocates no closure). XState v5 resolves its
 * built-in actions (assign, emit, enqueueActions) through a `resolve` function on the action, which returns the
 * next snapshot and the actions to run next. A named action is one such built-in: it runs its Draft over the
 * snapshot's context, copies the snapshot around the patched context (an `assign` would rebuild it through
 * XState's snapshot constructor, recomputing the state value and tag set over the whole configuration, though a
 * patch never changes the configuration), then hands its name marker and one `emit` per effect to the actor's
 * action executor exactly as XState would once `resolve` returned them as next actions (same type, params and
 * execution, in the same order: inspectors see the same `@xstate.action` events), without building an `emit`
 * action and resolving it for each. Where this XState does not resolve them so (`builtInsWork`), named actions
 * are `enqueueActions` of the same steps.
 */
const resolveDraftAction: DraftAction['resolve'] = (scope, snapshot, args, _params, self) => {
  const event = args.event
  // an exact type match passes at once; anything else gets XState's own check (and its error)
  if (self.accepted && !self.accepted.includes(event.type)) assertEvent(event, self.accepted as EventType[])
  const d = new Draft(snapshot.context)
  self.run(d, event)
  const next = d.next === null ? snapshot : { ...snapshot, context: d.next }
  const marker = self.label.marker
  const effects = d.effects
  if (!marker && effects.length === 0) return [next, undefined, undefined]
  // what XState hands each next action it executes: the committed context, the event, the actor and its system
  const info: ExecutableActionObject['info'] = {
    context: next.context,
    event,
    self: scope.self as ExecutableActionObject['info']['self'],
    system: scope.system,
  }
  if (marker) scope.actionExecutor({ type: marker.name || '(anonymous)', info, params: undefined, exec: marker })
  for (const effect of effects) {
    const params = { event: effect }
    scope.actionExecutor({ type: 'xstate.emit', info, params, exec: executeEmit.bind(null, scope, params) })
  }
  return [next, undefined, undefined]
}

/** The enqueueActions form of a named action: the marker, one assign of the patch, then the effects in order. */
function enqueueForm(accepted: readonly string[] | null, run: (d: Draft, event: AgentEvent) => void, label: Named['label']) {
  const impl = baseSetup.enqueueActions(({ context, event, enqueue }) => {
    if (accepted) assertEvent(event, accepted as EventType[])
    const d = new Draft(context)
    run(d, event)
    if (label.marker) enqueue(label.marker)
    if (d.next !== null) enqueue.assign(d.next)
    for (const effect of d.effects) enqueue.emit(effect)
  })
  return Object.assign(impl, { label })
}

/** A named action as XState's setup types it (whichever form it takes). */
type ActionImpl = ReturnType<typeof enqueueForm>

/** The built-in form of a named action. */
function builtInForm(accepted: readonly string[] | null, run: (d: Draft, event: AgentEvent) => void, label: Named['label']): DraftAction {
  // the function itself is never called: XState calls `resolve`
  const impl = (() => {}) as DraftAction
  impl.type = 'agentchart.draft'
  impl.label = label
  impl.accepted = accepted
  impl.run = run
  impl.resolve = resolveDraftAction
  return impl
}

/** What a one-action machine does with `impl` as its entry: its context after, and what it ran and inspectors saw, in order. */
function probeRun(impl: unknown): string {
  const seen: string[] = []
  const machine = setup({ actions: { probe: impl as ActionImpl } }).createMachine({ context: { turn: 0 }, entry: 'probe' })
  const actor = createActor(machine, {
    inspect: (e) => {
      if (e.type === '@xstate.action') seen.push(`action ${e.action.type} ${JSON.stringify(e.action.params)}`)
    },
  })
  actor.on('fx.signal', () => void seen.push('effect'))
  actor.start()
  seen.push(`turn ${actor.getSnapshot().context.turn}`)
  actor.stop()
  return seen.join('; ')
}

/**
 * Whether this XState resolves the built-in form as written: `assign` and `emit` carry `resolve`/`execute`, and a
 * probe machine whose entry is one such action does and shows exactly what the enqueueActions form does (the
 * patch in its context; marker, then each effect emitted, seen by an inspector as the same actions).
 * Checked once, when the machines load.
 */
function builtInsWork(): boolean {
  if (typeof (assign({}) as unknown as Partial<DraftAction>).resolve !== 'function') return false
  if (EMIT.type !== 'xstate.emit' || typeof EMIT.execute !== 'function') return false
  try {
    const steps = (d: Draft) => {
      d.set({ turn: 1 })
      d.emit({ type: 'fx.signal' })
      d.emit({ type: 'fx.signal' })
    }
    const label = () => ({ name: 'probe', marker: Object.defineProperty(() => {}, 'name', { value: 'probe' }) })
    const expected = probeRun(enqueueForm(null, steps, label()))
    return (
      expected ===
        'action probe undefined; action xstate.emit {"event":{"type":"fx.signal"}}; action xstate.emit {"event":{"type":"fx.signal"}}; effect; effect; turn 1' &&
      probeRun(builtInForm(null, steps, label())) === expected
    )
  } catch {
    return false
  }
}

const RESOLVES_BUILT_INS = builtInsWork()

/** A named action from its Draft steps, for the events it accepts (null: any). */
function draftAction(accepted: readonly string[] | null, run: (d: Draft, event: AgentEvent) => void): ActionImpl {
  const label: Named['label'] = { name: '' }
  return RESOLVES_BUILT_INS ? builtInForm(accepted, run, label) : enqueueForm(accepted, run, label)
}

/** Give each action of a set of implementations the name it is declared under (shown by inspectors); returns the set. */
export function named<I extends { actions: Record<string, unknown>; guards: Record<string, unknown> }>(implementations: I): I {
  for (const [name, impl] of Object.entries(implementations.actions)) {
    const label = (impl as Partial<Named>).label
    if (!label) continue
    label.name = name
    label.marker = Object.defineProperty(() => {}, 'name', { value: name })
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

/** A guard written for these events (it reads them). */
export function guardOn<const T extends EventType>(types: readonly T[], test: (context: AgentContext, event: EventOf<T>) => boolean) {
  const accepted = [...types]
  const impl = ({ context, event }: GuardArgs) => {
    // an exact type match passes at once; anything else gets XState's own check (and its error)
    if (!(accepted as readonly string[]).includes(event.type)) assertEvent(event as EventObject, accepted)
    return test(context, event as unknown as EventOf<T>)
  }
  return impl as typeof impl & WrittenFor<T>
}

type Operator = { readonly name: string; readonly guards: readonly unknown[] }
const isOperator = (g: unknown): g is Operator => typeof g === 'function' && Array.isArray((g as { guards?: unknown }).guards)

/** A guard as it reads: its name, or `and(isAwaited, isRejected)` for and/or/not. */
function guardLabel(g: unknown): string {
  if (typeof g === 'string') return g
  if (isOperator(g)) return `${g.name.split('(')[0]}(${g.guards.map(guardLabel).join(', ')})`
  return typeof g === 'object' && g !== null && 'type' in g ? String(g.type) : 'guard'
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

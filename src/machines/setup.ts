// The one `setup()` every machine is built from, plus the pure helpers their
// actions share: a draft that collects context patches and emitted effects.
import { setup } from 'xstate'
import type { AgentCancelCause, EventData, InboxTarget, SessionEventType, SurfaceOp, TurnEndReason, UserMessage } from '../session/schemas.js'
import { newBatch } from './batch.js'
import type { AgentContext, RequestContext, AgentEvent, AgentInput, Effect, HookName, NotificationName, TurnFailure } from './types.js'

export const agentSetup = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    emitted: {} as Effect,
    input: {} as AgentInput & { instance?: string },
  },
})

/** The context a fresh agent instance starts from (resume passes what the log says). */
export function initialContext(input: AgentInput & { instance?: string }): AgentContext {
  return {
    instance: { id: input.instance ?? 'i0', maxParallelToolCalls: input.maxParallelToolCalls ?? 10, repair: input.repair ?? [] },
    request: {
      seedConfig: input.seedConfig,
      priorHeader: input.priorHeader ?? false,
      requests: 0,
      headerKey: null,
      contextKey: input.contextKey ?? null,
      attempt: 0,
      config: null,
      failure: null,
    },
    nextTurn: input.nextTurn ?? [],
    nextStep: input.nextStep ?? [],
    latch: false,
    cause: null,
    disposing: false,
    turn: input.lastTurn ?? 0,
    step: 0,
    sticky: false,
    lastStep: 'none',
    proposal: { batch: [], entering: input.entering ?? [] },
    end: null,
    failure: null,
    stepOutcome: null,
    ids: { next: 1, waiting: 0 },
    tools: newBatch(input.calls ?? [], input.maxParallelToolCalls ?? 10),
  }
}

export type EventOf<T extends AgentEvent['type']> = Extract<AgentEvent, { type: T }>

/** Collects what one action wants: context changes (read back through `get`) and effects in order. */
export class Draft {
  readonly patch: Partial<AgentContext> = {}
  readonly effects: Effect[] = []
  constructor(readonly context: AgentContext) {}

  get<K extends keyof AgentContext>(key: K): AgentContext[K] {
    return (key in this.patch ? this.patch[key] : this.context[key]) as AgentContext[K]
  }
  set(patch: Partial<AgentContext>): void {
    Object.assign(this.patch, patch)
  }
  /** Update part of the request side. */
  setRequest(patch: Partial<RequestContext>): void {
    this.set({ request: { ...this.get('request'), ...patch } })
  }
  emit(effect: Effect): void {
    this.effects.push(effect)
  }
  /** A fresh effect id that the machine now waits for; ids never repeat (late results are dropped). */
  await(): number {
    const id = this.get('ids').next
    this.set({ ids: { next: id + 1, waiting: id } })
    return id
  }
  /** A fresh id that does not replace what the machine waits for. */
  id(): number {
    const ids = this.get('ids')
    const id = ids.next
    this.set({ ids: { next: id + 1, waiting: ids.waiting } })
    return id
  }
  append<T extends SessionEventType>(
    eventType: T,
    data: EventData<T>,
    extra?: { surfaceOp?: SurfaceOp; sourceEventSeqs?: readonly number[]; citeKeys?: readonly string[]; key?: string; time?: number },
  ): void {
    this.effects.push({ type: 'fx.append', eventType, data, ...extra })
  }
  notify(name: NotificationName, payload: Record<string, unknown>): void {
    this.effects.push({ type: 'fx.notify', name, payload })
  }
  /** Ask the runtime to answer `sync` once the effects so far are done (or `fault`). */
  sync(): void {
    this.effects.push({ type: 'fx.sync', id: this.await() })
  }
  hook(name: HookName, payload: Record<string, unknown>, fallback: unknown): void {
    this.effects.push({ type: 'fx.hook', id: this.await(), name, payload, fallback })
  }
}

/** Turn a pure draft function into an action: assign the patch, then emit the effects in order. */
export function act<T extends AgentEvent['type'] = AgentEvent['type']>(fn: (d: Draft, event: EventOf<T>) => void) {
  return agentSetup.enqueueActions(({ context, event, enqueue }) => {
    const d = new Draft(context)
    fn(d, event as EventOf<T>)
    if (Object.keys(d.patch).length > 0) enqueue.assign(d.patch)
    for (const effect of d.effects) enqueue.emit(effect)
  })
}

type GuardArgs = { context: AgentContext; event: AgentEvent }

/** True for the result the machine is waiting for; anything older is a late result to drop. */
export const awaited = ({ context, event }: GuardArgs): boolean => 'id' in event && event.id === context.ids.waiting
/** The live activity has been cancelled. */
export const cancelled = ({ context }: GuardArgs): boolean => context.cause !== null
export const awaitedAndCancelled = (args: GuardArgs): boolean => awaited(args) && cancelled(args)

// ---- shared draft steps -----------------------------------------------------

/** The reason a turn ends with when nothing went wrong: max-tokens is sticky (TU-12). */
export function standingEnd(d: Draft): TurnEndReason {
  return d.get('sticky') ? { kind: 'max-tokens' } : { kind: 'completed' }
}

export function abortedEnd(d: Draft): TurnEndReason {
  return { kind: 'aborted', reason: d.get('cause') ?? { kind: 'user' } }
}

/** Record a failure that will end the turn `error` (agent/error fires before turn/end, PH-8). */
export function fail(d: Draft, failure: TurnFailure): void {
  d.set({ failure, end: { kind: 'error', error: failure.failure } })
}

/** Splice the next-step list (and at a turn boundary the first prompt) into the proposal batch (IN-9). */
export function claim(d: Draft, turnBoundary: boolean): void {
  const batch: UserMessage[] = []
  const nextStep = d.get('nextStep')
  if (nextStep.length > 0) {
    d.append('agent/inbox/spliced', { target: 'next-step', start: 0, removedCount: nextStep.length, inserted: [] })
    batch.push(...nextStep)
    d.set({ nextStep: [] })
  }
  const nextTurn = d.get('nextTurn')
  if (turnBoundary && nextTurn.length > 0) {
    d.append('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] })
    batch.push(nextTurn[0])
    d.set({ nextTurn: nextTurn.slice(1) })
  }
  const turn = d.get('turn')
  for (const message of batch) d.notify('agent/inbox/claimed', { message, turn })
  d.set({ proposal: { batch, entering: [] } })
}

/** Durably discard one whole list as a canceled splice, then announce each message (IN-4). */
function discardList(d: Draft, target: InboxTarget): void {
  const key = target === 'next-turn' ? 'nextTurn' : 'nextStep'
  const list = d.get(key)
  if (list.length === 0) return
  d.append('agent/inbox/spliced', { target, start: 0, removedCount: list.length, inserted: [], outcome: 'canceled' })
  d.set({ [key]: [] })
  for (const message of list) d.notify('agent/inbox/discarded', { message })
}

/** Clear both lists, next-step first (IN-5), and drop the wake latch (CX-3). */
export function clearInbox(d: Draft): void {
  discardList(d, 'next-step')
  discardList(d, 'next-turn')
  d.set({ latch: false })
}

/** First cause wins (CX-2); without keepInbox the inbox is cleared either way (CX-3). */
export function cancelActivity(d: Draft, event: { cause: AgentCancelCause; keepInbox?: boolean }): void {
  if (d.get('cause') === null) {
    d.set({ cause: event.cause })
    d.emit({ type: 'fx.abort', cause: event.cause })
  }
  if (event.cause.kind === 'disposed') d.set({ disposing: true })
  if (!event.keepInbox) clearInbox(d)
}

/** Insert messages at the end of a list as one splice, then announce them. */
export function insert(d: Draft, target: InboxTarget, messages: readonly UserMessage[]): void {
  if (messages.length === 0) return
  const key = target === 'next-turn' ? 'nextTurn' : 'nextStep'
  const list = d.get(key)
  d.append('agent/inbox/spliced', { target, start: list.length, inserted: [...messages] })
  d.set({ [key]: [...list, ...messages] })
  for (const message of messages) d.notify('agent/inbox/inserted', { message })
}

// What the viewer shows, gathered from its source: a live agent (log, machine
// configuration, transitions, how inbox items came in), a session without an
// agent (the log as it grows), or a stored log (read-only). The feed keeps
// everything in arrays the server's clients read from their own cursors, so a
// page that connects late or reconnects gets the same history as one that
// watched from the start; it never copies the log.
import type { AnyActorRef, AnyStateMachine, InspectionEvent, Subscription } from 'xstate'
import type { Agent } from '../agent/agent.js'
import type { SessionEvent } from '../session/schemas.js'
import { logSnapshot, type Session } from '../session/session.js'
import { watchSubagents } from '../subagents/agent-tool.js'
import { actorState, chartOf } from './chart.js'
import type { ActorState, ArrivalNote, CancelNote, ChartMachine, Configuration, SessionLink, TransitionMark, WireEvent } from './page/protocol.js'

/** The most recent transitions kept for late joiners and for the trail on the page. */
const TRAIL = 16

export interface ViewerFeed {
  readonly mode: 'live' | 'session' | 'stored'
  readonly sessionId: string
  /** Machine definitions, in the order they were met (the agent's root machine first). */
  readonly charts: readonly ChartMachine[]
  /** The log; the live session's own frozen snapshot, never a copy. */
  events(): readonly WireEvent[]
  /** Configuration id per seq (live mode only; shorter than the log while nothing was recorded). */
  readonly eventConfigs: readonly number[]
  readonly configs: readonly Configuration[]
  readonly transitions: readonly TransitionMark[]
  readonly arrivals: readonly ArrivalNote[]
  readonly cancels: readonly CancelNote[]
  /** The current configuration id, the public status and whether the actor runs (live mode). */
  current(): { config: number; status: 'idle' | 'running'; actor: 'active' | 'done' | 'error' | 'stopped' } | null
  /** Child sessions (subagents) this one's calls started, with the feeds that show them, in the order met. */
  readonly links: readonly SessionLink[]
  readonly children: readonly ViewerFeed[]
  /** Called (synchronously, possibly often) whenever anything above changed; returns an unsubscribe. */
  onChange(listener: () => void): () => void
  close(): void
}

/** Finds a linked session's stored log by id (a store's other sessions), or undefined when it has none. */
export type SessionLookup = (sessionId: string) => readonly WireEvent[] | undefined

/** How deep linked sessions are followed: agentTool's own depth limit, and a guard against a log that links in a loop. */
const MAX_LINK_DEPTH = 8

class Changes {
  readonly #listeners = new Set<() => void>()
  on(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }
  fire(): void {
    for (const listener of this.#listeners) {
      try {
        listener()
      } catch (error) {
        console.error('agentchart viewer: a feed listener threw; contained', error)
      }
    }
  }
}

/** Reads a growing log for the children its calls name, turning each one a lookup finds into a link and a stored feed. */
class StoredLinks {
  readonly links: SessionLink[] = []
  readonly children: ViewerFeed[] = []
  readonly #names = new Map<string, string>()
  #read = 0

  constructor(
    readonly lookup: SessionLookup | undefined,
    readonly depth: number,
    readonly charts: readonly ChartMachine[],
  ) {}

  /** Read the events not read yet: a `tool/result` whose `meta.subagent.sessionId` names a child links it. */
  read(events: readonly WireEvent[]): void {
    if (!this.lookup || this.depth >= MAX_LINK_DEPTH) return
    for (; this.#read < events.length; this.#read++) {
      const event = events[this.#read]
      const data = (typeof event.data === 'object' && event.data !== null ? event.data : {}) as {
        callId?: unknown
        name?: unknown
        meta?: { subagent?: { sessionId?: unknown } }
        message?: { source?: { callId?: unknown } }
      }
      if (event.type === 'tool/call' && typeof data.callId === 'string') this.#names.set(data.callId, typeof data.name === 'string' ? data.name : '?')
      if (event.type !== 'tool/result') continue
      const sessionId = data.meta?.subagent?.sessionId
      const callId = data.message?.source?.callId
      if (typeof sessionId !== 'string' || typeof callId !== 'string' || this.links.some((l) => l.sessionId === sessionId)) continue
      const childEvents = this.lookup(sessionId)
      if (!childEvents) continue
      this.links.push({ callId, sessionId, tool: this.#names.get(callId) ?? '?' })
      this.children.push(storedFeed(childEvents, sessionId, this.charts, this.lookup, this.depth + 1))
    }
  }
}

/** What a feed without a machine reports: no configurations, transitions or notes. */
const machineless = {
  eventConfigs: [],
  configs: [],
  transitions: [],
  arrivals: [],
  cancels: [],
  current: () => null,
} as const

/** A finished log: everything is there at once, nothing changes; the children `lookup` finds come with it. */
export function storedFeed(events: readonly WireEvent[], sessionId: string, charts: readonly ChartMachine[], lookup?: SessionLookup, depth = 0): ViewerFeed {
  const linked = new StoredLinks(lookup, depth, charts)
  linked.read(events)
  return {
    mode: 'stored',
    sessionId,
    charts,
    events: () => events,
    ...machineless,
    links: linked.links,
    children: linked.children,
    onChange: () => () => {},
    close: () => {},
  }
}

/** A session without an agent: the log as it grows, no machine to light up; children as its results name them. */
export function sessionFeed(session: Session, charts: readonly ChartMachine[], lookup?: SessionLookup): ViewerFeed {
  const changes = new Changes()
  const linked = new StoredLinks(lookup, 0, charts)
  linked.read(logSnapshot(session))
  const subscription = session.events$.subscribe(() => {
    linked.read(logSnapshot(session))
    changes.fire()
  })
  return {
    mode: 'session',
    sessionId: session.id,
    charts,
    events: () => logSnapshot(session),
    ...machineless,
    links: linked.links,
    children: linked.children,
    onChange: (listener) => changes.on(listener),
    close: () => subscription.unsubscribe(),
  }
}

interface LiveSnapshot {
  value: unknown
  status: 'active' | 'done' | 'error' | 'stopped'
  children?: Record<string, AnyActorRef | undefined>
}

interface StateNodeLike {
  path: readonly string[]
  machine?: { id: string; root: { path: readonly string[] } }
}

/** The fields an inbox send carries in the agent's events, whatever the event is called. */
function arrivalOf(event: Record<string, unknown>): ArrivalNote | null {
  const message = event.message as { id?: unknown } | undefined
  if (typeof event.wakeup !== 'boolean' || typeof message?.id !== 'string') return null
  return { messageId: message.id, wakeup: event.wakeup }
}

/** The cause a cancel request carries, whatever the event is called. */
function causeOf(event: Record<string, unknown>): CancelNote['cause'] | null {
  const cause = event.cause as { kind?: unknown; reason?: unknown } | undefined
  if (!cause || typeof cause !== 'object' || typeof cause.kind !== 'string') return null
  return { kind: cause.kind, ...(typeof cause.reason === 'string' ? { reason: cause.reason } : {}) }
}

/**
 * A running agent: its log, the configuration of its actor (and of any state-machine children it
 * spawns) at every append, the transitions it takes (from inspection microsteps), and the inbox and
 * cancel requests it receives. Everything is read through public handles: `agent.session.events$`,
 * `agent.actor` snapshots and `agent.actor.system.inspect`.
 */
export function liveFeed(agent: Agent): ViewerFeed {
  const actor = agent.actor as unknown as AnyActorRef & { logic: AnyStateMachine; system: { inspect(o: (e: InspectionEvent) => void): Subscription } }
  const changes = new Changes()
  const charts: ChartMachine[] = [chartOf(actor.logic)]
  const known = new Set(charts.map((c) => c.id))
  const configs: Configuration[] = []
  const configIds = new Map<string, number>()
  const eventConfigs: number[] = []
  const transitions: TransitionMark[] = []
  const arrivals: ArrivalNote[] = []
  const cancels: CancelNote[] = []
  const links: SessionLink[] = []
  const children: ViewerFeed[] = []
  const childWatches: Array<() => void> = []
  let transitionCount = 0

  // the configuration is computed once per distinct snapshot: chunks arrive with the machine at rest
  let lastSnapshot: unknown = undefined
  let lastConfig = -1

  const actorsOf = (snapshot: LiveSnapshot, machineId: string, out: ActorState[]): void => {
    out.push(actorState(machineId, snapshot.value))
    for (const child of Object.values(snapshot.children ?? {})) {
      const logic = (child as { logic?: AnyStateMachine } | undefined)?.logic
      if (!child || !logic || typeof logic !== 'object' || !('root' in logic)) continue
      if (!known.has(logic.id)) {
        known.add(logic.id)
        charts.push(chartOf(logic))
      }
      actorsOf(child.getSnapshot() as LiveSnapshot, logic.id, out)
    }
  }

  const configOf = (snapshot: LiveSnapshot): number => {
    if (snapshot === lastSnapshot) return lastConfig
    const actors: ActorState[] = []
    actorsOf(snapshot, charts[0].id, actors)
    const key = JSON.stringify(actors)
    let id = configIds.get(key)
    if (id === undefined) {
      id = configs.length
      configIds.set(key, id)
      configs.push({ id, actors })
    }
    lastSnapshot = snapshot
    lastConfig = id
    return id
  }

  const snapshotNow = () => actor.getSnapshot() as LiveSnapshot
  // the log before the viewer was attached: only the current configuration is known
  const backfill = configOf(snapshotNow())
  for (let i = 0; i < agent.session.length; i++) eventConfigs.push(backfill)

  const events = agent.session.events$.subscribe(() => {
    eventConfigs.push(configOf(snapshotNow()))
    changes.fire()
  })
  const snapshots = actor.subscribe({
    next: () => changes.fire(),
    error: () => changes.fire(),
    complete: () => changes.fire(),
  })
  const inspection = actor.system.inspect((event: InspectionEvent) => {
    if (event.type === '@xstate.microstep') {
      for (const t of event._transitions as Array<{ source: StateNodeLike; target?: readonly StateNodeLike[]; eventType: string }>) {
        const machine = t.source.machine
        if (!machine) continue
        const rel = (node: StateNodeLike) => node.path.slice(machine.root.path.length).join('.')
        transitions.push({
          n: ++transitionCount,
          machine: machine.id,
          source: rel(t.source),
          targets: (t.target ?? []).map(rel),
          event: t.eventType,
          seq: agent.session.length,
        })
      }
      if (transitions.length > TRAIL * 4) transitions.splice(0, transitions.length - TRAIL)
    } else if (event.type === '@xstate.event') {
      const payload = event.event as Record<string, unknown>
      const arrival = arrivalOf(payload)
      if (arrival && !arrivals.some((a) => a.messageId === arrival.messageId && a.wakeup === arrival.wakeup)) arrivals.push(arrival)
      const cause = causeOf(payload)
      if (cause) cancels.push({ seq: agent.session.length, cause })
    }
  })

  // a child lives only as long as its call: it is followed from the moment it is made, and its log kept after
  const unwatch = watchSubagents(agent, (child, callId, tool) => {
    const feed = liveFeed(child)
    links.push({ callId, sessionId: child.session.id, tool })
    children.push(feed)
    childWatches.push(feed.onChange(() => changes.fire()))
    changes.fire()
  })

  return {
    mode: 'live',
    sessionId: agent.session.id,
    charts,
    events: () => logSnapshot(agent.session),
    eventConfigs,
    configs,
    transitions,
    arrivals,
    cancels,
    links,
    children,
    current: () => {
      const snapshot = snapshotNow()
      return { config: configOf(snapshot), status: agent.status, actor: snapshot.status }
    },
    onChange: (listener) => changes.on(listener),
    close: () => {
      events.unsubscribe()
      snapshots.unsubscribe()
      inspection.unsubscribe()
      unwatch()
      for (const stop of childWatches) stop()
      for (const child of children) child.close()
    },
  }
}

/** Events as the wire carries them (the log's own objects; JSON.stringify does the rest). */
export type { SessionEvent }

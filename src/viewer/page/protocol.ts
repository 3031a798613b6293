// What the viewer's server sends its page over the live channel (Server-Sent
// Events, one JSON message per SSE `data:` line). Types only: the server
// (Node) and the page (browser, compiled with its own tsconfig) both import it.

/** One transition of a state node, as drawn: the event that takes it and where it goes. */
export interface ChartTransition {
  /** The event type; `''` for an eventless (`always`) transition, `xstate.done.state.*` for an `onDone`. */
  readonly event: string
  /** Target paths (dot-joined keys below the machine root); empty for a transition that stays put. */
  readonly targets: readonly string[]
  /** The guard's name, when the transition has one (`'guard'` for an anonymous inline guard). */
  readonly guard?: string
  /** True for a self-transition that exits and re-enters its source. */
  readonly reenter?: true
}

/** One state node of a machine definition, walked from `machine.root`. */
export interface ChartNode {
  readonly key: string
  /** Dot-joined keys below the machine root; `''` for the root itself. */
  readonly path: string
  readonly type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history'
  /** The path of the initial child of a compound node. */
  readonly initial?: string
  readonly children: readonly ChartNode[]
  readonly transitions: readonly ChartTransition[]
}

/** A machine definition the page draws: its id, its node tree and, as the server sends it, its drawing. */
export interface ChartMachine {
  readonly id: string
  readonly root: ChartNode
  /** Where each state and edge goes (computed by the server with ELK); absent from `chartOf`'s result. */
  readonly layout?: ChartLayout
}

/** A rectangle of the drawing, in chart coordinates (top left of the chart is 0, 0). */
export interface LayoutBox {
  readonly x: number
  readonly y: number
  readonly width: number
  readonly height: number
}

/** One edge of the drawing: every transition from one state to another, routed around the boxes. */
export interface ChartLayoutEdge {
  readonly from: string
  readonly to: string
  /** The route: start, bends, end (orthogonal segments). */
  readonly points: readonly (readonly [number, number])[]
  /** Where its label goes (placed clear of every state box) and the lines it shows. */
  readonly label: LayoutBox & { readonly lines: readonly string[] }
  /** Every transition the edge stands for, one per line, uncut: the hover text. */
  readonly title: string
}

/** The drawing of a machine: its size, a box per state path (`''` is the root) and its edges. */
export interface ChartLayout {
  readonly width: number
  readonly height: number
  readonly boxes: Readonly<Record<string, LayoutBox>>
  readonly edges: readonly ChartLayoutEdge[]
}

/** Where one actor is: the leaf paths of its active configuration (ancestors are implied). */
export interface ActorState {
  /** The id of the machine the actor runs (a `ChartMachine.id`). */
  readonly machine: string
  readonly active: readonly string[]
}

/** A distinct configuration of the whole system, numbered so events can cite it cheaply. */
export interface Configuration {
  readonly id: number
  readonly actors: readonly ActorState[]
}

/** One transition the machine took (from an `@xstate.microstep` inspection event). */
export interface TransitionMark {
  /** Increasing over the life of the server, so the page can keep a trail. */
  readonly n: number
  readonly machine: string
  readonly source: string
  readonly targets: readonly string[]
  readonly event: string
  /** The log length when it happened: the transition came after event `seq - 1`. */
  readonly seq: number
}

/** How an inbox item came in, when the live agent told us (the log alone cannot tell steer from inject). */
export interface ArrivalNote {
  readonly messageId: string
  readonly wakeup: boolean
}

/** A cancel request as the agent received it, before the log shows its effect. */
export interface CancelNote {
  /** The log length when it was asked for. */
  readonly seq: number
  readonly cause: { readonly kind: string; readonly reason?: string }
}

/** A child session one of this session's calls started (an agentTool subagent) that the viewer can show. */
export interface SessionLink {
  readonly callId: string
  readonly sessionId: string
  /** The delegating tool's name. */
  readonly tool: string
}

/** A session event as it travels: the logged envelope, untouched. */
export interface WireEvent {
  readonly seq: number
  readonly time: number
  readonly type: string
  readonly data: unknown
  readonly surfaceOp?: unknown
  readonly sourceEventSeqs?: readonly number[]
  readonly ignorable?: true
}

export type ServerMessage =
  | {
      readonly kind: 'hello'
      readonly protocol: 1
      readonly sessionId: string
      /** `live`: a running agent; `session`: a live log without a machine; `stored`: a finished log, read-only. */
      readonly mode: 'live' | 'session' | 'stored'
      readonly title: string
      /** The first seq this connection will send (non-zero when the page reconnects and resumes). */
      readonly from: number
      readonly charts: readonly ChartMachine[]
    }
  /** Appended events, in seq order; `configs[i]` is the configuration when `events[i]` was appended. */
  | { readonly kind: 'events'; readonly events: readonly WireEvent[]; readonly configs?: readonly number[] }
  | { readonly kind: 'configs'; readonly configs: readonly Configuration[] }
  | { readonly kind: 'chart'; readonly chart: ChartMachine }
  | {
      readonly kind: 'state'
      readonly config: number
      /** The agent's public status, and whether its actor still runs. */
      readonly status: 'idle' | 'running'
      readonly actor: 'active' | 'done' | 'error' | 'stopped'
      /** Transitions since the last state message (at most a handful, newest last). */
      readonly transitions: readonly TransitionMark[]
    }
  | { readonly kind: 'notes'; readonly arrivals: readonly ArrivalNote[]; readonly cancels: readonly CancelNote[] }
  /** Child sessions this one's calls started, each served at `/api/live?session=<sessionId>`. */
  | { readonly kind: 'links'; readonly links: readonly SessionLink[] }
  /** Nothing more will come: the session is stored, or the viewer is closing. */
  | { readonly kind: 'end'; readonly reason: string }

// agentchart/viewer: a local, offline viewer of an agent's statechart, timeline and log.
export { serveViewer } from './server.js'
export type { ViewerHandle, ViewerOptions, ViewerSource } from './server.js'
export { chartOf, leafPaths } from './chart.js'
export type {
  ActorState,
  ChartLayout,
  ChartLayoutEdge,
  ChartMachine,
  ChartNode,
  ChartTransition,
  Configuration,
  LayoutBox,
  ServerMessage,
  SessionLink,
  TransitionMark,
  WireEvent,
} from './page/protocol.js'

// How much machine work one turn of the workload is in agentchart: events
// delivered to actors, microsteps (eventless transitions included) and
// actions, counted through the public `inspect` option.
import type { InspectionEvent } from 'xstate'
import { agentchartLoop } from './loops/agentchart.js'

export interface Census {
  turns: number
  chunks: number
  eventsPerTurn: number
  microstepsPerTurn: number
  actionsPerTurn: number
  actors: number
  /** Event type → count per turn, most frequent first. */
  eventTypes: Record<string, number>
}

/** Count, per turn, what the agent's actors process; `turns` turns of one agent after one warm-up turn. */
export async function census(options: { chunks?: number; turns?: number }): Promise<Census> {
  const chunks = options.chunks ?? 16
  const turns = options.turns ?? 20
  let counting = false
  let events = 0
  let microsteps = 0
  let actions = 0
  const actors = new Set<string>()
  const types = new Map<string, number>()
  const inspect = (e: InspectionEvent) => {
    if (!counting) return
    if (e.type === '@xstate.event') {
      events++
      actors.add(e.actorRef.sessionId)
      types.set(e.event.type, (types.get(e.event.type) ?? 0) + 1)
    } else if (e.type === '@xstate.microstep') microsteps++
    else if (e.type === '@xstate.action') actions++
  }
  const loop = agentchartLoop({ inspect })
  loop.setChunks(chunks)
  const conv = await loop.conversation()
  await conv.turn('warm-up')
  counting = true
  for (let i = 0; i < turns; i++) await conv.turn(`question ${i}`)
  counting = false
  await conv.close?.()
  return {
    turns,
    chunks,
    eventsPerTurn: events / turns,
    microstepsPerTurn: microsteps / turns,
    actionsPerTurn: actions / turns,
    actors: actors.size,
    eventTypes: Object.fromEntries([...types].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, v / turns])),
  }
}

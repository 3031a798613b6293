// What agentchart's machine alone costs per turn: the events one
// conversation's actor processed (its own raised and done events excluded)
// are recorded through `inspect`, then replayed on fresh actors of the same
// machine with the same input, with no runtime listening to the effects. The
// replayed actor takes exactly the recorded transitions: the effect ids it
// waits for come out the same, so every answer is awaited as it was.
import { createActor, type AnyEventObject, type InspectionEvent } from 'xstate'
import { agentMachine } from '../../src/machines/index.js'
import { cpuUs } from './clock.js'
import { agentchartLoop } from './loops/agentchart.js'

export interface MachineReplay {
  turns: number
  chunks: number
  eventsPerTurn: number
  /** Median CPU time per turn of the replay (actor creation amortised over the conversation's turns), µs. */
  turnUs: number
  samples: number[]
}

/** Record one conversation of `turns` turns, then time replays of its events in batches of about `batchMs`. */
export async function replayMachine(options: { chunks?: number; turns?: number; reps?: number; batchMs?: number; warmup?: number }): Promise<MachineReplay> {
  const chunks = options.chunks ?? 16
  const turns = options.turns ?? 6
  const events: AnyEventObject[] = []
  let recording = true
  const inspect = (e: InspectionEvent) => {
    if (recording && e.type === '@xstate.event' && e.sourceRef !== e.actorRef) events.push(e.event)
  }
  const loop = agentchartLoop({ inspect })
  loop.setChunks(chunks)
  const conv = await loop.conversation()
  for (let i = 0; i < turns; i++) await conv.turn(`question ${i}`)
  recording = false
  const input = (conv.agent.actor as unknown as { options: { input: unknown } }).options.input
  await conv.close()
  const replay = () => {
    const actor = createActor(agentMachine, { input: input as never })
    actor.start()
    for (const event of events) actor.send(event as never)
    actor.stop()
  }
  // the replay must end where the conversation did: idle after `turns` turns
  const check = createActor(agentMachine, { input: input as never })
  check.start()
  for (const event of events) check.send(event as never)
  const end = check.getSnapshot()
  if (end.value !== 'idle' || end.context.turn !== turns) {
    throw new Error(`the replay ended in ${JSON.stringify(end.value)} after turn ${end.context.turn}, not idle after turn ${turns}`)
  }
  check.stop()
  for (let i = 0; i < (options.warmup ?? 200); i++) replay()
  const samples: number[] = []
  const batchUs = (options.batchMs ?? 150) * 1000
  for (let r = 0; r < (options.reps ?? 15); r++) {
    ;(globalThis as { gc?: () => void }).gc?.()
    const start = cpuUs()
    let n = 0
    while (cpuUs() - start < batchUs) {
      replay()
      n++
    }
    samples.push((cpuUs() - start) / n / turns)
  }
  const sorted = [...samples].sort((a, b) => a - b)
  return { turns, chunks, eventsPerTurn: events.length / turns, turnUs: sorted[Math.floor(sorted.length / 2)], samples }
}

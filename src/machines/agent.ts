// agent: the phases idle, running and maintenance (+ final disposed). Owns
// the inbox, the wake latch and the cancellation cause; runs one turn at a
// time and goes straight on to the next while work is pending (PH-4).
import { cancelIdle, cancelRunning, inboxOn, runningOn } from './active.js'
import { hasPending } from './inbox.js'
import { act, agentSetup, awaited, initialContext } from './setup.js'
import { turnState } from './turn.js'
import type { AgentContext } from './types.js'

const latchedWithWork = ({ context }: { context: AgentContext }) => context.latch && !context.disposing && hasPending(context)

/** After a completed or max-tokens turn, pending work opens the next turn at once (PH-4, Decision 5). */
const continues = ({ context }: { context: AgentContext }) =>
  (context.end?.kind === 'completed' || context.end?.kind === 'max-tokens') && context.cause === null && !context.disposing && hasPending(context)

/** Build the agent machine around a turn; a variant turn is for experiments and for proving the conformance suite can fail. */
export function buildAgentMachine(turn: typeof turnState = turnState) {
  return agentSetup.createMachine({
    id: 'agent',
    context: ({ input }) => initialContext(input),
    initial: 'resuming',
    on: inboxOn,
    states: {
      // RS-4: a crash-truncated log gets its closers before this instance does anything else
      resuming: {
        always: [
          {
            guard: ({ context }) => context.instance.repair.length > 0,
            target: 'repairing',
          },
          { target: 'idle' },
        ],
      },
      repairing: {
        entry: act((d) => {
          for (const closer of d.get('instance').repair) {
            const { type, data, intent } = closer
            d.emit({ type: 'fx.append', eventType: type, data, ...intent })
          }
          d.set({ instance: { ...d.get('instance'), repair: [] } })
          d.sync()
        }),
        on: {
          sync: { guard: awaited, target: 'idle' },
          fault: { target: 'idle', actions: act<'fault'>((d, e) => d.notify('agent/error', { turn: d.get('turn'), step: 0, error: e.error })) },
        },
      },
      idle: {
        // CX-13 / MT-3: a latched wake replays at convergence if work is still pending
        always: [
          { guard: latchedWithWork, target: 'running' },
          { guard: ({ context }) => context.latch, actions: act((d) => d.set({ latch: false })) },
        ],
        on: {
          'inbox.committed': [
            {
              guard: ({ event, context }) => event.wakeup && !context.disposing,
              target: 'running',
              actions: act<'inbox.committed'>((d, e) => d.notify('agent/inbox/inserted', { message: e.message })),
            },
            { actions: act<'inbox.committed'>((d, e) => d.notify('agent/inbox/inserted', { message: e.message })) },
          ],
          // CX-4: nothing to abort; without keepInbox parked items are discarded
          'agent.cancel': { actions: cancelIdle },
          'maintenance.start': { target: 'maintenance' },
          'agent.dispose': { target: 'disposed' },
        },
      },
      running: {
        initial: 'starting',
        on: runningOn,
        exit: act((d) => {
          d.notify('agent/status', { status: 'idle' })
          d.set({ cause: null })
        }),
        states: {
          // PH-2: status flips before turn/start; TU-3: a cancel from that listener opens no turn
          starting: {
            entry: act((d) => {
              d.set({ cause: null, latch: false })
              d.emit({ type: 'fx.signal' })
              d.notify('agent/status', { status: 'running' })
              d.sync()
            }),
            on: {
              sync: [
                { guard: ({ context, event }) => awaited({ context, event }) && context.cause !== null, target: '#agent.idle' },
                { guard: awaited, target: 'turn' },
              ],
            },
          },
          turn: { ...turn, onDone: 'next' },
          next: {
            always: [
              {
                guard: continues,
                target: 'turn',
                actions: act((d) => {
                  d.set({ latch: false })
                  d.emit({ type: 'fx.signal' })
                }),
              },
              { target: '#agent.idle' },
            ],
          },
        },
      },
      maintenance: {
        entry: act((d) => {
          d.set({ cause: null })
          d.emit({ type: 'fx.job', id: d.await() })
        }),
        exit: act((d) => d.set({ cause: null })),
        on: {
          'job.settled': { guard: awaited, target: 'idle' },
          // MT-5: abort the job; later wakes are forced into next-turn and latch
          'agent.cancel': { actions: cancelRunning },
          'inbox.committed': {
            actions: act<'inbox.committed'>((d, e) => {
              d.notify('agent/inbox/inserted', { message: e.message })
              if (e.wakeup && !d.get('disposing')) d.set({ latch: true })
            }),
          },
        },
      },
      disposed: { type: 'final' },
    },
  })
}

/** The agent: idle, running (one turn at a time), maintenance, disposed. */
export const agentMachine = buildAgentMachine()

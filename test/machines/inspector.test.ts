// What an inspector sees of one tool turn: the nested regions by their
// concept names, named actions and guards, and the few events a turn takes
// when nobody listens or watches (the machine decides every hook itself). The second test goes through
// @statelyai/inspect's own WebSocket bridge, offline, as docs/inspector.md does.
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { createWebSocketInspector, createWebSocketReceiver, type StatelyInspectionEvent } from '@statelyai/inspect'
import { createInspectorServer } from '@statelyai/inspect/server'
import { describe, expect, it } from 'vitest'
import type { InspectionEvent } from 'xstate'
import { z } from 'zod/v4'
import { createAgent, defineTool } from '../../src/index.js'
import { agentMachine } from '../../src/machines/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { tick } from '../helpers.js'

/** One turn of two steps: the model calls a tool, then answers. */
async function oneToolTurn(inspect: (event: InspectionEvent) => void) {
  const look = defineTool({ name: 'look', description: 'look around', input: z.object({}), executionMode: 'parallel', execute: () => 'a quiet room' })
  const model = scriptedModel([toolCallResponse([{ id: 'call-1', name: 'look', arguments: '{}' }]), textResponse('It is quiet.')])
  const agent = createAgent({ model, tools: [look], inspect, logger: { error: () => {} } })
  agent.followup('What is around?')
  await agent.whenIdle()
  return agent
}

/** Every key of a state value, at any depth. */
function regions(value: unknown, into = new Set<string>()): Set<string> {
  if (typeof value === 'string') into.add(value)
  else if (value && typeof value === 'object')
    for (const [key, inner] of Object.entries(value)) {
      into.add(key)
      regions(inner, into)
    }
  return into
}

/** One row per processed event: the event, the state it rests in afterwards, and the named actions it ran. */
function eventTable(seen: readonly InspectionEvent[]): string {
  const leaves = (value: unknown, prefix = ''): string[] =>
    typeof value === 'string'
      ? [prefix ? `${prefix}.${value}` : value]
      : Object.entries(value as object).flatMap(([key, inner]) => leaves(inner, prefix ? `${prefix}.${key}` : key))
  const rows = [['event', 'state afterwards', 'named actions']]
  let actions: string[] = []
  for (const e of seen) {
    const batch = emittedBatch(e)
    if (batch) actions.push(batch.action)
    if (e.type !== '@xstate.snapshot') continue
    const state = leaves((e.snapshot as unknown as { value: unknown }).value)
      .map((leaf) => leaf.replace('running.turn.step.toolBatch', '…toolBatch'))
      .join(' + ')
    rows.push([e.event.type, state, actions.join(', ')])
    actions = []
  }
  const width = (i: number) => Math.max(...rows.map((r) => r[i].length)) + 2
  return rows.map((r) => `${r[0].padEnd(width(0))}${r[1].padEnd(width(1))}${r[2]}`.trimEnd()).join('\n')
}

/** The effects a named action emitted, if this inspection event is one: they carry the action's name. */
function emittedBatch(e: InspectionEvent): { action: string; effects: { type: string }[] } | undefined {
  if (e.type !== '@xstate.action' || e.action.type !== 'xstate.emit') return undefined
  const event = (e.action.params as { event?: { type?: string; action?: string; effects?: { type: string }[] } } | undefined)?.event
  return event?.type === 'effects' ? (event as { action: string; effects: { type: string }[] }) : undefined
}

/** The label of a guard as the machine names it (`isAwaited`, `and(isAwaited, isRejected)`). */
const guardLabel = (guard: unknown) =>
  typeof guard === 'string' ? guard : typeof guard === 'function' ? guard.name : String((guard as { type?: string })?.type)

describe('the inspector view of one tool turn', () => {
  it('shows turn, step, attempt and toolBatch as named regions, named actions and guards, and only the events outside work answers', async () => {
    const seen: InspectionEvent[] = []
    await oneToolTurn((event) => void seen.push(event))
    const events = seen.filter((e) => e.type === '@xstate.event').map((e) => (e as { event: { type: string } }).event.type)
    // nobody listens or watches: no hook round trip, no classification, and one acknowledgement, of turn/end
    expect(events.filter((type) => type !== 'xstate.init')).toEqual([
      'inbox.send',
      'request.prepared',
      'model.settled', // the tool call
      'tool.settled',
      'request.prepared',
      'model.settled', // the answer
      'appends.confirmed', // turn/end is in the log before the agent rests
    ])

    // the nested regions read as the lifecycle
    const values = seen.filter((e) => e.type === '@xstate.snapshot').map((e) => (e as unknown as { snapshot: { value: unknown } }).snapshot.value)
    const keys = new Set(values.flatMap((v) => [...regions(v)]))
    for (const region of ['running', 'turn', 'step', 'attempt', 'toolBatch', 'streaming', 'dispatch', 'commit']) expect(keys, region).toContain(region)
    expect(values).toContainEqual({ running: { turn: { step: { attempt: 'streaming' } } } })

    // every action reported is XState's emit of one named action's effects, under that action's name
    const actions = seen.filter((e) => e.type === '@xstate.action').map((e) => (e as { action: { type: string } }).action.type)
    expect([...new Set(actions)]).toEqual(['xstate.emit'])
    const named = seen.flatMap((e) => emittedBatch(e)?.action ?? [])
    const names = new Set(Object.keys(agentMachine.implementations.actions))
    expect(named.filter((name) => !names.has(name))).toEqual([])
    for (const name of ['insertSent', 'announceRunning', 'openTurn', 'propose', 'openStep', 'dispatchRequest', 'appendAnchor'])
      expect(named, name).toContain(name)
    for (const name of ['startNextCall', 'settleAndCommit', 'closeStep', 'closeTurn', 'announceIdle']) expect(named, name).toContain(name)

    // every guard of a taken transition reads as names, through and/or/not
    const guards = seen
      .filter((e) => e.type === '@xstate.microstep')
      .flatMap((e) => ((e as unknown as { _transitions: Array<{ guard?: unknown }> })._transitions ?? []).map((t) => t.guard))
      .filter((g) => g !== undefined)
      .map(guardLabel)
    const guardNames = Object.keys(agentMachine.implementations.guards)
    expect(guards.length).toBeGreaterThanOrEqual(10)
    for (const label of guards)
      expect(
        label
          .split(/[(), ]+/)
          .filter((w) => w && !['and', 'or', 'not'].includes(w))
          .every((w) => guardNames.includes(w)),
        label,
      ).toBe(true)
    expect(guards).toContain('isAwaited')
    expect(guards.some((g) => g.startsWith('and('))).toBe(true)
  })

  it('docs/inspector.md shows the events of this turn as the agent processes them today', async () => {
    const seen: InspectionEvent[] = []
    await oneToolTurn((event) => void seen.push(event))
    let doc = readFileSync('docs/inspector.md', 'utf8')
    if (process.env.AGENTCHART_REFRESH_DOCS) {
      doc = doc.replace(/(<!-- captured:tool-turn -->\n```text\n)[\s\S]*?(\n```)/, (_all, open: string, close: string) => `${open}${eventTable(seen)}${close}`)
      writeFileSync('docs/inspector.md', doc)
    }
    const block = /<!-- captured:tool-turn -->\n```text\n([\s\S]*?)\n```/.exec(doc)?.[1]
    expect(block, 'refresh the list with AGENTCHART_REFRESH_DOCS=1').toBe(eventTable(seen))
  })

  it('reaches the Stately inspector through @statelyai/inspect: the whole definition, the events and the region values', async () => {
    const port = await freePort()
    const server = createInspectorServer({ port, autoOpen: false })
    const received: StatelyInspectionEvent[] = []
    const receiver = createWebSocketReceiver({ server: `ws://localhost:${port}` })
    receiver.subscribe((event) => void received.push(event))
    // the agent's definition is deep: the default depth of 10 would cut the tool batch out of it
    const inspector = createWebSocketInspector({ url: `ws://localhost:${port}`, serializationDepthLimit: 40 })
    try {
      const agent = await oneToolTurn(inspector.inspect.next!)
      const snapshots = () => received.filter((e) => e.type === '@xstate.snapshot')
      for (let i = 0; i < 200 && !snapshots().some((e) => (e.snapshot as unknown as { value?: unknown }).value === 'idle' && snapshots().length > 10); i++)
        await tick(25)
      const actor = received.find((e) => e.type === '@xstate.actor') as { definition: string; sessionId: string } | undefined
      expect(actor?.sessionId).toBe(agent.actor.sessionId)
      const definition = JSON.parse(actor!.definition) as unknown
      const text = JSON.stringify(definition)
      for (const name of [
        '"toolBatch"',
        '"commitResult"',
        '"closeTurn"',
        '"isAwaited"',
        '"and(isAwaited, isRejected)"',
        '"preExecuting"',
        '"and(not(isCommitBusy), mayStartNext, not(asksPreExecute))"',
      ])
        expect(text, name).toContain(name)
      const types = received.filter((e) => e.type === '@xstate.event').map((e) => (e.event as { type: string }).type)
      expect(types).toContain('model.settled')
      expect(types.filter((t) => t === 'appends.confirmed')).toHaveLength(1)
      expect(snapshots().map((e) => JSON.stringify((e.snapshot as unknown as { value: unknown }).value))).toContain(
        JSON.stringify({ running: { turn: { step: { attempt: 'streaming' } } } }),
      )
    } finally {
      inspector.stop()
      server.stop()
    }
  })
})

/** A port nobody listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

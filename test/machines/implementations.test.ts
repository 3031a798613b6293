// Named implementations: every action and guard of every machine is declared
// by name in its setup and referred to by that name, so `.provide()` can swap
// any of them; a provided machine runs under createAgent.
import { describe, expect, it } from 'vitest'
import { createActor, type AnyStateMachine } from 'xstate'
import { userMessage } from '../../src/index.js'
import { agentMachine, attemptMachine, stepMachine, toolBatchMachine, turnMachine } from '../../src/machines/index.js'
import { textResponse } from '../../src/testing/index.js'
import { scriptedAgent, trace } from '../helpers.js'

interface Node {
  id: string
  entry: unknown[]
  exit: unknown[]
  always?: Array<{ guard?: unknown; actions: unknown[] }>
  transitions: Map<string, Array<{ guard?: unknown; actions: unknown[] }>>
  states: Record<string, Node>
}

/** The names a machine's config refers to, and any implementation written inline instead of by name. */
function references(machine: AnyStateMachine) {
  const actions = new Set<string>()
  const guards = new Set<string>()
  const inline: string[] = []
  const guard = (where: string, g: unknown): void => {
    if (g === undefined) return
    if (typeof g === 'string') guards.add(g)
    else if (typeof g === 'object' && g !== null && 'type' in g) guards.add(String((g as { type: unknown }).type))
    else if (typeof g === 'function' && Array.isArray((g as { guards?: unknown }).guards)) {
      for (const inner of (g as unknown as { guards: unknown[] }).guards) guard(where, inner)
    } else inline.push(`guard at ${where}`)
  }
  const action = (where: string, a: unknown): void => {
    if (typeof a === 'string') actions.add(a)
    else if (typeof a === 'object' && a !== null && 'type' in a) actions.add(String((a as { type: unknown }).type))
    else inline.push(`action at ${where}`)
  }
  const visit = (node: Node) => {
    node.entry.forEach((a) => action(`${node.id} entry`, a))
    node.exit.forEach((a) => action(`${node.id} exit`, a))
    const transitions = [
      ...(node.always ?? []).map((t) => ['always', t] as const),
      ...[...node.transitions].flatMap(([e, ts]) => ts.map((t) => [e, t] as const)),
    ]
    for (const [event, t] of transitions) {
      guard(`${node.id} ${event}`, t.guard)
      t.actions.forEach((a) => action(`${node.id} ${event}`, a))
    }
    Object.values(node.states).forEach(visit)
  }
  visit(machine.root as unknown as Node)
  return { actions, guards, inline }
}

const machines = { agentMachine, turnMachine, stepMachine, attemptMachine, toolBatchMachine }

describe('named implementations', () => {
  for (const [name, machine] of Object.entries(machines)) {
    it(`${name}: every action and guard is named, and every name is an implementation of its setup`, () => {
      const { actions, guards, inline } = references(machine)
      expect(inline).toEqual([])
      const implementations = machine.implementations
      expect([...actions].filter((a) => typeof implementations.actions[a] !== 'function')).toEqual([])
      expect([...guards].filter((g) => typeof implementations.guards[g] !== 'function')).toEqual([])
    })
  }

  it('agentMachine.implementations holds exactly the actions and guards its states use', () => {
    const { actions, guards } = references(agentMachine)
    expect(Object.keys(agentMachine.implementations.actions).sort()).toEqual([...actions].sort())
    expect(Object.keys(agentMachine.implementations.guards).sort()).toEqual([...guards].sort())
    expect(actions.size).toBeGreaterThan(50)
    expect(guards.size).toBeGreaterThan(30)
  })

  it('named actions are ordinary XState enqueueActions implementations, each emitting its effects as one event', () => {
    const forms = new Set(Object.values(agentMachine.implementations.actions).map((a) => (a as unknown as { type: string }).type))
    expect([...forms]).toEqual(['xstate.enqueueActions'])
  })

  it('.provide() with a replaced guard changes what a real agent logs: a rejected proposal opens a step', async () => {
    const run = async (machine = agentMachine) => {
      const { agent } = scriptedAgent([textResponse('stepped anyway')], { machine })
      agent.on('agent/pre-step', () => ({ kind: 'reject' }))
      agent.followup(userMessage('hi'))
      await agent.whenIdle()
      return trace(agent)
    }
    expect(await run()).toEqual(['spliced(next-turn +1)', 'turn/start{1}', 'spliced(next-turn -1)', 'turn/end{1,blocked}'])
    const broken = await run(agentMachine.provide({ guards: { isRejected: () => false } }))
    expect(broken).toContain('step/start{1,1}')
    expect(broken.at(-1)).toBe('turn/end{1,completed}')
  })
})

describe('what the machines depend on', () => {
  it('src/ uses only the public API of XState: no action executors, resolve hooks, snapshot internals or deep imports', async () => {
    const { readdirSync, readFileSync, statSync } = await import('node:fs')
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = `${dir}/${name}`
        return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
      })
    // the inspection protocol's `_transitions` (InspectedMicrostepEvent) is part of XState's exported types
    const internals =
      /actionExecutor|\bresolve = resolve|resolveDraftAction|retryResolve|_nodes|_processEvent|_actorScope|_syncSnapshot|getTransitionData|xstate\/dist/
    const found = files('src').flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (internals.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    )
    expect(found).toEqual([])
  })

  it('src/machines imports only its own folder, the session schemas and vocabulary, and xstate', async () => {
    const { readdirSync, readFileSync } = await import('node:fs')
    const outside: string[] = []
    for (const file of readdirSync('src/machines').filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(`src/machines/${file}`, 'utf8')
      for (const [, spec] of text.matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
        if (!(spec.startsWith('./') || spec === '../session/schemas.js' || spec === '../session/vocabulary.js' || spec === 'xstate'))
          outside.push(`${file}: ${spec}`)
      }
    }
    expect(outside).toEqual([])
  })

  it('the context keeps few top-level keys, so the copy XState makes on every assign stays a fast object', () => {
    // V8 keeps an object that Object.assign builds with 20 or more keys as a dictionary, about 10x slower to copy
    const actor = createActor(agentMachine, { input: {} as never }).start()
    const keys = Object.keys(actor.getSnapshot().context)
    actor.stop()
    expect(keys.length).toBeLessThanOrEqual(18)
  })
})

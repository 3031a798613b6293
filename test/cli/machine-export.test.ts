// The editor export: per machine, a JSON definition and one literal
// createMachine source in docs/machines/. They must be what the machines
// generate today, static (nothing but literals and and/or/not calls), and,
// loaded back, the same states and transitions as the live machine.
import { readFileSync } from 'node:fs'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { and, createMachine, not, or, type AnyStateMachine } from 'xstate'
import { machineExports, type GuardDefinition, type StateDefinition } from '../../src/cli/machine-export.js'
import { agentMachine, attemptMachine, stepMachine, toolBatchMachine, turnMachine } from '../../src/machines/index.js'

const live: Record<string, AnyStateMachine> = {
  agent: agentMachine,
  turn: turnMachine,
  step: stepMachine,
  attempt: attemptMachine,
  'tool-batch': toolBatchMachine,
}

interface Node {
  id: string
  type: string
  entry: unknown[]
  exit: unknown[]
  always?: Transition[]
  transitions: Map<string, Transition[]>
  states: Record<string, Node>
}
interface Transition {
  target?: Array<{ id: string }>
  guard?: unknown
  actions: unknown[]
  reenter?: boolean
}

const name = (ref: unknown) => (typeof ref === 'string' ? ref : String((ref as { type?: unknown }).type))
const guardText = (g: unknown): string =>
  g === undefined
    ? ''
    : typeof g === 'function' && Array.isArray((g as { guards?: unknown }).guards)
      ? `${g.name.split('(')[0]}(${(g as unknown as { guards: unknown[] }).guards.map(guardText).join(', ')})`
      : name(g)

/** Everything that makes a machine what it is: each state with its type, entry and exit, and each transition in priority order. */
function shape(machine: AnyStateMachine): string[] {
  const out: string[] = []
  const transition = (node: Node, event: string, t: Transition, i: number) =>
    out.push(
      `${node.id} ${event}#${i} -> ${(t.target ?? []).map((s) => s.id).join(',')} [${guardText(t.guard)}] / ${t.actions.map(name).join(',')}${t.reenter ? ' reenter' : ''}`,
    )
  const visit = (node: Node) => {
    out.push(`${node.id} (${node.type}) entry ${node.entry.map(name).join(',')} exit ${node.exit.map(name).join(',')}`)
    ;(node.always ?? []).forEach((t, i) => transition(node, 'always', t, i))
    for (const [event, list] of [...node.transitions].sort(([a], [b]) => (a < b ? -1 : 1))) list.forEach((t, i) => transition(node, event, t, i))
    Object.values(node.states).forEach(visit)
  }
  visit(machine.root as unknown as Node)
  return out
}

/** The JSON definition back into a config XState takes (guards as and/or/not calls). */
function toConfig(state: StateDefinition): unknown {
  const guard = (g: GuardDefinition): unknown =>
    typeof g === 'string' ? g : g.type === 'not' ? not(guard(g.guards[0]) as never) : (g.type === 'and' ? and : or)(g.guards.map(guard) as never)
  const transitions = (list?: StateDefinition['always']) => list?.map((t) => ({ ...t, ...(t.guard !== undefined ? { guard: guard(t.guard) } : {}) }))
  return {
    ...state,
    ...(state.on ? { on: Object.fromEntries(Object.entries(state.on).map(([e, list]) => [e, transitions(list)])) } : {}),
    ...(state.always ? { always: transitions(state.always) } : {}),
    ...(state.onDone ? { onDone: transitions(state.onDone) } : {}),
    ...(state.states ? { states: Object.fromEntries(Object.entries(state.states).map(([k, s]) => [k, toConfig(s)])) } : {}),
  }
}

/** Why the createMachine argument of a source is not a plain literal, or null when it is. */
function notLiteral(source: string): string | null {
  const file = ts.createSourceFile('machine.ts', source, ts.ScriptTarget.ES2022, true)
  let call: ts.CallExpression | undefined
  const find = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.expression.getText() === 'createMachine') call = node
    ts.forEachChild(node, find)
  }
  find(file)
  if (!call || call.arguments.length !== 1) return 'no createMachine call with one argument'
  let why: string | null = null
  const check = (node: ts.Node): void => {
    if (why) return
    if (ts.isObjectLiteralExpression(node) || ts.isArrayLiteralExpression(node) || ts.isPropertyAssignment(node)) return ts.forEachChild(node, check)
    if (ts.isStringLiteral(node) || ts.isNumericLiteral(node) || node.kind === ts.SyntaxKind.TrueKeyword || ts.isIdentifier(node)) {
      // identifiers may only be property names
      if (ts.isIdentifier(node) && !(ts.isPropertyAssignment(node.parent) && node.parent.name === node)) why = `an identifier ${node.text}`
      return
    }
    if (ts.isCallExpression(node) && ['and', 'or', 'not'].includes(node.expression.getText())) return node.arguments.forEach(check)
    why = `${ts.SyntaxKind[node.kind]}: ${node.getText().slice(0, 60)}`
  }
  check(call.arguments[0])
  return why
}

describe('the editor export (agentchart diagram)', () => {
  const exports = machineExports()

  it('docs/machines holds the definitions and sources the machines generate today (run `npm run diagrams` after changing a machine)', () => {
    expect(exports.map((e) => e.file)).toEqual(Object.keys(live))
    for (const { file, json, source } of exports) {
      expect(readFileSync(`docs/machines/${file}.json`, 'utf8'), `${file}.json`).toBe(json)
      expect(readFileSync(`docs/machines/${file}.machine.ts`, 'utf8'), `${file}.machine.ts`).toBe(source)
    }
  })

  it('each generated source is one literal config: only strings, objects, arrays and and/or/not of names', () => {
    for (const { file, source } of exports) expect(notLiteral(source), file).toBeNull()
    // the whole agent is in one file: every state, nested machines included
    expect(exports[0].source.match(/\n\s+\w+: \{\n/g)?.length).toBeGreaterThan(40)
  })

  for (const file of Object.keys(live)) {
    it(`${file}: the generated source and the JSON definition, loaded back, have the states and transitions of the live machine`, async () => {
      const expected = shape(live[file])
      const loaded = (await import(`../../docs/machines/${file}.machine.ts`)) as Record<string, AnyStateMachine>
      const machine = Object.values(loaded)[0]
      expect(shape(machine)).toEqual(expected)
      const definition = exports.find((e) => e.file === file)!.definition
      expect(shape(createMachine(toConfig(definition.config) as never))).toEqual(expected)
      // the names it lists are implementations of the live machine (all of them for the agent, which uses every one)
      const { actions, guards } = live[file].implementations
      expect(definition.actions.filter((a) => !(a in actions))).toEqual([])
      expect(definition.guards.filter((g) => !(g in guards))).toEqual([])
      if (file === 'agent') expect([definition.actions, definition.guards]).toEqual([Object.keys(actions).sort(), Object.keys(guards).sort()])
      expect(expected.length).toBeGreaterThan(20)
    })
  }
})

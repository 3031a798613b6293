// Spans beyond one agent's log: a maintenance job (live only: the log does not hold it) and a subagent's turns
// nested under the parent's execute_tool span, live and from the stored logs.
import { SpanStatusCode } from '@opentelemetry/api'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { agentTool, ConfigError, createAgent, createSession, type Agent } from '../../src/index.js'
import { memoryStore } from '../../src/stores/index.js'
import { exportSessionSpans } from '../../src/telemetry/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, track } from '../helpers.js'
import { memoryTracer, spanTree, steppingClock, watchedTracer, type SpanNode } from './support.js'

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })
const names = (nodes: readonly SpanNode[]): unknown[] => nodes.map((n) => (n.children.length ? [n.name, names(n.children)] : n.name))

/** The child session each delegating call of `parent` names, by call id. */
const childOf = (parent: Agent) =>
  new Map(ofType(parent, 'tool/result').map((e) => [e.data.message.source.callId, (e.data.meta as { subagent: { sessionId: string } }).subagent.sessionId]))

/** A parent that delegates twice in parallel, stored with its children. */
function delegatingParent(tracer: ReturnType<typeof memoryTracer>['tracer'] | undefined, store = memoryStore()) {
  const research = agentTool({
    name: 'research',
    description: 'Research a topic',
    input: z.object({ task: z.string() }),
    executionMode: 'parallel',
    agent: ({ task }) => ({ model: scriptedModel([textResponse(`notes on ${task}`)]) }),
  })
  const model = scriptedModel([toolCallResponse([call('r1', 'research', { task: 'a' }), call('r2', 'research', { task: 'b' })]), textResponse('both done')])
  return { store, research, model, ...(tracer ? { telemetry: { tracer } } : {}) }
}

describe('telemetry beyond the log', () => {
  it("a maintenance job is a root span from its start to its end; a failing job's span is ERROR with the error's code", async () => {
    const otel = memoryTracer()
    const agent = track(
      createAgent({ model: scriptedModel([textResponse('hi')]), session: createSession({ now: steppingClock() }), telemetry: { tracer: otel.tracer } }),
    )
    await agent.run('hello')
    expect(await agent.runMaintenance(async () => 'tidied')).toBe('tidied')
    const failure = Object.assign(new Error('disk full'), { code: 'DISK_FULL' })
    await expect(agent.runMaintenance(async () => Promise.reject(failure))).rejects.toBe(failure)

    const roots = spanTree(otel.spans())
    expect(roots.map((n) => n.name)).toEqual(['invoke_agent', 'maintenance', 'maintenance'])
    const [, ok, failed] = roots
    expect(ok.attributes).toMatchObject({ 'agentchart.state': 'maintenance', 'gen_ai.conversation.id': agent.id })
    expect(ok.status.code).toBe(SpanStatusCode.UNSET)
    expect(ok.start).toBeGreaterThanOrEqual(roots[0].end)
    expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: 'disk full' })
    expect(failed.attributes['error.type']).toBe('DISK_FULL')
  })

  it('a cancelled maintenance job ends its span marked cancelled, with the cause', async () => {
    const otel = memoryTracer()
    const agent = track(createAgent({ model: scriptedModel([]), telemetry: { tracer: otel.tracer } }))
    const job = agent.runMaintenance((signal) => new Promise<string>((resolve) => signal.addEventListener('abort', () => resolve('stopped'), { once: true })))
    agent.cancel({ kind: 'user' })
    expect(await job).toBe('stopped')
    const [span] = spanTree(otel.spans())
    expect(span.name).toBe('maintenance')
    expect(span.attributes).toMatchObject({ 'agentchart.cancelled': true, 'agentchart.cancel.cause': 'user' })
  })

  it("a subagent's turns nest under the parent's execute_tool span, live, and the same tree comes from the stored logs", async () => {
    const otel = memoryTracer()
    const { store, research, model, telemetry } = delegatingParent(otel.tracer)
    const parent: Agent = track(await createAgent({ store, sessionId: 'planner', model, tools: [research], telemetry }))
    const result = await parent.run('research a and b')
    expect(result.text).toBe('both done')

    const live = spanTree(otel.spans())
    expect(names(live)).toEqual([
      [
        'invoke_agent',
        [
          [
            'step',
            [
              'chat scripted-1',
              ['execute_tool research', [['invoke_agent', [['step', ['chat scripted-1']]]]]],
              ['execute_tool research', [['invoke_agent', [['step', ['chat scripted-1']]]]]],
            ],
          ],
          ['step', ['chat scripted-1']],
        ],
      ],
    ])
    const [first, second] = live[0].children[0].children.filter((n) => n.name === 'execute_tool research')
    const childIds = ofType(parent, 'tool/result').map((e) => (e.data.meta as { subagent: { sessionId: string } }).subagent.sessionId)
    expect([first, second].map((n) => n.children[0].attributes['gen_ai.conversation.id']).sort()).toEqual([...childIds].sort())
    // the child's turn lies within the call that made it
    for (const callSpan of [first, second]) {
      expect(callSpan.children[0].start).toBeGreaterThanOrEqual(callSpan.start)
      expect(callSpan.children[0].end).toBeLessThanOrEqual(callSpan.end)
    }

    const stored = new Map<string, readonly unknown[]>()
    for (const id of childIds) stored.set(id, (await store.load(id))!)
    const exported = memoryTracer()
    const written = exportSessionSpans((await store.load('planner'))!, { tracer: exported.tracer, sessionId: 'planner', children: (id) => stored.get(id) })
    expect(written).toBe(otel.spans().length)
    expect(spanTree(exported.spans())).toEqual(live)
  })

  it("without children the export is the parent's tree alone; a child the lookup does not know is left out", async () => {
    const { store, research, model } = delegatingParent(undefined)
    const parent = track(await createAgent({ store, sessionId: 'planner', model, tools: [research] }))
    await parent.run('go')
    const log = (await store.load('planner'))!
    const alone = memoryTracer()
    exportSessionSpans(log, { tracer: alone.tracer, sessionId: 'planner' })
    const partial = memoryTracer()
    const [known] = ofType(parent, 'tool/result').map((e) => (e.data.meta as { subagent: { sessionId: string } }).subagent.sessionId)
    const knownLog = (await store.load(known))!
    exportSessionSpans(log, { tracer: partial.tracer, sessionId: 'planner', children: (id) => (id === known ? knownLog : undefined) })
    expect(alone.spans().filter((s) => s.name === 'invoke_agent')).toHaveLength(1)
    expect(partial.spans().filter((s) => s.name === 'invoke_agent')).toHaveLength(2)
    expect(() => exportSessionSpans(log, { tracer: alone.tracer, children: 'nope' as never })).toThrow(ConfigError)
    expect(() => exportSessionSpans(log, { tracer: alone.tracer, children: 'nope' as never })).toThrow(/options\.children/)
  })
})

describe('telemetry: a child log the export cannot read', () => {
  async function storedParent() {
    const { store, research, model } = delegatingParent(undefined)
    const parent = track(await createAgent({ store, sessionId: 'planner', model, tools: [research] }))
    await parent.run('go')
    const ids = childOf(parent)
    const [good, bad] = [ids.get('r1')!, ids.get('r2')!]
    return { log: (await store.load('planner'))!, good, goodLog: (await store.load(good))!, bad }
  }

  it("is left out, the call's span records why, and the parent's trace and the other child are written whole", async () => {
    const { log, good, goodLog, bad } = await storedParent()
    const unreadable: [string, (id: string) => readonly unknown[] | undefined, Record<string, unknown>][] = [
      ['a malformed log', () => [{ bogus: true }], { 'error.type': 'SESSION_APPEND_REFUSED', 'agentchart.subagent.error': expect.stringMatching(/bogus/) }],
      [
        'a lookup that throws',
        () => {
          throw new Error('no such log')
        },
        { 'error.type': 'Error', 'agentchart.subagent.error': 'no such log' },
      ],
      [
        'not an array',
        () => ({ events: [] }) as never,
        { 'error.type': 'STORED_LOG_INVALID', 'agentchart.subagent.error': `session ${bad}: not an array of events, got {"events":[]}` },
      ],
    ]
    for (const [label, lookup, why] of unreadable) {
      const otel = memoryTracer()
      const watched = watchedTracer(otel.tracer)
      const written = exportSessionSpans(log, { tracer: watched.tracer, sessionId: 'planner', children: (id) => (id === good ? goodLog : lookup(id)) })
      expect(watched.open(), label).toEqual([])
      expect(written, label).toBe(otel.spans().length)
      const [turn] = spanTree(otel.spans())
      const calls = turn.children[0].children.filter((n) => n.name === 'execute_tool research')
      const kept = calls.find((n) => n.attributes['gen_ai.tool.call.id'] === 'r1')!
      const skipped = calls.find((n) => n.attributes['gen_ai.tool.call.id'] === 'r2')!
      expect(names(kept.children), label).toEqual([['invoke_agent', [['step', ['chat scripted-1']]]]])
      expect(skipped.children, label).toEqual([])
      expect(skipped.events, label).toEqual([
        { name: 'agentchart.subagent.unreadable', time: skipped.end, attributes: { 'agentchart.subagent.session_id': bad, ...why } },
      ])
      // the call itself succeeded: only the export of its child failed
      expect(skipped.status.code, label).toBe(SpanStatusCode.UNSET)
    }
  })

  it('a lookup that returns a Promise is a ConfigError naming options.children, thrown with every started span ended', async () => {
    const { log } = await storedParent()
    const otel = memoryTracer()
    const watched = watchedTracer(otel.tracer)
    let error: unknown
    try {
      exportSessionSpans(log, { tracer: watched.tracer, sessionId: 'planner', children: (async () => []) as never })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect(error).toMatchObject({ path: 'options.children', message: expect.stringMatching(/Promise/) })
    expect(watched.open()).toEqual([])
    expect(spanTree(otel.spans())[0].attributes['agentchart.incomplete']).toBe(true)
  })

  it("a tracer that fails inside a child's export: every span started, the parent's and the child's, ends marked incomplete before its error comes out", async () => {
    const { log, goodLog } = await storedParent()
    const otel = memoryTracer()
    // the parent's turn, step, chat and both calls, then the first child's turn and step; its chat start throws
    const watched = watchedTracer(otel.tracer, 7)
    expect(() => exportSessionSpans(log, { tracer: watched.tracer, sessionId: 'planner', children: () => goodLog })).toThrow('exporter down')
    expect(watched.open()).toEqual([])
    const [turn] = spanTree(otel.spans())
    const [step] = turn.children
    expect(step.children.map((n) => n.name)).toEqual(['chat scripted-1', 'execute_tool research', 'execute_tool research'])
    // the first child's export was under way: its turn and step had started
    expect(step.children.flatMap((n) => names(n.children))).toEqual([['invoke_agent', ['step']]])
    const all = (n: SpanNode): SpanNode[] => [n, ...n.children.flatMap(all)]
    expect(
      all(turn)
        .filter((n) => n.attributes['agentchart.incomplete'] !== true)
        .map((n) => n.name),
    ).toEqual(['chat scripted-1'])
  })
})

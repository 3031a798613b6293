// The viewer's server: what it serves, what it refuses, and what its live channel carries.
import { afterEach, describe, expect, it } from 'vitest'
import { renderMachineDiagrams } from '../../src/cli/diagram.js'
import { z } from 'zod'
import { agentTool, createAgent, type Agent, type SessionEvent } from '../../src/index.js'
import { agentMachine } from '../../src/machines/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { chartOf, leafPaths } from '../../src/viewer/chart.js'
import { serveViewer, type ViewerHandle } from '../../src/viewer/index.js'
import type { ChartNode, Configuration, ServerMessage } from '../../src/viewer/page/protocol.js'
import { subagentsExample } from '../../examples/subagents.js'
import { scenario } from './scenario.js'
import { get, openLive } from './sse.js'

const open: Array<ViewerHandle | Agent> = []
afterEach(async () => {
  for (const thing of open.splice(0)) await (thing instanceof Object && 'dispose' in thing ? thing.dispose() : thing.close())
})

async function viewerOf(agentOrEvents: Parameters<typeof serveViewer>[0], options: Parameters<typeof serveViewer>[1] = {}) {
  const viewer = await serveViewer(agentOrEvents, { print: false, ...options })
  open.push(viewer)
  const url = new URL(viewer.url)
  const live = (extra = '') => `http://${url.host}/api/live?token=${url.searchParams.get('token')}${extra}`
  return { viewer, url, live }
}

function textAgent(...texts: string[]) {
  const agent = createAgent({ model: scriptedModel(texts.map((t) => textResponse(t))), logger: { error: () => {} } })
  open.push(agent)
  return agent
}

const nodes = (node: ChartNode): ChartNode[] => [node, ...node.children.flatMap(nodes)]

/** The children's logs by session id, matched the way the logs name each other: the parent's result names the child's session, the child's prompt the parent's call. */
function bySession(parent: readonly SessionEvent[], children: readonly (readonly SessionEvent[])[]): Map<string, readonly SessionEvent[]> {
  const out = new Map<string, readonly SessionEvent[]>()
  for (const event of parent) {
    if (event.type !== 'tool/result') continue
    const sessionId = (event.data.meta as { subagent?: { sessionId: string } } | undefined)?.subagent?.sessionId
    const callId = event.data.message.source.callId
    const log = children.find((c) => c.some((e) => e.type === 'user/message' && (e.data.source as { parentCallId?: string }).parentCallId === callId))
    if (sessionId && log) out.set(sessionId, log)
  }
  return out
}

describe('viewer server', () => {
  it('binds loopback, prints a tokened URL, and serves only its own files with a strict policy', async () => {
    const printed: string[] = []
    const { viewer, url } = await viewerOf([], { print: (line) => printed.push(line) })
    expect(viewer.host).toBe('127.0.0.1')
    expect(url.hostname).toBe('127.0.0.1')
    expect(url.searchParams.get('token')).toMatch(/^[\w-]{20,}$/)
    expect(printed).toEqual([viewer.url])

    const page = await get(`http://${url.host}/`)
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
    expect(page.headers['content-security-policy']).toContain("default-src 'none'")
    expect(page.headers['content-security-policy']).toContain("connect-src 'self'")
    expect(page.body).toContain('/assets/main.js')
    // the page references nothing outside this server
    expect(page.body).not.toMatch(/https?:\/\//)
    const script = await get(`http://${url.host}/assets/main.js`)
    expect(script.status).toBe(200)
    expect(script.headers['content-type']).toMatch(/^text\/javascript/)

    for (const path of [
      '/assets/../package.json',
      '/assets/..%2F..%2Fpackage.json',
      '/assets/%2e%2e/%2e%2e/package.json',
      '/package.json',
      '/src/index.ts',
      '/assets/',
    ]) {
      expect((await get(`http://${url.host}${path}`)).status, path).toBe(404)
    }
    expect((await get(`http://${url.host}/`, {}, 'POST')).status).toBe(405)
    expect((await get(`http://${url.host}/api/live`, {}, 'DELETE')).status).toBe(405)
  })

  it('answers only to its own address (no DNS rebinding) and keeps the live channel to its own page', async () => {
    const { url, live } = await viewerOf(textAgent('hi'))
    const port = url.port
    expect((await get(`http://${url.host}/`, { Host: `attacker.example:${port}` })).status).toBe(421)
    expect((await get(`http://${url.host}/`, { Host: `localhost:${port}` })).status).toBe(200)
    expect((await get(`http://${url.host}/`, { Host: `127.0.0.1:1` })).status).toBe(421)

    expect((await get(live().replace(/token=[^&]+/, ''))).status).toBe(403)
    expect((await get(live().replace(/token=[^&]+/, 'token=wrong'))).status).toBe(403)
    expect((await get(live(), { Origin: 'http://attacker.example' })).status).toBe(403)
    expect((await get(live(), { Origin: `http://localhost:${port}`, Host: url.host })).status).toBe(403)
    expect((await get(live(), { 'Sec-Fetch-Site': 'cross-site' })).status).toBe(403)
    const ok = await openLive(live(), { Origin: `http://${url.host}`, 'Sec-Fetch-Site': 'same-origin' })
    expect(ok.status).toBe(200)
    expect(ok.headers['content-type']).toMatch(/^text\/event-stream/)
    ok.close()
  })

  it('draws the same machine the diagrams come from: every state and every drawn edge', () => {
    const chart = chartOf(agentMachine)
    const full = renderMachineDiagrams().find((d) => d.name === 'agent-full')!.mermaid
    const drawnStates = new Set([...full.matchAll(/^\s*state "[^"]*" as (\S+)/gm)].map((m) => m[1]))
    const chartStates = new Set(
      nodes(chart.root)
        .filter((n) => n.path !== '')
        .map((n) => n.path.replace(/\./g, '_')),
    )
    expect(chartStates).toEqual(drawnStates)
    const drawnEdges = new Set(
      [...full.matchAll(/^\s*(\S+) --> (\S+) : (\S+)/gm)].filter((m) => m[1] !== '[*]' && m[2] !== '[*]').map((m) => `${m[1]}>${m[2]}:${m[3]}`),
    )
    // the diagram lists (does not draw) what a compound state does into its own children, e.g. a refused append closing the turn
    const intoOwnChild = (from: string, to: string) => from !== to && to.startsWith(from === '' ? '' : `${from}.`)
    const chartEdges = new Set(
      nodes(chart.root).flatMap((n) =>
        n.transitions.flatMap((t) =>
          (t.targets.every((to) => intoOwnChild(n.path, to)) ? [] : t.targets).map(
            (to) =>
              `${n.path.replace(/\./g, '_')}>${to.replace(/\./g, '_')}:${t.event === '' ? 'always' : t.event.startsWith('xstate.done.state.') ? 'done' : t.event}`,
          ),
        ),
      ),
    )
    expect(chartEdges).toEqual(drawnEdges)
  })

  it('streams the log, the configuration at each event, the transitions and how inbox items came in', async () => {
    const agent = textAgent('one', 'two')
    const { live } = await viewerOf(agent, { title: 'my agent' })
    const channel = await openLive(live())
    const hello = await channel.until('hello')
    expect(hello).toMatchObject({ protocol: 1, mode: 'live', sessionId: agent.id, title: 'my agent', from: 0 })
    expect(hello.charts.map((c) => c.id)).toEqual([agent.actor.logic.id])

    agent.followup('first')
    await agent.whenIdle()
    agent.inject('context for later')
    agent.steer('second')
    await agent.whenIdle()
    const total = agent.session.events.length
    await channel.until('events', (m) => m.events.at(-1)?.seq === total - 1)
    const state = await channel.until('state', (m) => m.status === 'idle' && m.transitions.some((t) => t.targets.length > 0))

    const events = channel.messages.flatMap((m) => (m.kind === 'events' ? m.events : []))
    expect(events).toEqual(JSON.parse(JSON.stringify(agent.session.events)))
    // a configuration is always defined before a message cites it
    const defined = new Set<number>()
    for (const m of channel.messages) {
      if (m.kind === 'configs') for (const c of m.configs) defined.add(c.id)
      const cites = m.kind === 'state' ? [m.config] : m.kind === 'events' ? (m.configs ?? []) : []
      for (const id of cites) expect(defined.has(id), `${m.kind} cites config ${id} before it is defined`).toBe(true)
    }
    const configs = new Map<number, Configuration>()
    for (const m of channel.messages) if (m.kind === 'configs') for (const c of m.configs) configs.set(c.id, c)
    const cited = channel.messages.flatMap((m) => (m.kind === 'events' ? (m.configs ?? []) : []))
    expect(cited).toHaveLength(total)
    // each event names a configuration of the chart, and the agent was in more than one of them
    const paths = new Set(nodes(hello.charts[0].root).map((n) => n.path))
    for (const id of cited) for (const leaf of configs.get(id)!.actors[0].active) expect(paths.has(leaf), leaf).toBe(true)
    expect(new Set(cited).size).toBeGreaterThan(3)
    expect(configs.get(state.config)!.actors).toEqual([{ machine: agent.actor.logic.id, active: leafPaths(agent.actor.getSnapshot().value) }])
    for (const t of state.transitions) for (const p of [t.source, ...t.targets]) expect(paths.has(p), p).toBe(true)

    const notes = channel.messages.filter((m): m is Extract<ServerMessage, { kind: 'notes' }> => m.kind === 'notes').flatMap((m) => m.arrivals)
    const texts = (wakeup: boolean) =>
      notes
        .filter((n) => n.wakeup === wakeup)
        .map((n) => agent.session.events.find((e) => e.type === 'user/message' && e.data.id === n.messageId))
        .map((e) => (e?.type === 'user/message' && e.data.content[0].type === 'text' ? e.data.content[0].text : '?'))
    expect(texts(false)).toEqual(['context for later'])
    expect(texts(true)).toEqual(['first', 'second'])
    channel.close()
  })

  it('defines a configuration before citing it, even one reached without a new event (held in recovery)', async () => {
    const s = scenario()
    open.push(s.agent)
    const { live } = await viewerOf(s.agent)
    const channel = await openLive(live())
    await channel.until('hello')
    s.agent.followup('go')
    await s.recovering.promise
    const held = leafPaths(s.agent.actor.getSnapshot().value)
    const configs = new Map<number, Configuration>()
    const state = await channel.until('state', (m) => {
      for (const c of channel.messages.flatMap((x) => (x.kind === 'configs' ? x.configs : []))) configs.set(c.id, c)
      return JSON.stringify(configs.get(m.config)?.actors[0].active) === JSON.stringify(held)
    })
    const index = channel.messages.indexOf(state)
    const before = channel.messages.slice(0, index).flatMap((m) => (m.kind === 'configs' ? m.configs.map((c) => c.id) : []))
    expect(before).toContain(state.config)
    s.releaseRecovery.open()
    s.releaseWrite.open()
    await s.streaming.promise
    s.agent.cancel()
    await s.agent.whenIdle()
    channel.close()
  })

  it('resumes a reconnecting page after the last event it has, and notes cancel requests with their cause', async () => {
    const agent = textAgent('one', 'two')
    const { live } = await viewerOf(agent)
    agent.followup('first')
    await agent.whenIdle()
    const seen = agent.session.events.length
    agent.followup('second')
    agent.cancel({ kind: 'hook', reason: 'enough' })
    await agent.whenIdle()
    const channel = await openLive(live(), { 'Last-Event-ID': String(seen) })
    const hello = await channel.until('hello')
    expect(hello.from).toBe(seen)
    const total = agent.session.events.length
    await channel.until('events', (m) => m.events.at(-1)?.seq === total - 1)
    const events = channel.messages.flatMap((m) => (m.kind === 'events' ? m.events : []))
    expect(events.map((e) => e.seq)).toEqual(agent.session.events.slice(seen).map((e) => e.seq))
    expect(channel.ids.at(-1)).toBe(total)
    const notes = await channel.until('notes', (m) => m.cancels.length > 0)
    expect(notes.cancels).toEqual([{ seq: expect.any(Number), cause: { kind: 'hook', reason: 'enough' } }])
    expect(notes.cancels[0].seq).toBeGreaterThan(seen)
    channel.close()
  })

  it('opens a stored log read-only: everything at once, then the end', async () => {
    const agent = textAgent('one')
    agent.followup('first')
    await agent.whenIdle()
    const { live } = await viewerOf(agent.session.events)
    const channel = await openLive(live())
    expect(await channel.until('hello')).toMatchObject({ mode: 'stored', from: 0 })
    await channel.until('end')
    const events = channel.messages.flatMap((m) => (m.kind === 'events' ? m.events : []))
    expect(events).toHaveLength(agent.session.events.length)
    expect(channel.messages.some((m) => m.kind === 'state')).toBe(false)
    channel.close()
  })

  it('follows a session without an agent: the log as it grows, no machine state', async () => {
    const agent = textAgent('one')
    const { live } = await viewerOf(agent.session)
    const channel = await openLive(live())
    expect(await channel.until('hello')).toMatchObject({ mode: 'session', sessionId: agent.id })
    agent.followup('first')
    await agent.whenIdle()
    const total = agent.session.events.length
    await channel.until('events', (m) => m.events.at(-1)?.seq === total - 1)
    expect(channel.messages.some((m) => m.kind === 'state' || m.kind === 'configs')).toBe(false)
    channel.close()
  })

  it('close() ends the live channels and stops listening, leaving the agent running', async () => {
    const agent = textAgent('one')
    const { viewer, url, live } = await viewerOf(agent)
    const channel = await openLive(live())
    await channel.until('hello')
    await viewer.close()
    await channel.ended
    expect(channel.messages.at(-1)).toEqual({ kind: 'end', reason: 'viewer closed' })
    await expect(get(`http://${url.host}/`)).rejects.toThrow()
    agent.followup('still works')
    await agent.whenIdle()
    expect(agent.session.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
  })

  it('sends each machine with an ELK drawing: every state boxed inside its parent, every edge routed and labelled', async () => {
    const { live } = await viewerOf([], { title: 'drawing' })
    const channel = await openLive(live())
    const { charts } = await channel.until('hello')
    const layout = charts[0].layout!
    const chart = charts[0]
    const inside = (a: { x: number; y: number; width: number; height: number }, b: typeof a) =>
      a.x >= b.x && a.y >= b.y && a.x + a.width <= b.x + b.width && a.y + a.height <= b.y + b.height
    const overlap = (a: { x: number; y: number; width: number; height: number }, b: typeof a) =>
      a.x < b.x + b.width && a.x + a.width > b.x && a.y < b.y + b.height && a.y + a.height > b.y
    const all = nodes(chart.root)
    expect(Object.keys(layout.boxes).sort()).toEqual(all.map((n) => n.path).sort())
    for (const node of all) for (const child of node.children) expect(inside(layout.boxes[child.path], layout.boxes[node.path]), child.path).toBe(true)
    // siblings never overlap: the hierarchy is laid out, not stacked
    for (const node of all)
      for (const [i, a] of node.children.entries())
        for (const b of node.children.slice(i + 1)) expect(overlap(layout.boxes[a.path], layout.boxes[b.path]), `${a.path} / ${b.path}`).toBe(false)
    // one edge per source and target that a transition joins; each routed in straight segments, its label clear of the atomic states
    const pairs = new Set(all.flatMap((n) => n.transitions.flatMap((t) => t.targets.map((to) => `${n.path}>${to}`))))
    expect(new Set(layout.edges.map((e) => `${e.from}>${e.to}`))).toEqual(pairs)
    const atomic = all.filter((n) => n.children.length === 0)
    for (const edge of layout.edges) {
      expect(edge.points.length).toBeGreaterThanOrEqual(2)
      for (let i = 1; i < edge.points.length; i++) {
        const [[x1, y1], [x2, y2]] = [edge.points[i - 1], edge.points[i]]
        expect(Math.abs(x1 - x2) < 0.01 || Math.abs(y1 - y2) < 0.01, `${edge.from} → ${edge.to} is orthogonal`).toBe(true)
      }
      for (const state of atomic) expect(overlap(edge.label, layout.boxes[state.path]), `${edge.from} → ${edge.to} over ${state.path}`).toBe(false)
      expect(edge.label.lines.every((line) => line.length <= 30)).toBe(true)
      expect(edge.title.split('\n').length).toBeGreaterThanOrEqual(1)
    }
    channel.close()
  })

  it('links a stored parent to its subagents: each child served as a session of its own', async () => {
    const { planner, children } = await subagentsExample()
    const logs = bySession(planner, children)
    expect(logs.size).toBe(3)
    const { live } = await viewerOf({ events: planner, id: 'planner' }, { sessions: (id) => logs.get(id) })
    const parent = await openLive(live())
    const links = await parent.until('links')
    expect(links.links).toEqual([
      { callId: 'r1', sessionId: 'research-weather', tool: 'research' },
      { callId: 'r2', sessionId: 'research-trains', tool: 'research' },
      { callId: 's1', sessionId: 'summary', tool: 'summarise' },
    ])
    const child = await openLive(live('&session=research-trains'))
    const hello = await child.until('hello')
    expect(hello).toMatchObject({ sessionId: 'research-trains', mode: 'stored', title: 'research-trains' })
    expect(hello.charts[0].layout).toBeDefined()
    await child.until('end')
    expect(child.messages.flatMap((m) => (m.kind === 'events' ? m.events : []))).toEqual(JSON.parse(JSON.stringify(logs.get('research-trains'))))
    expect((await get(live('&session=nobody'))).status).toBe(404)
    parent.close()
    // without a lookup the stored children are named in the log but not served
    const { live: bare } = await viewerOf({ events: planner, id: 'planner' })
    const alone = await openLive(bare())
    await alone.until('end')
    expect(alone.messages.some((m) => m.kind === 'links')).toBe(false)
    alone.close()
    child.close()
  })

  it("follows a live agent's subagents from the moment they start, and serves their logs after they end", async () => {
    const planner = createAgent({
      id: 'planner',
      model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'ask', arguments: '{"task":"a question"}' }]), textResponse('done')]),
      tools: [
        agentTool({
          name: 'ask',
          description: 'Ask a child',
          input: z.object({ task: z.string() }),
          agent: () => ({ id: 'kid', model: scriptedModel([textResponse('an answer')]) }),
        }),
      ],
      logger: { error: () => {} },
    })
    open.push(planner)
    const { live } = await viewerOf(planner)
    const parent = await openLive(live())
    await planner.run('go')
    expect((await parent.until('links')).links).toEqual([{ callId: 'c1', sessionId: 'kid', tool: 'ask' }])
    // the child was disposed with its call; its whole log, seen live, is still there
    const child = await openLive(live('&session=kid'))
    expect(await child.until('hello')).toMatchObject({ sessionId: 'kid', mode: 'live' })
    const texts = await child.until('events', (m) => m.events.some((e) => e.type === 'turn/end'))
    expect(texts.events.find((e) => e.type === 'assistant/message')).toBeDefined()
    child.close()
    parent.close()
  })

  it('refuses bad options with a typed error', async () => {
    await expect(serveViewer([], { port: -1, print: false })).rejects.toThrow(/port must be an integer/)
    await expect(serveViewer({} as never, { print: false })).rejects.toThrow(/serveViewer needs an Agent/)
    await expect(serveViewer([], { assetsDir: '/nonexistent', print: false })).rejects.toThrow(/not built/)
  })
})

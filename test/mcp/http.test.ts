// agentchart/mcp against servers built in-process with the SDK and served over
// Streamable HTTP on loopback: a tool list that changes between steps, a
// server killed in the middle of a call, and a listing in pages. Then against
// a server that answers JSON-RPC by hand, for what no SDK server sends.
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { ConfigError, defineTool, type SessionEvent } from '../../src/index.js'
import { mcpTools, McpToolError, type McpResultMeta } from '../../src/mcp/index.js'
import { textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, scriptedAgent, trace } from '../helpers.js'
import { httpServer, rawServer } from './servers.js'

const closers: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

type Result = Extract<SessionEvent, { type: 'tool/result' }>
const resultOf = (events: readonly SessionEvent[], callId: string) =>
  events.find((e): e is Result => e.type === 'tool/result' && e.data.message.source.callId === callId)!
const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: JSON.stringify(args) })
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] })

describe('MCP tools over Streamable HTTP', () => {
  it('a tool the server adds during a step is offered at the next step and runs; one it removes is gone at the next step', async () => {
    const mcp = new McpServer({ name: 'changing', version: '1.0.0' })
    let secret: ReturnType<McpServer['registerTool']> | undefined
    mcp.registerTool('unlock', { description: 'adds the secret tool', inputSchema: {} }, async (_args, extra) => {
      secret = mcp.registerTool('secret', { description: 'the secret', inputSchema: { word: z.string() } }, ({ word }) => text(`secret ${word}`))
      // announced on this call's own stream, so the client hears of it before the result
      await extra.sendNotification({ method: 'notifications/tools/list_changed' })
      return text('unlocked')
    })
    mcp.registerTool('lock', { description: 'removes the secret tool', inputSchema: {} }, async (_args, extra) => {
      secret?.remove()
      await extra.sendNotification({ method: 'notifications/tools/list_changed' })
      return text('locked')
    })
    // the app's own list_changed handler (the SDK's listChanged option) still hears every change
    let heard = 0
    const server = await httpServer(mcp, { listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => void heard++ } } })
    closers.push(server.close)
    const tools = await mcpTools(server.client)
    closers.push(() => tools.close())
    expect(tools.map((t) => t.name)).toEqual(['unlock', 'lock'])
    const changes: string[][] = []
    tools.onChange((now) => changes.push(now.map((t) => t.name)))
    const local = defineTool({ name: 'local', description: 'a plain tool beside them', input: z.object({}), execute: () => 'local' })
    const { agent, model } = scriptedAgent(
      [
        toolCallResponse([call('c1', 'unlock')]),
        toolCallResponse([call('c2', 'secret', { word: 'open' }), call('c3', 'lock')]),
        toolCallResponse([call('c4', 'secret', { word: 'again' })]),
        textResponse('done'),
      ],
      { tools: [local, tools] },
    )
    const result = await agent.run('go')
    expect(result.end.kind).toBe('completed')
    const offered = model.requests.map((r) => (r.tools ?? []).map((t) => t.name))
    expect(offered).toEqual([
      ['local', 'lock', 'unlock'],
      ['local', 'lock', 'secret', 'unlock'],
      ['local', 'lock', 'unlock'],
      ['local', 'lock', 'unlock'],
    ])
    const content = (id: string) => resultOf(agent.session.events, id).data.message.content[0].content
    expect(content('c2')).toBe('secret open')
    expect(content('c3')).toBe('locked')
    expect(resultOf(agent.session.events, 'c4').data.error).toEqual({ name: 'UnknownToolError', code: 'UNKNOWN_TOOL' })
    // the log records each change of the tools as a new request header
    expect(ofType(agent, 'request/header').map((e) => [e.data.reason, e.data.header.tools?.length])).toEqual([
      ['initial', 3],
      ['change', 4],
      ['change', 3],
    ])
    expect(tools.map((t) => t.name)).toEqual(['unlock', 'lock'])
    expect(changes).toEqual([
      ['unlock', 'lock', 'secret'],
      ['unlock', 'lock'],
    ])
    expect(heard).toBeGreaterThanOrEqual(2) // unlock's and lock's announcements at least
  })

  it("a tool a call's handler registers (announced on the server's standalone stream, which may lag the result) is offered at the next step", async () => {
    const mcp = new McpServer({ name: 'registering', version: '1.0.0' })
    mcp.registerTool('unlock', { description: 'adds the secret tool', inputSchema: {} }, () => {
      mcp.registerTool('secret', { description: 'the secret', inputSchema: {} }, () => text('the secret'))
      return text('unlocked')
    })
    const server = await httpServer(mcp)
    closers.push(server.close)
    const tools = await mcpTools(server.client)
    closers.push(() => tools.close())
    const { agent, model } = scriptedAgent([toolCallResponse([call('c1', 'unlock')]), toolCallResponse([call('c2', 'secret')]), textResponse('done')], {
      tools,
    })
    await agent.run('go')
    expect(model.requests.map((r) => (r.tools ?? []).map((t) => t.name))).toEqual([['unlock'], ['secret', 'unlock'], ['secret', 'unlock']])
    expect(resultOf(agent.session.events, 'c2').data.message.content[0].content).toBe('the secret')
    // listed at mcpTools, then before each step that follows an answered call (and on each notification)
    expect(server.wire.sent.filter((m: any) => m.method === 'tools/list').length).toBeGreaterThanOrEqual(3)
  })

  it('a tool the server registers between turns is offered at the first step of the next turn', async () => {
    const mcp = new McpServer({ name: 'between', version: '1.0.0' })
    mcp.registerTool('first', { description: 'first', inputSchema: {} }, () => text('first'))
    const server = await httpServer(mcp)
    closers.push(server.close)
    const tools = await mcpTools(server.client)
    closers.push(() => tools.close())
    const { agent, model } = scriptedAgent([textResponse('one'), textResponse('two')], { tools })
    await agent.run('one')
    mcp.registerTool('second', { description: 'second', inputSchema: {} }, () => text('second'))
    await agent.run('two') // at once: the announcement may still be on its way
    expect(model.requests.map((r) => (r.tools ?? []).map((t) => t.name))).toEqual([['first'], ['first', 'second']])
  })

  it('a server killed in the middle of a call: the call gets an MCP_DISCONNECTED error result and the turn goes on to complete', async () => {
    const mcp = new McpServer({ name: 'doomed', version: '1.0.0' })
    let entered!: () => void
    const running = new Promise<void>((resolve) => (entered = resolve))
    mcp.registerTool('slow', { description: 'never answers in time', inputSchema: {} }, async (_args, extra) => {
      const progressToken = extra._meta?.progressToken ?? 0
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 2 } })
      entered()
      await new Promise((resolve) => setTimeout(resolve, 60_000).unref())
      return text('too late')
    })
    const server = await httpServer(mcp)
    closers.push(server.close)
    const tools = await mcpTools(server.client)
    closers.push(() => tools.close())
    const { agent, model } = scriptedAgent([toolCallResponse([call('c1', 'slow')]), textResponse('the server is gone')], { tools })
    const turn = agent.run('go')
    await running
    // the call's response stream is open (its first message arrived): the server dies under it
    await server.wire.until((m) => m.method === 'notifications/progress')
    server.kill()
    const result = await turn
    expect(result.end.kind).toBe('completed')
    expect(result.text).toBe('the server is gone')
    const failed = resultOf(agent.session.events, 'c1').data
    expect(failed.error).toEqual({ name: 'McpToolError', code: 'MCP_DISCONNECTED' })
    expect(failed.message.content[0]).toMatchObject({ isError: true, content: expect.stringMatching(/^Error: the MCP server stopped answering/) })
    expect(model.requests).toHaveLength(2)
    expect(trace(agent).filter((t) => t.startsWith('turn/'))).toEqual(['turn/start{1}', 'turn/end{1,completed}'])
  })

  it('a call to a server that is already gone is an MCP_DISCONNECTED error result too', async () => {
    const mcp = new McpServer({ name: 'gone', version: '1.0.0' })
    mcp.registerTool('ping', { description: 'pong', inputSchema: {} }, () => text('pong'))
    const server = await httpServer(mcp)
    closers.push(server.close)
    const logged: string[] = []
    const tools = await mcpTools(server.client, { logger: { error: (message, error) => logged.push(`${message}: ${(error as Error).message}`) } })
    closers.push(() => tools.close())
    server.kill()
    const { agent, model } = scriptedAgent([toolCallResponse([call('c1', 'ping')]), textResponse('no server')], { tools })
    expect((await agent.run('go')).end.kind).toBe('completed')
    expect(resultOf(agent.session.events, 'c1').data.error).toEqual({ name: 'McpToolError', code: 'MCP_DISCONNECTED' })
    // the turn's first request listed the tools again: that failed, was reported, and the set kept its tools
    expect(logged).toEqual([expect.stringMatching(/^agentchart\/mcp: listing the changed tools failed; the tools stay as they were: .*fetch failed/)])
    expect(model.requests[0].tools?.map((t) => t.name)).toEqual(['ping'])
  })

  it('lists every page of tools/list, following nextCursor; a repeated cursor fails the listing with MCP_LIST_FAILED', async () => {
    const pages: Record<string, { tools: object[]; nextCursor?: string }> = {
      '': { tools: [{ name: 'a', inputSchema: { type: 'object' } }], nextCursor: 'p2' },
      p2: { tools: [{ name: 'b', inputSchema: { type: 'object' } }], nextCursor: 'p3' },
      p3: { tools: [{ name: 'c', description: 'the last', inputSchema: { type: 'object', properties: { n: { type: 'integer' } } } }] },
    }
    const low = new Server({ name: 'paged', version: '1.0.0' }, { capabilities: { tools: {} } })
    const cursors: Array<string | undefined> = []
    low.setRequestHandler(ListToolsRequestSchema, (request) => {
      cursors.push(request.params?.cursor)
      return pages[request.params?.cursor ?? '']
    })
    low.setRequestHandler(CallToolRequestSchema, (request) => text(`${request.params.name} ran with ${JSON.stringify(request.params.arguments)}`))
    const server = await httpServer(low)
    closers.push(server.close)
    const tools = await mcpTools(server.client)
    expect(cursors).toEqual([undefined, 'p2', 'p3'])
    expect(tools.map((t) => [t.name, t.description])).toEqual([
      ['a', ''],
      ['b', ''],
      ['c', 'the last'],
    ])
    const { agent } = scriptedAgent([toolCallResponse([call('c1', 'c', { n: 2 }), call('c2', 'c', { n: 2.5 })]), textResponse('ok')], { tools })
    await agent.run('go')
    expect(resultOf(agent.session.events, 'c1').data.message.content[0].content).toBe('c ran with {"n":2}')
    expect(resultOf(agent.session.events, 'c2').data.message.content[0].content).toBe('Error: invalid arguments for tool c: n: must be integer')
    pages.p3.nextCursor = 'p2'
    const failure = await mcpTools(server.client).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(McpToolError)
    expect(failure).toMatchObject({ code: 'MCP_LIST_FAILED', message: expect.stringContaining('the cursor "p2" twice') })
  })

  it('maps every kind of MCP content: audio and binary resources kept in meta, user-only blocks withheld, isError as an error result', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=='
    const results: Record<string, object> = {
      mixed: {
        content: [
          { type: 'text', text: 'here it is' },
          { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'file:///a.bin', mimeType: 'application/octet-stream', blob: 'AAEC' } },
          { type: 'resource', resource: { uri: 'file:///a.png', mimeType: 'image/png', blob: png } },
          { type: 'text', text: 'for your eyes only', annotations: { audience: ['user'] } },
        ],
      },
      failing: { content: [{ type: 'text', text: 'disk full' }], isError: true },
      structured: { content: [], structuredContent: { temperature: 21 } },
    }
    const low = new Server({ name: 'content', version: '1.0.0' }, { capabilities: { tools: {} } })
    low.setRequestHandler(ListToolsRequestSchema, () => ({ tools: Object.keys(results).map((name) => ({ name, inputSchema: { type: 'object' } })) }))
    low.setRequestHandler(CallToolRequestSchema, (request) => results[request.params.name] as never)
    const server = await httpServer(low)
    closers.push(server.close)
    const tools = await mcpTools(server.client)
    const { agent, model } = scriptedAgent([toolCallResponse([call('c1', 'mixed'), call('c2', 'failing'), call('c3', 'structured')]), textResponse('ok')], {
      tools,
    })
    await agent.run('go')
    const mixed = resultOf(agent.session.events, 'c1').data
    expect(mixed.message.content[0].content).toBe(
      [
        'here it is',
        '[audio audio/wav, 4 bytes: not shown to the model]',
        '[resource <file:///a.bin> (application/octet-stream), binary: not shown to the model]',
        '[image image/png, 70 bytes: attached after the tool results]',
      ].join('\n'),
    )
    const meta = mixed.meta as McpResultMeta
    expect(meta.withheld).toEqual([(results.mixed as any).content[1], (results.mixed as any).content[2], (results.mixed as any).content[4]])
    expect(model.requests[1].messages.at(-1)!.content[1]).toEqual({ type: 'image', attachment: { mediaType: 'image/png', data: png } })
    const failing = resultOf(agent.session.events, 'c2').data
    expect(failing.message.content[0]).toMatchObject({ content: 'disk full', isError: true })
    const structured = resultOf(agent.session.events, 'c3').data
    expect(structured.message.content[0].content).toBe('{"temperature":21}')
    expect((structured.meta as McpResultMeta).structuredContent).toEqual({ temperature: 21 })
  })

  it('refuses what is not a connected client, and bad options, with a ConfigError naming the option', async () => {
    const mcp = new McpServer({ name: 'plain', version: '1.0.0' })
    mcp.registerTool('one', { description: 'one', inputSchema: {} }, () => text('one'))
    const server = await httpServer(mcp)
    closers.push(server.close)
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => null,
        (error: unknown) => error as ConfigError,
      )
    const unconnected = new Client({ name: 'never-connected', version: '1.0.0' })
    for (const [promise, path, message] of [
      [mcpTools({} as never), 'client', /needs a Client of @modelcontextprotocol\/sdk/],
      [mcpTools(unconnected), 'client', /needs a connected client/],
      [mcpTools(server.client, { include: 'one' as never }), 'include', /array of tool names or a function/],
      [mcpTools(server.client, { executionMode: 'fast' as never }), 'executionMode', /'parallel', 'exclusive' or a function/],
      [mcpTools(server.client, { prefix: 3 as never }), 'prefix', /prefix must be a string/],
      [mcpTools(server.client, { prefix: 'with space ' }), 'prefix', /letters, digits/],
      [mcpTools(server.client, { timeoutMs: -1 }), 'timeoutMs', /positive number of milliseconds/],
    ] as const) {
      const error = await refusal(promise)
      expect(error).toBeInstanceOf(ConfigError)
      expect(error).toMatchObject({ path, message: expect.stringMatching(message) })
    }
    // a name agentchart cannot take (MCP allows 128 characters, agentchart 64) is left out and said why
    mcp.registerTool('x'.repeat(70), { description: 'long', inputSchema: {} }, () => text('long'))
    const errors: string[] = []
    const long = await mcpTools(server.client, { logger: { error: (message) => errors.push(message) } })
    expect(long.map((t) => t.name)).toEqual(['one'])
    expect(long.skipped).toEqual([{ name: 'x'.repeat(70), reason: expect.stringMatching(/tool name must be 1-64 letters/) }])
    expect(errors).toEqual([expect.stringMatching(/^agentchart\/mcp: tool x{70} is left out: tool name must be/)])
  })
})

describe('MCP tools against a server that answers JSON-RPC by hand', () => {
  const schema = { type: 'object', properties: { x: { type: 'string' } } }
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => void unhandled.push(reason)
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled)
    unhandled.length = 0
  })

  const throwing = {
    error: () => {
      throw new Error('the logger broke')
    },
  }

  it('a logger that throws while it is told of a tool left out does not fail mcpTools', async () => {
    const long = 'x'.repeat(70)
    const server = await rawServer(() => ({
      tools: [
        { name: 't', inputSchema: schema },
        { name: long, inputSchema: schema },
      ],
    }))
    closers.push(server.close)
    const tools = await mcpTools(server.client, { logger: throwing })
    expect(tools.map((t) => t.name)).toEqual(['t'])
    expect(tools.skipped.map((s) => s.name)).toEqual([long])
  })

  it('a logger that throws while it is told of a failed re-listing: nothing rejects unhandled, and the set lists again', async () => {
    process.on('unhandledRejection', onUnhandled)
    let listings = 0
    const server = await rawServer(
      (method) => {
        if (method !== 'tools/list') return text('ran')
        listings++
        if (listings === 2) throw new Error('the list is down for a moment')
        return { tools: [{ name: 't', inputSchema: schema }] }
      },
      { tools: { listChanged: true } },
    )
    closers.push(server.close)
    const tools = await mcpTools(server.client, { logger: throwing })
    closers.push(() => tools.close())
    // the re-listing the notification starts fails, and reporting that throws
    await server.notify('notifications/tools/list_changed')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(unhandled).toEqual([])
    expect((await tools.refresh()).map((t) => t.name)).toEqual(['t'])
    expect(listings).toBe(3)
  })

  it('a result with -0 (Python writes -0.0) in structuredContent, _meta or a withheld block is the success it was, with 0 in meta', async () => {
    const wire = '{"content":[{"type":"text","text":"delta is 0"},{"type":"text","text":"for you","annotations":{"audience":["user"],"priority":-0.0}}],'
    const result = JSON.parse(`${wire}"structuredContent":{"d":-0.0,"list":[1,-0.0]},"_meta":{"d":-0.0}}`)
    const server = await rawServer((method) => (method === 'tools/list' ? { tools: [{ name: 'delta', inputSchema: schema }] } : result))
    closers.push(server.close)
    const tools = await mcpTools(server.client)
    const { agent } = scriptedAgent([toolCallResponse([call('c1', 'delta', { x: 'a' })]), textResponse('ok')], { tools })
    await agent.run('go')
    const { message, meta } = resultOf(agent.session.events, 'c1').data
    expect(message.content[0]).toMatchObject({ isError: false, content: 'delta is 0' })
    const kept = meta as McpResultMeta
    expect(kept.structuredContent).toEqual({ d: 0, list: [1, 0] })
    expect(Object.is(kept.structuredContent!.d, 0)).toBe(true)
    expect(Object.is((kept._meta as { d: number }).d, 0)).toBe(true)
    expect(kept.withheld).toEqual([{ type: 'text', text: 'for you', annotations: { audience: ['user'], priority: 0 } }])
    expect(Object.is((kept.withheld![0] as any).annotations.priority, 0)).toBe(true)
  })

  it('a listing with one malformed tool offers the others and names it in skipped, at mcpTools and at a re-listing', async () => {
    let tools: object[] = [{ name: 'good', inputSchema: { type: 'object' } }, { name: 'no_schema' }]
    const server = await rawServer((method) => (method === 'tools/list' ? { tools } : text('good ran')))
    closers.push(server.close)
    const logged: string[] = []
    const set = await mcpTools(server.client, { logger: { error: (message) => logged.push(message) } })
    expect(set.map((t) => t.name)).toEqual(['good'])
    expect(set.skipped).toEqual([{ name: 'no_schema', reason: 'not a tool: no name or no inputSchema' }])
    expect(logged).toEqual(['agentchart/mcp: tool no_schema is left out: not a tool: no name or no inputSchema'])
    tools = [...tools, { name: 'added', inputSchema: { type: 'object' } }, { name: 'bad_schema', inputSchema: { type: 'string' } }]
    expect((await set.refresh()).map((t) => t.name)).toEqual(['good', 'added'])
    expect(set.skipped).toEqual([
      { name: 'no_schema', reason: 'not a tool: no name or no inputSchema' },
      { name: 'bad_schema', reason: expect.stringMatching(/^not a tool by MCP's schema: inputSchema\.type: /) },
    ])
    const { agent } = scriptedAgent([toolCallResponse([call('c1', 'good')]), textResponse('ok')], { tools: set })
    await agent.run('go')
    expect(resultOf(agent.session.events, 'c1').data.message.content[0].content).toBe('good ran')
  })

  it('a page that is not a tools list at all still fails the listing with MCP_LIST_FAILED', async () => {
    const server = await rawServer(() => ({ items: [] }))
    closers.push(server.close)
    const failure = await mcpTools(server.client).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(McpToolError)
    expect(failure).toMatchObject({ code: 'MCP_LIST_FAILED', message: expect.stringContaining('not a list of tools') })
  })

  it('a client object without getServerCapabilities, or without setNotificationHandler when its server announces list changes, is a ConfigError naming client', async () => {
    const base = { listTools: async () => ({ tools: [] }), callTool: async () => ({}), ping: async () => ({}) }
    for (const [client, message] of [
      [base, /without getServerCapabilities\(\)/],
      [{ ...base, getServerCapabilities: () => ({ tools: { listChanged: true } }) }, /without setNotificationHandler\(\)/],
    ] as const) {
      const error = await mcpTools(client as never).catch((failure: unknown) => failure)
      expect(error).toBeInstanceOf(ConfigError)
      expect(error).toMatchObject({ path: 'client', message: expect.stringMatching(message) })
    }
  })

  it('an include or exclude function that throws leaves the tool out and says so to the logger', async () => {
    const server = await rawServer(() => ({
      tools: [
        { name: 'a', inputSchema: schema },
        { name: 'b', inputSchema: schema },
      ],
    }))
    closers.push(server.close)
    const logged: string[] = []
    const logger = { error: (message: string, error: unknown) => logged.push(`${message}: ${(error as Error).message}`) }
    const boom = (tool: { name: string }) => {
      if (tool.name === 'a') throw new Error('boom')
      return tool.name === 'b'
    }
    expect((await mcpTools(server.client, { include: boom, logger })).map((t) => t.name)).toEqual(['b'])
    expect((await mcpTools(server.client, { exclude: (tool) => boom(tool) && false, logger })).map((t) => t.name)).toEqual(['b'])
    expect(logged).toEqual([
      'agentchart/mcp: the include filter threw on tool a; the tool is left out: boom',
      'agentchart/mcp: the exclude filter threw on tool a; the tool is left out: boom',
    ])
  })

  it('a tool whose inputSchema is nested 20 000 levels deep is left out with a reason; the other tools are offered', async () => {
    let deep = '{"type":"object"}'
    for (let i = 0; i < 20_000; i++) deep = `{"type":"object","properties":{"x":${deep}}}`
    const listing = JSON.parse(`{"tools":[{"name":"deep","inputSchema":${deep}},{"name":"ok","inputSchema":{"type":"object"}}]}`)
    const server = await rawServer(() => listing)
    closers.push(server.close)
    const tools = await mcpTools(server.client, { logger: { error: () => {} } })
    expect(tools.map((t) => t.name)).toEqual(['ok'])
    expect(tools.skipped).toEqual([{ name: 'deep', reason: expect.stringMatching(/^its definition is nested too deeply/) }])
  })
})

// agentchart/mcp against @modelcontextprotocol/server-everything from npm,
// started over stdio: its tools offered as the server lists them, calls and
// their results, an image result, a refused argument, and cancellation that
// reaches the server (a cancelled call is never answered).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool, type SessionEvent } from '../../src/index.js'
import { mcpTools, type McpResultMeta, type McpToolSet } from '../../src/mcp/index.js'
import { textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, scriptedAgent, trace } from '../helpers.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { everything, EVERYTHING } from './servers.js'

let server: Awaited<ReturnType<typeof everything>>
let tools: McpToolSet
const logged: string[] = []

beforeAll(async () => {
  server = await everything()
  tools = await mcpTools(server.client, { logger: { error: (message) => logged.push(message) } })
})
afterAll(async () => {
  tools?.close()
  await server?.close()
})

type Result = Extract<SessionEvent, { type: 'tool/result' }>
const resultOf = (events: readonly SessionEvent[], callId: string) =>
  events.find((e): e is Result => e.type === 'tool/result' && e.data.message.source.callId === callId)!
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })
/** The JSON-RPC id of the tools/call the client sent for `name`, the latest one. */
const requestIdOf = (name: string) => server.wire.sent.findLast((m: any) => m.method === 'tools/call' && m.params?.name === name) as { id: number }

describe('MCP tools from server-everything over stdio', () => {
  it('lists the server tools as agentchart tools: names, descriptions, and the input JSON Schema sent to the model as is', async () => {
    const listed = await server.client.listTools()
    const offered = listed.tools.filter((t) => t.execution?.taskSupport !== 'required')
    expect(tools.map((t) => t.name)).toEqual(offered.map((t) => t.name))
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'get-sum', 'get-tiny-image', 'trigger-long-running-operation']))
    // a tool that runs only as an MCP task is left out, said once, and kept in skipped with its reason
    const tasks = listed.tools.filter((t) => t.execution?.taskSupport === 'required').map((t) => t.name)
    expect(tasks).toEqual(['simulate-research-query'])
    expect(tools.skipped).toEqual(tasks.map((name) => ({ name, reason: expect.stringMatching(/runs only as an MCP task/) })))
    expect(logged).toEqual(tasks.map((name) => expect.stringContaining(`tool ${name} is left out`)))
    const { agent, model } = scriptedAgent([textResponse('ok')], { tools })
    await agent.run('hi')
    const sent = model.requests[0].tools!
    const echo = listed.tools.find((t) => t.name === 'echo')!
    const { $schema: _dialect, ...schema } = echo.inputSchema as Record<string, unknown>
    expect(sent.find((t) => t.name === 'echo')).toEqual({ name: 'echo', description: echo.description, inputSchema: schema })
    expect(ofType(agent, 'request/header')[0].data.header.tools?.map((t) => t.name)).toEqual([...sent.map((t) => t.name)])
  })

  it('include, exclude and prefix choose and rename the tools; a call goes out under the remote name', async () => {
    const some = await mcpTools(server.client, { include: ['echo', 'get-sum'], exclude: (t) => t.name === 'get-sum', prefix: 'everything_' })
    expect(some.map((t) => t.name)).toEqual(['everything_echo'])
    // one separator, however the prefix was written
    const joined = await mcpTools(server.client, { include: ['echo'], prefix: 'ev' })
    expect(joined.map((t) => t.name)).toEqual(['ev_echo'])
    joined.close()
    const { agent } = scriptedAgent([toolCallResponse([call('c1', 'everything_echo', { message: 'hello' })]), textResponse('done')], { tools: some })
    const result = await agent.run('echo hello')
    expect(result.end.kind).toBe('completed')
    expect(resultOf(agent.session.events, 'c1').data.message.content[0]).toMatchObject({ content: 'Echo: hello', isError: false })
    expect(requestIdOf('echo')).toBeDefined()
    some.close()
  })

  it('a call runs on the server and its text becomes the tool result; structuredContent is kept in meta', async () => {
    const { agent, model } = scriptedAgent(
      [toolCallResponse([call('c1', 'get-sum', { a: 2, b: 40 }), call('c2', 'get-structured-content', { location: 'Chicago' })]), textResponse('42')],
      { tools },
    )
    await agent.run('add')
    const sum = resultOf(agent.session.events, 'c1')
    expect(sum.data.message.content[0].content).toMatch(/42/)
    const structured = resultOf(agent.session.events, 'c2')
    const meta = structured.data.meta as McpResultMeta
    expect(meta.tool).toBe('get-structured-content')
    expect(JSON.parse(structured.data.message.content[0].content as string)).toEqual(meta.structuredContent)
    // the second request carries both results to the model
    expect(model.requests[1].messages.filter((m) => m.content.some((b) => b.type === 'tool-result'))).toHaveLength(2)
  })

  it('an image result: the model reads where it is in the result, and gets the image itself as a message after the results', async () => {
    const { agent, model } = scriptedAgent([toolCallResponse([call('c1', 'get-tiny-image', {})]), textResponse('a logo')], { tools })
    await agent.run('show me')
    const content = resultOf(agent.session.events, 'c1').data.message.content[0].content as string
    expect(content).toMatch(/^Here's the image you requested:\n\[image image\/png, \d+ bytes: attached after the tool results\]\nThe image above/)
    const second = model.requests[1].messages
    const image = second.at(-1)!
    expect(image.role).toBe('user')
    expect(image.content[0]).toEqual({ type: 'text', text: 'The image returned by tool get-tiny-image:' })
    expect(image.content[1]).toMatchObject({ type: 'image', attachment: { mediaType: 'image/png', data: expect.stringMatching(/^iVBORw0KGgo/) } })
    expect(trace(agent).filter((t) => t.startsWith('user/message') || t.startsWith('tool/') || t.startsWith('step/'))).toEqual([
      'step/start{1,1}',
      'user/message(show me)',
      'tool/call(c1)',
      'tool/result(c1)',
      'step/end{1,1}',
      'step/start{1,2}',
      'user/message(The image returned by tool get-tiny-image:image)',
      'step/end{1,2}',
    ])
  })

  it('a bad argument is refused against the server schema before any request: the same tool/result error as a zod refusal', async () => {
    const before = server.wire.sent.length
    const zodEcho = defineTool({ name: 'zod_echo', description: 'echo', input: z.object({ message: z.string() }), execute: ({ message }) => message })
    const { agent } = scriptedAgent(
      [toolCallResponse([call('c1', 'echo', { message: 3 }), call('c2', 'zod_echo', { message: 3 }), call('c3', 'get-sum', { a: 1 })]), textResponse('sorry')],
      { tools: [...tools, zodEcho] },
    )
    await agent.run('echo a number')
    const [mcp, zod, missing] = ['c1', 'c2', 'c3'].map((id) => resultOf(agent.session.events, id).data)
    expect(mcp.error).toEqual({ name: 'InvalidArgumentsError', code: 'INVALID_ARGS' })
    expect(mcp.error).toEqual(zod.error)
    expect(mcp.message.content[0]).toMatchObject({ isError: true, content: 'Error: invalid arguments for tool echo: message: must be string' })
    expect(zod.message.content[0].content).toMatch(/^Error: invalid arguments for tool zod_echo: message: /)
    expect(missing.message.content[0].content).toBe('Error: invalid arguments for tool get-sum: b: required')
    // nothing was sent for the refused calls
    expect(server.wire.sent.slice(before).filter((m: any) => m.method === 'tools/call')).toEqual([])
  })

  it('cancelling the turn cancels the running call: notifications/cancelled goes out and the server never answers it', async () => {
    let cancelAt: (() => void) | undefined
    const progress = await mcpTools(server.client, {
      include: ['trigger-long-running-operation', 'echo'],
      onProgress: () => cancelAt?.(),
    })
    const { agent } = scriptedAgent([toolCallResponse([call('c1', 'trigger-long-running-operation', { duration: 1, steps: 10 })])], { tools: progress })
    cancelAt = () => {
      cancelAt = undefined
      agent.cancel({ kind: 'user' })
    }
    const result = await agent.run('wait')
    expect(result.end.kind).toBe('aborted')
    const aborted = resultOf(agent.session.events, 'c1').data
    expect(aborted.error).toEqual({ name: 'AbortError', code: 'ABORTED' })
    expect(aborted.message.content[0].content).toMatch(/^Error: tool call aborted: the MCP request was cancelled/)
    const { id } = requestIdOf('trigger-long-running-operation')
    expect(server.wire.sent).toContainEqual(expect.objectContaining({ method: 'notifications/cancelled', params: expect.objectContaining({ requestId: id }) }))
    // the server's handler goes on to its last step, then drops the answer because it saw the cancel; a
    // request sent after that last progress is answered after the dropped answer would have been
    await server.wire.until((m) => m.method === 'notifications/progress' && m.params.progressToken === id && m.params.progress === 10)
    const echo = await server.client.callTool({ name: 'echo', arguments: { message: 'after' } })
    expect(echo.content).toEqual([{ type: 'text', text: 'Echo: after' }])
    expect(server.wire.received.filter((m: any) => m.id === id)).toEqual([])
    progress.close()
  })

  it("the tool's timeout cancels the call too: a TOOL_TIMEOUT result and notifications/cancelled to the server", async () => {
    const slow = await mcpTools(server.client, { include: ['trigger-long-running-operation'], timeoutMs: 200 })
    const { agent } = scriptedAgent([toolCallResponse([call('c1', 'trigger-long-running-operation', { duration: 1, steps: 2 })]), textResponse('too slow')], {
      tools: slow,
    })
    const result = await agent.run('wait')
    expect(result.end.kind).toBe('completed')
    expect(resultOf(agent.session.events, 'c1').data.error).toEqual({ name: 'ToolTimeoutError', code: 'TOOL_TIMEOUT' })
    const { id } = requestIdOf('trigger-long-running-operation')
    expect(server.wire.sent).toContainEqual(expect.objectContaining({ method: 'notifications/cancelled', params: expect.objectContaining({ requestId: id }) }))
    await server.wire.until((m) => m.method === 'notifications/progress' && m.params.progressToken === id && m.params.progress === 2)
    await server.client.callTool({ name: 'echo', arguments: { message: 'after' } })
    expect(server.wire.received.filter((m: any) => m.id === id)).toEqual([])
    slow.close()
  })

  it('results of resources and resource links: a text resource inline, a link as its name and uri', async () => {
    const { agent } = scriptedAgent(
      [
        toolCallResponse([call('c1', 'get-resource-reference', { resourceType: 'Text', resourceId: 2 }), call('c2', 'get-resource-links', { count: 1 })]),
        textResponse('ok'),
      ],
      { tools },
    )
    await agent.run('resources')
    expect(resultOf(agent.session.events, 'c1').data.message.content[0].content).toMatch(
      /^Returning resource reference for Resource 2:\n\[resource <demo:\/\/resource\/dynamic\/text\/2> \(text\/plain\)\]\nResource 2: This is a plaintext resource/,
    )
    expect(resultOf(agent.session.events, 'c2').data.message.content[0].content).toMatch(
      /\n\[resource link\] .+ <demo:\/\/resource\/dynamic\/(text|blob)\/1> \(text\/plain\): /,
    )
  })

  it('a server process that dies mid-call gives the call an MCP_DISCONNECTED result; the app reconnects and the same set works again', async () => {
    const own = await everything()
    const pid = own.transport.pid!
    let alive = true
    // the first progress says the call is running on the server: the process dies under it
    const die = () => void (alive && ((alive = false), process.kill(pid, 'SIGKILL')))
    const set = await mcpTools(own.client, { include: ['trigger-long-running-operation', 'echo'], onProgress: die })
    const { agent } = scriptedAgent(
      [
        toolCallResponse([call('c1', 'trigger-long-running-operation', { duration: 5, steps: 50 })]),
        textResponse('the server died'),
        toolCallResponse([call('c2', 'echo', { message: 'back' })]),
        textResponse('ok'),
      ],
      { tools: set },
    )
    const first = await agent.run('wait')
    expect(first.end.kind).toBe('completed')
    expect(resultOf(agent.session.events, 'c1').data.error).toEqual({ name: 'McpToolError', code: 'MCP_DISCONNECTED' })
    // reconnecting is the app's: here, the same client over a new process
    await own.client.close()
    await own.client.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'pipe' }))
    await set.refresh()
    const second = await agent.run('again')
    expect(second.end.kind).toBe('completed')
    expect(resultOf(agent.session.events, 'c2').data.message.content[0].content).toBe('Echo: back')
    set.close()
    await own.client.close()
  })
})

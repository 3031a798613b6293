// An agent with the tools of an MCP server: server-everything (from npm) runs
// as a child process over stdio, and its tools become agentchart tools. The
// model is scripted, so the example runs offline; the tool calls are real.
import { createRequire } from 'node:module'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { createAgent, type SessionEvent } from '../src/index.js'
import { mcpTools } from '../src/mcp/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../src/testing/index.js'

export async function mcpExample(): Promise<{ events: SessionEvent[]; tools: string[]; text: string }> {
  // usually `command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything']`; here the installed copy
  const server = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js')
  const client = new Client({ name: 'agentchart-example', version: '1.0.0' })
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [server, 'stdio'], stderr: 'ignore' }))
  try {
    const tools = await mcpTools(client, {
      include: ['echo', 'get-sum'],
      prefix: 'everything_',
      // the server's hints are only hints: trust them for servers you trust
      executionMode: (tool) => (tool.annotations?.readOnlyHint ? 'parallel' : 'exclusive'),
    })
    const agent = createAgent({
      id: 'mcp-example',
      model: scriptedModel([
        toolCallResponse([
          { id: 'c1', name: 'everything_get-sum', arguments: '{"a":2,"b":40}' },
          { id: 'c2', name: 'everything_echo', arguments: '{"message":42}' },
        ]),
        toolCallResponse([{ id: 'c3', name: 'everything_echo', arguments: '{"message":"the sum is 42"}' }]),
        textResponse('2 + 40 is 42.'),
      ]),
      tools, // the set itself, not a copy: a tools/list_changed on the server takes effect at the next step
    })
    const result = await agent.run('What is 2 + 40? Echo the answer.')
    console.log(tools.map((t) => t.name).join(', '), '|', result.text) // everything_echo, everything_get-sum | 2 + 40 is 42.
    await agent.dispose()
    tools.close()
    return { events: [...agent.session.events], tools: tools.map((t) => t.name), text: result.text }
  } finally {
    await client.close() // the app owns the connection: closing it ends the server process
  }
}

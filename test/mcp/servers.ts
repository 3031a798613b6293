// Real MCP servers for the tests: server-everything from npm over stdio,
// servers built in-process with the SDK over Streamable HTTP on loopback, and
// a server that answers JSON-RPC by hand over the SDK's in-memory transport,
// for answers no SDK server sends. A wire tap records the JSON-RPC messages
// each way, so a test can show what the server was sent and what it answered.
import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'

export const EVERYTHING = resolve(import.meta.dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js')

/** The messages a client sent and received, in order. */
export interface Wire {
  sent: JSONRPCMessage[]
  received: JSONRPCMessage[]
  /** Resolves once a received message passes `test` (at once when one already did). */
  until(test: (message: any) => boolean): Promise<any>
}

/** Taps a transport; call before connect for sends, and `listen` after it for what arrives. */
function tap(transport: Transport): Wire & { listen(): void } {
  const wire = { sent: [] as JSONRPCMessage[], received: [] as JSONRPCMessage[] }
  const waiters: Array<{ test: (m: any) => boolean; resolve: (m: any) => void }> = []
  const send = transport.send.bind(transport)
  transport.send = (message, options) => {
    wire.sent.push(message)
    return send(message, options)
  }
  return {
    ...wire,
    until(test) {
      const seen = wire.received.find(test)
      return seen ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ test, resolve }))
    },
    listen() {
      const onmessage = transport.onmessage!
      transport.onmessage = (message, extra) => {
        wire.received.push(message)
        for (const waiter of [...waiters]) {
          if (waiter.test(message)) {
            waiters.splice(waiters.indexOf(waiter), 1)
            waiter.resolve(message)
          }
        }
        onmessage(message, extra)
      }
    },
  }
}

/** server-everything as a child process over stdio, with a connected client. */
export async function everything(): Promise<{ client: Client; wire: Wire; transport: StdioClientTransport; close: () => Promise<void> }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'pipe' })
  const wire = tap(transport)
  const client = new Client({ name: 'agentchart-test', version: '1.0.0' })
  await client.connect(transport)
  wire.listen()
  return { client, wire, transport, close: () => client.close() }
}

/** An in-process SDK server over Streamable HTTP on 127.0.0.1, and a client connected to it. */
export async function httpServer(
  server: McpServer | Server,
  clientOptions: ConstructorParameters<typeof Client>[1] = {},
): Promise<{ client: Client; wire: Wire; http: HttpServer; kill: () => void; close: () => Promise<void> }> {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => 'session-1' })
  await server.connect(transport)
  const http = createServer((req, res) => void transport.handleRequest(req, res))
  await new Promise<void>((done) => http.listen(0, '127.0.0.1', done))
  const { port } = http.address() as AddressInfo
  const clientTransport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
    reconnectionOptions: { initialReconnectionDelay: 10, maxReconnectionDelay: 20, reconnectionDelayGrowFactor: 1, maxRetries: 1 },
  })
  const wire = tap(clientTransport)
  const client = new Client({ name: 'agentchart-test', version: '1.0.0' }, clientOptions)
  client.onerror = () => {} // a killed server makes the transport report errors; the tests assert what the calls get
  await client.connect(clientTransport)
  wire.listen()
  // the server gone at once: every connection cut, no new one accepted
  const kill = () => {
    http.closeAllConnections()
    http.close()
  }
  return {
    client,
    wire,
    http,
    kill,
    close: async () => {
      await client.close().catch(() => {})
      kill()
      await server.close()
    },
  }
}

/** What the hand-written server answers a request with: its result, or a throw for a JSON-RPC error. */
export type Answer = (method: string, params: any) => unknown

/**
 * A server that answers each request with `answer`, at the JSON-RPC level over the SDK's in-memory transport
 * (objects pass as they are, so a -0 that JSON.parse read from Python's `-0.0` arrives as -0), and an SDK client
 * connected to it.
 */
export async function rawServer(
  answer: Answer,
  capabilities: Record<string, unknown> = { tools: {} },
): Promise<{ client: Client; notify: (method: string) => Promise<void>; close: () => Promise<void> }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  const reply = (id: unknown, outcome: object) => serverSide.send({ jsonrpc: '2.0', id, ...outcome } as JSONRPCMessage)
  serverSide.onmessage = async (message: any) => {
    if (message.id === undefined) return // a notification
    if (message.method === 'initialize') {
      const result = { protocolVersion: message.params.protocolVersion, capabilities, serverInfo: { name: 'raw', version: '1.0.0' } }
      return reply(message.id, { result })
    }
    if (message.method === 'ping') return reply(message.id, { result: {} })
    try {
      await reply(message.id, { result: await answer(message.method, message.params) })
    } catch (error) {
      await reply(message.id, { error: { code: -32603, message: (error as Error).message } })
    }
  }
  await serverSide.start()
  const client = new Client({ name: 'agentchart-test', version: '1.0.0' })
  await client.connect(clientSide)
  return { client, notify: (method) => serverSide.send({ jsonrpc: '2.0', method, params: {} }), close: () => client.close() }
}

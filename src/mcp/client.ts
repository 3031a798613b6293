// The part of an @modelcontextprotocol/sdk Client that agentchart/mcp uses,
// written structurally: a Client of any 1.x release (or of a second copy of
// the SDK in node_modules) fits, and agentchart never imports the SDK's code
// for it.
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js'

export interface McpClient {
  listTools(params?: { cursor?: string }, options?: RequestOptions): Promise<{ tools: unknown[]; nextCursor?: string }>
  callTool(params: { name: string; arguments?: Record<string, unknown> }, resultSchema?: undefined, options?: RequestOptions): Promise<unknown>
  ping(options?: RequestOptions): Promise<unknown>
  /** Any request, its result checked with `resultSchema` (a schema of the SDK's types): a tools/list page listTools refused is fetched again with it. */
  request?(request: { method: string; params?: Record<string, unknown> }, resultSchema: unknown, options?: RequestOptions): Promise<unknown>
  setNotificationHandler(schema: any, handler: (notification: any) => void | Promise<void>): void
  getServerCapabilities(): { tools?: { listChanged?: boolean } } | undefined
}

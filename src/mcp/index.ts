// agentchart/mcp: the tools of Model Context Protocol servers as agentchart
// tools (docs/mcp.md). @modelcontextprotocol/sdk and ajv are optional peers,
// loaded only when mcpTools runs; `agentchart` itself never loads them.
export { mcpTools, McpToolSet, RELIST_TIMEOUT_MS } from './tools.js'
export type { McpToolsOptions, McpToolFilter, McpProgress, SkippedMcpTool } from './tools.js'
export { McpToolError } from './errors.js'
export type { McpToolErrorCode } from './errors.js'
export { LIVENESS_TIMEOUT_MS } from './connection.js'
export type { McpClient } from './client.js'
export type { McpResultMeta } from './content.js'

// What can go wrong between agentchart and an MCP server, as one typed error.
// A tool body throws it, so a failed call becomes the call's error result
// with `error: { name: 'McpToolError', code }` (TL-9) and the turn goes on;
// a call the turn's cancel aborted ends as any aborted call does (AbortError, ABORTED).
import { AgentchartError } from '../errors.js'

export type McpToolErrorCode =
  /** The server went away during the call (its connection closed, or it no longer answers a ping). */
  | 'MCP_DISCONNECTED'
  /** The MCP SDK's request timeout passed without an answer (the SDK then cancels the request). */
  | 'MCP_TIMEOUT'
  /** Listing the server's tools failed (at mcpTools, or when a changed list was fetched again). */
  | 'MCP_LIST_FAILED'
  /** Any other protocol error the server or the SDK answered with. */
  | 'MCP_ERROR'

export class McpToolError extends AgentchartError {
  declare readonly code: McpToolErrorCode
  /** The remote tool's name as the server lists it (absent for a listing failure). */
  readonly tool?: string
  /** The JSON-RPC error code, when the failure was a protocol error. */
  readonly protocolCode?: number
  constructor(code: McpToolErrorCode, message: string, options: { tool?: string; protocolCode?: number; cause?: unknown } = {}) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'McpToolError'
    if (options.tool !== undefined) this.tool = options.tool
    if (options.protocolCode !== undefined) this.protocolCode = options.protocolCode
  }
}

/** JSON-RPC error codes the SDK uses for its own failures (ErrorCode in @modelcontextprotocol/sdk/types). */
export const CONNECTION_CLOSED = -32000
export const REQUEST_TIMEOUT = -32001

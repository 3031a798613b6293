// mcpTools: an MCP server's tools as agentchart tools. The set is an array of
// tool definitions (spread it, filter it, pass it as `tools`) and a tool
// source: passed to createAgent as it is, it is read again before each step,
// so a `notifications/tools/list_changed` takes effect at the next step.
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { canonical } from '../values/canonical.js'
import { ConfigError } from '../errors.js'
import { describeValue, isArrayLike, isRecordLike } from '../values/foreign.js'
import type { HookLogger } from '../runtime/hooks.js'
import { formatPath, toFrozenJson } from '../session/lossless.js'
import { defineTool, type ExecutionMode, type ToolDefinition } from '../tools/define.js'
import type { ToolRead, ToolSource } from '../tools/source.js'
import { loadValidators, type ArgumentCheck, type Validators } from './arguments.js'
import type { McpClient } from './client.js'
import { followToolList, messageOf, sdkTypes, watchOf } from './connection.js'
import { toToolResult } from './content.js'
import { CONNECTION_CLOSED, McpToolError, REQUEST_TIMEOUT } from './errors.js'

/** Which remote tools to take: their names as the server lists them, or a test of each tool. */
export type McpToolFilter = readonly string[] | ((tool: Tool) => boolean)

/** A progress notification of a running call (the SDK asks for them, so long tools are not cut at its timeout). */
export interface McpProgress {
  /** The agentchart name of the tool and the call's id. */
  name: string
  callId: string
  progress: number
  total?: number
  message?: string
}

export interface McpToolsOptions {
  /** Only these tools (default: all). */
  include?: McpToolFilter
  /** Not these tools (applied after include). */
  exclude?: McpToolFilter
  /** Every tool's execution mode, or one per remote tool (e.g. parallel for `annotations.readOnlyHint`); default exclusive. */
  executionMode?: ExecutionMode | ((tool: Tool) => ExecutionMode)
  /**
   * Put before every remote name: `prefix: 'files'` and `prefix: 'files_'` both make `read` the tool `files_read`
   * (a prefix that ends in '_', '.' or '-' is used as is, any other is joined with '_').
   */
  prefix?: string
  /**
   * A call still running after this many milliseconds ends as a TOOL_TIMEOUT error result and its request is
   * cancelled (`Infinity`: no limit); it replaces the SDK's request timeout. Default: the SDK's timeout (60 s,
   * restarted by each progress notification), after which the call is an MCP_TIMEOUT error result.
   */
  timeoutMs?: number
  /** Progress notifications of running calls. */
  onProgress?: (progress: McpProgress) => void
  /** Where a failed re-listing or a tool left out is reported; default console. */
  logger?: HookLogger
}

/** A remote tool the set does not offer, and why. */
export interface SkippedMcpTool {
  name: string
  reason: string
}

const CREATE = Symbol('create')

/** The longest timer Node keeps (a longer one fires at once): the SDK's request timeout turned off. */
const NO_SDK_TIMEOUT = 2 ** 31 - 1

/** How long a re-listing after `notifications/tools/list_changed` may take before the set keeps its list. */
export const RELIST_TIMEOUT_MS = 10_000

interface Settings {
  client: McpClient
  include?: McpToolFilter
  exclude?: McpToolFilter
  executionMode: ExecutionMode | ((tool: Tool) => ExecutionMode)
  prefix: string
  timeoutMs?: number
  onProgress?: (progress: McpProgress) => void
  logger: HookLogger
  validators: Validators
}

/**
 * The tools of one MCP server. It is an array of the tools listed last (for reading, spreading, filtering:
 * a spread copy does not follow changes) and a tool source, so `createAgent({ tools: set })` or
 * `tools: [mine, set]` offers the server's tools as they are at each step.
 */
export class McpToolSet extends Array<ToolDefinition> implements ToolSource {
  // map, filter and slice make plain arrays, not sets that would need a client
  static override get [Symbol.species]() {
    return Array
  }
  #settings!: Settings
  #tools: readonly ToolDefinition[] = Object.freeze([])
  #skipped: readonly SkippedMcpTool[] = Object.freeze([])
  /** Definitions by the canonical JSON of the remote tool: an unchanged tool keeps its definition across listings. */
  #made = new Map<string, ToolDefinition>()
  #refreshing: Promise<readonly ToolDefinition[]> | null = null
  #again = false
  /** A call answered since the last listing: the server may have changed its tools, announced or not yet. */
  #stale = false
  /** The server announces list changes (capability tools.listChanged): only then can its tools change. */
  #changes = false
  /** The turn the set was last read for: a new turn lists the tools again. */
  #turn: number | undefined
  #unfollow: (() => void) | null = null
  #changeListeners = new Set<(tools: readonly ToolDefinition[]) => void>()

  /** Made by mcpTools only (the key is not exported): a set needs a client and checked settings. */
  static async [CREATE](settings: Settings): Promise<McpToolSet> {
    const set = new McpToolSet()
    set.#settings = settings
    // followed before the first listing, so a change announced while it runs is listed after it
    set.#changes = settings.client.getServerCapabilities()?.tools?.listChanged === true
    // refresh() reports its own failures: the catch only keeps a rejection from going unhandled
    if (set.#changes) set.#unfollow = await followToolList(settings.client, () => void set.refresh().catch(() => {}))
    const first = listAll(settings.client).then((listed) => (set.#take(listed), set.#tools))
    set.#refreshing = first
    try {
      await first
    } catch (error) {
      set.close()
      throw error
    } finally {
      set.#refreshing = null
    }
    if (set.#again) void set.refresh().catch(() => {})
    return set
  }

  /** The remote tools left out at the last listing (a name agentchart cannot use, a tool that needs MCP tasks). */
  get skipped(): readonly SkippedMcpTool[] {
    return this.#skipped
  }

  /**
   * The tools as they are now; while a changed list is being fetched, a promise of the new list (the step waits).
   * A server that announces list changes is also listed again at the first request of each turn and after a
   * step in which a call of this set was answered: a change made since may still be on its way, on another
   * stream than the results (docs/mcp.md).
   */
  currentTools(read?: ToolRead): readonly ToolDefinition[] | Promise<readonly ToolDefinition[]> {
    const newTurn = read !== undefined && read.turn !== this.#turn
    if (read !== undefined) this.#turn = read.turn
    if (this.#refreshing) return this.#refreshing
    if ((this.#stale || newTurn) && this.#unfollow !== null) {
      this.#stale = false
      return this.refresh()
    }
    return this.#tools
  }

  /**
   * Lists the server's tools again (a `tools/list_changed` does this by itself). Resolves with the new tools;
   * a failed listing keeps the old ones, is reported to the logger, and resolves with them.
   */
  refresh(): Promise<readonly ToolDefinition[]> {
    if (this.#refreshing) {
      this.#again = true // a change announced while listing: list once more after this one
      return this.#refreshing
    }
    const run = async () => {
      try {
        do {
          this.#again = false
          this.#stale = false
          try {
            this.#take(await listAll(this.#settings.client, RELIST_TIMEOUT_MS))
          } catch (error) {
            this.#settings.logger.error('agentchart/mcp: listing the changed tools failed; the tools stay as they were', error)
          }
        } while (this.#again)
      } finally {
        // whatever happened, the next refresh() lists again rather than getting this one's promise
        this.#refreshing = null
      }
      return this.#tools
    }
    return (this.#refreshing = run())
  }

  /** Calls `listener` with the new tools each time a listing changed them; returns the function that stops it. */
  onChange(listener: (tools: readonly ToolDefinition[]) => void): () => void {
    this.#changeListeners.add(listener)
    return () => this.#changeListeners.delete(listener)
  }

  /** Stops following the server's list changes (the client stays connected: closing it is the app's). */
  close(): void {
    this.#unfollow?.()
    this.#unfollow = null
  }

  /** Makes the definitions of a listing and shows them as the array's items. */
  #take(listed: readonly unknown[]): void {
    const { prefix, include, exclude, logger } = this.#settings
    const tools: ToolDefinition[] = []
    const skipped: SkippedMcpTool[] = []
    const made = new Map<string, ToolDefinition>()
    const names = new Set<string>()
    for (const entry of listed) {
      const remote = entry instanceof Refused ? entry.entry : entry
      if (!isRecordLike(remote) || typeof remote.name !== 'string' || !isRecordLike(remote.inputSchema)) {
        skipped.push({ name: isRecordLike(remote) ? String(remote.name) : describeValue(remote), reason: 'not a tool: no name or no inputSchema' })
        continue
      }
      if (entry instanceof Refused) {
        skipped.push({ name: remote.name, reason: entry.reason })
        continue
      }
      const tool = remote as unknown as Tool
      if (!passes(include, tool, true, logger) || passes(exclude, tool, false, logger)) continue
      const name = `${prefix}${tool.name}`
      if (names.has(name)) {
        skipped.push({ name: tool.name, reason: `the server lists two tools named ${name}` })
        continue
      }
      if (tool.execution?.taskSupport === 'required') {
        skipped.push({ name: tool.name, reason: 'it runs only as an MCP task (tasks/*), which agentchart/mcp does not drive' })
        continue
      }
      try {
        const key = canonical(remote)
        const definition = this.#made.get(key) ?? this.#define(name, tool)
        made.set(key, definition)
        names.add(name)
        tools.push(definition)
      } catch (error) {
        // a RangeError is a stack overflow: a definition nested deeper than reading it can go
        skipped.push({ name: tool.name, reason: error instanceof RangeError ? `its definition is nested too deeply (${messageOf(error)})` : messageOf(error) })
      }
    }
    // said once per tool, not at every listing: `set.skipped` keeps the reasons
    const before = new Set(this.#skipped.map((each) => each.name))
    for (const each of skipped) if (!before.has(each.name)) logger.error(`agentchart/mcp: tool ${each.name} is left out: ${each.reason}`, undefined)
    const changed = tools.length !== this.#tools.length || tools.some((tool, i) => tool !== this.#tools[i])
    this.#made = made
    this.#skipped = Object.freeze(skipped)
    if (!changed) return
    this.#tools = Object.freeze(tools)
    this.length = 0
    this.push(...tools)
    for (const listener of [...this.#changeListeners]) {
      try {
        listener(this.#tools)
      } catch (error) {
        logger.error('agentchart/mcp: an onChange listener threw', error)
      }
    }
  }

  /** One remote tool as an agentchart tool: the server's schema sent as is and checked with Ajv. */
  #define(name: string, tool: Tool): ToolDefinition {
    const { client, timeoutMs, onProgress, logger, validators, executionMode } = this.#settings
    const jsonSchema = toFrozenJson(tool.inputSchema as Record<string, unknown>, `tool ${tool.name}: inputSchema`)
    let validate: ArgumentCheck | undefined
    try {
      validate = validators.compile(jsonSchema)
    } catch (error) {
      // the server checks its arguments too: a schema Ajv cannot compile leaves the check to it
      logger.error(`agentchart/mcp: the input schema of tool ${tool.name} cannot be compiled; its arguments go to the server unchecked`, error)
    }
    const remote = tool.name
    return defineTool({
      name,
      description: tool.description ?? tool.title ?? '',
      input: validate ? { jsonSchema, validate } : { jsonSchema },
      executionMode: typeof executionMode === 'function' ? modeOf(executionMode, tool) : executionMode,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      execute: async (args, { signal, callId }) => {
        const watch = watchOf(client).track()
        const both = anySignal(signal, watch.signal)
        try {
          const result = await client.callTool({ name: remote, arguments: args as Record<string, unknown> }, undefined, {
            signal: both.signal,
            resetTimeoutOnProgress: true,
            onprogress: ({ progress, total, message }) =>
              onProgress?.({ name, callId, progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message } : {}) }),
            // with a timeoutMs, agentchart's timer is the limit (TOOL_TIMEOUT, then the signal cancels the request)
            ...(timeoutMs !== undefined ? { timeout: NO_SDK_TIMEOUT } : {}),
          })
          this.#stale = this.#changes
          return toToolResult(name, remote, result)
        } catch (error) {
          throw failureOf(remote, error, signal, watch.signal)
        } finally {
          both.dispose()
          watch.done()
        }
      },
    })
  }
}

/**
 * The tools of the MCP server `client` is connected to, as agentchart tools (docs/mcp.md). Lists every page of
 * `tools/list`; the returned set follows `notifications/tools/list_changed` until `set.close()`.
 */
export async function mcpTools(client: McpClient, options: McpToolsOptions = {}): Promise<McpToolSet> {
  if (!isRecordLike(client)) throw new ConfigError(`mcpTools needs a Client of @modelcontextprotocol/sdk, got ${describeValue(client)}`, { path: 'client' })
  const missing = CLIENT_METHODS.find((method) => typeof client[method] !== 'function')
  if (missing !== undefined) {
    throw new ConfigError(`mcpTools needs a Client of @modelcontextprotocol/sdk, got ${describeValue(client)} without ${missing}()`, { path: 'client' })
  }
  if (!isRecordLike(options)) throw new ConfigError(`mcpTools options must be an object, got ${describeValue(options)}`, { path: 'options' })
  const { include, exclude, executionMode = 'exclusive', prefix = '', timeoutMs, onProgress, logger }: McpToolsOptions = options
  for (const [key, filter] of [
    ['include', include],
    ['exclude', exclude],
  ] as const) {
    const names = isArrayLike(filter) && Array.from(filter).every((n) => typeof n === 'string')
    if (filter !== undefined && typeof filter !== 'function' && !names) {
      throw new ConfigError(`mcpTools: ${key} must be an array of tool names or a function of the tool, got ${describeValue(filter)}`, { path: key })
    }
  }
  if (executionMode !== 'parallel' && executionMode !== 'exclusive' && typeof executionMode !== 'function') {
    throw new ConfigError(`mcpTools: executionMode must be 'parallel', 'exclusive' or a function of the tool, got ${describeValue(executionMode)}`, {
      path: 'executionMode',
    })
  }
  // a prefix of other characters would make every name one agentchart refuses
  if (typeof prefix !== 'string' || !/^[A-Za-z0-9_.-]*$/.test(prefix)) {
    throw new ConfigError(`mcpTools: prefix must be a string of letters, digits, '_', '.' or '-', got ${describeValue(prefix)}`, { path: 'prefix' })
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0)) {
    throw new ConfigError(`mcpTools: timeoutMs must be a positive number of milliseconds, got ${describeValue(timeoutMs)}`, { path: 'timeoutMs' })
  }
  if (onProgress !== undefined && typeof onProgress !== 'function') throw new ConfigError('mcpTools: onProgress must be a function', { path: 'onProgress' })
  if (logger !== undefined && !(isRecordLike(logger) && typeof logger.error === 'function')) {
    throw new ConfigError(`mcpTools: logger must be an object with an error(message, error) method, got ${describeValue(logger)}`, { path: 'logger' })
  }
  const capabilities = client.getServerCapabilities()
  if (capabilities === undefined) {
    throw new ConfigError('mcpTools needs a connected client: await client.connect(transport) first', { path: 'client' })
  }
  if (capabilities.tools?.listChanged === true && typeof client.setNotificationHandler !== 'function') {
    throw new ConfigError(`mcpTools needs a Client of @modelcontextprotocol/sdk, got ${describeValue(client)} without setNotificationHandler()`, {
      path: 'client',
    })
  }
  const report = logger ?? { error: (message, error) => console.error(`[agentchart] ${message}`, ...(error === undefined ? [] : [error])) }
  return McpToolSet[CREATE]({
    client,
    ...(include !== undefined ? { include } : {}),
    ...(exclude !== undefined ? { exclude } : {}),
    executionMode,
    // one separator, whichever way the prefix was written
    prefix: prefix === '' || /[_.-]$/.test(prefix) ? prefix : `${prefix}_`,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(onProgress ? { onProgress } : {}),
    // a logger that throws must not fail the listing or the call it reports on
    logger: {
      error: (message, error) => {
        try {
          report.error(message, error)
        } catch {
          // the report is lost; the set goes on
        }
      },
    },
    validators: await loadValidators(),
  })
}

/** What mcpTools calls on every client (setNotificationHandler only when the server announces list changes). */
const CLIENT_METHODS = ['listTools', 'callTool', 'ping', 'getServerCapabilities'] as const

/** Every page of tools/list; a server without the tools capability has none. */
async function listAll(client: McpClient, timeout?: number): Promise<unknown[]> {
  if (!client.getServerCapabilities()?.tools) return []
  const tools: unknown[] = []
  const cursors = new Set<string>()
  let cursor: string | undefined
  try {
    do {
      const page = await listPage(client, cursor === undefined ? undefined : { cursor }, timeout === undefined ? undefined : { timeout })
      if (!isRecordLike(page) || !isArrayLike(page.tools)) throw new Error(`the answer to tools/list is not a list of tools: ${describeValue(page)}`)
      tools.push(...page.tools)
      cursor = typeof page.nextCursor === 'string' ? page.nextCursor : undefined
      // a server that hands out a cursor twice would have us list forever
      if (cursor !== undefined && cursors.has(cursor)) throw new Error(`the server returned the cursor ${JSON.stringify(cursor)} twice`)
      if (cursor !== undefined) cursors.add(cursor)
    } while (cursor !== undefined)
  } catch (error) {
    throw new McpToolError('MCP_LIST_FAILED', `listing the MCP server's tools failed: ${messageOf(error)}`, { cause: error })
  }
  return tools
}

/** A listed entry that MCP's tool schema refuses, kept so that #take leaves it out and says why. */
class Refused {
  constructor(
    readonly entry: unknown,
    readonly reason: string,
  ) {}
}

/**
 * One page of tools/list. The SDK checks a page as a whole, so one malformed tool would fail it: such a page is
 * fetched again with the SDK's loose result schema and its tools are checked one by one, so only the bad ones are
 * left out. Why listTools first: it also keeps the tools' output schemas, against which the SDK checks results.
 */
async function listPage(client: McpClient, params: { cursor: string } | undefined, options: RequestOptions | undefined): Promise<unknown> {
  try {
    return await client.listTools(params, options)
  } catch (error) {
    // a protocol error (the server's, a timeout, a closed connection) would only come again
    if ((isRecordLike(error) && typeof error.code === 'number') || typeof client.request !== 'function') throw error
  }
  const { PaginatedResultSchema, ToolSchema } = await sdkTypes()
  const page = await client.request({ method: 'tools/list', ...(params !== undefined ? { params } : {}) }, PaginatedResultSchema, options)
  if (!isRecordLike(page) || !isArrayLike(page.tools)) return page
  const check = (entry: unknown): unknown => {
    try {
      const checked = ToolSchema.safeParse(entry)
      if (checked.success) return checked.data
      const issues = checked.error.issues.map((issue) => (issue.path.length ? `${formatPath('', issue.path)}: ${issue.message}` : issue.message))
      return new Refused(entry, `not a tool by MCP's schema: ${issues.join('; ')}`)
    } catch (error) {
      return new Refused(entry, `not a tool by MCP's schema: ${messageOf(error)}`)
    }
  }
  return { ...page, tools: page.tools.map(check) }
}

/** Whether a filter takes `tool`; a filter that throws takes it out (logged), as excluding it is the safe side. */
function passes(filter: McpToolFilter | undefined, tool: Tool, absent: boolean, logger: HookLogger): boolean {
  if (filter === undefined) return absent
  if (typeof filter !== 'function') return filter.includes(tool.name)
  try {
    return filter(tool) === true
  } catch (error) {
    logger.error(`agentchart/mcp: the ${absent ? 'include' : 'exclude'} filter threw on tool ${tool.name}; the tool is left out`, error)
    return !absent
  }
}

/** A mode function's answer for one tool; anything but 'parallel' (or a throw) is exclusive, as TL-2 has it. */
function modeOf(decide: (tool: Tool) => ExecutionMode, tool: Tool): ExecutionMode {
  try {
    return decide(tool) === 'parallel' ? 'parallel' : 'exclusive'
  } catch {
    return 'exclusive'
  }
}

/** A signal aborted by either (AbortSignal.any is newer than Node 20.0). */
function anySignal(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController()
  const fromA = () => controller.abort(a.reason)
  const fromB = () => controller.abort(b.reason)
  if (a.aborted) fromA()
  else if (b.aborted) fromB()
  a.addEventListener('abort', fromA, { once: true })
  b.addEventListener('abort', fromB, { once: true })
  return {
    signal: controller.signal,
    dispose: () => {
      a.removeEventListener('abort', fromA)
      b.removeEventListener('abort', fromB)
    },
  }
}

/** What a failed call throws, so its error result names the cause: a cancel, a lost server, a timeout, the protocol. */
function failureOf(tool: string, error: unknown, turn: AbortSignal, lost: AbortSignal): Error {
  if (turn.aborted) {
    // the same name and code as any call a cancel or a timeout aborts; the SDK sent notifications/cancelled
    return Object.assign(new Error(`tool call aborted: the MCP request was cancelled (${messageOf(turn.reason)})`, { cause: error }), {
      name: 'AbortError',
      code: 'ABORTED',
    })
  }
  if (lost.aborted && lost.reason instanceof McpToolError) return lost.reason
  const code = isRecordLike(error) && typeof error.code === 'number' ? error.code : undefined
  if (code === REQUEST_TIMEOUT) return new McpToolError('MCP_TIMEOUT', messageOf(error), { tool, protocolCode: code, cause: error })
  // 'Not connected': the client was closed, or its transport was; a failed send: the server cannot be reached
  if (code === CONNECTION_CLOSED || /not connected|fetch failed|ECONNREFUSED|EPIPE/i.test(messageOf(error))) {
    return new McpToolError('MCP_DISCONNECTED', `the MCP server is not connected: ${messageOf(error)}`, {
      tool,
      ...(code !== undefined ? { protocolCode: code } : {}),
      cause: error,
    })
  }
  return new McpToolError('MCP_ERROR', messageOf(error), { tool, ...(code !== undefined ? { protocolCode: code } : {}), cause: error })
}

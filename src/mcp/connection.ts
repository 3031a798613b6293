// What agentchart/mcp watches on a client: its connection, so a call to a
// server that went away ends as an error result instead of waiting out the
// SDK's request timeout, and `notifications/tools/list_changed`, fanned out to
// every tool set made over the client. One watch per client, however many sets.
import { ConfigError } from '../errors.js'
import { CONNECTION_CLOSED, McpToolError } from './errors.js'
import type { McpClient } from './client.js'

/** How long a server that reported a transport error has to answer a ping before its calls are failed. */
export const LIVENESS_TIMEOUT_MS = 5000

interface Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
}

/** One client's watch: the calls in flight, the transport hooked, the list listeners. */
class ClientWatch {
  readonly #client: McpClient
  readonly #calls = new Set<AbortController>()
  readonly listeners = new Set<() => void>()
  #hooked: Transport | undefined
  #checking = false

  constructor(client: McpClient) {
    this.#client = client
  }

  /** A call starts: its controller is aborted with MCP_DISCONNECTED if the server goes away meanwhile. */
  track(): { signal: AbortSignal; done: () => void } {
    this.#hook()
    const controller = new AbortController()
    this.#calls.add(controller)
    return { signal: controller.signal, done: () => this.#calls.delete(controller) }
  }

  /**
   * Hooks the client's current transport (again after the app reconnects the client to a new one). Why the
   * transport and not client.onerror: apps set the client's handlers themselves; the SDK chains neither.
   */
  #hook(): void {
    const transport = (this.#client as { transport?: Transport }).transport
    if (transport === undefined || transport === this.#hooked) return
    this.#hooked = transport
    const { onclose, onerror } = transport
    transport.onclose = () => {
      onclose?.call(transport)
      if (this.#hooked === transport) this.#lost('the connection to the MCP server closed', CONNECTION_CLOSED)
    }
    transport.onerror = (error: Error) => {
      onerror?.call(transport, error)
      if (this.#hooked === transport) this.#check(error)
    }
  }

  /** A transport error while calls run: a server that does not answer a ping is gone, and so are its calls' answers. */
  #check(error: Error): void {
    if (this.#checking || this.#calls.size === 0) return
    this.#checking = true
    const waiting = [...this.#calls]
    this.#client.ping({ timeout: LIVENESS_TIMEOUT_MS }).then(
      () => {
        this.#checking = false
      },
      (failure: unknown) => {
        this.#checking = false
        this.#lost(`the MCP server stopped answering (${error.message}; a ping failed: ${messageOf(failure)})`, undefined, waiting)
      },
    )
  }

  #lost(message: string, protocolCode?: number, calls: readonly AbortController[] = [...this.#calls]): void {
    for (const controller of calls) {
      if (!this.#calls.has(controller)) continue
      this.#calls.delete(controller)
      controller.abort(new McpToolError('MCP_DISCONNECTED', message, protocolCode === undefined ? {} : { protocolCode }))
    }
  }
}

const watches = new WeakMap<object, ClientWatch>()
/** Clients whose list_changed handler is installed (or being installed: the SDK's types load first). */
const following = new WeakMap<object, Promise<void>>()

/** The watch of a client, made on first use. */
export function watchOf(client: McpClient): ClientWatch {
  let watch = watches.get(client)
  if (!watch) watches.set(client, (watch = new ClientWatch(client)))
  return watch
}

/**
 * Calls `listener` on every `notifications/tools/list_changed` of the client until the returned function is
 * called. The handler a client had for it before (the SDK keeps one per method) is still called after ours.
 */
export async function followToolList(client: McpClient, listener: () => void): Promise<() => void> {
  const watch = watchOf(client)
  let installed = following.get(client)
  if (!installed) following.set(client, (installed = install(client, watch)))
  await installed
  watch.listeners.add(listener)
  return () => watch.listeners.delete(listener)
}

/** The SDK's schemas (@modelcontextprotocol/sdk/types.js), imported when first needed. */
export async function sdkTypes(): Promise<typeof import('@modelcontextprotocol/sdk/types.js')> {
  try {
    return await import('@modelcontextprotocol/sdk/types.js')
  } catch (error) {
    throw new ConfigError('agentchart/mcp needs @modelcontextprotocol/sdk where agentchart can import it: npm install @modelcontextprotocol/sdk', {
      path: '@modelcontextprotocol/sdk',
      cause: error,
    })
  }
}

async function install(client: McpClient, watch: ClientWatch): Promise<void> {
  const { ToolListChangedNotificationSchema } = await sdkTypes()
  // the SDK's handler map is internal; read defensively, so a missing map only means nothing to chain
  const handlers = (client as { _notificationHandlers?: unknown })._notificationHandlers
  const prior = handlers instanceof Map ? (handlers.get('notifications/tools/list_changed') as ((n: unknown) => unknown) | undefined) : undefined
  client.setNotificationHandler(ToolListChangedNotificationSchema, async (notification: unknown) => {
    for (const each of [...watch.listeners]) each()
    await prior?.(notification)
  })
}

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

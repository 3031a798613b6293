// Extension points: waterfall chains with next(), serial listeners, and
// contained notifications (HK-1..HK-3). Listener lists are copied per call so
// a listener that (de)registers others does not disturb the running chain.

/** What `on()` stores: a waterfall listener (it returns a value or calls `next()`), a serial or a notification one, typed per name by the public API. */
type AnyListener = (payload: unknown, next?: () => Promise<unknown>) => unknown

export interface HookLogger {
  error(message: string, error: unknown): void
}

/**
 * The notifications that run synchronously while the machine's effects are performed: a listener of one may send
 * to the agent in the middle of a macrostep, so the machine treats the agent as watched (Facts.observed).
 */
export const NOTIFICATION_NAMES: readonly string[] = Object.freeze([
  'agent/status',
  'agent/inbox/inserted',
  'agent/inbox/discarded',
  'agent/inbox/claimed',
  'agent/error',
  'tools/result',
  'tools/approval-requested',
  'session/event',
])

export class Hooks {
  readonly #listeners = new Map<string, AnyListener[]>()
  /** Called after a listener is added or removed (the runtime tells the machine what changed). */
  onChange: (() => void) | undefined
  constructor(readonly logger: HookLogger) {}

  /** Register a listener; the returned disposer removes exactly this registration. */
  on(name: string, listener: (...args: never[]) => unknown): () => void {
    const list = this.#listeners.get(name) ?? []
    const call = listener as AnyListener
    const entry: AnyListener = (payload, next) => call(payload, next)
    list.push(entry)
    this.#listeners.set(name, list)
    this.onChange?.()
    return () => {
      const current = this.#listeners.get(name)
      if (!current) return
      const at = current.indexOf(entry)
      if (at < 0) return
      current.splice(at, 1)
      this.onChange?.()
    }
  }

  count(name: string): number {
    return this.#listeners.get(name)?.length ?? 0
  }

  clear(): void {
    this.#listeners.clear()
    this.onChange?.()
  }

  /** Run a waterfall: the first listener's return value is authoritative (HK-1). */
  async waterfall<R>(name: string, payload: unknown, fallback: () => R | Promise<R>): Promise<R> {
    const chain = [...(this.#listeners.get(name) ?? [])]
    const run = async (i: number): Promise<R> => (await (i >= chain.length ? fallback() : chain[i](payload, () => run(i + 1)))) as R
    return run(0)
  }

  /** Await each listener in turn; they return nothing (HK-2). */
  async serial(name: string, payload: unknown): Promise<void> {
    for (const listener of [...(this.#listeners.get(name) ?? [])]) await listener(payload)
  }

  /** Notify every listener; throws and rejections are logged and contained (HK-3). */
  emit(name: string, payload: unknown): void {
    const list = this.#listeners.get(name)
    if (!list || list.length === 0) return
    for (const listener of [...list]) {
      try {
        const result = listener(payload)
        if (result && typeof (result as Promise<unknown>).then === 'function') {
          ;(result as Promise<unknown>).then(undefined, (error) => this.logger.error(`a ${name} listener rejected`, error))
        }
      } catch (error) {
        this.logger.error(`a ${name} listener threw`, error)
      }
    }
  }
}

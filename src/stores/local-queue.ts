// Dispatch for stores on one machine (memory, SQLite): no queue library. A
// worker looks for sessions that need a driver when it is told of new mail
// and every `intervalMs`; the lease decides which worker gets each one.
import { WORKER_PREFIX } from './lease.js'
import { Takes, type MailboxBackend, type SessionQueue, type StoreSignal } from './mailbox.js'

/** Listeners of a store's signals, delivered after the current job (never inside a commit). */
export class SignalHub {
  readonly #listeners = new Set<(signal: StoreSignal) => void>()

  get size(): number {
    return this.#listeners.size
  }

  subscribe(listener: (signal: StoreSignal) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  emit(signal: StoreSignal): void {
    if (this.#listeners.size === 0) return
    queueMicrotask(() => {
      for (const listener of [...this.#listeners]) {
        try {
          listener(signal)
        } catch {
          // a listener's failure is its own
        }
      }
    })
  }
}

/** A queue that finds work by asking the store which sessions need a driver. */
export function scanningQueue(backend: () => Pick<MailboxBackend, 'orphans'>, intervalMs: number): SessionQueue {
  const nudges = new Set<() => void>()
  return {
    offer() {
      for (const nudge of nudges) nudge()
      return Promise.resolve()
    },
    work(take, concurrency = 1) {
      let stopped = false
      let scanning: Promise<void> | null = null
      let again = false
      const takes = new Takes(take, concurrency)
      const scan = () => {
        if (stopped) return
        if (scanning !== null) {
          again = true
          return
        }
        scanning = (async () => {
          try {
            do {
              again = false
              for (const id of await backend().orphans(WORKER_PREFIX, 100)) if (stopped || !(await takes.start(id))) return
            } while (again && !stopped)
          } catch {
            // the next scan tries again
          } finally {
            scanning = null
          }
        })()
      }
      nudges.add(scan)
      const timer = setInterval(scan, intervalMs)
      timer.unref()
      scan()
      return Promise.resolve({
        nudge: scan,
        stop: async () => {
          stopped = true
          takes.stop()
          nudges.delete(scan)
          clearInterval(timer)
          await scanning
        },
      })
    },
  }
}

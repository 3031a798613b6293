// Stores for tests: a store whose commits the test releases or fails by hand,
// wrapped around memoryStore so what it acknowledges is really kept.
import type { SessionEvent } from '../../src/index.js'
import { memoryStore, type SessionHandle, type SessionStore } from '../../src/stores/index.js'

/** One commit the store was asked for, waiting for the test's verdict. */
export interface PendingCommit {
  readonly events: readonly SessionEvent[]
  resolve(): void
  reject(error: Error): void
}

export interface ControlledStore {
  readonly store: SessionStore
  /** Commits waiting for a verdict, oldest first (manual mode). */
  readonly waiting: PendingCommit[]
  /** Every batch the store was asked to commit, in order, with its outcome once known. */
  readonly batches: { events: readonly SessionEvent[]; outcome: 'pending' | 'committed' | 'failed' }[]
  /** `auto`: commit after `delayMs` (async); `sync`: commit on the spot like SQLite; `manual`: wait for the test. */
  mode: 'auto' | 'sync' | 'manual'
  delayMs: number
  /** Fail every later commit with this error (null: commit normally). */
  failWith: Error | null
  /** Resolves once a commit is waiting (manual mode). */
  nextCommit(): Promise<PendingCommit>
}

/** A store over memoryStore whose commits the test controls. */
export function controlledStore(mode: ControlledStore['mode'] = 'manual'): ControlledStore {
  const inner = memoryStore()
  const waiters: Array<(commit: PendingCommit) => void> = []
  const control: ControlledStore = {
    store: {
      kind: 'controlled',
      async open(sessionId, options) {
        const handle = await inner.open(sessionId, options)
        return wrap(handle)
      },
      load: (id) => inner.load(id),
      list: (options) => inner.list(options),
      close: () => inner.close(),
    },
    waiting: [],
    batches: [],
    mode,
    delayMs: 1,
    failWith: null,
    nextCommit() {
      if (control.waiting.length > 0) return Promise.resolve(control.waiting[0])
      return new Promise((resolve) => waiters.push(resolve))
    },
  }

  function wrap(handle: SessionHandle): SessionHandle {
    return {
      ...handle,
      renew: () => handle.renew(),
      release: () => handle.release(),
      append(events) {
        const batch = { events: [...events], outcome: 'pending' as 'pending' | 'committed' | 'failed' }
        control.batches.push(batch)
        const commit = () => {
          if (control.failWith) {
            batch.outcome = 'failed'
            throw control.failWith
          }
          void handle.append(events)
          batch.outcome = 'committed'
        }
        if (control.mode === 'sync') return commit()
        if (control.mode === 'auto') return new Promise<void>((resolve) => setTimeout(resolve, control.delayMs)).then(commit)
        return new Promise<void>((resolve, reject) => {
          const pending: PendingCommit = {
            events: batch.events,
            resolve: () => {
              control.waiting.splice(control.waiting.indexOf(pending), 1)
              try {
                commit()
                resolve()
              } catch (error) {
                reject(error as Error)
              }
            },
            reject: (error) => {
              control.waiting.splice(control.waiting.indexOf(pending), 1)
              batch.outcome = 'failed'
              reject(error)
            },
          }
          control.waiting.push(pending)
          waiters.splice(0).forEach((wake) => wake(pending))
        })
      },
    }
  }
  return control
}

/** The stored log as plain JSON, for comparing with what an agent holds. */
export const plain = (events: readonly unknown[] | undefined): unknown => JSON.parse(JSON.stringify(events ?? []))

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check` until it returns true (at most `ms`); tests wait for an outcome, never for a time. */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

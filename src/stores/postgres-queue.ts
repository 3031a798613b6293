// Dispatch on PostgreSQL: pg-boss (loaded only when workers or a waking
// send need it) keeps one job per session that needs a driver, deduplicated
// by a singleton key, and hands each job to one worker.
import { createRequire } from 'node:module'
import { ConfigError } from '../errors.js'
import { Takes, type SessionQueue } from './mailbox.js'
import type { PostgresMailbox } from './postgres-mailbox.js'
import type { PgPoolLike } from './postgres-pool.js'

const require = createRequire(import.meta.url)
const noop = () => {}

interface BossJob {
  readonly id: string
  readonly data: { sessionId?: unknown }
}

/** The part of pg-boss 10 used here. */
interface Boss {
  start(): Promise<unknown>
  stop(options?: { graceful?: boolean; wait?: boolean; timeout?: number }): Promise<void>
  on(event: 'error', listener: (error: Error) => void): void
  createQueue(name: string, options?: { name?: string; policy?: string; retryLimit?: number; expireInSeconds?: number }): Promise<void>
  send(name: string, data: object, options?: { singletonKey?: string; retryLimit?: number; expireInSeconds?: number }): Promise<string | null>
  work(name: string, options: { batchSize?: number; pollingIntervalSeconds?: number }, handler: (jobs: BossJob[]) => Promise<unknown>): Promise<string>
  offWork(options: { id: string }): Promise<void>
  notifyWorker(workerId: string): void
}

interface PostgresQueue extends SessionQueue {
  close(): Promise<void>
}

/** The queue of one store: pg-boss in its own schema beside the store's tables, over the store's pool. */
export function postgresQueue(deps: { pool: PgPoolLike; schema: string; mailbox: PostgresMailbox }): PostgresQueue {
  const name = 'agentchart-sessions'
  let booted: Promise<Boss> | null = null

  function boss(): Promise<Boss> {
    booted ??= (async () => {
      let PgBoss: new (options: object) => Boss
      try {
        const loaded = require('pg-boss') as { default?: typeof PgBoss } & typeof PgBoss
        PgBoss = loaded.default ?? loaded
      } catch (error) {
        throw new ConfigError('serving sessions on PostgreSQL needs the pg-boss package (10.x): npm install pg-boss@10', { cause: error })
      }
      const instance = new PgBoss({
        db: { executeSql: (text: string, values: unknown[]) => deps.pool.query(text, values) },
        schema: `${deps.schema}_pgboss`.slice(0, 63),
        // the leases, not job state, decide who drives a session; the store's own scan finds dead workers
        supervise: true,
        schedule: false,
      })
      instance.on('error', noop)
      await instance.start()
      // short: at most one waiting job per session (the lease, not the queue, keeps one driver)
      await instance.createQueue(name, { name, policy: 'short', retryLimit: 0, expireInSeconds: 60 })
      return instance
    })().catch((error: unknown) => {
      booted = null
      throw error
    })
    return booted
  }

  return {
    async offer(sessionId) {
      const instance = await boss()
      await instance.send(name, { sessionId }, { singletonKey: sessionId })
    },
    async work(take, concurrency = 1) {
      const instance = await boss()
      const batchSize = Math.max(1, Math.min(concurrency, 16))
      const takes = new Takes(take, concurrency)
      let id = ''
      id = await instance.work(name, { batchSize, pollingIntervalSeconds: 0.5 }, async (jobs) => {
        const ids = jobs.map((job) => job.data?.sessionId).filter((sessionId): sessionId is string => typeof sessionId === 'string')
        for (const sessionId of ids) if (!(await takes.start(sessionId))) return
        // a batch was there: look for the next one at once instead of after the polling interval
        instance.notifyWorker(id)
      })
      return {
        nudge: () => instance.notifyWorker(id),
        stop: () => (takes.stop(), instance.offWork({ id })),
      }
    },
    async close() {
      const current = booted
      booted = null
      if (current === null) return
      const instance = await current.catch(() => null)
      await instance?.stop({ graceful: false, wait: true, timeout: 2000 }).catch(noop)
    },
  }
}

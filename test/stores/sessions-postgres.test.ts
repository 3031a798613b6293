// Sessions across processes on PostgreSQL, in one test process with two
// stores (a client's and a worker's), so every exchange goes through the
// database: mailbox rows, NOTIFY, pg-boss, leases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { firstValueFrom, toArray, takeWhile } from 'rxjs'
import type { SessionEvent } from '../../src/index.js'
import { createSessionClient, postgresStore, serveSessions, type SessionStore } from '../../src/stores/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { createDatabase, startPostgres, type PostgresServer } from '../../scripts/embedded-postgres.js'
import { slowModel } from './sessions-support.js'

let server: PostgresServer
let url: string
const stores: SessionStore[] = []
const store = () => {
  const made = postgresStore({ connectionString: url })
  stores.push(made)
  return made
}

beforeAll(async () => {
  server = await startPostgres()
  url = await createDatabase(server, 'across')
}, 120_000)

afterAll(async () => {
  for (const made of stores) await made.close()
  await server?.stop()
})

const userTexts = (events: readonly SessionEvent[]) =>
  events.filter((e) => e.type === 'user/message').map((e) => (e.data.content[0] as { text: string }).text)

describe('sessions across processes on PostgreSQL', () => {
  it('a followup from a client runs on a worker and run() resolves with its turn', async () => {
    const workers = await serveSessions({ store: store(), agent: () => ({ model: slowModel(40) }), concurrency: 4, idleMs: 200 })
    const client = createSessionClient({ store: store() })
    try {
      const id = await client.create()
      const result = await client.run(id, 'hello')
      expect(result.end).toEqual({ kind: 'completed' })
      expect(result.text).toBe('re: hello')
      const log = (await client.watch(id).pipe(takeWhile((e) => e.type !== 'turn/end', true), toArray()).toPromise())!
      expect(userTexts(log)).toEqual(['hello'])
      const stored = (await stores[1].load(id)) as SessionEvent[]
      expect(checkSessionInvariants(stored)).toEqual([])
    } finally {
      await client.close()
      await workers.close()
    }
  }, 30_000)
})

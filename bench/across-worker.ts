// A worker process of bench/across.ts: serves sessions of a PostgreSQL store
// with a model that answers at once, until SIGTERM.
import type { ModelAdapter } from '../src/adapters/types.js'
import { postgresStore, serveSessions } from '../src/service/index.js'
import { textResponse } from '../src/testing/index.js'

const [url, concurrency] = process.argv.slice(2)
const model: ModelAdapter = {
  provider: 'bench',
  model: 'instant',
  async *stream() {
    yield* textResponse('ok')
  },
}
const store = postgresStore({ connectionString: url })
const workers = await serveSessions({ store, agent: () => ({ model }), concurrency: Number(concurrency), idleMs: 50 })
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void workers
    .close({ graceMs: 1000 })
    .then(() => store.close())
    .then(() => process.exit(0))
})

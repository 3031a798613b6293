// A worker process of the sessions-across scale test: serves sessions of a
// PostgreSQL or SQLite store until SIGTERM, reporting each turn it starts.
import { postgresStore, serveSessions, sqliteStore } from '../../src/service/index.js'
import { slowModel } from './sessions-support.js'

const [kind, target, name, delay] = process.argv.slice(2)
const store = kind === 'postgres' ? postgresStore({ connectionString: target }) : sqliteStore({ path: target })
const workers = await serveSessions({
  store,
  agent: () => ({ model: slowModel(Number(delay)) }),
  concurrency: 64,
  idleMs: 300,
  leaseMs: 1500,
  rescueMs: 250,
  name,
  onOpen: (agent) =>
    agent.on('session/event', ({ event }) => {
      if (event.type === 'turn/start') process.stdout.write(`turn ${agent.sessionId} ${event.data.turn}\n`)
    }),
  onError: (error, sessionId) => process.stderr.write(`worker ${name} session ${sessionId}: ${String((error as Error)?.stack ?? error)}\n`),
})
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void workers
    .close({ graceMs: 2000 })
    .then(() => store.close())
    .then(() => process.exit(0))
})

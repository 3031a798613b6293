import { sqliteStore } from './src/stores/index.js'
import { recordCycle, seedLongSession } from './test/stores/long-log.js'
import { rmSync } from 'node:fs'
rmSync('/tmp/long.db', { force: true }); rmSync('/tmp/long.db-wal', { force: true }); rmSync('/tmp/long.db-shm', { force: true })
const t0 = performance.now()
const store = sqliteStore({ path: '/tmp/long.db' })
const n = await seedLongSession(store, 'long', await recordCycle(), Number(process.argv[2]))
await store.close()
console.log('seeded', n, Math.round(performance.now() - t0), 'ms')

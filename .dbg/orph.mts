import { sqliteStore } from '../src/stores/index.js'
import { mailboxOf } from '../src/stores/mailbox.js'
const store = sqliteStore({ path: '/tmp/sq.db' })
const mb = mailboxOf(store)
console.log(await mb.orphans('worker:', 100))
console.log(await mb.pending('r1s0'), await store.list({limit:3}))
await store.close()

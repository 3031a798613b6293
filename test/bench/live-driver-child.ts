// A second process driving one live session on a SQLite file: after `go` it runs turns one after another until
// `stop` (or until the session halts), printing `TURN n` once each is committed, then `DONE <turns> ok` or
// `DONE <turns> halted <the fault>`.
import { createInterface } from 'node:readline'
import { createAgent, userMessage } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { growthAgentOptions } from '../../bench/growth-log.js'

const [path, sessionId, busyTimeoutMs] = process.argv.slice(2)
const store = sqliteStore({ path, busyTimeoutMs: Number(busyTimeoutMs) })
const agent = await createAgent({ ...growthAgentOptions({ compaction: true }), store, sessionId })
let stop = false
let started: Promise<void> | undefined
const lines = createInterface({ input: process.stdin })
lines.on('line', (line) => {
  if (line === 'go') started ??= drive().then(finish)
  if (line === 'stop') stop = true
})

async function drive() {
  for (let turn = 1; !stop && agent.session.halted === null; turn++) {
    agent.followup(userMessage(`live prompt ${turn}`))
    await agent.whenIdle()
    await agent.flush().catch(() => {})
    if (agent.session.halted === null) console.log(`TURN ${turn}`)
  }
}

async function finish() {
  const halted = agent.session.halted
  const turns = agent.session.events.filter((e) => e.type === 'turn/end').length
  console.log(`DONE ${turns} ${halted === null ? 'ok' : `halted ${halted.message.replace(/\s+/g, ' ')}`}`)
  await agent.dispose().catch(() => {})
  await store.close()
  lines.close()
}
console.log('READY')

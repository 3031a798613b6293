// Run by reproductions.test.ts (#8.13) as `node --expose-gc --import tsx`: creates agents, drops them, collects,
// and prints how many session ids the live-agent registry held before, while they were held, and after.
import { createAgent } from '../../src/index.js'
import { liveAgentCount } from '../../src/agent/registry.js'
import { scriptedModel } from '../../src/testing/index.js'

const gc = globalThis.gc
if (typeof gc !== 'function') throw new Error('registry-child needs node --expose-gc')
const quiet = { error: () => {} }
const tick = () => new Promise((resolve) => setTimeout(resolve, 5))

const before = liveAgentCount()
const held: unknown[] = Array.from({ length: 200 }, () => createAgent({ model: scriptedModel([]), logger: quiet }))
await tick()
const whileHeld = liveAgentCount()
held.length = 0
for (let i = 0; i < 20 && liveAgentCount() - before >= 20; i++) {
  gc()
  await tick()
}
process.stdout.write(JSON.stringify({ before, whileHeld, after: liveAgentCount(), dropped: held.length === 0 }))

// Run by postgres-trim.test.ts: drives `turns` turns (a compaction after every
// fourth) on a PostgreSQL session, then a turn whose stream never ends, and
// prints STREAMING once chunks of it are stored; the test kills it there.
import { createAgent, type StreamChunk } from '../../src/index.js'
import { postgresStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse } from '../../src/testing/index.js'

const [url, sessionId, turns] = process.argv.slice(2)
const n = Number(turns)

/** Streams words until the process is killed. */
async function* endless(): AsyncGenerator<StreamChunk> {
  yield { type: 'block-start', index: 0, blockType: 'text' }
  for (let i = 0; ; i++) {
    await new Promise((resolve) => setTimeout(resolve, 2))
    yield { type: 'text-delta', index: 0, text: `word${i} ` }
  }
}

const store = postgresStore({ connectionString: url })
const script = [...Array.from({ length: n }, (_, i) => textResponse(`answer ${i}`)), () => endless()]
const agent = await createAgent({
  model: scriptedModel(script),
  store,
  sessionId,
  lease: { leaseMs: 1500 },
  compaction: { contextWindow: 400, auto: false, keepRecent: 0, summarise: () => 'what was said so far' },
  logger: { error: () => {} },
})
for (let i = 0; i < n; i++) {
  agent.followup(`question ${i}`)
  await agent.whenIdle()
  if (i % 4 === 3) await agent.compact()
}
agent.followup('tell me everything')
const started = agent.session.length
agent.on('session/committed', () => {
  if (agent.committedLength > started + 20) process.stdout.write('STREAMING\n')
})

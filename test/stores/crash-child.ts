// A process that drives one agent on a SQLite store and never finishes on its
// own: the crash test kills it with SIGKILL mid-stream or mid-tool. Each
// committed event is printed as a JSON line (what the store acknowledged).
import { z } from 'zod'
import { createAgent, defineTool, type StreamChunk } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { scriptedModel, toolCallResponse } from '../../src/testing/index.js'

const [path, sessionId, mode] = process.argv.slice(2)

/** Streams words slowly until the process is killed. */
async function* endless(): AsyncGenerator<StreamChunk> {
  yield { type: 'block-start', index: 0, blockType: 'text' }
  for (let i = 0; ; i++) {
    await new Promise((resolve) => setTimeout(resolve, 2))
    yield { type: 'text-delta', index: 0, text: `word${i} ` }
  }
}

const stuck = defineTool({
  name: 'stuck',
  description: 'never returns',
  input: z.object({}),
  execute: () => {
    process.stdout.write('TOOL-RUNNING\n')
    return new Promise<string>(() => {})
  },
})

const model = scriptedModel([mode === 'stream' ? () => endless() : toolCallResponse([{ id: 'c1', name: 'stuck', arguments: '{}' }])])
const agent = await createAgent({
  model,
  store: sqliteStore({ path }),
  sessionId,
  tools: [stuck],
  lease: { holder: `crash-child-${process.pid}`, leaseMs: 300 },
})
let printed = 0
agent.on('session/committed', ({ length }) => {
  for (; printed < length; printed++) process.stdout.write(`${JSON.stringify(agent.session.events[printed])}\n`)
})
agent.followup('go')
// a stuck tool holds no handle of its own: keep the process (and its lease renewals) alive until it is killed
setInterval(() => {}, 60_000)

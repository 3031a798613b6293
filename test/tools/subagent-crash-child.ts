// A process that drives a parent agent on a SQLite store whose tool delegates to
// a child agent, and is SIGKILLed by the subagent crash test: `mid-child` while
// the child streams its answer, `child-done` right after the child's turn ended
// and before the parent's call result could be written. The `reused-` modes crash in a
// second turn whose call reuses the first turn's call id: `reused-before-child` as the
// second child's options are asked for, `reused-mid-child` while that child streams.
import { z } from 'zod'
import { agentTool, createAgent, type StreamChunk } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'

const [path, mode] = process.argv.slice(2)

/** Streams words slowly until the process is killed. */
async function* endless(): AsyncGenerator<StreamChunk> {
  yield { type: 'block-start', index: 0, blockType: 'text' }
  for (let i = 0; ; i++) {
    await new Promise((resolve) => setTimeout(resolve, 2))
    if (i === 3) process.stdout.write(`CHILD-STREAMING ${children}\n`)
    yield { type: 'text-delta', index: 0, text: `word${i} ` }
  }
}

const reused = mode.startsWith('reused-')
let children = 0

const research = agentTool({
  name: 'research',
  description: 'researches a question in a child agent',
  input: z.object({ prompt: z.string() }),
  agent: () => {
    children++
    if (mode === 'reused-before-child' && children === 2) {
      process.stdout.write('SECOND-CALL\n')
      process.kill(process.pid, 'SIGKILL')
    }
    const streams = mode === 'mid-child' || (mode === 'reused-mid-child' && children === 2)
    return {
      model: scriptedModel([streams ? () => endless() : textResponse('Lisbon has 545,000 people.')]),
      lease: { holder: `child-of-${process.pid}`, leaseMs: 300 },
    }
  },
  output: (result) => {
    if (reused) return result.text
    // the child's turn is committed; die before the parent can write the call's result
    process.stdout.write('CHILD-DONE\n')
    process.kill(process.pid, 'SIGKILL')
    return result.text
  },
})

const ask = { id: 'c1', name: 'research', arguments: '{"prompt":"How many people live in Lisbon?"}' }

const agent = await createAgent({
  model: scriptedModel(reused ? [toolCallResponse([ask]), textResponse('About 545,000.'), toolCallResponse([ask])] : [toolCallResponse([ask])]),
  store: sqliteStore({ path }),
  sessionId: 'planner',
  tools: [research],
  lease: { holder: `parent-${process.pid}`, leaseMs: 300 },
})
agent.followup('Plan a trip to Lisbon')
// the second turn's call reuses the id c1, as models that number their calls per turn do
if (reused) agent.followup('And once more, to be sure')
// a streaming child holds timers, but keep the process (and its lease renewals) alive until it is killed
setInterval(() => {}, 60_000)

// One of two processes racing for a PostgreSQL session: it opens the session
// at an agreed instant, reports whether it drives or was refused (and by whom),
// retries until it drives, then runs turns until the log holds `turns`
// completed ones. The race test kills whichever drives first.
import { z } from 'zod'
import { createAgent, defineTool, SessionInUseError, type Agent } from '../../src/index.js'
import { postgresStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'

const [connectionString, sessionId, name, startAt, turns] = process.argv.slice(2)
const say = (line: string) => process.stdout.write(`${line}\n`)
const completed = (agent: Agent) => agent.session.events.filter((e) => e.type === 'turn/end' && e.data.reason.kind === 'completed').length

const work = defineTool({
  name: 'work',
  description: 'takes a while',
  input: z.object({ n: z.number() }),
  execute: async ({ n }) => {
    await new Promise((resolve) => setTimeout(resolve, 60))
    return `done ${n}`
  },
})
const script: ScriptEntry[] = []
for (let i = 0; i < Number(turns); i++)
  script.push(toolCallResponse([{ id: `call-${name}-${i}`, name: 'work', arguments: `{"n":${i}}` }]), textResponse(`turn ${i} done`))

const store = postgresStore({ connectionString, max: 2 })
await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startAt) - Date.now())))
let agent: Agent | undefined
while (!agent) {
  try {
    agent = await createAgent({
      model: scriptedModel(script),
      store,
      sessionId,
      tools: [work],
      lease: { holder: name, leaseMs: 600 },
      logger: { error: () => {} },
    })
  } catch (error) {
    if (!(error instanceof SessionInUseError)) throw error
    say(`REFUSED ${error.holder}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
say(`DRIVING ${agent.session.length}`)
while (completed(agent) < Number(turns)) {
  agent.followup(`turn ${completed(agent) + 1}`)
  await agent.whenIdle()
  say(`TURN ${completed(agent)}`)
}
await agent.dispose()
await store.close()
say('DONE')

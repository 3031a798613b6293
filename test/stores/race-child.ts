// One of two processes racing for a PostgreSQL session: once both are ready,
// the test tells them to open the session at the same moment (`open` on
// stdin); each reports whether it drives or was refused (and by whom) and
// retries until it drives. A driver runs turns only once told (`run`), so the
// first driver surely still holds its lease when the other tries; it then runs
// turns until the log holds `turns` completed ones. The race test kills
// whichever drives first.
import { z } from 'zod'
import { createAgent, defineTool, SessionInUseError, type Agent } from '../../src/index.js'
import { postgresStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse, toolCallResponse, type ScriptEntry } from '../../src/testing/index.js'

const [connectionString, sessionId, name, turns] = process.argv.slice(2)
const say = (line: string) => process.stdout.write(`${line}\n`)

// commands from the test, one per stdin line, kept until awaited
const commands: string[] = []
const waiters: Array<() => void> = []
let partial = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (text: string) => {
  const lines = (partial + text).split('\n')
  partial = lines.pop()!
  commands.push(...lines)
  for (const wake of waiters.splice(0)) wake()
})
/** Resolves once the test has sent `command` (now or earlier). */
const told = async (command: string) => {
  while (!commands.includes(command)) await new Promise<void>((resolve) => waiters.push(resolve))
}
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
await store.list() // connected: opening the session is one round trip away
say('READY')
await told('open')
let agent: Agent | undefined
while (!agent) {
  try {
    agent = await createAgent({
      model: scriptedModel(script),
      store,
      sessionId,
      tools: [work],
      lease: { holder: name, leaseMs: 1000 },
      logger: { error: () => {} },
    })
  } catch (error) {
    if (!(error instanceof SessionInUseError)) throw error
    say(`REFUSED ${error.holder}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
say(`DRIVING ${agent.session.length}`)
await told('run')
while (completed(agent) < Number(turns)) {
  agent.followup(`turn ${completed(agent) + 1}`)
  await agent.whenIdle()
  say(`TURN ${completed(agent)}`)
}
await agent.dispose()
await store.close()
process.stdin.destroy() // nothing more to hear: let the process exit
say('DONE')

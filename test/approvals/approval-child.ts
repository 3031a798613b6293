// A process that drives one agent on a SQLite store until its tool call asks
// for approval, prints APPROVAL-PENDING once the question is committed, and
// then waits to be killed: the approvals test restarts the session after it.
// With `kill-on-notify` it kills itself inside its tools/approval-requested
// listener instead, as a pager that takes the process down with it would.
// With `dispose` it disposes the agent gracefully once the question is
// committed (a deploy's shutdown), prints DISPOSED, and stays alive holding
// its default 15 s lease settings, so only a released lease lets another open.
import { z } from 'zod'
import { createAgent, defineTool } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { scriptedModel, toolCallResponse } from '../../src/testing/index.js'

const [path, sessionId, mode] = process.argv.slice(2)

const deploy = defineTool({
  name: 'deploy',
  description: 'deploys; must be approved by a person',
  input: z.object({ env: z.string() }),
  execute: () => {
    process.stdout.write('DEPLOYED-IN-CHILD\n')
    return 'deployed'
  },
})

const model = scriptedModel([toolCallResponse([{ id: 'c1', name: 'deploy', arguments: '{"env":"prod"}' }])])
const agent = await createAgent({
  model,
  store: sqliteStore({ path }),
  sessionId,
  tools: [deploy],
  approvals: true,
  lease: { holder: `approval-child-${process.pid}`, ...(mode === 'dispose' ? {} : { leaseMs: 300 }) },
})
agent.on('tools/pre-execute', ({ name }, next) => (name === 'deploy' ? { kind: 'ask', reason: 'deploying to prod needs a person' } : next()))
if (mode === 'kill-on-notify') {
  agent.on('tools/approval-requested', ({ callId }) => {
    process.stdout.write(`NOTIFIED ${callId}\n`, () => process.kill(process.pid, 'SIGKILL'))
  })
}
let disposing = false
agent.on('session/committed', () => {
  if (agent.pendingApprovals.length === 0 || agent.committedLength !== agent.session.length) return
  process.stdout.write('APPROVAL-PENDING\n')
  if (mode !== 'dispose' || disposing) return
  disposing = true
  void agent.dispose().then(() => {
    const ended = agent.session.events.some((e) => e.type === 'turn/end')
    process.stdout.write(`DISPOSED status=${agent.actor.getSnapshot().value as string} turn-end=${ended}\n`)
    // alive until the test kills it: the lease must have been given up, not left to lapse with the process
    setInterval(() => {}, 1000)
  })
})
agent.followup('deploy to prod')

// A process that drives one agent on a SQLite store until its tool call asks
// for approval, prints APPROVAL-PENDING once the question is committed, and
// then waits to be killed: the approvals test restarts the session after it.
// With `kill-on-notify` it kills itself inside its tools/approval-requested
// listener instead, as a pager that takes the process down with it would.
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
  lease: { holder: `approval-child-${process.pid}`, leaseMs: 300 },
})
agent.on('tools/pre-execute', ({ name }, next) => (name === 'deploy' ? { kind: 'ask', reason: 'deploying to prod needs a person' } : next()))
if (mode === 'kill-on-notify') {
  agent.on('tools/approval-requested', ({ callId }) => {
    process.stdout.write(`NOTIFIED ${callId}\n`, () => process.kill(process.pid, 'SIGKILL'))
  })
}
agent.on('session/committed', () => {
  if (agent.pendingApprovals.length > 0 && agent.committedLength === agent.session.length) process.stdout.write('APPROVAL-PENDING\n')
})
agent.followup('deploy to prod')

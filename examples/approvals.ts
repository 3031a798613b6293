// A tool that a person approves: the question is in the log, so a new
// process over the same log finds it still pending and can answer it.
import { z } from 'zod'
import { createAgent, createSession, defineTool, type SessionEvent } from '../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../src/testing/index.js'

export async function approvalsExample(): Promise<SessionEvent[]> {
  const deploy = defineTool({
    name: 'deploy',
    description: 'deploy a build to an environment',
    input: z.object({ env: z.enum(['staging', 'prod']) }),
    execute: ({ env }) => `deployed to ${env}`,
  })
  const model = scriptedModel([
    toolCallResponse([
      { id: 'call-1', name: 'deploy', arguments: '{"env":"staging"}' },
      { id: 'call-2', name: 'deploy', arguments: '{"env":"prod"}' },
    ]),
  ])
  // process 1: staging goes through, prod asks a person; the process stops while the question waits
  const first = createAgent({ model, tools: [deploy], approvals: true, logger: { error: () => {} } })
  first.on('tools/pre-execute', ({ arguments: args }, next) =>
    (args as { env: string }).env === 'prod' ? { kind: 'ask', reason: 'deploying to prod needs a person' } : next(),
  )
  const asked = new Promise<void>((resolve) => first.on('tools/approval-requested', () => resolve()))
  first.followup('Ship it.')
  await asked
  const stored = first.session.events // what a store holds at that moment

  // process 2: an agent over the stored log resumes inside the wait (no repair); a person answers
  const second = createAgent({
    model: scriptedModel([textResponse('Staging and prod are deployed.')]),
    tools: [deploy],
    session: createSession({ id: 'ops-2', seed: stored }),
  })
  const [question] = second.pendingApprovals
  second.approve(question.callId)
  await second.whenIdle()
  return [...second.session.events]
}

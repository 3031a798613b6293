// The scripted session the viewer's browser test watches: one turn with a
// failed request and its retry, two parallel reads and an exclusive write, a
// steer claimed at the next step, a stream cut by a cancel; then a plain turn.
// Gates hold the agent at chosen points so the page can be looked at there.
import { z } from 'zod'
import { agentTool, createAgent, defineTool, type Agent, type StreamChunk } from '../../src/index.js'
import { errorResponse, scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'

/** A promise with its resolver, so a test can hold the agent and let it go. */
export interface Gate {
  readonly promise: Promise<void>
  open(): void
}

export function gate(): Gate {
  let open!: () => void
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

/** Text from the log that would run script if the page ever parsed it as HTML. */
export const HOSTILE = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'

export interface Scenario {
  readonly agent: Agent
  /** Reached when the agent waits in request recovery (the retry listener is holding it). */
  readonly recovering: Gate
  readonly releaseRecovery: Gate
  /** Reached when the exclusive write runs (the reads have finished). */
  readonly writing: Gate
  readonly releaseWrite: Gate
  /** Reached when the second step's stream has sent its first text and hangs. */
  readonly streaming: Gate
}

export function scenario(): Scenario {
  const recovering = gate()
  const releaseRecovery = gate()
  const writing = gate()
  const releaseWrite = gate()
  const streaming = gate()

  const read = defineTool({
    name: 'read',
    description: 'Read a file',
    input: z.object({ path: z.string() }),
    executionMode: 'parallel',
    execute: async ({ path }) => {
      await new Promise((resolve) => setTimeout(resolve, 30))
      return `contents of ${path}`
    },
  })
  const write = defineTool({
    name: 'write',
    description: 'Write a file',
    input: z.object({ path: z.string() }),
    executionMode: 'exclusive',
    execute: async ({ path }) => {
      writing.open()
      await releaseWrite.promise
      return `wrote ${path}`
    },
  })

  // the second step streams a little text, then waits for the cancel
  const streamThenHang = (request: { signal: AbortSignal }): AsyncIterable<StreamChunk> => ({
    async *[Symbol.asyncIterator]() {
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'text-delta', index: 0, text: 'Working on the new plan' }
      streaming.open()
      await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve(), { once: true }))
    },
  })

  const model = scriptedModel([
    errorResponse({ message: 'upstream overloaded', code: 'SERVER' }),
    toolCallResponse(
      [
        { id: 'r1', name: 'read', arguments: '{"path":"a.txt"}' },
        { id: 'r2', name: 'read', arguments: '{"path":"b.txt"}' },
        { id: 'w1', name: 'write', arguments: '{"path":"c.txt"}' },
      ],
      'Reading both files, then writing.',
    ),
    streamThenHang,
    textResponse('Second turn done.'),
  ])
  const agent = createAgent({ model, tools: [read, write], systemPrompt: 'You tidy files.', logger: { error: () => {} } })
  agent.on('agent/request-error', async () => {
    recovering.open()
    await releaseRecovery.promise
    return { kind: 'retry' }
  })
  return { agent, recovering, releaseRecovery, writing, releaseWrite, streaming }
}

/** A finished session of about `size` events: many small turns, each a tool step and a text step. */
export async function largeSession(size: number) {
  const tool = defineTool({ name: 'lookup', description: 'Look something up', input: z.object({ q: z.string() }), execute: ({ q }) => `found ${q}` })
  // a turn logs well over ten events: the script cannot run out before the log reaches `size`
  const turns = Math.ceil(size / 10)
  const script = []
  for (let t = 0; t < turns; t++) {
    script.push(toolCallResponse([{ id: `c${t}`, name: 'lookup', arguments: JSON.stringify({ q: `item ${t}` }) }], `Looking up item ${t}.`))
    script.push(textResponse(`Item ${t} is here, with a somewhat longer answer so that the stream has several chunks in it.`))
  }
  const agent = createAgent({ model: scriptedModel(script), tools: [tool], logger: { error: () => {} } })
  while (agent.session.events.length < size) {
    agent.followup(`question ${agent.session.events.length}`)
    await agent.whenIdle()
  }
  const events = agent.session.events
  await agent.dispose()
  return events
}

/** A turn whose first request fails and is retried after a backoff, then asks to deploy: the call waits for a person. */
export function approvalScenario(): { agent: Agent } {
  const deploy = defineTool({
    name: 'deploy',
    description: 'Deploy the service',
    input: z.object({ env: z.string() }),
    execute: ({ env }) => `deployed to ${env}`,
  })
  const model = scriptedModel([
    errorResponse({ message: 'rate limited', code: 'RATE_LIMIT' }),
    toolCallResponse([{ id: 'd1', name: 'deploy', arguments: '{"env":"production"}' }], 'Deploying now.'),
    textResponse('Deployed to production.'),
  ])
  const agent = createAgent({ model, tools: [deploy], approvals: true, logger: { error: () => {} } })
  agent.on('agent/request-error', () => ({ kind: 'retry', delayMs: 300 }))
  agent.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'Deploy to production?' }))
  return { agent }
}

/** A planner whose one call delegates to a researcher (agentTool); the child's tool holds until released. */
export function delegationScenario(): { agent: Agent; childWorking: Gate; releaseChild: Gate } {
  const childWorking = gate()
  const releaseChild = gate()
  const usage = { inputTokens: 100, outputTokens: 20 }
  const search = defineTool({
    name: 'search',
    description: 'Search the notes',
    input: z.object({ q: z.string() }),
    execute: async ({ q }) => {
      childWorking.open()
      await releaseChild.promise
      return `three notes about ${q}`
    },
  })
  const research = agentTool({
    name: 'research',
    description: 'Research one question',
    input: z.object({ task: z.string() }),
    agent: ({ task }) => ({
      id: `research-${task.split(' ')[0]}`,
      model: scriptedModel([
        toolCallResponse([{ id: 'q1', name: 'search', arguments: JSON.stringify({ q: task }) }], undefined, { usage }),
        textResponse(`notes on ${task}`, { usage }),
      ]),
      tools: [search],
      logger: { error: () => {} },
    }),
  })
  const agent = createAgent({
    id: 'planner',
    model: scriptedModel([
      toolCallResponse([{ id: 'r1', name: 'research', arguments: '{"task":"trains to Lisbon"}' }], 'Asking a researcher.', { usage }),
      textResponse('Take the night train.', { usage }),
    ]),
    tools: [research],
    logger: { error: () => {} },
  })
  return { agent, childWorking, releaseChild }
}

// The demo agent: a scripted model (no network needed) asks for a tool, reads
// its result from the request, and answers in a second step of the same turn.
import { z } from 'zod/v4'
import { createAgent } from '../agent.js'
import type { AgentStatus } from '../agent.js'
import { userMessage } from '../messages.js'
import { scriptedModel } from '../adapters/scripted.js'
import { defineTool } from '../tools/define.js'
import { textResponse, toolCallResponse } from '../testing/responses.js'
import { formatSessionTree } from './tree.js'

/** The prompt the demo sends when none is given. */
export const DEMO_PROMPT = 'What is 2 + 3?'

export interface DemoOptions {
  /** Hears every `agent/status` change (`running`, then `idle`). */
  onStatus?: (status: AgentStatus) => void
}

/**
 * Run one turn of the demo agent and return its session as a turn/step tree.
 * The model is scripted, so whatever the prompt says, it calls `add(2, 3)` and then
 * answers with the sum it reads from the tool result in its second request.
 */
export async function runDemo(prompt: string = DEMO_PROMPT, options: DemoOptions = {}): Promise<string> {
  const add = defineTool({
    name: 'add',
    description: 'Add two numbers',
    input: z.object({ a: z.number(), b: z.number() }),
    executionMode: 'parallel',
    execute: ({ a, b }) => String(a + b),
  })

  const model = scriptedModel([
    toolCallResponse([{ id: 'call-1', name: 'add', arguments: '{"a":2,"b":3}' }], 'Let me add those.'),
    (request) => {
      const block = request.messages.at(-1)?.content[0]
      const sum = block?.type === 'tool-result' ? block.content : '?'
      return textResponse(`2 + 3 = ${typeof sum === 'string' ? sum : JSON.stringify(sum)}`)
    },
  ])

  const agent = createAgent({ model, tools: [add], systemPrompt: 'You are a careful calculator.' })
  try {
    const { onStatus } = options
    if (onStatus) agent.on('agent/status', ({ status }) => onStatus(status))
    agent.followup(userMessage(prompt))
    await agent.whenIdle()
    return formatSessionTree(agent.session.events)
  } finally {
    await agent.dispose()
  }
}

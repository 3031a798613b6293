// The demo agent: a scripted model (no network needed) asks for a tool, reads
// its result from the request, and answers in a second step of the same turn.
import { z } from 'zod'
import { createAgent, defineTool, userMessage } from '../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../src/testing/index.js'
import { formatSessionTree } from '../src/cli/tree.js'

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
    const last = request.messages.at(-1)
    const block = last?.content[0]
    const sum = block?.type === 'tool-result' ? block.content : '?'
    return textResponse(`2 + 3 = ${sum}`)
  },
])

const agent = createAgent({ model, tools: [add], systemPrompt: 'You are a careful calculator.' })
agent.on('agent/status', ({ status }) => console.log(`[status] ${status}`))
agent.followup(userMessage(process.argv[2] ?? 'What is 2 + 3?'))
await agent.whenIdle()
console.log(formatSessionTree(agent.session.events))
await agent.dispose()

// Streaming the answer to a user: every text delta is written out the moment
// the model sends it, and run() still resolves with the whole answer.
import { createAgent } from '../src/index.js'
import { scriptedModel, textResponse } from '../src/testing/index.js'

export async function streamingExample(write: (text: string) => void = (text) => void process.stdout.write(text)) {
  // any adapter streams the same way: openaiModel(...), deepseekModel(...)
  const agent = createAgent({ model: scriptedModel([textResponse('Your order A-17 shipped on Monday.')]) })
  agent.on('session/event', ({ event }) => {
    if (event.type === 'assistant/chunk' && event.data.chunk.type === 'text-delta') write(event.data.chunk.text)
  })
  const result = await agent.run('Where is my order?')
  write('\n')
  await agent.dispose()
  return result // result.text is the whole answer; after a cancel, the part that was streamed
}

// A planner that delegates: two researchers run in parallel, then a summariser;
// each is a child agent with its own session, owned by the call that made it.
import { z } from 'zod'
import { agentTool, createAgent, type Agent, type SessionEvent } from '../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../src/testing/index.js'

export async function subagentsExample(): Promise<{ planner: SessionEvent[]; children: SessionEvent[][]; text: string }> {
  const children: Agent[] = []
  const keep = (child: Agent) => children.push(child) // only so the example can print the children's logs
  const usage = { inputTokens: 100, outputTokens: 20 }

  const research = agentTool({
    name: 'research',
    description: 'Research one question and return notes',
    input: z.object({ task: z.string() }),
    executionMode: 'parallel',
    agent: ({ task }) => ({
      id: `research-${task.split(' ')[0]}`,
      model: scriptedModel([textResponse(`notes on ${task}`, { usage })]),
      systemPrompt: 'You research one question and answer with short notes.',
    }),
    output: (result, child) => (keep(child), result.text),
  })
  const summarise = agentTool({
    name: 'summarise',
    description: 'Summarise notes for the user',
    input: z.object({ notes: z.string() }),
    prompt: ({ notes }) => `Summarise for a traveller: ${notes}`,
    agent: () => ({ id: 'summary', model: scriptedModel([textResponse('Go in May; book the train.', { usage })]) }),
    output: (result, child) => (keep(child), `summary: ${result.text}`),
  })

  const planner = createAgent({
    id: 'planner',
    model: scriptedModel([
      toolCallResponse(
        [
          { id: 'r1', name: 'research', arguments: '{"task":"weather in May"}' },
          { id: 'r2', name: 'research', arguments: '{"task":"trains"}' },
          { id: 's1', name: 'summarise', arguments: '{"notes":"weather, trains"}' },
        ],
        undefined,
        { usage },
      ),
      textResponse('Go in May and take the train.', { usage }),
    ]),
    tools: [research, summarise],
  })
  const result = await planner.run('Plan a trip to Lisbon')
  // five requests of 120 tokens: the planner's two and one per child
  console.log(result.text, result.usage.totalTokens, result.turn !== null ? result.subagentUsage?.totalTokens : 0) // Go in May and take the train. 600 360
  await planner.dispose()
  return { planner: [...planner.session.events], children: children.map((c) => [...c.session.events]), text: result.text }
}

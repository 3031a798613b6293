// OpenAI Agents JS: a Runner with a custom ModelProvider whose Model streams
// the SDK's own protocol events (response_started, output_text_delta,
// response_done carrying the output items), and two function tools.
import { Agent, Runner, tool, type AgentInputItem, type Model, type ModelProvider, type ModelResponse } from '@openai/agents'
import type { protocol } from '@openai/agents-core'
import { z } from 'zod'
import { installedVersion, type Conversation, type Loop } from '../harness.js'
import { add, lookup, nextCall, TOOL_DESCRIPTIONS, turnScript, USAGE, type ScriptedCall } from '../workload.js'

type StreamEvent = protocol.StreamEvent

/** One call of the script as the SDK's model stream events, each made as it is yielded. */
function* events(call: ScriptedCall): Generator<StreamEvent> {
  const messageId = `msg_${call.id}`
  yield { type: 'response_started' }
  for (const delta of call.text) yield { type: 'output_text_delta', itemId: messageId, delta }
  const output: protocol.OutputModelItem[] = [
    { type: 'message', id: messageId, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: call.text.join('') }] },
    ...call.toolCalls.map((tc): protocol.OutputModelItem => ({
      type: 'function_call',
      id: `fc_${tc.id}`,
      callId: tc.id,
      name: tc.name,
      arguments: tc.arguments,
      status: 'completed',
    })),
  ]
  yield {
    type: 'response_done',
    response: {
      id: call.id,
      usage: { inputTokens: USAGE.inputTokens, outputTokens: USAGE.outputTokens, totalTokens: USAGE.inputTokens + USAGE.outputTokens },
      output,
    },
  }
}

export default function openaiAgentsLoop(): Loop {
  let script = turnScript(1)
  const model: Model = {
    getResponse(): Promise<ModelResponse> {
      return Promise.reject(new Error('the benchmark only streams'))
    },
    async *getStreamedResponse() {
      yield* events(nextCall(script))
    },
  }
  const provider: ModelProvider = { getModel: () => model }
  const agent = new Agent({
    name: 'bench',
    instructions: 'Answer with the tools.',
    model: 'scripted',
    tools: [
      tool({ name: 'lookup', description: TOOL_DESCRIPTIONS.lookup, parameters: z.object({ key: z.string() }), execute: ({ key }) => lookup(key) }),
      tool({ name: 'add', description: TOOL_DESCRIPTIONS.add, parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => add(a, b) }),
    ],
  })
  // tracing off: with no exporter reachable it would only add span work the other loops do not do
  const runner = new Runner({ modelProvider: provider, tracingDisabled: true })
  return {
    name: 'openai-agents',
    label: 'OpenAI Agents JS',
    versions: { '@openai/agents': installedVersion('@openai/agents') },
    notes: 'Runner({ modelProvider, tracingDisabled: true }).run(agent, input, { stream: true }), events consumed; the conversation keeps result.history',
    setChunks(c) {
      script = turnScript(c)
    },
    conversation(): Conversation {
      let history: AgentInputItem[] = []
      let text = 0
      return {
        async turn(input) {
          const result = await runner.run(agent, [...history, { role: 'user', content: input }], { stream: true })
          for await (const event of result) if (event.type === 'raw_model_stream_event' && event.data.type === 'output_text_delta') text++
          await result.completed
          history = result.history
        },
        textChunks: () => text,
      }
    },
  }
}

// Vercel AI SDK: streamText with two tools over a fake LanguageModel whose
// doStream answers with a ReadableStream of the SDK's own stream parts.
import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { isStepCount, streamText, tool, type ModelMessage } from 'ai'
import { z } from 'zod'
import { installedVersion, type Conversation, type Loop } from '../harness.js'
import { add, lookup, nextCall, TOOL_DESCRIPTIONS, turnScript, USAGE, type ScriptedCall } from '../workload.js'

/** One call of the script as LanguageModelV4 stream parts, framed the way streaming providers frame them. */
function* parts(call: ScriptedCall): Generator<LanguageModelV4StreamPart> {
  const textId = `${call.id}_text`
  yield { type: 'stream-start', warnings: [] }
  yield { type: 'response-metadata', id: call.id, modelId: 'scripted', timestamp: new Date(0) }
  yield { type: 'text-start', id: textId }
  for (const delta of call.text) yield { type: 'text-delta', id: textId, delta }
  yield { type: 'text-end', id: textId }
  for (const tc of call.toolCalls) {
    yield { type: 'tool-input-start', id: tc.id, toolName: tc.name }
    yield { type: 'tool-input-delta', id: tc.id, delta: tc.arguments }
    yield { type: 'tool-input-end', id: tc.id }
    yield { type: 'tool-call', toolCallId: tc.id, toolName: tc.name, input: tc.arguments }
  }
  yield {
    type: 'finish',
    finishReason: { unified: call.toolCalls.length > 0 ? 'tool-calls' : 'stop', raw: undefined },
    usage: {
      inputTokens: { total: USAGE.inputTokens, noCache: USAGE.inputTokens, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: USAGE.outputTokens, text: USAGE.outputTokens, reasoning: undefined },
    },
  }
}

export default function aiSdkLoop(): Loop {
  let script = turnScript(1)
  const model: LanguageModelV4 = {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId: 'scripted',
    supportedUrls: {},
    doGenerate() {
      throw new Error('the benchmark only streams')
    },
    doStream() {
      const source = parts(nextCall(script))
      // a pull source: each part is made when the SDK reads it, as a provider's parser would
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        pull(controller) {
          const next = source.next()
          if (next.done) controller.close()
          else controller.enqueue(next.value)
        },
      })
      return Promise.resolve({ stream })
    },
  }
  const tools = {
    lookup: tool({ description: TOOL_DESCRIPTIONS.lookup, inputSchema: z.object({ key: z.string() }), execute: ({ key }) => lookup(key) }),
    add: tool({ description: TOOL_DESCRIPTIONS.add, inputSchema: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => add(a, b) }),
  }
  return {
    name: 'ai-sdk',
    label: 'Vercel AI SDK',
    versions: { ai: installedVersion('ai') },
    notes: 'streamText({ model, tools, messages, stopWhen: isStepCount(5) }), fullStream consumed; the conversation keeps response.messages',
    setChunks(c) {
      script = turnScript(c)
    },
    conversation(): Conversation {
      const messages: ModelMessage[] = []
      let text = 0
      return {
        async turn(input) {
          messages.push({ role: 'user', content: input })
          const result = streamText({ model, tools, messages, stopWhen: isStepCount(5) })
          for await (const part of result.fullStream) if (part.type === 'text-delta') text++
          messages.push(...(await result.response).messages)
        },
        textChunks: () => text,
      }
    },
  }
}

// LangGraph.js: the prebuilt ReAct agent over a fake chat model that streams
// AIMessageChunks (text, tool-call chunks, usage) through the callback
// manager like a provider does, binds tools like one, and a MemorySaver
// checkpointer so a conversation is a thread.
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager'
import { BaseChatModel, type BaseChatModelCallOptions, type BindToolsInput } from '@langchain/core/language_models/chat_models'
import { AIMessageChunk, HumanMessage, type BaseMessage } from '@langchain/core/messages'
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs'
import { tool } from '@langchain/core/tools'
import { convertToOpenAITool } from '@langchain/core/utils/function_calling'
import { MemorySaver } from '@langchain/langgraph'
import { createReactAgent } from '@langchain/langgraph/prebuilt'
import { z } from 'zod'
import { installedVersion, type Conversation, type Loop } from '../harness.js'
import { add, lookup, nextCall, TOOL_DESCRIPTIONS, turnScript, USAGE, type ScriptedCall } from '../workload.js'

/** One call of the script as the AIMessageChunks a streaming provider yields, each made as it is yielded. */
function* chunks(call: ScriptedCall): Generator<AIMessageChunk> {
  const id = `msg_${call.id}`
  for (const text of call.text) yield new AIMessageChunk({ id, content: text })
  for (let index = 0; index < call.toolCalls.length; index++) {
    const tc = call.toolCalls[index]
    yield new AIMessageChunk({ id, content: '', tool_call_chunks: [{ type: 'tool_call_chunk', id: tc.id, name: tc.name, args: tc.arguments, index }] })
  }
  yield new AIMessageChunk({
    id,
    content: '',
    usage_metadata: { input_tokens: USAGE.inputTokens, output_tokens: USAGE.outputTokens, total_tokens: USAGE.inputTokens + USAGE.outputTokens },
    response_metadata: { finish_reason: call.toolCalls.length > 0 ? 'tool_calls' : 'stop' },
  })
}

class ScriptedChatModel extends BaseChatModel {
  script: readonly ScriptedCall[] = []

  _llmType(): string {
    return 'scripted'
  }

  override bindTools(tools: BindToolsInput[], kwargs?: Partial<BaseChatModelCallOptions>) {
    return this.withConfig({ tools: tools.map((t) => convertToOpenAITool(t)), ...kwargs } as Partial<BaseChatModelCallOptions>)
  }

  override async *_streamResponseChunks(
    _messages: BaseMessage[],
    _options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    for (const message of chunks(nextCall(this.script))) {
      const text = typeof message.content === 'string' ? message.content : ''
      const generation = new ChatGenerationChunk({ message, text })
      yield generation
      await runManager?.handleLLMNewToken(text, undefined, undefined, undefined, undefined, { chunk: generation })
    }
  }

  async _generate(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    let whole: ChatGenerationChunk | undefined
    for await (const chunk of this._streamResponseChunks(messages, options, runManager)) whole = whole ? whole.concat(chunk) : chunk
    if (!whole) throw new Error('the script yielded nothing')
    return { generations: [{ text: whole.text, message: whole.message }] }
  }
}

export default function langgraphLoop(): Loop {
  const llm = new ScriptedChatModel({})
  const checkpointer = new MemorySaver()
  const graph = createReactAgent({
    llm,
    checkpointSaver: checkpointer,
    tools: [
      tool(({ key }: { key: string }) => lookup(key), { name: 'lookup', description: TOOL_DESCRIPTIONS.lookup, schema: z.object({ key: z.string() }) }),
      tool(({ a, b }: { a: number; b: number }) => add(a, b), {
        name: 'add',
        description: TOOL_DESCRIPTIONS.add,
        schema: z.object({ a: z.number(), b: z.number() }),
      }),
    ],
  })
  let threads = 0
  return {
    name: 'langgraph',
    label: 'LangGraph.js ReAct',
    versions: { '@langchain/langgraph': installedVersion('@langchain/langgraph'), '@langchain/core': installedVersion('@langchain/core') },
    notes: "createReactAgent({ llm, tools, checkpointSaver: MemorySaver }); graph.stream({ messages }, { streamMode: 'messages', thread_id }) consumed",
    setChunks(c) {
      llm.script = turnScript(c)
    },
    conversation(): Conversation {
      const thread = `thread-${++threads}`
      let text = 0
      return {
        async turn(input) {
          const stream = await graph.stream({ messages: [new HumanMessage(input)] }, { streamMode: 'messages', configurable: { thread_id: thread } })
          for await (const [message] of stream) if (AIMessageChunk.isInstance(message) && typeof message.content === 'string' && message.content !== '') text++
        },
        textChunks: () => text,
        close: () => checkpointer.deleteThread(thread),
      }
    },
  }
}

// agentchart through its public API: createAgent, defineTool, and a
// zero-latency ModelAdapter that yields agentchart StreamChunks.
import { readFileSync } from 'node:fs'
import { z } from 'zod/v4'
import type { Agent, AgentOptions, ModelAdapter, StreamChunk } from '../../../src/index.js'
import { lib, SOURCE } from '../agentchart-lib.js'
import type { Conversation, Loop } from '../harness.js'
import { add, lookup, nextCall, TOOL_DESCRIPTIONS, turnScript, USAGE, type ScriptedCall } from '../workload.js'

const { createAgent, defineTool, userMessage } = lib

/** One call of the script in agentchart's normalized chunk protocol (BEHAVIOURS 1.4), each chunk made as it is yielded. */
export function* agentchartChunks(call: ScriptedCall): Generator<StreamChunk> {
  yield { type: 'block-start', index: 0, blockType: 'text' }
  for (const text of call.text) yield { type: 'text-delta', index: 0, text }
  yield { type: 'block-end', index: 0, block: { type: 'text', text: call.text.join('') } }
  for (let k = 0; k < call.toolCalls.length; k++) {
    const { id, name, arguments: args } = call.toolCalls[k]
    const index = k + 1
    yield { type: 'block-start', index, blockType: 'tool-call' }
    yield { type: 'tool-call-delta', index, id, name, argumentsDelta: args }
    yield { type: 'block-end', index, block: { type: 'tool-call', id, name, arguments: args } }
  }
  yield { type: 'usage', usage: { inputTokens: USAGE.inputTokens, outputTokens: USAGE.outputTokens } }
  yield { type: 'finish', reason: { kind: call.toolCalls.length > 0 ? 'tool-calls' : 'stop' } }
}

export const tools = [
  defineTool({
    name: 'lookup',
    description: TOOL_DESCRIPTIONS.lookup,
    input: z.object({ key: z.string() }),
    executionMode: 'parallel',
    execute: ({ key }) => lookup(key),
  }),
  defineTool({
    name: 'add',
    description: TOOL_DESCRIPTIONS.add,
    input: z.object({ a: z.number(), b: z.number() }),
    executionMode: 'parallel',
    execute: ({ a, b }) => add(a, b),
  }),
]

/** The zero-latency adapter: the three calls of the script, in turn, with no timers. */
export function benchModel(): { model: ModelAdapter; setChunks(c: number): void } {
  let script = turnScript(1)
  return {
    setChunks(c) {
      script = turnScript(c)
    },
    model: {
      provider: 'bench',
      model: 'scripted',
      async *stream() {
        yield* agentchartChunks(nextCall(script))
      },
    },
  }
}

/** Text chunks an agent's log holds: every streamed chunk is logged. */
function loggedTextChunks(agent: Agent): number {
  let n = 0
  for (const event of agent.session.events) if (event.type === 'assistant/chunk' && event.data.chunk.type === 'text-delta') n++
  return n
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
  const xstate = JSON.parse(readFileSync(new URL('../../../node_modules/xstate/package.json', import.meta.url), 'utf8')) as { version: string }
  return `${pkg.version} (${SOURCE === 'dist' ? 'built package' : 'sources through tsx'}; xstate ${xstate.version})`
}

/** A conversation that also exposes its agent, for the census and the smoke test. */
export type AgentchartConversation = Conversation & { readonly agent: Agent; close(): Promise<void> }

/** The agentchart loop; `extra` lets the census pass `inspect`. */
export function agentchartLoop(extra: Partial<AgentOptions> = {}): Omit<Loop, 'conversation'> & { conversation(): AgentchartConversation } {
  const bench = benchModel()
  return {
    name: 'agentchart',
    label: 'agentchart',
    versions: { agentchart: version() },
    notes: 'createAgent({ model, tools }) per conversation; followup(userMessage) then whenIdle(); every chunk is logged in the session',
    setChunks: bench.setChunks,
    conversation(): AgentchartConversation {
      const agent = createAgent({ model: bench.model, tools, ...extra })
      return {
        async turn(text) {
          agent.followup(userMessage(text))
          await agent.whenIdle()
        },
        textChunks: () => loggedTextChunks(agent),
        agent,
        close: () => agent.dispose(),
      }
    },
  }
}

export default agentchartLoop

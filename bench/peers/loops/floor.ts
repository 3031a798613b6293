// The floor: the smallest honest loop over the same workload. It reads the
// same chunks as agentchart's adapter, logs every chunk and message in an
// append-only array of the same event kinds, checks tool input with zod,
// runs the calls concurrently and commits results in model order.
import { z } from 'zod/v4'
import type { Conversation, Loop } from '../harness.js'
import { add, lookup, nextCall, turnScript } from '../workload.js'
import { agentchartChunks } from './agentchart.js'

type Chunk = ReturnType<typeof agentchartChunks> extends Generator<infer T> ? T : never

interface LogEvent {
  seq: number
  time: number
  type: string
  data: unknown
}

interface ToolCall {
  id: string
  name: string
  arguments: string
}

const schemas = {
  lookup: z.object({ key: z.string() }),
  add: z.object({ a: z.number(), b: z.number() }),
}

function run(call: ToolCall): string {
  if (call.name === 'lookup') {
    const parsed = schemas.lookup.safeParse(JSON.parse(call.arguments))
    return parsed.success ? lookup(parsed.data.key) : `invalid input: ${parsed.error.message}`
  }
  if (call.name === 'add') {
    const parsed = schemas.add.safeParse(JSON.parse(call.arguments))
    return parsed.success ? add(parsed.data.a, parsed.data.b) : `invalid input: ${parsed.error.message}`
  }
  return `unknown tool ${call.name}`
}

export default function floorLoop(): Loop {
  let script = turnScript(1)
  async function* stream(_messages: readonly unknown[]): AsyncGenerator<Chunk> {
    yield* agentchartChunks(nextCall(script))
  }
  return {
    name: 'floor',
    label: 'hand-written loop (floor)',
    versions: {},
    notes: 'an array log of the same event kinds, a message list copied per request, zod-checked tool input, concurrent tool runs',
    setChunks(c) {
      script = turnScript(c)
    },
    conversation(): Conversation {
      const log: LogEvent[] = []
      const messages: unknown[] = []
      let turnNo = 0
      let text = 0
      const append = (type: string, data: unknown) => {
        const event = { seq: log.length, time: Date.now(), type, data }
        log.push(event)
        return event
      }
      return {
        async turn(input) {
          const turn = ++turnNo
          const user = { role: 'user', content: [{ type: 'text', text: input }] }
          append('turn/start', { turn })
          for (let step = 1; ; step++) {
            append('step/start', { turn, step })
            if (step === 1) {
              append('user/message', user)
              messages.push(user)
            }
            const seqs: number[] = []
            const content: unknown[] = []
            const toolCalls: ToolCall[] = []
            let finish = 'stop'
            for await (const chunk of stream(messages.slice())) {
              seqs.push(append('assistant/chunk', { turn, step, chunk }).seq)
              if (chunk.type === 'text-delta') text++
              else if (chunk.type === 'block-end') {
                content.push(chunk.block)
                if (chunk.block.type === 'tool-call') toolCalls.push(chunk.block)
              } else if (chunk.type === 'finish') finish = chunk.reason.kind
            }
            const message = { role: 'assistant', content }
            append('assistant/message', { turn, step, message, sourceEventSeqs: seqs })
            messages.push(message)
            if (toolCalls.length > 0) {
              for (const call of toolCalls) append('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments })
              const results = await Promise.all(toolCalls.map(async (call) => run(call)))
              toolCalls.forEach((call, k) => {
                const result = { role: 'user', content: [{ type: 'tool-result', toolCallId: call.id, content: results[k], isError: false }] }
                append('tool/result', { turn, step, message: result })
                messages.push(result)
              })
            }
            append('step/end', { turn, step })
            if (finish !== 'tool-calls') break
          }
          append('turn/end', { turn, reason: { kind: 'completed' } })
        },
        textChunks: () => text,
      }
    },
  }
}

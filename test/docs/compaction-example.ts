// The worked example of docs/compaction.md: a small window, four questions,
// the model as summariser. The doc shows the trace this run logs.
import { COMPACTION_INSTRUCTIONS, createAgent, type ModelRequest, type SessionEvent } from '../../src/index.js'
import { scriptedModel, textResponse } from '../../src/testing/index.js'

/** Runs the example and returns the agent and the requests its model got. */
export async function runCompactionExample() {
  const answers = [
    'Paris is the capital of France.',
    'About 2.1 million people live in Paris proper.',
    'The Seine flows through Paris.',
    'The Louvre is the most visited museum.',
  ]
  let turn = 0
  const respond = (request: ModelRequest) =>
    request.system === COMPACTION_INSTRUCTIONS
      ? textResponse('The user asks about Paris: capital of France, about 2.1 million inhabitants.')
      : textResponse(`${answers[turn++]} ${'(details) '.repeat(12)}`)
  const model = scriptedModel(
    Array.from({ length: 8 }, () => respond),
    { contextWindow: 200 },
  )
  const agent = createAgent({ model, id: 'paris', compaction: { threshold: 0.8, keepRecent: 0.4 } })
  for (const [id, text] of [
    ['q1', 'What is the capital of France?'],
    ['q2', 'How many people live there?'],
    ['q3', 'Which river flows through it?'],
    ['q4', 'What is its most visited museum?'],
  ]) {
    await agent.run({ id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })
  }
  await agent.dispose()
  return { agent, requests: model.requests }
}

/** One line per event (chunks left out), as the doc prints it; generated ids are shown as `<id>`. */
export function formatTrace(events: readonly SessionEvent[]): string[] {
  const ids = new Map<string, string>()
  const name = (id: string) => {
    const kind = /^[a-z0-9]+-([mc])\d+$/.exec(id)?.[1]
    if (kind === undefined) return id
    if (!ids.has(id)) ids.set(id, `<${kind === 'm' ? 'message' : 'compaction'}-${ids.size + 1}>`)
    return ids.get(id)!
  }
  const lines: string[] = []
  for (const e of events) {
    if (e.type === 'assistant/chunk') continue
    const head = `${String(e.seq).padStart(2)} ${e.type}`
    switch (e.type) {
      case 'user/message': {
        const text = e.data.content.map((b) => ('text' in b ? b.text : b.type)).join('')
        const short = text.length > 60 ? `${text.slice(0, 57)}...` : text
        const op = e.surfaceOp === 'append' ? 'append' : `replace ${e.surfaceOp!.start}..${e.surfaceOp!.end} citing [${e.sourceEventSeqs!.join(', ')}]`
        lines.push(`${head} ${name(e.data.id)} ${op} ${JSON.stringify(short.replace(/\n/g, ' '))}`)
        break
      }
      case 'assistant/message':
        lines.push(`${head} ${name(e.data.message.id)} cites ${e.sourceEventSeqs!.length} chunks`)
        break
      case 'compaction/completed':
      case 'compaction/failed': {
        const { compactionId, messageId, ...rest } = e.data as { compactionId: string; messageId?: string }
        lines.push(`${head} ${JSON.stringify({ compactionId: name(compactionId), ...(messageId ? { messageId: name(messageId) } : {}), ...rest })}`)
        break
      }
      case 'turn/start':
      case 'turn/end':
      case 'step/start':
      case 'step/end':
        lines.push(`${head} ${JSON.stringify(e.data)}`)
        break
      case 'agent/inbox/spliced':
        lines.push(`${head} ${e.data.target} ${e.data.removedCount ? `-${e.data.removedCount}` : `+${e.data.inserted.length}`}`)
        break
      default:
        lines.push(head)
    }
  }
  return lines
}

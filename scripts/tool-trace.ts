// The worked example of docs/tools.md: one step in which the model calls a
// read-only parallel tool twice and then a writing exclusive tool. It prints
// the session log, with the tool bodies and the pipeline hooks interleaved
// where they happened. Run it with `npx tsx scripts/tool-trace.ts`.
import { z } from 'zod'
import { createAgent, defineTool, userMessage, type SessionEvent } from '../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../src/testing/index.js'

const lines: string[] = []
const note = (text: string) => lines.push(`        ${text}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// A pretend file system, so the tools have something to read and write.
const files = new Map([
  ['a.txt', 'alpha'],
  ['b.txt', 'bravo'],
])

const readFile = defineTool({
  name: 'read_file',
  description: 'Read a file',
  input: z.object({ path: z.string(), delayMs: z.number() }),
  executionMode: 'parallel', // reading changes nothing, so reads may overlap
  execute: async ({ path, delayMs }, { callId }) => {
    note(`body start  ${callId}`)
    await sleep(delayMs) // a.txt is slow and b.txt is fast, so b.txt finishes first
    note(`body end    ${callId}`)
    return files.get(path) ?? `no such file: ${path}`
  },
})

const writeFile = defineTool({
  name: 'write_file',
  description: 'Write a file',
  input: z.object({ path: z.string(), text: z.string() }),
  // executionMode is left out: 'exclusive' is the default
  execute: async ({ path, text }, { callId }) => {
    note(`body start  ${callId}`)
    files.set(path, text)
    note(`body end    ${callId}`)
    return `wrote ${text.length} characters to ${path}`
  },
})

const model = scriptedModel([
  toolCallResponse([
    { id: 'r1', name: 'read_file', arguments: '{"path":"a.txt","delayMs":300}' },
    { id: 'r2', name: 'read_file', arguments: '{"path":"b.txt","delayMs":5}' },
    { id: 'w3', name: 'write_file', arguments: '{"path":"c.txt","text":"alpha+bravo"}' },
  ]),
  textResponse('Done: c.txt holds alpha+bravo.'),
])

const agent = createAgent({ model, tools: [readFile, writeFile] })

agent.on('tools/pre-execute', ({ callId }, next) => {
  note(`pre-execute ${callId}`)
  return next()
})
agent.on('tools/post-execute', ({ callId }, next) => {
  note(`post-execute ${callId}`)
  return next()
})
agent.on('tools/result', ({ callId, outcome }) => note(`tools/result ${callId} ${JSON.stringify(outcome.content)}`))

function describe(e: SessionEvent): string {
  switch (e.type) {
    case 'turn/start':
    case 'turn/end':
      return `${e.type} turn=${e.data.turn}${e.type === 'turn/end' ? ` reason=${e.data.reason.kind}` : ''}`
    case 'step/start':
    case 'step/end':
      return `${e.type} turn=${e.data.turn} step=${e.data.step}`
    case 'tool/call':
      return `tool/call ${e.data.callId} ${e.data.name} ${e.data.arguments}`
    case 'tool/result': {
      const block = e.data.message.content[0]
      return `tool/result ${block.toolCallId} ${JSON.stringify(block.content)} cites=${JSON.stringify(e.sourceEventSeqs)}`
    }
    case 'assistant/message': {
      const calls = e.data.message.content.filter((b) => b.type === 'tool-call').map((b) => (b.type === 'tool-call' ? b.id : ''))
      const text = e.data.message.content.filter((b) => b.type === 'text').map((b) => (b.type === 'text' ? b.text : ''))
      return `assistant/message ${calls.length ? `calls=${calls.join(',')}` : JSON.stringify(text.join(''))}`
    }
    case 'agent/inbox/spliced':
      return `agent/inbox/spliced ${e.data.target} ${e.data.removedCount ? `-${e.data.removedCount}` : `+${e.data.inserted.length}`}`
    case 'user/message':
      return `user/message ${JSON.stringify(e.data.content.map((b) => (b.type === 'text' ? b.text : b.type)).join(''))}`
    default:
      return e.type
  }
}

// Chunks are counted rather than listed; everything else prints as it is appended.
let chunks = 0
agent.session.events$.subscribe((e) => {
  if (e.type === 'assistant/chunk') {
    chunks++
    return
  }
  if (chunks > 0) {
    lines.push(`        (${chunks} assistant/chunk events)`)
    chunks = 0
  }
  lines.push(`${String(e.seq).padStart(3)}  ${describe(e)}`)
})

agent.followup(userMessage('Read a.txt and b.txt, then write both into c.txt.', { id: 'prompt-1' }))
await agent.whenIdle()
await agent.dispose()
console.log(lines.join('\n'))

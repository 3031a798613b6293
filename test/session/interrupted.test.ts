// An answer a cancel cut short (CX-7) reaches the model followed by a note
// that says so, unless createAgent({ history: { interrupted: 'keep' } }); the
// stored log and the session's derived history stay as they were.
import { describe, expect, it } from 'vitest'
import { createAgent, INTERRUPTED_NOTE, type Message, type StreamChunk } from '../../src/index.js'
import { memoryStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse, type ScriptEntry } from '../../src/testing/index.js'
import { track } from '../helpers.js'

const quiet = { error: () => {} }

const partial: StreamChunk[] = [
  { type: 'block-start', index: 0, blockType: 'text' },
  { type: 'text-delta', index: 0, text: 'The order ships on' },
]

/** Streams the partial answer, then waits for the abort. */
const partialThenHang: ScriptEntry = (request) =>
  (async function* () {
    for (const chunk of partial) yield chunk
    await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve(), { once: true }))
  })()

/** Role and text of each message, for reading a history at a glance. */
const lines = (messages: readonly Message[]) => messages.map((m) => `${m.role}: ${m.content.map((b) => (b.type === 'text' ? b.text : b.type)).join(' ')}`)

async function cancelledMidAnswer(history?: { interrupted?: 'mark' | 'keep' }) {
  const model = scriptedModel([partialThenHang, textResponse('Tuesday.')])
  const agent = track(createAgent({ model, logger: quiet, ...(history ? { history } : {}) }))
  agent.followup('When does A-17 ship?')
  for (let i = 0; i < 200 && !agent.session.events.some((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'text-delta'); i++) {
    await new Promise((resolve) => setImmediate(resolve))
  }
  agent.cancel()
  await agent.whenIdle()
  return { agent, model }
}

describe('an interrupted answer in the request history', () => {
  it('CX-7: the next request carries the partial answer followed by a user-role note; the log and deriveMessages are unchanged', async () => {
    const { agent, model } = await cancelledMidAnswer()
    const derivedBefore = agent.session.deriveMessages()
    expect(lines(agent.messages())).toEqual(['user: When does A-17 ship?', 'assistant: The order ships on', `user: ${INTERRUPTED_NOTE}`])
    expect(await agent.run('Go on.')).toMatchObject({ end: { kind: 'completed' }, text: 'Tuesday.' })
    expect(lines(model.requests[1].messages)).toEqual([
      'user: When does A-17 ship?',
      'assistant: The order ships on',
      `user: ${INTERRUPTED_NOTE}`,
      'user: Go on.',
    ])
    expect(model.requests[1].messages[2].source).toEqual({ kind: 'plugin', plugin: 'agentchart', form: 'interrupted' })
    // the log holds no note: it is a derivation of the request, not an event
    expect(agent.session.events.some((e) => JSON.stringify(e.data).includes(INTERRUPTED_NOTE))).toBe(false)
    expect(lines(derivedBefore)).toEqual(['user: When does A-17 ship?', 'assistant: The order ships on'])
    expect(lines(agent.session.deriveMessages())).toEqual([
      'user: When does A-17 ship?',
      'assistant: The order ships on',
      'user: Go on.',
      'assistant: Tuesday.',
    ])
  })

  it("CX-7: history: { interrupted: 'keep' } sends the partial answer as it was logged", async () => {
    const { agent, model } = await cancelledMidAnswer({ interrupted: 'keep' })
    await agent.run('Go on.')
    expect(lines(model.requests[1].messages)).toEqual(['user: When does A-17 ship?', 'assistant: The order ships on', 'user: Go on.'])
    expect(agent.messages()).toEqual(agent.session.deriveMessages())
  })

  it('CX-7: an agent that resumes a stored log marks the interrupted answers it finds there', async () => {
    const store = memoryStore()
    const first = await createAgent({ model: scriptedModel([partialThenHang]), store, sessionId: 's', logger: quiet })
    first.followup('When does A-17 ship?')
    for (let i = 0; i < 200 && !first.session.events.some((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'text-delta'); i++) {
      await new Promise((resolve) => setImmediate(resolve))
    }
    first.cancel()
    await first.dispose()
    const model = scriptedModel([textResponse('Tuesday.')])
    const second = await createAgent({ model, store, sessionId: 's', logger: quiet })
    await second.run('Go on.')
    expect(lines(model.requests[0].messages)).toEqual([
      'user: When does A-17 ship?',
      'assistant: The order ships on',
      `user: ${INTERRUPTED_NOTE}`,
      'user: Go on.',
    ])
    await second.dispose()
  })

  it('RQ-3: a history option that is not mark or keep throws a ConfigError naming it', () => {
    expect(() => createAgent({ model: scriptedModel([]), history: { interrupted: 'drop' as never } })).toThrow(
      expect.objectContaining({ name: 'ConfigError', path: 'history.interrupted' }),
    )
    expect(() => createAgent({ model: scriptedModel([]), history: { interupted: 'keep' } as never })).toThrow(
      expect.objectContaining({ name: 'ConfigError', path: 'history.interupted' }),
    )
  })
})

// ST — Step: numbering, the pre-step decision, step input, chunk logging, the
// completion anchor, max-tokens and tool steps, and step/end on every exit.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defineTool, userMessage, type Agent, type ModelAdapter, type SessionEvent, type StreamChunk } from '../../src/index.js'
import { errorResponse, hang, maxTokensResponse, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { ofType, refuseAppends, scriptedAgent, tick, trace, track } from '../helpers.js'

type EventOf<T extends SessionEvent['type']> = Extract<SessionEvent, { type: T }>

const executed: string[] = []
const lookup = defineTool({
  name: 'lookup',
  description: 'look something up',
  input: z.object({}),
  execute: (_args, { callId }) => {
    executed.push(callId)
    return 'found it'
  },
})
const finish = (reason: Extract<StreamChunk, { type: 'finish' }>['reason'], replayState?: unknown): StreamChunk =>
  ({ type: 'finish', reason, ...(replayState ? { replayState } : {}) }) as StreamChunk

describe('ST — Step', () => {
  it('ST-1: steps are numbered from 1 within each turn, and the proposal carries the next number', async () => {
    const { agent } = scriptedAgent([textResponse('1'), textResponse('2'), textResponse('3'), textResponse('turn 2')])
    const proposals: string[] = []
    agent.on('agent/pre-step', (p, next) => {
      proposals.push(`${p.turn}.${p.step}`)
      return next()
    })
    agent.on('agent/turn-stopping', (p) => {
      if (p.turn === 1 && ofType(agent, 'step/start').length < 3) agent.steer('again')
    })
    agent.followup('one')
    agent.followup('two')
    await agent.whenIdle()
    expect(proposals).toEqual(['1.1', '1.2', '1.3', '2.1'])
    expect(ofType(agent, 'step/start').map((e) => `${e.data.turn}.${e.data.step}`)).toEqual(['1.1', '1.2', '1.3', '2.1'])
    expect(ofType(agent, 'step/end').map((e) => `${e.data.turn}.${e.data.step}`)).toEqual(['1.1', '1.2', '1.3', '2.1'])
  })

  it('ST-1: a rejected or empty proposal writes no step events and consumes no number', async () => {
    const { agent } = scriptedAgent([textResponse('entered')])
    const proposals: string[] = []
    agent.on('agent/pre-step', (p, next) => {
      proposals.push(`${p.turn}.${p.step}`)
      if (p.turn === 1) return { kind: 'reject' }
      if (p.turn === 2) return { kind: 'enter', messages: [] }
      return next()
    })
    agent.followup('rejected')
    await agent.whenIdle()
    agent.followup('emptied')
    await agent.whenIdle()
    agent.followup('entered')
    await agent.whenIdle()
    expect(proposals).toEqual(['1.1', '2.1', '3.1'])
    expect(ofType(agent, 'step/start').map((e) => e.data)).toEqual([{ turn: 3, step: 1 }])
  })

  it('ST-2: agent/pre-step runs once per proposal, strictly before its step/start, and next() enters the claimed batch', async () => {
    const { agent } = scriptedAgent([textResponse('1'), textResponse('2')])
    const seen: Array<{ step: number; last: string; opened: boolean; decision: unknown; batch: string[] }> = []
    agent.on('agent/pre-step', async (p, next) => {
      const last = agent.session.events.at(-1)!
      const opened = ofType(agent, 'step/start').some((e) => e.data.step === p.step)
      const decision = await next()
      seen.push({ step: p.step, last: last.type, opened, decision, batch: p.messages.map((m) => m.id) })
      return decision
    })
    agent.on('agent/turn-stopping', () => {
      if (ofType(agent, 'step/start').length === 1) agent.inject(userMessage('context', { id: 'ctx' }))
    })
    const steer = userMessage('steer first', { id: 'steer' })
    const prompt = userMessage('prompt', { id: 'prompt' })
    agent.inject(steer)
    agent.followup(prompt)
    await agent.whenIdle()

    expect(seen.map(({ step, last, opened, batch }) => ({ step, last, opened, batch }))).toEqual([
      { step: 1, last: 'agent/inbox/spliced', opened: false, batch: ['steer', 'prompt'] },
      { step: 2, last: 'agent/inbox/spliced', opened: false, batch: ['ctx'] },
    ])
    expect(seen[0].decision).toEqual({ kind: 'enter', messages: [steer, prompt] })
    expect((seen[1].decision as { messages: Array<{ id: string }> }).messages.map((m) => m.id)).toEqual(['ctx'])
  })

  it('ST-2: with nobody at agent/pre-step the claimed batch enters at once, and the log is the one a listener that enters it as it is gives', async () => {
    // two tool steps, a steer waiting at the second step boundary, and a second turn from idle
    const run = async (listen: boolean) => {
      // the steer comes from a tool body, so nobody watches: the quiet run takes the fast path at every boundary
      let steered = false
      const steering = defineTool({
        name: 'lookup',
        description: 'look something up, steering once',
        input: z.object({}),
        execute: () => {
          if (!steered) agent.steer(userMessage('steer', { id: 'steer' }))
          steered = true
          return 'found it'
        },
      })
      const { agent } = scriptedAgent(
        [
          toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]),
          toolCallResponse([
            { id: 'c2', name: 'lookup', arguments: '{}' },
            { id: 'c3', name: 'lookup', arguments: '{}' },
          ]),
          textResponse('first'),
          textResponse('second'),
        ],
        { tools: [steering] },
      )
      const proposals: string[] = []
      if (listen) agent.on('agent/pre-step', (p, next) => (proposals.push(`${p.turn}.${p.step}`), next()))
      // one send at a time: a listener's round trip would let a second send land earlier in the log
      agent.followup(userMessage('one', { id: 'one' }))
      await agent.whenIdle()
      agent.followup(userMessage('two', { id: 'two' }))
      await agent.whenIdle()
      // the ids the agent makes are its instance's random prefix and a counter that a listener's round trips also draw on
      const prefix = ofType(agent, 'assistant/message')[0].data.message.id.split('-')[0]
      const made = new RegExp(`"${prefix}-([mr])\\d+"`, 'g')
      const log = agent.session.events.map(({ time: _time, ...rest }) => JSON.parse(JSON.stringify(rest).replace(made, '"made-$1"')) as SessionEvent)
      return { log, proposals }
    }
    const quiet = await run(false)
    const listened = await run(true)
    expect(listened.proposals).toEqual(['1.1', '1.2', '1.3', '2.1'])
    expect(quiet.log).toEqual(listened.log)
    expect(trace(quiet.log).filter((t) => t.startsWith('step/start') || t.startsWith('user/message'))).toEqual([
      'step/start{1,1}',
      'user/message(one)',
      'step/start{1,2}',
      'user/message(steer)',
      'step/start{1,3}',
      'step/start{2,1}',
      'user/message(two)',
    ])
  })

  it('ST-3: the enter decision is authoritative: rewritten, added and dropped messages, logged right after step/start', async () => {
    const { agent, model } = scriptedAgent([textResponse('ok'), textResponse('later')])
    const dropped = userMessage('dropped context', { id: 'dropped' })
    const prompt = userMessage('original text', { id: 'prompt' })
    const added = userMessage('added by a plugin', { id: 'added', source: { kind: 'plugin', plugin: 'memory' } })
    agent.on('agent/pre-step', (p, next) => {
      if (p.turn !== 1) return next()
      const kept = p.messages.find((m) => m.id === 'prompt')!
      return { kind: 'enter', messages: [added, { ...kept, content: [{ type: 'text', text: 'rewritten text' }] }] }
    })
    agent.inject(dropped)
    agent.followup(prompt)
    await agent.whenIdle()

    const log = agent.session.events
    const start = log.findIndex((e) => e.type === 'step/start')
    const entered = log.slice(start + 1, start + 3) as EventOf<'user/message'>[]
    expect(entered.map((e) => e.type)).toEqual(['user/message', 'user/message'])
    expect(entered.map((e) => e.surfaceOp)).toEqual(['append', 'append'])
    expect(entered.map((e) => e.data)).toEqual([added, { ...prompt, content: [{ type: 'text', text: 'rewritten text' }] }])
    expect(log[start + 3].type).toBe('request/header')
    // what was logged is what was sent
    expect(model.requests[0].messages).toEqual(entered.map((e) => e.data))

    // the dropped message is gone for good: not pending, never logged, never sent
    agent.followup('next turn')
    await agent.whenIdle()
    expect(agent.inbox.hasPending).toBe(false)
    expect(ofType(agent, 'user/message').some((e) => e.data.id === 'dropped')).toBe(false)
    expect(model.requests[1].messages.some((m) => m.id === 'dropped')).toBe(false)
  })

  it('ST-4: cancellation is checked after agent/pre-step resolves, before step/start', async () => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    agent.on('agent/pre-step', (_p, next) => {
      agent.cancel({ kind: 'user' }, { keepInbox: true })
      return next()
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(trace(agent)).toEqual(['spliced(next-turn +1)', 'turn/start{1}', 'spliced(next-turn -1)', 'turn/end{1,aborted}'])
    expect(model.requests).toHaveLength(0)
  })

  it('ST-4: cancelled once step/start is written, the step still writes step/end before turn/end', async () => {
    const { agent, model } = scriptedAgent([textResponse('never')])
    agent.on('session/event', ({ event }) => {
      if (event.type === 'step/start') agent.cancel()
    })
    agent.followup('go')
    await agent.whenIdle()
    expect(trace(agent).slice(2)).toEqual(['spliced(next-turn -1)', 'step/start{1,1}', 'user/message(go)', 'step/end{1,1}', 'turn/end{1,aborted}'])
    expect(model.requests).toHaveLength(0)
  })

  it.each([
    { name: 'success', script: [textResponse('ok')], setup: () => {}, tail: ['assistant/message'] },
    {
      name: 'tool completion',
      script: [toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]), textResponse('done')],
      setup: () => {},
      tail: ['assistant/message'],
    },
    { name: 'request failure', script: [errorResponse({ message: 'down', code: 'SERVER' })], setup: () => {}, tail: ['request/context'] },
    {
      name: 'hook failure',
      script: [],
      setup: (a: Agent) =>
        a.on('agent/request', () => {
          throw new Error('no config')
        }),
      tail: ['user/message(go)'],
    },
    {
      name: 'cancellation while streaming',
      script: [hang],
      setup: (a: Agent) =>
        a.on('session/event', ({ event }) => {
          if (event.type === 'request/context') void tick(1).then(() => a.cancel())
        }),
      tail: ['request/context'],
    },
    { name: 'a refused anchor append', script: [textResponse('lost')], setup: (a: Agent) => refuseAppends(a, 'assistant/message'), tail: ['request/context'] },
    {
      name: 'a refused tool/result append',
      script: [toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }])],
      setup: (a: Agent) => refuseAppends(a, 'tool/result'),
      tail: ['tool/call(c1)'],
    },
  ])('ST-4: after step/start every exit path ($name) writes step/end before the turn continues or closes', async ({ script, setup, tail }) => {
    const { agent } = scriptedAgent(script, { tools: [lookup], retry: false })
    setup(agent)
    agent.followup('go')
    await agent.whenIdle()
    const t = trace(agent)
    expect(t.at(-1)).toMatch(/^turn\/end\{1,/)
    const starts = t.filter((x) => x.startsWith('step/start')).length
    expect(t.filter((x) => x.startsWith('step/end'))).toHaveLength(starts)
    expect(t.slice(-2 - tail.length, -1)).toEqual([...tail, `step/end{1,${starts}}`])
  })

  it('ST-5: each request is derived after the step input; input claimed later is not in it', async () => {
    const { agent, model } = scriptedAgent([textResponse('first answer'), textResponse('second answer')])
    let steered = false
    agent.on('agent/request', (_p, next) => {
      if (!steered) agent.steer(userMessage('steer during step 1', { id: 'steer' }))
      steered = true
      return next()
    })
    const prompt = userMessage('prompt', { id: 'prompt' })
    agent.followup(prompt)
    await agent.whenIdle()

    const [first, second] = model.requests
    expect(first.messages.map((m) => m.id)).toEqual(['prompt'])
    expect(second.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(second.messages.at(-1)!.id).toBe('steer')
    // each request equals the derived history of the log at its dispatch
    const secondStart = ofType(agent, 'step/start')[1].seq
    expect(agent.session.events[secondStart + 1]).toMatchObject({ type: 'user/message', data: { id: 'steer' } })
  })

  it('ST-6: every chunk is logged as assistant/chunk{turn, step, chunk}, in arrival order', async () => {
    const chunks = textResponse('hello there', { usage: { inputTokens: 3, outputTokens: 2 } })
    const { agent } = scriptedAgent([chunks])
    agent.followup('go')
    await agent.whenIdle()
    expect(ofType(agent, 'assistant/chunk').map((e) => e.data)).toEqual(chunks.map((chunk) => ({ turn: 1, step: 1, chunk })))
  })

  it('ST-6: chunks that arrive after cancellation are not logged, even from an adapter that ignores the signal', async () => {
    const chunks = textResponse('one two three four five six')
    const model: ModelAdapter = {
      provider: 'deaf',
      model: 'deaf-1',
      async *stream() {
        for (const chunk of chunks) {
          await tick(1)
          yield chunk
        }
      },
    }
    const agent = track(createAgent({ model, logger: { error: () => {} } }))
    agent.on('session/event', ({ event }) => {
      if (event.type === 'assistant/chunk' && ofType(agent, 'assistant/chunk').length === 2) agent.cancel()
    })
    agent.followup('go')
    await agent.whenIdle()
    await tick(20)
    expect(ofType(agent, 'assistant/chunk').map((e) => e.data.chunk)).toEqual(chunks.slice(0, 2))
    expect(trace(agent).slice(-3)).toEqual(['assistant/message(interrupted)', 'step/end{1,1}', 'turn/end{1,aborted}'])
  })

  it('ST-7: a successful attempt appends one anchor citing exactly its chunks, with the model source and the last usage', async () => {
    const chunks: StreamChunk[] = [
      ...textResponse('answer').slice(0, -1),
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
      { type: 'usage', usage: { inputTokens: 10, outputTokens: 4, reasoningTokens: 2 } },
      finish({ kind: 'stop' }, { response: { id: 'resp-1' } }),
    ]
    const { agent } = scriptedAgent([chunks])
    agent.followup('go')
    await agent.whenIdle()

    const anchors = ofType(agent, 'assistant/message')
    expect(anchors).toHaveLength(1)
    const [anchor] = anchors
    expect(anchor.surfaceOp).toBe('append')
    expect(anchor.sourceEventSeqs).toEqual(ofType(agent, 'assistant/chunk').map((e) => e.seq))
    expect(anchor.data).toMatchObject({ turn: 1, step: 1, usage: { inputTokens: 10, outputTokens: 4, reasoningTokens: 2 } })
    expect(anchor.data.message.role).toBe('assistant')
    expect(anchor.data.message.content).toEqual([{ type: 'text', text: 'answer' }])
    expect(anchor.data.message.source).toEqual({ kind: 'model', provider: 'scripted', model: 'scripted-1', replayState: { response: { id: 'resp-1' } } })
    expect(anchor.data.interrupted).toBeUndefined()
  })

  it.each([
    { name: 'finish tool-calls with no calls', chunks: [...textResponse('hi').slice(0, -1), finish({ kind: 'tool-calls' })] },
    { name: 'max-tokens', chunks: maxTokensResponse('cut') },
    { name: 'no finish at all', chunks: textResponse('unfinished').slice(0, -1) },
    { name: 'no chunks at all', chunks: [] },
  ])('ST-7: $name also gets exactly one anchor citing its chunks, without usage when none was reported', async ({ chunks }) => {
    const { agent } = scriptedAgent([chunks])
    agent.followup('go')
    await agent.whenIdle()
    const [anchor, ...more] = ofType(agent, 'assistant/message')
    expect(more).toEqual([])
    expect(anchor.sourceEventSeqs).toEqual(ofType(agent, 'assistant/chunk').map((e) => e.seq))
    expect(anchor.data.usage).toBeUndefined()
    expect(anchor.data.message.source).toEqual({ kind: 'model', provider: 'scripted', model: 'scripted-1' })
  })

  it('ST-8: an empty anchor is still appended (citing the finish), ends the turn completed, and never enters history', async () => {
    const usage = { inputTokens: 5, outputTokens: 0 }
    const { agent, model } = scriptedAgent([textResponse(''), textResponse('', { usage }), textResponse('real')])
    agent.followup('one')
    agent.followup('two')
    agent.followup('three')
    await agent.whenIdle()

    const anchors = ofType(agent, 'assistant/message')
    const chunks = ofType(agent, 'assistant/chunk')
    expect(anchors[0].data.message.content).toEqual([])
    expect(anchors[0].sourceEventSeqs).toEqual([chunks[0].seq])
    expect(chunks[0].data.chunk.type).toBe('finish')
    expect(anchors[1].data.usage).toEqual(usage)
    expect(ofType(agent, 'turn/end').map((e) => e.data.reason)).toEqual([{ kind: 'completed' }, { kind: 'completed' }, { kind: 'completed' }])
    expect(model.requests[2].messages.map((m) => m.role)).toEqual(['user', 'user', 'user'])
    expect(agent.messages().map((m) => m.role)).toEqual(['user', 'user', 'user', 'assistant'])
  })

  it('ST-9: a max-tokens finish drops tool-call blocks (and aligned replay blocks), dispatches nothing, ends max-tokens', async () => {
    executed.length = 0
    const chunks: StreamChunk[] = [
      ...textResponse('partial').slice(0, -1),
      ...toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{"q":' }])
        .slice(0, -1)
        .map((c) => ('index' in c ? { ...c, index: 1 } : c)),
      finish({ kind: 'max-tokens' }, { response: { id: 'r' }, blocks: [{ b: 'text' }, { b: 'call' }] }),
    ]
    const { agent, model } = scriptedAgent([chunks], { tools: [lookup] })
    agent.followup('go')
    await agent.whenIdle()

    const [anchor] = ofType(agent, 'assistant/message')
    expect(anchor.data.message.content).toEqual([{ type: 'text', text: 'partial' }])
    expect(anchor.data.message.source.replayState).toEqual({ response: { id: 'r' }, blocks: [{ b: 'text' }] })
    expect(ofType(agent, 'tool/call')).toEqual([])
    expect(executed).toEqual([])
    expect(model.requests).toHaveLength(1)
    expect(ofType(agent, 'turn/end').map((e) => e.data.reason)).toEqual([{ kind: 'max-tokens' }])
  })

  it('ST-10: tool-call blocks run in the step after the anchor even on a stop finish, and the step is not terminal', async () => {
    executed.length = 0
    const chunks = [...toolCallResponse([{ id: 'c1', name: 'lookup', arguments: '{}' }]).slice(0, -1), finish({ kind: 'stop' })]
    const { agent, model } = scriptedAgent([chunks, textResponse('done')], { tools: [lookup] })
    let stopping = 0
    agent.on('agent/turn-stopping', () => void stopping++)
    agent.followup('go')
    await agent.whenIdle()

    expect(executed).toEqual(['c1'])
    expect(trace(agent).slice(3)).toEqual([
      'step/start{1,1}',
      'user/message(go)',
      'request/header',
      'request/context',
      'assistant/message',
      'tool/call(c1)',
      'tool/result(c1)',
      'step/end{1,1}',
      'step/start{1,2}',
      'assistant/message',
      'step/end{1,2}',
      'turn/end{1,completed}',
    ])
    expect(model.requests).toHaveLength(2)
    expect(stopping).toBe(1) // only after the terminal step 2
  })

  it('ST-10: a result that concludes the turn makes the tool step terminal, with no follow-up request', async () => {
    const finalTool = defineTool({
      name: 'final',
      description: 'answer and stop',
      input: z.object({}),
      execute: () => ({ content: 'the answer', concludesTurn: true }),
    })
    const { agent, model } = scriptedAgent([toolCallResponse([{ id: 'f1', name: 'final', arguments: '{}' }])], { tools: [finalTool] })
    agent.followup('go')
    await agent.whenIdle()
    expect(model.requests).toHaveLength(1)
    expect(trace(agent).slice(-4)).toEqual(['tool/call(f1)', 'tool/result(f1)', 'step/end{1,1}', 'turn/end{1,completed}'])
  })
})

// attempt: one model request inside an open step. building (agent/request,
// route check, header/context logging) -> dispatching (records in, cancel
// re-checked) -> streaming -> done, or recovering
// (agent/request-error) -> a retry is a new attempt of the same step (RQ-10).
import { visiblePrefix } from '../adapters/assemble.js'
import { LlmError } from '../adapters/failure.js'
import { deepFreeze } from '../session/lossless.js'
import type { ContentBlock, LlmFailure } from '../session/schemas.js'
import { act, agentSetup, awaited, awaitedAndCancelled, initialContext, type Draft, type EventOf } from './setup.js'
import type { PlannedCall } from './types.js'
import { activeOn, cancelRunning } from './active.js'
import { newBatch } from './batch.js'

/** TL-1: an empty string is `{}`, valid JSON its value, anything else stays the raw text. */
export function parseArguments(raw: string): unknown {
  if (raw.trim() === '') return Object.freeze({})
  try {
    return deepFreeze(JSON.parse(raw))
  } catch {
    return raw
  }
}

function endAttempt(d: Draft, outcome: 'aborted' | 'error', failure?: { failure: LlmFailure; error: unknown }): void {
  d.set({ stepOutcome: outcome })
  if (failure) d.set({ failure: { ...failure, step: d.get('step') }, end: { kind: 'error', error: failure.failure } })
}

const abortAttempt = act((d) => endAttempt(d, 'aborted'))

/** Log the header and route records the request needs; the request is sent once they are in (RQ-4, RQ-5). */
function logRecords(d: Draft, e: EventOf<'request.prepared'>): void {
  const request = d.get('request')
  const first = request.requests === 0
  if (first || e.headerKey !== request.headerKey) {
    const reason = !first ? 'change' : request.priorHeader ? 'resume' : 'initial'
    d.append('request/header', { header: e.header, reason })
    d.setRequest({ headerKey: e.headerKey })
  }
  if (e.contextKey !== request.contextKey) {
    d.append('request/context', e.context)
    d.setRequest({ contextKey: e.contextKey })
  }
  d.setRequest({ requests: request.requests + 1, config: e.config, seedConfig: e.config })
  d.sync()
}

function modelSource(d: Draft, replayState: unknown) {
  const config = d.get('request').config!
  const source = { kind: 'model' as const, provider: config.provider, model: config.model }
  return replayState === undefined ? source : { ...source, replayState: replayState as { response: unknown } }
}

/** The completion anchor: exactly one assistant/message citing this attempt's chunks (ST-7..ST-10). */
function anchor(d: Draft, e: EventOf<'model.settled'>): void {
  const { response } = e
  const maxTokens = response.finish.kind === 'max-tokens'
  const message = {
    id: `${d.get('instance').id}-m${d.id()}`,
    role: 'assistant' as const,
    content: response.content,
    source: modelSource(d, response.replayState),
  }
  const data = { turn: d.get('turn'), step: d.get('step'), message, ...(response.usage ? { usage: response.usage } : {}) }
  d.append('assistant/message', data, { surfaceOp: 'append', sourceEventSeqs: e.chunkSeqs })
  const calls: PlannedCall[] = maxTokens
    ? []
    : response.content
        .filter((b): b is Extract<ContentBlock, { type: 'tool-call' }> => b.type === 'tool-call')
        .map((b) => ({ callId: b.id, name: b.name, arguments: b.arguments, args: parseArguments(b.arguments) }))
  d.set({ tools: newBatch(calls, d.get('instance').maxParallelToolCalls), stepOutcome: maxTokens ? 'max-tokens' : calls.length > 0 ? 'continue' : 'completed' })
}

/** CX-7: a cancelled stream keeps its visible text as an interrupted prefix; tool calls are dropped. */
function interrupt(d: Draft, e: EventOf<'model.settled'>): void {
  const visible = visiblePrefix(e.response.content)
  if (visible) {
    const message = { id: `${d.get('instance').id}-m${d.id()}`, role: 'assistant' as const, content: visible, source: modelSource(d, undefined) }
    const usage = e.response.usage ? { usage: e.response.usage } : {}
    d.append(
      'assistant/message',
      { turn: d.get('turn'), step: d.get('step'), message, ...usage, interrupted: true },
      { surfaceOp: 'append', sourceEventSeqs: e.chunkSeqs },
    )
  }
  d.set({ stepOutcome: 'aborted' })
}

const failedFinish = ({ event }: { event: { type: string } }) => {
  const e = event as EventOf<'model.settled'>
  return e.response.finish.kind === 'error' || e.response.finish.kind === 'aborted'
}

export const attemptState = agentSetup.createStateConfig({
  initial: 'building',
  states: {
    building: {
      entry: act((d) => {
        const request = d.get('request')
        d.setRequest({ attempt: request.attempt + 1, config: null })
        d.emit({ type: 'fx.prepare', id: d.await(), turn: d.get('turn'), step: d.get('step'), seed: request.seedConfig })
      }),
      on: {
        // a cancel wins over the pending agent/request; its late answer is dropped by its id
        'agent.cancel': { target: 'done', actions: [cancelRunning, abortAttempt] },
        'request.prepared': [
          {
            // RQ-3: no route, no request
            guard: (a) => awaited(a) && (!a.event.config.provider || !a.event.config.model),
            target: 'done',
            actions: act<'request.prepared'>((d) => {
              const message =
                'the agent has no provider/model for this request: set `model` in createAgent options or return a config with provider and model from an agent/request listener'
              endAttempt(d, 'error', { failure: { message, code: 'NO_ADAPTER' }, error: new Error(message) })
            }),
          },
          { guard: awaited, target: 'dispatching', actions: act<'request.prepared'>(logRecords) },
        ],
        'hook.failed': {
          guard: awaited,
          target: 'done',
          actions: act<'hook.failed'>((d, e) => endAttempt(d, 'error', e)),
        },
      },
    },
    // CX-6: a cancel from an observer of those records lands before the model is called
    dispatching: {
      on: {
        sync: [
          { guard: awaitedAndCancelled, target: 'done', actions: abortAttempt },
          {
            guard: awaited,
            target: 'streaming',
            actions: act((d) => d.emit({ type: 'fx.model', id: d.await(), turn: d.get('turn'), step: d.get('step'), config: d.get('request').config! })),
          },
        ],
        fault: { target: 'done', actions: act<'fault'>((d, e) => endAttempt(d, 'error', e)) },
      },
    },
    streaming: {
      on: {
        'model.settled': [
          {
            guard: (a) => awaited(a) && (a.context.cause !== null || a.event.cancelled),
            target: 'done',
            actions: act<'model.settled'>(interrupt),
          },
          {
            guard: (a) => awaited(a) && failedFinish(a),
            target: 'recovering',
            actions: act<'model.settled'>((d, e) => {
              const finish = e.response.finish as { failure: LlmFailure }
              // RQ-9: agent/error reports an error carrying the same facts; turn/end keeps the facts verbatim
              d.setRequest({ failure: { failure: finish.failure, error: new LlmError(finish.failure), step: d.get('step') } })
            }),
          },
          { guard: awaited, target: 'done', actions: act<'model.settled'>(anchor) },
        ],
        'model.faulted': { guard: awaited, target: 'done', actions: act<'model.faulted'>((d, e) => endAttempt(d, 'error', e)) },
      },
    },
    recovering: {
      entry: act((d) => {
        const { failure, config } = d.get('request')
        d.hook('agent/request-error', { turn: d.get('turn'), step: d.get('step'), provider: config?.provider, failure: failure!.failure }, undefined)
      }),
      on: {
        // RQ-12 / CX-8: cancellation beats retry, and no interrupted prefix is written
        'agent.cancel': { target: 'done', actions: [cancelRunning, abortAttempt] },
        'hook.done': [
          {
            guard: (a) => awaited(a) && a.event.value !== undefined && (a.event.value as { kind?: unknown })?.kind === 'retry',
            target: 'building',
          },
          { guard: awaited, target: 'done', actions: act((d) => endAttempt(d, 'error', d.get('request').failure!)) },
        ],
        'hook.failed': { guard: awaited, target: 'done', actions: act<'hook.failed'>((d, e) => endAttempt(d, 'error', e)) },
      },
    },
    done: { type: 'final' },
  },
})

/** The attempt on its own: one request of an already open step (for graph walks and diagrams). */
export const attemptMachine = agentSetup.createMachine({
  id: 'attempt',
  context: ({ input }) => ({ ...initialContext(input), turn: 1, step: 1 }),
  on: activeOn,
  ...attemptState,
})

// attempt: one model request inside an open step. building (agent/request,
// route check) -> streaming (the header and route records are logged and the
// model called) -> done, or recovering (agent/request-error) -> a retry
// builds again: a new attempt of the same step (RQ-10), after a cancellable
// backoff when the decision names a delay (llm/retry ... llm/retry-started, RQ-14).
import { and, not, or } from 'xstate'
import type { ContentBlock } from '../session/schemas.js'
import { parseArguments, visiblePrefix } from '../session/vocabulary.js'
import { activityOn, asks, awaiting } from './activity.js'
import { inboxOn } from './inbox.js'
import { attached } from './attachment.js'
import { initialContext, newToolBatch } from './context.js'
import { action, actionOn, guard, guardOn, type Draft, named, labelGuards } from './setup.js'
import { compactionSetup, compactionState, type CompactionImplementations } from './compaction.js'
import type { RequestedCall, TurnFailure } from './types.js'

const NO_ROUTE =
  'the agent has no provider/model for this request: set `model` in createAgent options or return a config with provider and model from an agent/request listener'

function endAttempt(d: Draft, outcome: 'aborted' | 'error', failure?: Omit<TurnFailure, 'step'>): void {
  d.set({ stepOutcome: outcome })
  if (failure) d.set({ failure: { failure: failure.failure, step: d.get('step') }, endReason: { kind: 'error', error: failure.failure } })
}

type ModelSource = { readonly kind: 'model'; readonly provider: string; readonly model: string }
/** The last model source made, frozen: the requests of one route share it, so the log keeps it once, not once a message. */
let lastSource: ModelSource = Object.freeze({ kind: 'model', provider: '', model: '' })

function modelSource(d: Draft, replayState: unknown) {
  const { provider, model } = d.get('request').config!
  if (lastSource.provider !== provider || lastSource.model !== model) lastSource = Object.freeze({ kind: 'model', provider, model })
  return replayState === undefined ? lastSource : { ...lastSource, replayState: replayState as { response: unknown } }
}

const messageId = (d: Draft) => `${d.get('instance').id}-m${d.id()}`

const attemptImplementations = named({
  actions: {
    /** A new attempt: agent/request and the request's config, header and route record (RQ-1, RQ-2). */
    buildRequest: action((d) => {
      const request = d.get('request')
      d.setRequest({ attempt: request.attempt + 1, config: null })
      d.emit({ type: 'fx.prepare', id: d.await(), turn: d.get('turn'), step: d.get('step'), seed: request.seedConfig, abandonOnCancel: true })
    }),
    /** RQ-3: no route, no request. */
    failWithoutRoute: action((d) => endAttempt(d, 'error', { failure: { message: NO_ROUTE, code: 'NO_ADAPTER' } })),
    /** Log the header and route records the request needs (RQ-4, RQ-5), then call the model. */
    dispatchRequest: actionOn(['request.prepared'], (d, e) => {
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
      // a cancel from an observer of those records lands before the runtime starts the stream (CX-6)
      d.emit({ type: 'fx.model', id: d.await(), turn: d.get('turn'), step: d.get('step'), config: e.config })
    }),
    /** The completion anchor: exactly one assistant/message citing this attempt's chunks (ST-7..ST-10). */
    appendAnchor: actionOn(['model.settled'], (d, e) => {
      const { response } = e
      const maxTokens = response.finish.kind === 'max-tokens'
      const message = { id: messageId(d), role: 'assistant' as const, content: response.content, source: modelSource(d, response.replayState) }
      const data = { turn: d.get('turn'), step: d.get('step'), message, ...(response.usage ? { usage: response.usage } : {}) }
      d.append('assistant/message', data, { surfaceOp: 'append', sourceEventSeqs: e.chunkSeqs })
      const calls: RequestedCall[] = maxTokens
        ? []
        : response.content
            .filter((b): b is Extract<ContentBlock, { type: 'tool-call' }> => b.type === 'tool-call')
            .map((b) => ({ callId: b.id, name: b.name, arguments: b.arguments, args: parseArguments(b.arguments) }))
      d.set({
        toolBatch: newToolBatch(calls, d.get('instance').maxParallelToolCalls),
        stepOutcome: maxTokens ? 'max-tokens' : calls.length > 0 ? 'continue' : 'completed',
      })
    }),
    /** CX-7: a cancelled stream keeps its visible text as an interrupted prefix; tool calls are dropped. */
    keepInterruptedPrefix: actionOn(['model.settled'], (d, e) => {
      const visible = visiblePrefix(e.response.content)
      if (visible) {
        const message = { id: messageId(d), role: 'assistant' as const, content: visible, source: modelSource(d, undefined) }
        const usage = e.response.usage ? { usage: e.response.usage } : {}
        d.append(
          'assistant/message',
          { turn: d.get('turn'), step: d.get('step'), message, ...usage, interrupted: true },
          { surfaceOp: 'append', sourceEventSeqs: e.chunkSeqs },
        )
      }
      d.set({ stepOutcome: 'aborted' })
    }),
    /** RQ-9: the failure finish goes to recovery with its facts. */
    recordRequestFailure: actionOn(['model.settled'], (d, e) => {
      const finish = e.response.finish as Extract<typeof e.response.finish, { failure: unknown }>
      d.setRequest({ failure: { failure: finish.failure, step: d.get('step') } })
    }),
    /** RQ-9: agent/request-error decides about the failure, when anyone listens (the retry policy counts) or watches. */
    askRequestError: action((d) => {
      const asked = asks(d.context, 'agent/request-error')
      d.setRequest({ recoveryAsked: asked })
      if (!asked) return
      const { failure, config, attempt } = d.get('request')
      const payload = { turn: d.get('turn'), step: d.get('step'), ...(config ? { provider: config.provider } : {}), failure: failure!.failure, attempt }
      d.hook('agent/request-error', payload, { abandonOnCancel: true })
    }),
    /** RQ-14: log the retry and its delay, then wait out the backoff (a timer the runtime runs; a cancel ends it at once). */
    announceRetry: actionOn(['hook.done'], (d, e) => {
      const { failure, config, attempt } = d.get('request')
      const delayMs = (e.value as { delayMs: number }).delayMs
      const retryId = `${d.get('instance').id}-r${d.id()}`
      const turn = d.get('turn')
      const step = d.get('step')
      d.append('llm/retry', { turn, step, retryId, provider: config!.provider, retry: attempt, delayMs, failure: failure!.failure })
      d.setRequest({ retry: { retryId, retry: attempt } })
      d.emit({ type: 'fx.wait', id: d.await(), ms: delayMs, abandonOnCancel: true })
    }),
    /** RQ-14: the backoff is over: the retry starts (a new attempt follows). */
    startRetry: action((d) => {
      const { retry } = d.get('request')
      d.append('llm/retry-started', { turn: d.get('turn'), step: d.get('step'), retryId: retry!.retryId, retry: retry!.retry })
      d.setRequest({ retry: null })
    }),
    /** RQ-9: recovery gave up: the failure ends the turn `error`, verbatim. */
    giveUpRequest: action((d) => endAttempt(d, 'error', d.get('request').failure!)),
    /** A listener or the stream outside the adapter failed: the turn ends `error` without recovery (RQ-7, RQ-13, HK-5). */
    failAttempt: actionOn(['hook.failed', 'model.failed'], (d, e) => endAttempt(d, 'error', e)),
    /** CP-7: the overflow's compaction could not measure the request: the attempt ends with that failure. */
    failOverflowCompaction: action((d) => endAttempt(d, 'error', { failure: d.get('compaction').failure! })),
    abortAttempt: action((d) => endAttempt(d, 'aborted')),
  },
  guards: {
    lacksRoute: guardOn(['request.prepared'], (_context, e) => !e.config.provider || !e.config.model),
    /** ST-10: the anchor asks for tools (a max-tokens finish runs none). */
    asksForTools: guardOn(
      ['model.settled'],
      (_context, e) => e.response.finish.kind !== 'max-tokens' && e.response.content.some((b) => b.type === 'tool-call'),
    ),
    /** The stream was cut by the turn's cancellation (RQ-8). */
    isCancelledStream: guardOn(['model.settled'], (_context, e) => e.cancelled),
    /** Only a terminal error or aborted finish is a request failure (RQ-7). */
    isFailedFinish: guardOn(['model.settled'], (_context, e) => e.response.finish.kind === 'error' || e.response.finish.kind === 'aborted'),
    asksRequestError: guard((context) => context.request.recoveryAsked),
    isRetry: guardOn(['hook.done'], (_context, e) => (e.value as { kind?: unknown } | undefined)?.kind === 'retry'),
    /** A retry that names its delay waits in `backoff` first (a plain retry starts at once). */
    hasRetryDelay: guardOn(['hook.done'], (_context, e) => typeof (e.value as { delayMs?: unknown } | undefined)?.delayMs === 'number'),
  },
})

export type AttemptImplementations = typeof attemptImplementations & CompactionImplementations
export const attemptSetup = compactionSetup.extend(attemptImplementations)

/**
 * The attempt's states, leaving for `exit`: `tools` when the anchor asks for tools, `closed` for every other end (inside
 * a step, the step's own states, so no done event stands between; on its own, its final `done`).
 */
function attemptConfig(exit: { tools: string; closed: string }) {
  const done = exit.closed // every end but an anchor that asks for tools
  return labelGuards(
    attached<AttemptImplementations>()(
      attemptSetup.createStateConfig({
        initial: 'building',
        states: {
          building: {
            entry: 'buildRequest',
            on: {
              // a cancel wins over the pending agent/request; its late answer is dropped by its id
              'agent.cancel': { target: done, actions: ['cancelActivity', 'abortAttempt'] },
              ...awaiting({
                'request.prepared': [
                  { guard: 'lacksRoute', target: done, actions: 'failWithoutRoute' },
                  { target: 'streaming', actions: 'dispatchRequest' },
                ],
                'hook.failed': { target: done, actions: 'failAttempt' },
              }),
            },
          },
          streaming: {
            on: awaiting({
              'model.settled': [
                { guard: or(['isCancelled', 'isCancelledStream']), target: done, actions: 'keepInterruptedPrefix' },
                // CP-6: a request refused for its size: compact, then a new attempt in the same step
                { guard: and(['isFailedFinish', 'canCompactOnOverflow']), target: 'compacting', actions: ['recordRequestFailure', 'beginOverflowCompaction'] },
                { guard: 'isFailedFinish', target: 'recovering', actions: 'recordRequestFailure' },
                { guard: 'asksForTools', target: exit.tools, actions: 'appendAnchor' },
                { target: done, actions: 'appendAnchor' },
              ],
              'model.failed': { target: done, actions: 'failAttempt' },
            }),
          },
          compacting: {
            ...compactionState,
            onDone: [
              { guard: 'isCancelled', target: done, actions: 'abortAttempt' },
              { guard: 'hasFailedMeasure', target: done, actions: 'failOverflowCompaction' },
              { guard: 'hasCompacted', target: 'building' },
              // nothing to compact, or the summariser failed: request recovery decides as for any failure
              { target: 'recovering' },
            ],
          },
          recovering: {
            entry: 'askRequestError',
            // RQ-9: nobody decides or watches: the failure is terminal at once
            always: { guard: not('asksRequestError'), target: done, actions: 'giveUpRequest' },
            on: {
              // RQ-12 / CX-8: cancellation beats retry, and no interrupted prefix is written
              'agent.cancel': { target: done, actions: ['cancelActivity', 'abortAttempt'] },
              ...awaiting({
                'hook.done': [
                  // RQ-14: a retry with a delay logs llm/retry and waits out its backoff first
                  { guard: and(['isRetry', 'hasRetryDelay']), target: 'backoff', actions: 'announceRetry' },
                  // RQ-10: a retry is a new attempt in the same step
                  { guard: 'isRetry', target: 'building' },
                  { target: done, actions: 'giveUpRequest' },
                ],
                'hook.failed': { target: done, actions: 'failAttempt' },
              }),
            },
          },
          backoff: {
            on: {
              // RQ-12: a cancel ends the backoff at once; no further attempt
              'agent.cancel': { target: done, actions: ['cancelActivity', 'abortAttempt'] },
              ...awaiting({ 'backoff.elapsed': { target: 'building', actions: 'startRetry' } }),
            },
          },
        },
      }),
    ),
  )
}

/** The attempt inside a step: it ends in the step's tool batch or its close. */
export const attemptState = attemptConfig({ tools: '#toolBatch', closed: '#stepClosed' })
const standaloneConfig = attemptConfig({ tools: 'done', closed: 'done' })
/** On its own the attempt ends in a final of its own. */
const standaloneAttemptState = { ...standaloneConfig, states: { ...standaloneConfig.states, done: { type: 'final' as const } } }

/** The attempt on its own: one request of an already open step (for graph walks and diagrams). */
export const attemptMachine = attemptSetup.createMachine({
  id: 'attempt',
  context: ({ input }) => ({ ...initialContext(input), turn: 1, step: 1 }),
  ...standaloneAttemptState,
  // no latch for a waking send at its root: a cancelled attempt finishes at once, so no send can find it cancelled
  on: { ...activityOn, 'inbox.send': inboxOn['inbox.send'] },
})

// compaction: measure the request against the policy (the runtime reads the
// log), and if a range should go, ask the summariser for a summary and log it
// as a user/message replacing that range, then `compaction/completed` (or
// `compaction/failed`). One region, entered at three places: the turn's
// pre-step checkpoint (`auto`), the attempt after CONTEXT_WINDOW_EXCEEDED
// (`overflow`), and the agent's idle phase for agent.compact() (`manual`).
import { and, not } from 'xstate'
import { awaiting } from './activity.js'
import { SUMMARY_SOURCE, summaryText } from '../session/vocabulary.js'
import { attached } from './attachment.js'
import { action, actionOn, guard, guardOn, labelGuards, named, type Draft } from './setup.js'
import { toolBatchSetup, type ToolBatchImplementations } from './tool-batch.js'
import type { CompactionContext, CompactionReason } from './types.js'

function begin(d: Draft, reason: CompactionReason, patch: Partial<CompactionContext> = {}): void {
  d.set({ compaction: { ...d.get('compaction'), reason, plan: null, compacted: false, failure: null, ...patch } })
}

const compactionImplementations = named({
  actions: {
    /** CP-1: the policy is checked at the pre-step checkpoint, over the history plus the input the step will enter. */
    beginAutoCompaction: action((d) => begin(d, 'auto')),
    /** CP-4: agent.compact() from idle. */
    beginManualCompaction: action((d) => {
      begin(d, 'manual')
      d.setActivity({ cancelCause: null })
      d.emit({ type: 'fx.signal' })
    }),
    /** CP-6: a request refused for its size is met with one compaction per step. */
    beginOverflowCompaction: action((d) => begin(d, 'overflow', { overflowAt: { turn: d.get('turn'), step: d.get('step') } })),
    /** Ask the runtime what the next request would weigh and which range would go. */
    measureHistory: action((d) => {
      const reason = d.get('compaction').reason ?? 'manual'
      const entering = reason === 'auto' ? d.get('proposal').entering : []
      d.emit({ type: 'fx.measure', id: d.await(), reason, entering })
    }),
    acceptPlan: actionOn(['compaction.measured'], (d, e) => d.set({ compaction: { ...d.get('compaction'), plan: e.plan } })),
    /** CP-7: the token estimate threw or answered no count: nothing is measured, and the host ends with the failure. */
    failMeasure: actionOn(['compaction.failed'], (d, e) => d.set({ compaction: { ...d.get('compaction'), failure: e.failure } })),
    /** CP-2: the summariser gets the planned range (the model with the request's config, or the user's function). */
    askSummary: action((d) => {
      const { reason, plan } = d.get('compaction')
      d.emit({ type: 'fx.summarise', id: d.await(), reason: reason ?? 'manual', plan: plan!, config: d.get('request').seedConfig, abandonOnCancel: true })
    }),
    /** CP-2: the summary replaces the range on the surface, citing every node it shadows, then the record. */
    appendSummary: actionOn(['compaction.summarised'], (d, e) => {
      const compaction = d.get('compaction')
      const plan = compaction.plan!
      const instance = d.get('instance').id
      const message = {
        id: `${instance}-m${d.id()}`,
        role: 'user' as const,
        content: [{ type: 'text' as const, text: summaryText(e.summary) }],
        source: SUMMARY_SOURCE,
      }
      d.append('user/message', message, { surfaceOp: { op: 'replace', start: plan.start, end: plan.end }, sourceEventSeqs: plan.sources })
      d.append('compaction/completed', {
        compactionId: `${instance}-c${d.id()}`,
        reason: compaction.reason ?? 'manual',
        messageId: message.id,
        start: plan.start,
        end: plan.end,
        tokensBefore: plan.tokensBefore,
        tokensAfter: e.tokensAfter,
        contextWindow: plan.contextWindow,
        ...(e.usage ? { usage: e.usage } : {}),
      })
      d.set({ compaction: { ...compaction, plan: null, compacted: true } })
    }),
    /** CP-3: a failed summariser replaces nothing; the failure is logged and the loop goes on without it. */
    appendCompactionFailure: actionOn(['compaction.failed'], (d, e) => {
      const compaction = d.get('compaction')
      const plan = compaction.plan!
      d.append('compaction/failed', {
        compactionId: `${d.get('instance').id}-c${d.id()}`,
        reason: compaction.reason ?? 'manual',
        start: plan.start,
        end: plan.end,
        failure: e.failure,
      })
      d.set({ compaction: { ...compaction, plan: null } })
    }),
    /** The summary (or the failure) is in the log before anything after it is appended: a refusal then names it. */
    confirmCompaction: action((d) => d.confirm()),
  },
  guards: {
    hasCompactionPlan: guardOn(['compaction.measured'], (_context, e) => e.plan !== null),
    /** CP-1: the policy runs before every step. */
    isAutoCompaction: guard((context) => context.instance.compaction === 'auto'),
    /** CP-6: CONTEXT_WINDOW_EXCEEDED, compaction on, and not yet tried in this step. */
    canCompactOnOverflow: guardOn(['model.settled'], (context, e) => {
      const finish = e.response.finish
      if (context.instance.compaction === 'off' || (finish.kind !== 'error' && finish.kind !== 'aborted')) return false
      const at = context.compaction.overflowAt
      return finish.failure.code === 'CONTEXT_WINDOW_EXCEEDED' && (at === null || at.turn !== context.turn || at.step !== context.step)
    }),
    /** The compaction that just ended replaced a range. */
    hasCompacted: guard((context) => context.compaction.compacted),
    /** The compaction that just ended could not measure the request (CP-7). */
    hasFailedMeasure: guard((context) => context.compaction.failure !== null),
  },
})

export type CompactionImplementations = typeof compactionImplementations & ToolBatchImplementations
export const compactionSetup = toolBatchSetup.extend(compactionImplementations)

/** The region each host enters after setting the reason; its final `done` hands back to the host's onDone. */
export const compactionState = labelGuards(
  attached<CompactionImplementations>()(
    compactionSetup.createStateConfig({
      initial: 'measuring',
      states: {
        measuring: {
          entry: 'measureHistory',
          // answered at once (a pure reading of the log), so no cancel can come first; one that did is heard here
          on: awaiting({
            'compaction.measured': [
              { guard: and(['hasCompactionPlan', not('isCancelled')]), target: 'summarising', actions: 'acceptPlan' },
              // under the threshold, or nothing left to compact: the host goes on as if nothing happened
              { target: 'done' },
            ],
            'compaction.failed': { target: 'done', actions: 'failMeasure' },
          }),
        },
        summarising: {
          entry: 'askSummary',
          on: {
            ...awaiting({
              'compaction.summarised': { target: 'committing', actions: 'appendSummary' },
              'compaction.failed': { target: 'committing', actions: 'appendCompactionFailure' },
            }),
            // CP-5: a cancel ends the wait; nothing is replaced or logged
            'agent.cancel': { target: 'done', actions: 'cancelActivity' },
          },
        },
        committing: {
          entry: 'confirmCompaction',
          on: awaiting({ 'appends.confirmed': { target: 'done' } }),
        },
        done: { type: 'final' },
      },
    }),
  ),
)

// The walk's compact vocabulary: the environment's inputs as @xstate/graph
// tries them (user actions, canned model responses, hook decisions, tool
// outcomes, store failures). Exported scenarios spell each one out in the
// portable format (conformance/format.ts) through model/script.ts.
import { z } from 'zod/v4'
import { MINUS_ZERO, notMinusZero } from '../../session/lossless.js'

const id = z.string().min(1)

/** Streams that test the assembly rules (docs/conformance.md 7.4), spelled out by harness.ts's responseChunks. */
export const MALFORMED = [
  'closed-twice',
  'after-close',
  'no-finish',
  'calls-finish-empty',
  'stop-with-calls',
  'usage-twice',
  'out-of-order',
  'end-differs',
] as const

/** One input from the environment, in the order it happens, by name only (model/script.ts gives its explicit form). */
export const WalkInputSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('send'), id, target: z.enum(['next-turn', 'next-step']), wakeup: z.boolean() }).strict(),
  /** A cancel by the user, or with another cause (`parent`, or `hook` with a reason): turn/end{aborted} names it (CX-1). */
  z.object({ type: z.literal('cancel'), keepInbox: z.boolean(), cause: z.enum(['user', 'parent', 'hook']).optional() }).strict(),
  z.object({ type: z.literal('remove'), id }).strict(),
  z.object({ type: z.literal('replace'), id, with: id }).strict(),
  z.object({ type: z.literal('clear') }).strict(),
  z
    .object({
      type: z.literal('splice'),
      target: z.enum(['next-turn', 'next-step']),
      start: z.number().int().refine(notMinusZero, MINUS_ZERO),
      deleteCount: z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO),
      insert: z.array(id),
    })
    .strict(),
  z.object({ type: z.literal('dispose') }).strict(),
  /** A listener cancels (without keepInbox) when this happens next: a status change to running, a logged event type, or a tools/result. */
  z
    .object({
      type: z.literal('cancel-on'),
      trigger: z.enum(['agent/status', 'turn/start', 'step/start', 'request/header', 'assistant/message', 'tools/result']),
    })
    .strict(),
  z.object({ type: z.literal('maintenance') }).strict(),
  z.object({ type: z.literal('job-done') }).strict(),
  /** The next append of this event type fails (a store failure). */
  z.object({ type: z.literal('fail-next'), eventType: z.string() }).strict(),
  z.object({ type: z.literal('pre-step'), decision: z.enum(['default', 'reject', 'empty', 'throw']) }).strict(),
  z.object({ type: z.literal('request'), decision: z.enum(['default', 'no-route', 'throw']) }).strict(),
  z
    .object({
      type: z.literal('model'),
      response: z.enum([
        'text',
        'empty',
        'tools',
        'tools-mixed',
        'tools-parallel',
        'max-tokens',
        'max-tokens-tools',
        'error',
        'partial',
        'partial-reasoning',
        'partial-blank',
        'partial-mixed',
        'overflow',
        ...MALFORMED,
      ]),
    })
    .strict(),
  /** agent.compact() from idle. */
  z.object({ type: z.literal('compact') }).strict(),
  /** The compaction summariser answers with a summary, or fails. */
  z.object({ type: z.literal('summary'), outcome: z.enum(['ok', 'fail', 'blank']) }).strict(),
  /** `retry` at once, `retry-later` after a backoff (RQ-14), `give-up`, or a throwing listener. */
  z.object({ type: z.literal('request-error'), decision: z.enum(['retry', 'retry-later', 'give-up', 'throw']) }).strict(),
  /** The backoff of the waiting retry is over (its timer fires). */
  z.object({ type: z.literal('backoff-elapsed') }).strict(),
  z.object({ type: z.literal('turn-stopping'), decision: z.enum(['none', 'steer', 'throw']) }).strict(),
  z.object({ type: z.literal('tool-pre'), callId: id, decision: z.enum(['allow', 'deny', 'throw', 'ask']) }).strict(),
  /** A person answers the approval the call waits for (TL-18). */
  z.object({ type: z.literal('approval'), callId: id, decision: z.enum(['approve', 'deny']) }).strict(),
  z.object({ type: z.literal('tool'), callId: id, outcome: z.enum(['ok', 'error', 'concludes', 'context']) }).strict(),
  z.object({ type: z.literal('tool-post'), callId: id, decision: z.enum(['accept', 'replace', 'block', 'throw']) }).strict(),
  /** Someone starts or stops watching the session (a listener is added or removed): the runtime tells the machine (walks with facts only). */
  z.object({ type: z.literal('watch'), observed: z.boolean() }).strict(),
])
export type WalkInput = z.infer<typeof WalkInputSchema>

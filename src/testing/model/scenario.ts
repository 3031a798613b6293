// The language-neutral vocabulary of a scenario: the environment's inputs in
// order (user actions, model responses, hook decisions, tool outcomes, store
// failures) and the session trace they must produce.
import { z } from 'zod'

const id = z.string().min(1)

/** One input from the environment, in the order it happens. */
export const ScenarioInputSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('send'), id, target: z.enum(['next-turn', 'next-step']), wakeup: z.boolean() }).strict(),
  z.object({ type: z.literal('cancel'), keepInbox: z.boolean() }).strict(),
  z.object({ type: z.literal('remove'), id }).strict(),
  z.object({ type: z.literal('replace'), id, with: id }).strict(),
  z.object({ type: z.literal('clear') }).strict(),
  z
    .object({
      type: z.literal('splice'),
      target: z.enum(['next-turn', 'next-step']),
      start: z.number().int(),
      deleteCount: z.number().int().nonnegative(),
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
      response: z.enum(['text', 'empty', 'tools', 'tools-mixed', 'max-tokens', 'max-tokens-tools', 'error', 'partial']),
    })
    .strict(),
  z.object({ type: z.literal('request-error'), decision: z.enum(['retry', 'give-up', 'throw']) }).strict(),
  z.object({ type: z.literal('turn-stopping'), decision: z.enum(['none', 'steer', 'throw']) }).strict(),
  z.object({ type: z.literal('tool-pre'), callId: id, decision: z.enum(['allow', 'deny', 'throw']) }).strict(),
  z.object({ type: z.literal('tool'), callId: id, outcome: z.enum(['ok', 'error', 'concludes', 'context']) }).strict(),
  z.object({ type: z.literal('tool-post'), callId: id, decision: z.enum(['accept', 'replace', 'block', 'throw']) }).strict(),
])
export type ScenarioInput = z.infer<typeof ScenarioInputSchema>

/** The identifying fields of one expected session event (times and generated ids aside). */
export const TraceEntrySchema = z.object({ type: z.string(), fields: z.record(z.string(), z.unknown()) }).strict()
export type TraceEntry = z.infer<typeof TraceEntrySchema>

export const ScenarioSchema = z
  .object({
    id: z.string(),
    machine: z.enum(['agent', 'turn', 'step', 'attempt', 'toolBatch']),
    description: z.string(),
    /** A stored log the agent is created over (resume; a log cut inside a turn is repaired first, RS-4). */
    seed: z.array(z.object({ type: z.string(), data: z.unknown() }).loose()).optional(),
    inputs: z.array(ScenarioInputSchema),
    expected: z.array(TraceEntrySchema),
    invariants: z.array(z.string()),
  })
  .strict()
export type Scenario = z.infer<typeof ScenarioSchema>

export const SuiteSchema = z
  .object({
    format: z.literal('agentchart-conformance/1'),
    generatedBy: z.string(),
    scenarios: z.array(ScenarioSchema),
  })
  .strict()
export type Suite = z.infer<typeof SuiteSchema>

/** The identifying fields of an event: what two implementations must agree on. */
export function identify(event: { type: string; data: unknown; surfaceOp?: unknown }): TraceEntry {
  const d = (event.data ?? {}) as Record<string, any>
  const pick = (...keys: string[]) => Object.fromEntries(keys.filter((k) => d[k] !== undefined).map((k) => [k, d[k]]))
  switch (event.type) {
    case 'turn/start':
      return { type: event.type, fields: pick('turn') }
    case 'turn/end':
      return { type: event.type, fields: { turn: d.turn, reason: d.reason?.kind, ...(d.reason?.kind === 'error' ? { code: d.reason.error.code } : {}) } }
    case 'step/start':
    case 'step/end':
      return { type: event.type, fields: pick('turn', 'step') }
    case 'user/message':
      return { type: event.type, fields: { id: d.id } }
    case 'assistant/chunk':
      return { type: event.type, fields: { turn: d.turn, step: d.step, chunk: d.chunk?.type } }
    case 'assistant/message':
      return {
        type: event.type,
        fields: { turn: d.turn, step: d.step, interrupted: d.interrupted === true, blocks: (d.message?.content ?? []).map((b: { type: string }) => b.type) },
      }
    case 'tool/call':
      return { type: event.type, fields: pick('turn', 'step', 'callId', 'name') }
    case 'tool/result':
      return {
        type: event.type,
        fields: {
          turn: d.turn,
          step: d.step,
          callId: d.message?.source?.callId,
          isError: d.message?.content?.[0]?.isError === true,
          code: d.error?.code ?? null,
        },
      }
    case 'request/header':
      return { type: event.type, fields: { reason: d.reason } }
    case 'agent/inbox/spliced':
      return {
        type: event.type,
        fields: {
          target: d.target,
          start: d.start,
          removed: d.removedCount ?? 0,
          inserted: (d.inserted ?? []).map((m: { id: string }) => m.id),
          canceled: d.outcome === 'canceled',
        },
      }
    default:
      return { type: event.type, fields: {} }
  }
}

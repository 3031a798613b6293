// The portable conformance format, version 7: one scenario file says
// everything a driver needs (the agent's setup, every input with its exact
// payload, the whole expected log). docs/conformance.md is its normative
// text; this zod schema is the source of the JSON Schema shipped beside it.
import { z } from 'zod/v4'
import { MINUS_ZERO, notMinusZero } from '../../session/lossless.js'
import { AgentCancelCauseSchema, StreamChunkSchema, UserMessageSchema } from '../../session/schemas.js'
import type { AgentCancelCause, InboxTarget, StreamChunk, UserMessage } from '../../session/schemas.js'

// ---- types (written out: they are the format's documentation in code) -----------------

/** How a listener answers: `next` returns what the rest of the chain gives, `return` a value, `throw` throws `Error(message)`. */
export type ListenerAction<V> = { action: 'next' } | { action: 'return'; value: V } | { action: 'throw'; message: string }
export type PreStepValue = { kind: 'reject' } | { kind: 'enter'; messages: UserMessage[] }
export type PreExecuteValue = { kind: 'allow' } | { kind: 'deny'; reason: string } | { kind: 'ask'; reason: string }
export type PostExecuteValue = { kind: 'accept'; content?: string } | { kind: 'block'; feedback: string }
/** What a scripted tool body returns (a failing body throws instead). */
export interface ToolReturn {
  content: string
  concludesTurn?: true
  additionalContexts?: UserMessage[]
}
export type CancelTrigger = 'agent/status' | 'turn/start' | 'step/start' | 'request/header' | 'assistant/message' | 'tools/result'

/** One input of a scenario, in the order the environment performs it (docs/conformance.md, "Inputs"). */
export type ScenarioInput =
  | { type: 'send'; message: UserMessage; target: InboxTarget; wakeup: boolean }
  | { type: 'cancel'; cause: AgentCancelCause; keepInbox: boolean }
  | { type: 'remove'; id: string }
  | { type: 'replace'; id: string; message: UserMessage }
  | { type: 'clear' }
  | { type: 'splice'; target: InboxTarget; start: number; deleteCount: number; insert: UserMessage[] }
  | { type: 'maintenance' }
  | { type: 'job-done' }
  | { type: 'dispose' }
  /** The backoff of the retry that waits is over (its timer fires, RQ-14). */
  | { type: 'backoff-elapsed' }
  | { type: 'cancel-on'; trigger: CancelTrigger; cause: AgentCancelCause; keepInbox: boolean }
  | FailAppend
  | ({ type: 'pre-step' } & ListenerAction<PreStepValue>)
  | ({ type: 'request' } & ListenerAction<{ provider: string; model: string }>)
  | ({ type: 'request-error' } & ListenerAction<{ kind: 'retry'; delayMs?: number }>)
  | ({ type: 'turn-stopping' } & ({ action: 'return'; steer?: UserMessage } | { action: 'throw'; message: string }))
  | ({ type: 'tool-pre'; callId: string } & ListenerAction<PreExecuteValue>)
  | ({ type: 'tool-post'; callId: string } & ListenerAction<PostExecuteValue>)
  /** A person answers the approval the call `callId` waits for (format 4, TL-18). */
  | { type: 'approval'; callId: string; decision: 'approve' }
  | { type: 'approval'; callId: string; decision: 'deny'; reason: string }
  /** `agent.compact()`: compact the history now, from idle (format 7, CP-4). */
  | { type: 'compact' }
  /** The summariser of the waiting compaction returns `value` (the summary text) or throws `Error(message)` (format 7, CP-2, CP-3). */
  | ({ type: 'summary' } & ({ action: 'return'; value: string } | { action: 'throw'; message: string }))
  | { type: 'model'; chunks: StreamChunk[]; end: boolean }
  | Fork
  /** The process restarts (format 5): a new instance over the stored log of the session driven now (RS-1, IN-14). */
  | { type: 'resume' }
  | ({ type: 'tool'; callId: string; afterAbort: boolean } & ({ action: 'return'; value: ToolReturn } | { action: 'throw'; message: string }))
export type ScenarioInputType = ScenarioInput['type']

/** Why a fork is refused (SS-14); `FORK_DETACHED` needs a halted session, which no scenario has. */
export type ForkRefusal = 'FORK_UNKNOWN_SEQ' | 'FORK_INSIDE_TURN' | 'FORK_ID_TAKEN'

/**
 * Fork the session driven now at the inclusive boundary `upTo`, as session `id` (format 5, SS-14). Accepted, the
 * driver drives the fork from then on; with `refused`, the fork must fail with that code and change nothing.
 */
export interface Fork {
  type: 'fork'
  upTo: number
  id: string
  refused?: ForkRefusal
}

/** A store failure: the next append of `eventType` is refused with `Error(message)`. */
export interface FailAppend {
  type: 'fail-append'
  eventType: string
  message: string
}

/** A tool the agent is created with. */
export interface ScenarioTool {
  name: string
  description: string
  inputSchema: Record<string, unknown>
  executionMode: 'parallel' | 'exclusive'
}

/** A stored event the session is created over. */
export interface SeedEvent {
  seq: number
  time: number
  type: string
  data: unknown
  surfaceOp?: unknown
  sourceEventSeqs?: number[]
}

/** How the driver creates the agent (docs/conformance.md, "Setup"). */
export interface ScenarioSetup {
  model: { provider: string; model: string }
  tools: ScenarioTool[]
  maxParallelToolCalls: number
  seed?: SeedEvent[]
  faults?: FailAppend[]
  /** Format 4: `ask` answers of tools/pre-execute wait for an `approval` input (an approver is configured). */
  approvals?: boolean
  /** Format 5: the session's id (a fork's marker names its parent by it); absent, the driver chooses one. */
  sessionId?: string
  /** Format 6: the most steps one turn may run (TU-16); absent, no limit applies. */
  maxSteps?: number
  /** Format 7: compaction is on with this policy, and the summariser waits for `summary` inputs (docs/conformance.md 7.10). */
  compaction?: CompactionSetup
}

/** The compaction policy of a scenario (format 7): the numbers the normative estimate of 7.10 is compared with. */
export interface CompactionSetup {
  /** Tokens the model accepts per request. */
  contextWindow: number
  /** Fraction of the window past which the policy compacts before a step. */
  threshold: number
  /** Fraction of the window kept verbatim as the recent tail. */
  keepRecent: number
  /** Whether the policy is checked before every step (false: only `compact` and CONTEXT_WINDOW_EXCEEDED recovery). */
  auto: boolean
  /** Tokens the request's fixed part (system prompt and tool declarations) counts. */
  baseTokens: number
}

/** One event of the expected log: compared in full but `time` and the JSON Pointers in `free`. */
export interface ExpectedEvent {
  seq: number
  type: string
  data: unknown
  surfaceOp?: unknown
  sourceEventSeqs?: number[]
  free?: string[]
}

export interface Scenario {
  formatVersion: typeof FORMAT_VERSION
  id: string
  description: string
  setup: ScenarioSetup
  inputs: ScenarioInput[]
  expected: ExpectedEvent[]
  invariants: string[]
}

export interface Suite {
  format: typeof SUITE_FORMAT
  generatedBy: string
  scenarios: Scenario[]
}

// ---- schemas ---------------------------------------------------------------------------

/** The version of the file format this module reads and writes; see the changelog in docs/conformance.md. */
export const FORMAT_VERSION = 7
/** The manifest's format tag. */
export const SUITE_FORMAT = 'agentchart-conformance/7' as const

const id = z.string().min(1)
const message = z.string().min(1)
const target = z.enum(['next-turn', 'next-step'])
const callId = id

/** A listener that throws `Error(message)`. */
const Throw = { action: z.literal('throw'), message }
/** A waterfall listener that returns what `next()` gives (the default decision). */
const Next = { action: z.literal('next') }
/** A listener that returns `value`. */
const Return = <T extends z.ZodType>(value: T) => ({ action: z.literal('return'), value })

/** The tool-body result a scenario scripts (never `isError`: a failing body throws). */
export const ToolReturnSchema = z
  .object({
    content: z.string(),
    concludesTurn: z.literal(true).optional(),
    additionalContexts: z.array(UserMessageSchema).min(1).optional(),
  })
  .strict()

/** An extension-point input: one strict object per way the listener may answer. */
function hook(type: string, shape: z.ZodRawShape, ...decisions: z.ZodRawShape[]) {
  return decisions.map((decision) => z.object({ type: z.literal(type), ...shape, ...decision }).strict())
}

/**
 * One input of a scenario, in the order the environment performs it.
 * Hook inputs answer the listener call of that extension point that is waiting now (for tools: the one for `callId`).
 */
export const ScenarioInputSchema = z.union([
  // ---- the user, through the public API -------------------------------------------------
  z.object({ type: z.literal('send'), message: UserMessageSchema, target, wakeup: z.boolean() }).strict(),
  z.object({ type: z.literal('cancel'), cause: AgentCancelCauseSchema, keepInbox: z.boolean() }).strict(),
  z.object({ type: z.literal('remove'), id }).strict(),
  z.object({ type: z.literal('replace'), id, message: UserMessageSchema }).strict(),
  z.object({ type: z.literal('clear') }).strict(),
  z
    .object({
      type: z.literal('splice'),
      target,
      start: z.number().int().refine(notMinusZero, MINUS_ZERO),
      deleteCount: z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO),
      insert: z.array(UserMessageSchema),
    })
    .strict(),
  z.object({ type: z.literal('maintenance') }).strict(),
  z.object({ type: z.literal('job-done') }).strict(),
  z.object({ type: z.literal('dispose') }).strict(),
  // ---- the clock --------------------------------------------------------------------------
  z.object({ type: z.literal('backoff-elapsed') }).strict(),
  // ---- a listener that cancels when something happens next ------------------------------
  z
    .object({
      type: z.literal('cancel-on'),
      trigger: z.enum(['agent/status', 'turn/start', 'step/start', 'request/header', 'assistant/message', 'tools/result']),
      cause: AgentCancelCauseSchema,
      keepInbox: z.boolean(),
    })
    .strict(),
  // ---- the store ------------------------------------------------------------------------
  z.object({ type: z.literal('fail-append'), eventType: id, message }).strict(),
  // ---- extension points -------------------------------------------------------------------
  ...hook(
    'pre-step',
    {},
    Next,
    Return(z.union([z.object({ kind: z.literal('reject') }).strict(), z.object({ kind: z.literal('enter'), messages: z.array(UserMessageSchema) }).strict()])),
    Throw,
  ),
  ...hook('request', {}, Next, Return(z.object({ provider: z.string(), model: z.string() }).strict()), Throw),
  ...hook(
    'request-error',
    {},
    Next,
    Return(z.object({ kind: z.literal('retry'), delayMs: z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO).optional() }).strict()),
    Throw,
  ),
  ...hook('turn-stopping', {}, { action: z.literal('return'), steer: UserMessageSchema.optional() }, Throw),
  ...hook(
    'tool-pre',
    { callId },
    Next,
    Return(
      z.union([
        z.object({ kind: z.literal('allow') }).strict(),
        z.object({ kind: z.literal('deny'), reason: z.string() }).strict(),
        z.object({ kind: z.literal('ask'), reason: z.string() }).strict(),
      ]),
    ),
    Throw,
  ),
  // ---- a person answering an approval (TL-18) ----------------------------------------------
  z.object({ type: z.literal('approval'), callId, decision: z.literal('approve') }).strict(),
  z.object({ type: z.literal('approval'), callId, decision: z.literal('deny'), reason: z.string() }).strict(),
  // ---- compaction (format 7, CP-*) ----------------------------------------------------------
  z.object({ type: z.literal('compact') }).strict(),
  ...hook('summary', {}, Return(z.string().min(1)), Throw),
  ...hook(
    'tool-post',
    { callId },
    Next,
    Return(
      z.union([
        z.object({ kind: z.literal('accept'), content: z.string().optional() }).strict(),
        z.object({ kind: z.literal('block'), feedback: z.string() }).strict(),
      ]),
    ),
    Throw,
  ),
  // ---- the model and the tool bodies ------------------------------------------------------
  z.object({ type: z.literal('model'), chunks: z.array(StreamChunkSchema), end: z.boolean() }).strict(),
  // ---- sessions: forks and restarts (format 5) ---------------------------------------------
  z
    .object({
      type: z.literal('fork'),
      upTo: z.number().int().refine(notMinusZero, MINUS_ZERO),
      id,
      refused: z.enum(['FORK_UNKNOWN_SEQ', 'FORK_INSIDE_TURN', 'FORK_ID_TAKEN']).optional(),
    })
    .strict(),
  z.object({ type: z.literal('resume') }).strict(),
  ...hook('tool', { callId, afterAbort: z.boolean() }, Return(ToolReturnSchema), Throw),
]) as unknown as z.ZodType<ScenarioInput> // the hand-written type above is the readable one

/** A tool the agent is created with: the request header carries name, description and inputSchema verbatim. */
export const ScenarioToolSchema: z.ZodType<ScenarioTool> = z
  .object({
    name: id,
    description: z.string(),
    inputSchema: z.record(z.string(), z.unknown()),
    executionMode: z.enum(['parallel', 'exclusive']),
  })
  .strict()

/** A stored event the agent is created over (resume). */
export const SeedEventSchema: z.ZodType<SeedEvent> = z
  .object({
    seq: z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO),
    time: z.number().refine(notMinusZero, MINUS_ZERO),
    type: id,
    data: z.unknown(),
    surfaceOp: z.unknown().optional(),
    sourceEventSeqs: z.array(z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO)).optional(),
  })
  .strict()

/** The compaction policy a scenario sets up (format 7). */
export const CompactionSetupSchema: z.ZodType<CompactionSetup> = z
  .object({
    contextWindow: z.number().int().positive(),
    threshold: z.number().positive().max(1),
    keepRecent: z.number().nonnegative().max(1).refine(notMinusZero, MINUS_ZERO),
    auto: z.boolean(),
    baseTokens: z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO),
  })
  .strict()

/** How the driver creates the agent. */
export const ScenarioSetupSchema: z.ZodType<ScenarioSetup> = z
  .object({
    /** The model adapter's identity; the first request's config is exactly this. */
    model: z.object({ provider: id, model: id }).strict(),
    tools: z.array(ScenarioToolSchema),
    maxParallelToolCalls: z.number().int().positive(),
    /** Events the session is created over, before the agent exists. */
    seed: z.array(SeedEventSchema).optional(),
    /** Store failures armed on the session before the agent is created (e.g. to refuse a repair closer). */
    faults: z.array(z.object({ type: z.literal('fail-append'), eventType: id, message }).strict()).optional(),
    /** An approver is configured: a tools/pre-execute `ask` waits for an `approval` input (absent: `ask` is a deny). */
    approvals: z.boolean().optional(),
    /** The session's id: the `parent` a fork's marker names (format 5). */
    sessionId: id.optional(),
    /** The most steps one turn may run (format 6, TU-16). */
    maxSteps: z.number().int().positive().optional(),
    /** Compaction on with this policy; the summariser waits for `summary` inputs (absent: compaction is off). */
    compaction: CompactionSetupSchema.optional(),
  })
  .strict()

/** One event of the expected log: compared in full, except `time` and the JSON Pointers listed in `free`. */
export const ExpectedEventSchema: z.ZodType<ExpectedEvent> = z
  .object({
    seq: z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO),
    type: id,
    data: z.unknown(),
    surfaceOp: z.unknown().optional(),
    sourceEventSeqs: z.array(z.number().int().nonnegative().refine(notMinusZero, MINUS_ZERO)).optional(),
    /** JSON Pointers (RFC 6901, from the event) whose value the implementation chooses; written as "*" in `data`. */
    free: z.array(z.string().startsWith('/')).optional(),
  })
  .strict()

export const ScenarioSchema: z.ZodType<Scenario> = z
  .object({
    formatVersion: z.literal(FORMAT_VERSION),
    id,
    description: z.string(),
    setup: ScenarioSetupSchema,
    inputs: z.array(ScenarioInputSchema),
    expected: z.array(ExpectedEventSchema),
    /** Rules the log satisfies besides the comparison: 'session' or 'session-except-boundaries', and lifecycle rule names. */
    invariants: z.array(z.string()),
  })
  .strict()

export const SuiteSchema: z.ZodType<Suite> = z
  .object({
    format: z.literal(SUITE_FORMAT),
    generatedBy: z.string(),
    scenarios: z.array(ScenarioSchema),
  })
  .strict()

/** Names for the shapes the JSON Schema defines once and references ($defs). */
const NAMED = z.registry<{ id: string }>()
NAMED.add(UserMessageSchema, { id: 'UserMessage' })
NAMED.add(StreamChunkSchema, { id: 'StreamChunk' })
NAMED.add(AgentCancelCauseSchema, { id: 'AgentCancelCause' })
NAMED.add(ToolReturnSchema, { id: 'ToolReturn' })
NAMED.add(ScenarioInputSchema, { id: 'ScenarioInput' })
NAMED.add(ExpectedEventSchema, { id: 'ExpectedEvent' })
NAMED.add(ScenarioSetupSchema, { id: 'Setup' })
NAMED.add(CompactionSetupSchema, { id: 'CompactionSetup' })

/** Formats of JSON Schema draft 2020-12; zod also writes its own (`starts_with`, …), which strict validators refuse. */
const STANDARD_FORMATS = new Set([
  'date-time',
  'date',
  'time',
  'duration',
  'email',
  'idn-email',
  'hostname',
  'idn-hostname',
  'ipv4',
  'ipv6',
  'uri',
  'uri-reference',
  'iri',
  'iri-reference',
  'uuid',
  'uri-template',
  'json-pointer',
  'relative-json-pointer',
  'regex',
])

/** Drops non-standard `format` values (their `pattern` still says the same), so the schema compiles in any 2020-12 validator. */
function standardFormats(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(standardFormats)
  if (typeof node !== 'object' || node === null) return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === 'format' && typeof value === 'string' && !STANDARD_FORMATS.has(value)) continue
    out[key] = standardFormats(value)
  }
  return out
}

/** The JSON Schema of one scenario file, for drivers in other languages (also docs/conformance/scenario.schema.json). */
export function scenarioJsonSchema(): Record<string, unknown> {
  return standardFormats(z.toJSONSchema(ScenarioSchema, { unrepresentable: 'any', metadata: NAMED })) as Record<string, unknown>
}

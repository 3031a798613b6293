// The one workload every loop runs, described once so each loop's fake model
// can render it in its own library's native stream format.
//
// A turn is one user message, then three model calls:
//   call 1: FIXED_TEXT text chunks, then one tool call   (lookup alpha)
//   call 2: FIXED_TEXT text chunks, then two tool calls  (lookup beta, add 2+3)
//   call 3: C text chunks, then a stop
// so 3 model calls, 3 tool runs and C + 8 text chunks per turn. A "text chunk"
// is one streamed piece of answer text (agentchart `text-delta`, AI SDK
// `text-delta`, OpenAI Agents `output_text_delta`, a LangChain AIMessageChunk
// with text). The framing each format needs around it (block or text
// start/end, the tool calls, usage, finish) is part of the step, not of C.

/** Text chunks streamed before the tool calls by each of the first two calls. */
export const FIXED_TEXT = 4
/** Model calls (steps) per turn. */
export const CALLS_PER_TURN = 3
/** Tool runs per turn. */
export const TOOL_RUNS_PER_TURN = 3

export interface ScriptedCall {
  /** Unique per model call: the response, message and text part ids derive from it. */
  readonly id: string
  readonly text: readonly string[]
  readonly toolCalls: readonly { readonly id: string; readonly name: 'lookup' | 'add'; readonly arguments: string }[]
}

/** What one call streams as text: short, word-sized pieces. */
const OPENERS = ['Let ', 'me ', 'check ', 'that. ']
const FOLLOWERS = ['Two ', 'more ', 'checks ', 'needed. ']

/** The three calls of one turn for a given C, the same for every loop; ids are filled in per call by `nextCall`. */
export function turnScript(c: number): readonly [ScriptedCall, ScriptedCall, ScriptedCall] {
  if (!Number.isInteger(c) || c < 1) throw new RangeError(`C must be a positive integer, got ${c}`)
  return [
    { id: '', text: OPENERS, toolCalls: [{ id: '', name: 'lookup', arguments: '{"key":"alpha"}' }] },
    {
      id: '',
      text: FOLLOWERS,
      toolCalls: [
        { id: '', name: 'lookup', arguments: '{"key":"beta"}' },
        { id: '', name: 'add', arguments: '{"a":2,"b":3}' },
      ],
    },
    { id: '', text: Array.from({ length: c }, (_, k) => `w${k % 10} `), toolCalls: [] },
  ]
}

/** Usage every fake model reports once per call, in its own format. */
export const USAGE = { inputTokens: 120, outputTokens: 40 }

/** Counts the loops report back so a run proves it did the workload. */
export interface Counters {
  modelCalls: number
  toolRuns: number
}

export const counters: Counters = { modelCalls: 0, toolRuns: 0 }

/** The `lookup` tool's body, shared by every loop (synchronous work, no I/O). */
export function lookup(key: string): string {
  counters.toolRuns++
  return `value of ${key}`
}

/** The `add` tool's body, shared by every loop. */
export function add(a: number, b: number): string {
  counters.toolRuns++
  return String(a + b)
}

export const TOOL_DESCRIPTIONS = {
  lookup: 'Look a key up in the reference table.',
  add: 'Add two numbers.',
} as const

/**
 * The call a fake model answers now, with ids unique to it (as a provider's
 * are): the fakes count calls, and every turn makes exactly three. Each fake
 * renders it into fresh native chunks, as a provider parses a response.
 */
export function nextCall(script: readonly ScriptedCall[]): ScriptedCall {
  const serial = counters.modelCalls++
  const call = script[serial % CALLS_PER_TURN]
  return { id: `r${serial}`, text: call.text, toolCalls: call.toolCalls.map((tc, k) => ({ ...tc, id: `call_${serial}_${k}` })) }
}

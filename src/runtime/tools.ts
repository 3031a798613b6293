// One tool call's execution (TL-9..TL-11): the arguments checked against the
// tool's schema, the body run with the turn's signal (under the tool's
// timeout when it has one) inside the tools/execute chain, and whatever
// happens turned into an outcome. A tool call never throws out of here:
// every failure is the call's error result.
import { toLlmFailure } from '../adapters/failure.js'
import type { Effect, ToolOutcome } from '../machines/types.js'
import { errorOutcome } from '../machines/tool-batch.js'
import { deepFreeze } from '../session/lossless.js'
import { ToolErrorSchema } from '../session/schemas.js'
import { isRecordLike, peek } from '../values/foreign.js'
import type { CheckResult } from '../request/schema.js'
import { checkArguments, describeInvalidArgs, thrownOutcome, toOutcome, type ToolContext, type ToolDefinition } from '../tools/define.js'
import type { Hooks } from './hooks.js'

type ToolEffect = Extract<Effect, { type: 'fx.tool' }>

/**
 * One call's body, inside the tools/execute chain when anyone listens (TL-10): next() runs the body (arguments
 * checked, timeout applied); what a listener returns is read like a body's return, and a throw is the call's
 * error result (HK-9). Parallel calls run their chains concurrently, as their bodies.
 */
export function executeWithListeners(
  hooks: Hooks,
  tool: ToolDefinition | undefined,
  effect: ToolEffect,
  signal: AbortSignal,
  agent: unknown,
): Promise<ToolOutcome> {
  const { call, turn, step } = effect
  if (hooks.count('tools/execute') === 0) return executeCall(tool, effect, signal, agent)
  const made = new WeakSet<ToolOutcome>()
  const body = () => executeCall(tool, effect, signal, agent).then((outcome) => (made.add(outcome), outcome))
  const execution = { turn, step, callId: call.callId, name: call.name, arguments: deepFreeze(call.args), signal, agent }
  return hooks
    .waterfall('tools/execute', execution, body)
    .then((value: unknown) => (made.has(value as ToolOutcome) ? (value as ToolOutcome) : middlewareOutcome(call.name, value)))
    .catch((error: unknown) => thrownOutcome(error))
}

/** The outcome of calling `tool` (undefined: the model named a tool the agent does not have) with the call's arguments. */
async function executeCall(tool: ToolDefinition | undefined, { call, turn, step }: ToolEffect, signal: AbortSignal, agent: unknown): Promise<ToolOutcome> {
  if (!tool) return errorOutcome(`unknown tool ${JSON.stringify(call.name)}`, { name: 'UnknownToolError', code: 'UNKNOWN_TOOL' })
  let parsed: CheckResult<unknown>
  try {
    const checked = checkArguments(tool, call.args)
    parsed = checked instanceof Promise ? await checked : checked // a promise only from async refinements
  } catch (error) {
    parsed = { ok: false, issues: [{ path: '(root)', message: toLlmFailure(error).message }] }
  }
  if (!parsed.ok) return errorOutcome(describeInvalidArgs(call.name, parsed), { name: 'InvalidArgumentsError', code: 'INVALID_ARGS' })
  return runBody(tool, parsed.value, { callId: call.callId, name: tool.name, turn, step, signal, agent })
}

/** One body run, under the tool's `timeoutMs` when it has one: a body still running then gets its signal aborted and its late result dropped. */
async function runBody(tool: ToolDefinition, args: unknown, context: ToolContext): Promise<ToolOutcome> {
  const { name, timeoutMs } = tool
  const turnSignal = context.signal
  const limited = timeoutMs !== undefined && timeoutMs !== Infinity
  // the body's own signal: aborted by the turn's, or by the timeout
  const controller = limited ? new AbortController() : null
  const follow = () => controller?.abort(turnSignal.reason)
  if (controller) {
    if (turnSignal.aborted) follow()
    else turnSignal.addEventListener('abort', follow, { once: true })
  }
  const signal = controller ? controller.signal : turnSignal
  let timer: ReturnType<typeof setTimeout> | undefined
  const body = (async () => {
    try {
      return toOutcome(name, await tool.execute(deepFreeze(args), controller ? { ...context, signal } : context))
    } catch (error) {
      // TL-9: whatever was thrown, however hostile, becomes the call's error result
      return thrownOutcome(error)
    }
  })()
  if (!controller) return body
  const timedOut = new Promise<ToolOutcome>((resolve) => {
    timer = setTimeout(() => {
      const message = `tool ${name} did not settle within ${timeoutMs} ms`
      controller.abort(new Error(message))
      resolve(errorOutcome(message, { name: 'ToolTimeoutError', code: 'TOOL_TIMEOUT' }))
    }, timeoutMs)
  })
  try {
    return await Promise.race([body, timedOut])
  } finally {
    clearTimeout(timer)
    turnSignal.removeEventListener('abort', follow)
  }
}

/**
 * What a tools/execute listener returned, read like a body's return (a string or `{ content, isError?, meta?, ... }`),
 * keeping an `error: { name, code }` it passes on from next()'s outcome.
 */
function middlewareOutcome(name: string, value: unknown): ToolOutcome {
  const outcome = toOutcome(name, value)
  const error = peek(value, 'error')
  if (!outcome.isError || error === undefined) return outcome
  // read once into a copy, then checked as the log will hold it
  const parsed = ToolErrorSchema.safeParse(isRecordLike(error) ? { name: peek(error, 'name'), code: peek(error, 'code') } : error)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new TypeError(`tools/execute for ${name} answered an error that is not { name, code } at ${['error', ...issue.path].join('.')}: ${issue.message}`)
  }
  return Object.freeze({ ...outcome, error: Object.freeze(parsed.data) })
}

// One tool call's execution (TL-9..TL-11): the arguments checked against the
// tool's schema, the body run with the turn's signal (under the tool's
// timeout when it has one), and whatever happens turned into an outcome. A
// tool call never throws out of here: every failure is the call's error result.
import { toLlmFailure } from '../adapters/failure.js'
import type { PlannedCall, ToolOutcome } from '../machines/types.js'
import { errorOutcome } from '../machines/tool-batch.js'
import { deepFreeze } from '../session/lossless.js'
import type { CheckResult } from '../request/schema.js'
import { checkArguments, describeInvalidArgs, thrownOutcome, toOutcome, type ToolDefinition } from '../tools/define.js'

/** The outcome of calling `tool` (undefined: the model named a tool the agent does not have) with the call's arguments. */
export async function executeCall(tool: ToolDefinition | undefined, call: PlannedCall, signal: AbortSignal, agent: unknown): Promise<ToolOutcome> {
  if (!tool) return errorOutcome(`unknown tool ${JSON.stringify(call.name)}`, { name: 'UnknownToolError', code: 'UNKNOWN_TOOL' })
  let parsed: CheckResult<unknown>
  try {
    const checked = checkArguments(tool, call.args)
    parsed = checked instanceof Promise ? await checked : checked // a promise only from async refinements
  } catch (error) {
    parsed = { ok: false, issues: [{ path: '(root)', message: toLlmFailure(error).message }] }
  }
  if (!parsed.ok) return errorOutcome(describeInvalidArgs(call.name, parsed), { name: 'InvalidArgumentsError', code: 'INVALID_ARGS' })
  return runBody(tool, parsed.value, call.callId, signal, agent)
}

/** One body run, under the tool's `timeoutMs` when it has one: a body still running then gets its signal aborted and its late result dropped. */
async function runBody(tool: ToolDefinition, args: unknown, callId: string, turnSignal: AbortSignal, agent: unknown): Promise<ToolOutcome> {
  const { name, timeoutMs } = tool
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
      return toOutcome(name, await tool.execute(deepFreeze(args), { callId, name, signal, agent }))
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

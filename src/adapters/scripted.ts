// A deterministic model for tests and demos: one scripted response per request.
import { ConfigError } from '../errors.js'
import type { StreamChunk } from '../session/schemas.js'
import { abortedFailure, LlmError } from './failure.js'
import type { ModelAdapter, ModelRequest } from './types.js'

/** What a function entry may return for its request. */
export type ScriptResult = readonly StreamChunk[] | AsyncIterable<StreamChunk> | Promise<readonly StreamChunk[]> | 'hang'

/** One scripted response: chunks, `'hang'` (until the request aborts), or a function of the request. */
export type ScriptEntry = readonly StreamChunk[] | 'hang' | ((request: ModelRequest) => ScriptResult)

export interface ScriptedModelOptions {
  provider?: string
  model?: string
  contextWindow?: number
}

/** A ModelAdapter that replays a script and records every request it was given. */
export interface ScriptedModel extends ModelAdapter {
  /** Every request received, in order (including ones the script could not answer). */
  readonly requests: ModelRequest[]
  /** Script entries not yet used. */
  readonly remaining: number
}

/**
 * Builds a model that answers request k with script entry k.
 * Why: loop tests need exact, repeatable model behaviour (text, tool calls,
 * failures, hangs) and a record of what the loop actually sent.
 * Chunks are yielded asynchronously; once the request's signal aborts, no
 * further chunk is yielded and the stream throws an LlmError named
 * 'AbortError' (code ABORTED). An exhausted script fails the request with
 * code SCRIPT_EXHAUSTED.
 */
export function scriptedModel(script: readonly ScriptEntry[], options: ScriptedModelOptions = {}): ScriptedModel {
  if (!Array.isArray(script)) throw new ConfigError('scriptedModel: script must be an array of entries', { path: 'script' })
  script.forEach((entry, k) => {
    if (!Array.isArray(entry) && entry !== 'hang' && typeof entry !== 'function') {
      throw new ConfigError(`scriptedModel: entry ${k} must be a chunk array, 'hang', or a function`, { path: `script[${k}]` })
    }
  })
  for (const key of ['provider', 'model'] as const) {
    const value = options[key]
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw new ConfigError(`scriptedModel: ${key} must be a non-empty string`, { path: key })
    }
  }
  const entries: ScriptEntry[] = [...(script as readonly ScriptEntry[])]
  const requests: ModelRequest[] = []
  let next = 0
  const model: ScriptedModel = {
    provider: options.provider ?? 'scripted',
    model: options.model ?? 'scripted-1',
    ...(options.contextWindow !== undefined ? { contextWindow: options.contextWindow } : {}),
    requests,
    get remaining() {
      return entries.length - next
    },
    stream(request: ModelRequest): AsyncIterable<StreamChunk> {
      requests.push(request)
      const entry = next < entries.length ? entries[next++] : undefined
      return play(entry, request, requests.length)
    },
  }
  return model
}

async function* play(entry: ScriptEntry | undefined, request: ModelRequest, n: number): AsyncGenerator<StreamChunk> {
  if (entry === undefined) {
    throw new LlmError({ message: `scripted model has no response left for request ${n}`, code: 'SCRIPT_EXHAUSTED' })
  }
  const source = typeof entry === 'function' ? await entry(request) : entry
  if (source === 'hang') {
    await whenAborted(request.signal)
    throw abortError(request.signal)
  }
  // `for await` also awaits between the chunks of a plain array
  for await (const chunk of source) {
    if (request.signal.aborted) throw abortError(request.signal)
    yield chunk
  }
}

function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}

/** What a real SDK throws on abort: an error named AbortError, here carrying code ABORTED. */
function abortError(signal: AbortSignal): LlmError {
  const error = new LlmError(abortedFailure(signal.reason), signal.reason)
  error.name = 'AbortError'
  return error
}

// Helpers of the sessions-across tests: a model that takes its time (so
// steers and cancels land mid-turn) and answers with what it was asked.
import type { ModelAdapter, ModelRequest } from '../../src/index.js'
import { textResponse } from '../../src/testing/index.js'

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason)
    })
  })
}

/** The text of the last user message a request carries. */
function lastUserText(request: ModelRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]
    if (message.role === 'user') return message.content.map((block) => ('text' in block ? block.text : '')).join('')
  }
  return ''
}

/**
 * Answers `re: <last user text>` after `delayMs`, in two chunks, honouring the abort signal; a prompt that
 * contains `[hang]` is answered only by its abort (so a cancel always finds the turn running).
 */
export function slowModel(delayMs: number): ModelAdapter {
  return {
    provider: 'test',
    model: 'slow',
    async *stream(request) {
      if (lastUserText(request).includes('[hang]')) await pause(2 ** 31 - 1, request.signal)
      await pause(delayMs / 2, request.signal)
      const chunks = textResponse(`re: ${lastUserText(request)}`)
      yield chunks[0]
      await pause(delayMs / 2, request.signal)
      for (const chunk of chunks.slice(1)) yield chunk
    },
  }
}

// From the session log to UI message chunks: what one logged event of a turn
// shows in the chat. Stateful over one assistant message (one response): it
// remembers which text, reasoning and tool parts are open so deltas land in
// the right part, and closes what a step or a cancelled stream left open.
import type { SessionEvent, StreamChunk, TurnEndReason } from '../session/schemas.js'
import { parseArguments } from '../session/vocabulary.js'
import type { TurnData, UIFinishReason, UIMessageChunk } from './protocol.js'

/** The `data-turn` chunk that says how a turn stands (one part per turn: a later one replaces it). */
export function turnChunk(data: TurnData): UIMessageChunk {
  return { type: 'data-turn', id: `turn-${data.turn}`, data }
}

const FINISH_REASONS: Partial<Record<TurnEndReason['kind'], UIFinishReason>> = {
  completed: 'stop',
  'max-tokens': 'length',
  blocked: 'content-filter',
}

/** The text a tool result shows: its content as the model reads it. */
function resultText(content: string | readonly { type: string; text?: string }[]): string {
  if (typeof content === 'string') return content
  return content.map((block) => (block.type === 'text' ? (block.text ?? '') : `[${block.type}]`)).join('')
}

interface OpenBlock {
  readonly kind: 'text' | 'reasoning' | 'tool-call'
  readonly id: string
  /** The tool call's id and name, once a delta named them. */
  callId?: string
}

export class ChunkTranslator {
  /** Open blocks of the current attempt, by stream index. */
  #blocks = new Map<number, OpenBlock>()
  /** Calls the UI has a part for, and those whose input it has in full. */
  readonly #started = new Set<string>()
  readonly #announced = new Set<string>()
  readonly #denied = new Set<string>()
  readonly #finished = new Set<string>()

  /** The chunks `event` adds to the response (none for events the chat does not show). */
  translate(event: SessionEvent): UIMessageChunk[] {
    switch (event.type) {
      case 'assistant/chunk':
        return this.#chunk(event.data.chunk, event.seq)
      case 'assistant/message': {
        const out = this.#closeAll()
        for (const block of event.data.message.content) {
          if (block.type === 'tool-call' && !this.#announced.has(block.id)) out.push(...this.#announce(block.id, block.name, block.arguments))
        }
        // streamed calls the anchor dropped (a max-tokens finish, a cancelled stream) never run
        const kept = new Set(event.data.message.content.flatMap((b) => (b.type === 'tool-call' ? [b.id] : [])))
        for (const callId of this.#started) {
          if (!kept.has(callId) && !this.#finished.has(callId)) {
            this.#finished.add(callId)
            const why = event.data.interrupted ? 'the turn was stopped while the model wrote this call' : 'the response was cut at max tokens'
            out.push({ type: 'tool-output-error', toolCallId: callId, errorText: `not run: ${why}` })
          }
        }
        return out
      }
      case 'tool/call':
        return this.#announced.has(event.data.callId) ? [] : this.#announce(event.data.callId, event.data.name, event.data.arguments)
      case 'tool/approval-request':
        return [{ type: 'tool-approval-request', approvalId: event.data.callId, toolCallId: event.data.callId }]
      case 'tool/approval-answer':
        if (event.data.decision === 'deny') this.#denied.add(event.data.callId)
        return []
      case 'tool/result': {
        const callId = event.data.message.source.callId
        this.#finished.add(callId)
        const block = event.data.message.content[0]
        if (this.#denied.has(callId)) return [{ type: 'tool-output-denied', toolCallId: callId }]
        const text = resultText(block.content)
        return block.isError
          ? [{ type: 'tool-output-error', toolCallId: callId, errorText: text }]
          : [{ type: 'tool-output-available', toolCallId: callId, output: text }]
      }
      case 'step/end': {
        const out = this.#closeAll()
        // a call the stream began but never finished (a cancel mid-call): it has a part, and never runs
        for (const callId of this.#started) {
          if (!this.#announced.has(callId) && !this.#finished.has(callId)) {
            this.#finished.add(callId)
            out.push({ type: 'tool-output-error', toolCallId: callId, errorText: 'not run: the stream ended inside this call' })
          }
        }
        out.push({ type: 'finish-step' })
        return out
      }
      case 'turn/end':
        return [...this.#closeAll(), ...this.end(event.data.turn, event.data.reason)]
      default:
        return []
    }
  }

  /** How a response ends with its turn: `finish` with the reason, `abort` for a stop, `error` for a failure. */
  end(turn: number, reason: TurnEndReason): UIMessageChunk[] {
    const status = turnChunk({ turn, status: reason.kind })
    if (reason.kind === 'aborted') return [status, { type: 'abort', reason: reason.reason.kind }]
    if (reason.kind === 'error') return [status, { type: 'error', errorText: reason.error.message }, { type: 'finish', finishReason: 'error' }]
    return [status, { type: 'finish', finishReason: FINISH_REASONS[reason.kind] ?? 'other' }]
  }

  #chunk(chunk: StreamChunk, seq: number): UIMessageChunk[] {
    switch (chunk.type) {
      case 'block-start':
        if (chunk.blockType === 'text' || chunk.blockType === 'reasoning') return this.#open(chunk.index, chunk.blockType, seq)
        if (chunk.blockType === 'tool-call') this.#blocks.set(chunk.index, { kind: 'tool-call', id: `p${seq}` })
        return []
      case 'text-delta':
      case 'reasoning-delta': {
        const kind = chunk.type === 'text-delta' ? 'text' : 'reasoning'
        const out = this.#blocks.get(chunk.index)?.kind === kind ? [] : this.#open(chunk.index, kind, seq)
        const id = this.#blocks.get(chunk.index)!.id
        out.push(kind === 'text' ? { type: 'text-delta', id, delta: chunk.text } : { type: 'reasoning-delta', id, delta: chunk.text })
        return out
      }
      case 'tool-call-delta': {
        let block = this.#blocks.get(chunk.index)
        if (block?.kind !== 'tool-call') {
          block = { kind: 'tool-call', id: `p${seq}` }
          this.#blocks.set(chunk.index, block)
        }
        const out: UIMessageChunk[] = []
        const callId = block.callId ?? chunk.id ?? `call-${chunk.index}`
        if (block.callId === undefined) {
          block.callId = callId
          if (!this.#started.has(callId)) {
            this.#started.add(callId)
            out.push({ type: 'tool-input-start', toolCallId: callId, toolName: chunk.name ?? '' })
          }
        }
        if (chunk.argumentsDelta !== '') out.push({ type: 'tool-input-delta', toolCallId: callId, inputTextDelta: chunk.argumentsDelta })
        return out
      }
      case 'block-end': {
        const open = this.#blocks.get(chunk.index)
        this.#blocks.delete(chunk.index)
        const block = chunk.block
        if (block.type === 'tool-call') return this.#announced.has(block.id) ? [] : this.#announce(block.id, block.name, block.arguments)
        if (open === undefined || open.kind === 'tool-call') return []
        return [open.kind === 'text' ? { type: 'text-end', id: open.id } : { type: 'reasoning-end', id: open.id }]
      }
      case 'finish':
        // the attempt is over: a retry starts its indexes again
        return this.#closeAll()
      default:
        return []
    }
  }

  #open(index: number, kind: 'text' | 'reasoning', seq: number): UIMessageChunk[] {
    const out = this.#closeIndex(index)
    const id = `p${seq}`
    this.#blocks.set(index, { kind, id })
    out.push(kind === 'text' ? { type: 'text-start', id } : { type: 'reasoning-start', id })
    return out
  }

  #announce(callId: string, name: string, args: string): UIMessageChunk[] {
    this.#started.add(callId)
    this.#announced.add(callId)
    return [{ type: 'tool-input-available', toolCallId: callId, toolName: name, input: parseArguments(args) }]
  }

  #closeIndex(index: number): UIMessageChunk[] {
    const open = this.#blocks.get(index)
    this.#blocks.delete(index)
    if (open === undefined || open.kind === 'tool-call') return []
    return [open.kind === 'text' ? { type: 'text-end', id: open.id } : { type: 'reasoning-end', id: open.id }]
  }

  #closeAll(): UIMessageChunk[] {
    const out: UIMessageChunk[] = []
    for (const index of [...this.#blocks.keys()]) out.push(...this.#closeIndex(index))
    return out
  }
}

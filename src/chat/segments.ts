// Which part of the log one chat response shows. A response (one assistant
// message in the UI) begins at the step that entered what a person typed and
// runs until the turn ends or a later step enters another message a person
// typed (a steer: that step begins the next response). The same rule cuts a
// stored log into messages (history) and follows a live log (a response).
import type { SessionEvent, TurnEndReason, UserMessage } from '../session/schemas.js'
import type { UIMessageChunk } from './protocol.js'
import { ChunkTranslator, turnChunk } from './translate.js'

/** A message a person typed (shown in the chat), not context a plugin, a hook or a tool added. */
export const isPersonMessage = (message: UserMessage): boolean => message.source.kind === 'user'

/** One assistant response of the log. */
export interface Segment {
  /** The seq of its first `step/start`. */
  readonly start: number
  readonly turn: number
  /** What a person typed that entered at its first step (the response answers the last of them). */
  readonly prompts: readonly UserMessage[]
  /** The seq after its last event; `undefined` while its turn runs and no later step took over. */
  end?: number
  /** Its turn's end reason, when its turn ended within it. */
  ended?: TurnEndReason
}

/** The messages entered right after the `step/start` at `seq` (ST-3). */
function enteredAt(events: readonly SessionEvent[], seq: number): UserMessage[] {
  const entered: UserMessage[] = []
  for (let i = seq + 1; i < events.length; i++) {
    const e = events[i]
    if (e.type !== 'user/message') break
    entered.push(e.data)
  }
  return entered
}

/** The responses of a log, oldest first; the last one is open when its turn still runs. */
export function segmentsOf(events: readonly SessionEvent[]): Segment[] {
  const segments: Segment[] = []
  let current: Segment | null = null
  let firstStep = false
  for (let seq = 0; seq < events.length; seq++) {
    const e = events[seq]
    if (e.type === 'turn/start') {
      firstStep = true
    } else if (e.type === 'step/start') {
      const prompts = enteredAt(events, seq).filter(isPersonMessage)
      if (firstStep || prompts.length > 0) {
        if (current) current.end = seq
        current = { start: seq, turn: e.data.turn, prompts }
        segments.push(current)
      }
      firstStep = false
    } else if (e.type === 'turn/end') {
      if (current && current.turn === e.data.turn) {
        current.end = seq + 1
        current.ended = e.data.reason
      }
      current = null
    }
  }
  return segments
}

/** The id of the assistant message a segment is shown as. */
export const segmentMessageId = (start: number): string => `msg-${start}`

/** Where a response begins: at a prompt not yet entered, at a segment of the log, or mid-step (after an approval). */
export type ResponseStart = { kind: 'prompt'; messageId: string } | { kind: 'segment'; start: number } | { kind: 'continue' }

interface PendingStep {
  readonly seq: number
  readonly turn: number
  readonly prompts: string[]
}

/**
 * Follows the log event by event and writes one response's chunks. Ends (emitting the stream's last chunks) when
 * the turn ends, when a later step enters what a person typed, when its prompt is discarded, or on `pause()`.
 */
export class ResponseView {
  readonly #translator = new ChunkTranslator()
  readonly #emit: (chunk: UIMessageChunk) => void
  readonly #prompt: string | null
  #phase: 'waiting' | 'streaming' | 'done'
  #step: PendingStep | null = null
  #firstGroup: boolean
  /** While the prompt waits in the inbox: its list and position (tracked through each splice). */
  #slot: { target: string; index: number } | null = null
  #claimed = false
  #turn: number | null = null
  /** The call of the approval request the last event was: the response can end and wait for the answer. */
  awaitingApproval: string | null = null

  constructor(start: ResponseStart, emit: (chunk: UIMessageChunk) => void) {
    this.#emit = emit
    this.#prompt = start.kind === 'prompt' ? start.messageId : null
    this.#phase = start.kind === 'prompt' ? 'waiting' : 'streaming'
    this.#firstGroup = start.kind === 'segment'
    if (start.kind === 'segment') emit({ type: 'start', messageId: segmentMessageId(start.start) })
    if (start.kind === 'continue') emit({ type: 'start' })
  }

  get done(): boolean {
    return this.#phase === 'done'
  }

  /** Show the next event of the log (events come in seq order). */
  push(event: SessionEvent): void {
    if (this.#phase === 'done') return
    this.awaitingApproval = null
    if (this.#step !== null) {
      if (event.type === 'user/message') {
        if (isPersonMessage(event.data)) this.#step.prompts.push(event.data.id)
        return
      }
      this.#closeGroup()
      if (this.done) return
    }
    const turn = (event.data as { turn?: unknown }).turn
    if (typeof turn === 'number') this.#turn = turn
    if (event.type === 'step/start') {
      this.#step = { seq: event.seq, turn: event.data.turn, prompts: [] }
      return
    }
    if (this.#phase === 'waiting') return this.#wait(event)
    for (const chunk of this.#translator.translate(event)) this.#emit(chunk)
    if (event.type === 'turn/end') this.#phase = 'done'
    else if (event.type === 'tool/approval-request') this.awaitingApproval = event.data.callId
  }

  /** End the response while a call waits for a person: the answer comes back as a new request. */
  pause(): void {
    if (this.#phase !== 'streaming') return
    if (this.#turn !== null) this.#emit(turnChunk({ turn: this.#turn, status: 'awaiting-approval' }))
    this.#finish({ type: 'finish', finishReason: 'tool-calls' })
  }

  /** End the response early with `reason` (the chat was stopped before its prompt ran, say). */
  abort(reason: string): void {
    if (this.#phase === 'done') return
    if (this.#phase === 'waiting') this.#emit({ type: 'start' })
    this.#finish({ type: 'abort', reason })
  }

  #finish(last: UIMessageChunk): void {
    this.#emit(last)
    this.#phase = 'done'
  }

  #wait(event: SessionEvent): void {
    if (event.type === 'agent/inbox/spliced') {
      const { target, start, inserted } = event.data
      const removed = event.data.removedCount ?? 0
      if (this.#slot === null) {
        const at = inserted.findIndex((m) => m.id === this.#prompt)
        if (at >= 0 && !this.#claimed) this.#slot = { target, index: start + at }
        return
      }
      if (target !== this.#slot.target || start > this.#slot.index) return
      if (this.#slot.index < start + removed) {
        this.#slot = null
        if (event.data.outcome === 'canceled') this.abort('discarded')
        else this.#claimed = true
        return
      }
      this.#slot.index += inserted.length - removed
    } else if (event.type === 'turn/end' && this.#claimed) {
      // claimed, but the turn ended before any step entered it (CX-9, a rejected or emptied proposal)
      this.#emit({ type: 'start' })
      for (const chunk of this.#translator.end(event.data.turn, event.data.reason)) this.#emit(chunk)
      this.#phase = 'done'
    }
  }

  #closeGroup(): void {
    const step = this.#step!
    this.#step = null
    if (this.#phase === 'waiting') {
      if (this.#prompt === null || !step.prompts.includes(this.#prompt)) return
      if (step.prompts.at(-1) !== this.#prompt) {
        // a later message of the same step owns the response: this one ends empty
        this.#emit({ type: 'start' })
        this.#finish({ type: 'finish', finishReason: 'other' })
        return
      }
      this.#phase = 'streaming'
      this.#emit({ type: 'start', messageId: segmentMessageId(step.seq) })
      this.#emit(turnChunk({ turn: step.turn, status: 'running' }))
      this.#emit({ type: 'start-step' })
      return
    }
    if (!this.#firstGroup && step.prompts.length > 0) {
      // a steer entered: the response that sent it shows the rest of the turn
      this.#emit(turnChunk({ turn: step.turn, status: 'continued' }))
      this.#finish({ type: 'finish', finishReason: 'other' })
      return
    }
    if (this.#firstGroup) this.#emit(turnChunk({ turn: step.turn, status: 'running' }))
    this.#firstGroup = false
    this.#emit({ type: 'start-step' })
  }

  /** The turn this response follows, once known. */
  get turn(): number | null {
    return this.#turn
  }
}

// An answer cut short by a cancel stays in the log as it was streamed (CX-7).
// In the history a request carries, a short user-role note follows it, so the
// model knows the answer stopped there and was not its complete reply.
import type { Message, SessionEvent, UserMessage } from './schemas.js'

/** How the request history shows an interrupted answer: followed by a note (`mark`, the default), or as it is (`keep`). */
export type InterruptedHistory = 'mark' | 'keep'

/** The source of the note: the loop wrote it, not the person (a plugin source, like a compaction summary's). */
export const INTERRUPTED_SOURCE = Object.freeze({ kind: 'plugin' as const, plugin: 'agentchart', form: 'interrupted' })

/** The note's text. */
export const INTERRUPTED_NOTE = '[The previous assistant answer was interrupted before it finished; it ends where it was cut off.]'

/** The interrupted answers of a log, kept as it grows, and the note each one gets in a request's history. */
export class InterruptedAnswers {
  readonly #answers = new WeakSet<Message>()
  readonly #notes = new WeakMap<Message, UserMessage>()
  #count = 0

  /** Reads one logged event (every seeded event once, then each appended one). */
  see(event: SessionEvent): void {
    if (event.type !== 'assistant/message' || event.data.interrupted !== true) return
    this.#answers.add(event.data.message)
    this.#count++
  }

  /** The history with a note after each interrupted answer; the same array when there is none. */
  mark(messages: readonly Message[]): readonly Message[] {
    if (this.#count === 0) return messages
    let out: Message[] | null = null
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i]
      if (!this.#answers.has(message)) {
        out?.push(message)
        continue
      }
      out ??= messages.slice(0, i)
      out.push(message, this.#noteFor(message))
    }
    return out === null ? messages : Object.freeze(out)
  }

  /** One frozen note per answer, the same object at every request. */
  #noteFor(answer: Message): UserMessage {
    let note = this.#notes.get(answer)
    if (note === undefined) {
      note = Object.freeze({
        id: `${answer.id}-interrupted`,
        role: 'user' as const,
        content: Object.freeze([Object.freeze({ type: 'text' as const, text: INTERRUPTED_NOTE })]),
        source: INTERRUPTED_SOURCE,
      }) as unknown as UserMessage
      this.#notes.set(answer, note)
    }
    return note
  }
}

// An answer cut short by a cancel stays in the log as it was streamed (CX-7).
// In the history a request carries, a short user-role note follows it, so the
// model knows the answer stopped there and was not its complete reply.
import { frozenArrayOf } from '../values/array-view.js'
import type { ReadList } from '../values/persistent-list.js'
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
  /** The history positions of the interrupted answers, rising, for the surface shape `#generation`; only appended to. */
  #positions: number[] = []
  /** The note of each of those answers. */
  #marks: UserMessage[] = []
  /** How much of that history was searched for them. */
  #searched = 0
  #generation = -1

  /** Reads one logged event (every seeded event once, then each appended one). */
  see(event: SessionEvent): void {
    if (event.type === 'assistant/message' && event.data.interrupted === true) this.seeAnswer(event.data.message)
  }

  /** Takes one interrupted answer, as the history holds it. */
  seeAnswer(message: Message): void {
    this.#answers.add(message)
    this.#count++
  }

  /**
   * The history with a note after each interrupted answer; the same array when there is none. `generation` is the
   * session's replace generation: while it stands, only the messages appended since the last call are searched, and
   * the result reads the history through instead of copying it.
   */
  mark(messages: readonly Message[], generation: number): readonly Message[] {
    if (this.#count === 0) return messages
    if (generation !== this.#generation || messages.length < this.#searched) {
      // a replace may have moved or shadowed any answer: search the history again, into a fresh array
      this.#positions = []
      this.#marks = []
      this.#searched = 0
      this.#generation = generation
    }
    for (let i = this.#searched; i < messages.length; i++) {
      if (!this.#answers.has(messages[i])) continue
      this.#positions.push(i)
      this.#marks.push(this.#noteFor(messages[i]))
    }
    this.#searched = messages.length
    const count = this.#positions.length
    return count === 0 ? messages : frozenArrayOf(new WithNotes(messages, this.#positions, this.#marks, count))
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

/** A history with `notes[j]` read right after the message at `after[j]` (rising), for the first `count` notes. */
class WithNotes implements ReadList<Message> {
  readonly length: number

  constructor(
    readonly base: readonly Message[],
    readonly after: readonly number[],
    readonly notes: readonly Message[],
    readonly count: number,
  ) {
    this.length = base.length + count
  }

  at(index: number): Message {
    // note j sits at after[j] + j + 1: find how many notes come before index, or the one at it
    let low = 0
    let high = this.count
    while (low < high) {
      const mid = (low + high) >>> 1
      const at = this.after[mid] + mid + 1
      if (at === index) return this.notes[mid]
      if (at < index) low = mid + 1
      else high = mid
    }
    return this.base[index - low]
  }
}

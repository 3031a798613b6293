// The model-visible surface of a log (SS-5, SS-7): the current nodes in order
// and the history they make, kept as a persistent list so that each version
// of the history can be handed out as it is, without a copy.
import { frozenArrayOf } from '../values/array-view.js'
import { PersistentList } from '../values/persistent-list.js'
import type { Message, SessionEvent } from './schemas.js'
import { countBelow } from '../values/sorted.js'

export interface SurfaceNode {
  readonly seq: number
  readonly type: string
  /** The model-visible message, or undefined for an empty-content assistant message (SS-7). */
  readonly message: Message | undefined
}

/** The message a surface event carries (a user/message is its own data; the others wrap it). */
export const messageOf = (event: SessionEvent): Message => (event.type === 'user/message' ? event.data : (event.data as { message: Message }).message)

/** The model-visible message of a surface event; undefined for an empty assistant message, which is no node (SS-7). */
export function nodeMessage(event: SessionEvent): Message | undefined {
  const message = messageOf(event)
  return message.role === 'assistant' && message.content.length === 0 ? undefined : message
}

/**
 * The event type of a surface node, from its message: a tool result is a user message from a tool holding one
 * result for that tool's call (a message of that shape reaches the model as a result, whichever event logged it).
 */
function nodeType(message: Message | undefined): string {
  if (message === undefined || message.role === 'assistant') return 'assistant/message'
  const [first] = message.content
  const result = message.source.kind === 'tool' && message.content.length === 1 && first.type === 'tool-result' && first.toolCallId === message.source.callId
  return result ? 'tool/result' : 'user/message'
}

/** The surface node a surface event makes: what the history derivation and the compaction planner both read. */
export function surfaceNodeOf(event: SessionEvent): SurfaceNode {
  return { seq: event.seq, type: event.type, message: nodeMessage(event) }
}

/**
 * The surface of one log; `apply` assumes an already validated event. The history is a persistent list of the
 * nodes' messages: an append pushes one, a one-for-one replace sets one, and a compaction rebuilds only the part it
 * keeps. A node is found by binary search on a key that rises along the surface: an appended node's key is its own
 * seq, and a replacement takes the key of the first node it shadows (kept in `#keys`, one entry per replacement node).
 */
export class Surface {
  /** The seqs of the current nodes, in surface order. */
  readonly seqs: number[] = []
  generation = 0
  /** The history, or while released what gives its messages back in order (see `release`). */
  #history: PersistentList<Message> | (() => readonly Message[]) = PersistentList.empty<Message>()
  /** The keys of the current replacement nodes, by seq; every other node's key is its seq. */
  readonly #keys = new Map<number, number>()
  /** Positions of the nodes without a message (empty assistant messages), rising: they hold no history item. */
  #empty: number[] = []

  /**
   * A surface from its nodes: their seqs in surface order and each one's message (undefined for an empty assistant
   * message), and how many replaces made it (`generation`). Nothing is read from the log, so a checkpoint can restore it.
   */
  static of(seqs: readonly number[], messages: readonly (Message | undefined)[], generation = 0): Surface {
    if (seqs.length !== messages.length) throw new RangeError(`a surface needs one message per node: ${seqs.length} seqs, ${messages.length} messages`)
    const surface = new Surface()
    surface.generation = generation
    surface.seqs.push(...seqs)
    surface.#history = PersistentList.from(messages.filter((m): m is Message => m !== undefined))
    messages.forEach((m, at) => m === undefined && surface.#empty.push(at))
    // keys rise along the surface: a node whose seq is not below the next node's key is a replacement and gets a key
    // just under it (fractional keys never equal a seq, and a shadowed seq a key might equal fails the seq check)
    let next = Infinity
    for (let at = seqs.length - 1; at >= 0; at--) {
      if (seqs[at] < next) next = seqs[at]
      else {
        next -= 0.5
        surface.#keys.set(seqs[at], next)
      }
    }
    return surface
  }

  apply(event: SessionEvent): void {
    const op = event.surfaceOp
    if (op === undefined) return
    const message = nodeMessage(event)
    if (op === 'append') {
      if (message === undefined) this.#empty.push(this.seqs.length)
      else this.#history = this.#held().push(message)
      this.seqs.push(event.seq)
      return
    }
    // replace (compaction, result rewrites): the new node takes the first shadowed node's place and key
    const from = this.indexOf(op.start)!
    const to = this.indexOf(op.end)!
    const key = this.#keyAt(from)
    const start = from - this.#emptyBefore(from)
    const removed = to - from + 1 - (this.#emptyBefore(to + 1) - this.#emptyBefore(from))
    this.#history = this.#held().splice(start, removed, message === undefined ? [] : [message])
    for (let at = from; at <= to; at++) this.#keys.delete(this.seqs[at])
    this.#keys.set(event.seq, key)
    this.seqs.splice(from, to - from + 1, event.seq)
    if (this.#empty.length > 0 || message === undefined) {
      const shift = to - from
      const kept = this.#empty.filter((at) => at < from || at > to).map((at) => (at > to ? at - shift : at))
      if (message === undefined) kept.splice(this.#emptyBefore(from), 0, from)
      this.#empty = kept
    }
    this.generation++
  }

  /** The position of a current node, or undefined. */
  indexOf(seq: number): number | undefined {
    const key = this.#keys.get(seq) ?? seq
    let low = 0
    let high = this.seqs.length - 1
    while (low <= high) {
      const mid = (low + high) >>> 1
      const at = this.#keyAt(mid)
      if (at < key) low = mid + 1
      else if (at > key) high = mid - 1
      else return this.seqs[mid] === seq ? mid : undefined
    }
    return undefined
  }

  /** The history's message of a current node (the very value the history holds), or undefined. */
  messageAt(seq: number): Message | undefined {
    const at = this.indexOf(seq)
    if (at === undefined) return undefined
    const empty = this.#emptyBefore(at)
    return empty < this.#empty.length && this.#empty[empty] === at ? undefined : this.#held().at(at - empty)
  }

  /** The current nodes, from the history alone: a node's event type follows from its message's role (SS-7). */
  nodes(): SurfaceNode[] {
    const history = this.#held()
    const nodes: SurfaceNode[] = []
    let empties = 0
    for (let at = 0; at < this.seqs.length; at++) {
      const empty = empties < this.#empty.length && this.#empty[empties] === at
      const message = empty ? undefined : history.at(at - empties)
      if (empty) empties++
      nodes.push({ seq: this.seqs[at], type: nodeType(message), message })
    }
    return nodes
  }

  /** The history as a frozen array, without a copy (SS-8). */
  messages(): readonly Message[] {
    return frozenArrayOf(this.#held())
  }

  /**
   * Lets the messages go until the history is next read; `reload` gives them back as they were. Why: an idle stored
   * session need not hold a history its store can give back when a turn starts (docs/persistence.md).
   */
  release(reload: () => readonly Message[]): void {
    this.#history = reload
  }

  #held(): PersistentList<Message> {
    if (typeof this.#history === 'function') this.#history = PersistentList.from(this.#history())
    return this.#history
  }

  #keyAt(at: number): number {
    const seq = this.seqs[at]
    return this.#keys.get(seq) ?? seq
  }

  /** How many message-less nodes sit before position `at`. */
  #emptyBefore(at: number): number {
    return countBelow(this.#empty, at)
  }
}

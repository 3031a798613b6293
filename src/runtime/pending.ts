// Work started outside the machine and not yet answered, by effect id: the
// runtime's side of the machines' wait-for-an-answer protocol. Each entry
// holds the answer it gets if it is abandoned, so a body or listener that
// never settles cannot keep a cancelled turn open; an answer that arrives
// after that is dropped by id.
import type { AgentEvent } from '../machines/types.js'

export class Pending {
  readonly #running = new Map<number, AgentEvent>()

  constructor(readonly deliver: (event: AgentEvent) => void) {}

  /** Records work `id` as running; the returned function answers the machine once, unless the work was abandoned. */
  track(id: number, abandoned: AgentEvent): (event: AgentEvent) => void {
    this.#running.set(id, abandoned)
    return (event) => {
      if (this.#running.get(id) !== abandoned) return
      this.#running.delete(id)
      this.deliver(event)
    }
  }

  /** Answers everything still running with its abandoned answer; returns how many there were. */
  abandonAll(): number {
    const answers = [...this.#running.values()]
    this.#running.clear()
    for (const answer of answers) this.deliver(answer)
    return answers.length
  }
}

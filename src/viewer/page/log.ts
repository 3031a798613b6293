// The log: every session event, one row each, filterable by type and by text.
// Only the rows in view exist in the DOM (fixed row height, a spacer for the
// rest), so 10,000 events scroll like 40. Clicking a row selects the event:
// the timeline marks its place and the details show it whole.
import { el, frameScheduler } from './dom.js'
import { summarize, where } from './describe.js'
import type { SessionModel } from './model.js'

const ROW_HEIGHT = 22
const OVERSCAN = 8

export class LogView {
  readonly root: HTMLElement
  readonly #chips: HTMLElement
  readonly #search: HTMLInputElement
  readonly #count: HTMLElement
  readonly #list: HTMLElement
  readonly #spacer: HTMLElement
  readonly #rows: HTMLElement
  readonly #onSelect: (seq: number) => void
  #model: SessionModel
  /** Types switched off. */
  readonly #hidden = new Set<string>()
  #query = ''
  /** Seqs of the events that pass the filters, in order. */
  #shown: number[] = []
  /** How many of the model's events `#shown` has looked at. */
  #scanned = 0
  #summaries: string[] = []
  #selected: number | null = null
  #follow = true
  readonly #chipFor = new Map<string, { box: HTMLInputElement; count: HTMLElement }>()
  readonly #schedule = frameScheduler(() => this.#render())

  constructor(root: HTMLElement, model: SessionModel, onSelect: (seq: number) => void) {
    this.root = root
    this.#model = model
    this.#onSelect = onSelect
    this.#search = el('input', { type: 'search', placeholder: 'filter text…', 'aria-label': 'filter the log by text', class: 'search' })
    this.#search.addEventListener('input', () => {
      this.#query = this.#search.value.toLowerCase()
      this.#refilter()
    })
    const all = el('button', { type: 'button' }, 'all')
    all.addEventListener('click', () => this.#setAll(true))
    const none = el('button', { type: 'button' }, 'none')
    none.addEventListener('click', () => this.#setAll(false))
    this.#chips = el('div', { class: 'chips', role: 'group', 'aria-label': 'event types' })
    this.#count = el('span', { class: 'count' })
    this.#spacer = el('div', { class: 'spacer' })
    this.#rows = el('div', { class: 'rows', role: 'rowgroup' })
    this.#list = el('div', { class: 'log-list', tabindex: 0, role: 'grid', 'aria-label': 'session events' }, this.#spacer, this.#rows)
    root.append(el('div', { class: 'toolbar' }, el('strong', {}, 'Log'), this.#count, all, none, this.#search), this.#chips, this.#list)
    this.#list.addEventListener('scroll', () => {
      this.#follow = this.#list.scrollTop + this.#list.clientHeight >= this.#list.scrollHeight - ROW_HEIGHT
      this.#schedule()
    })
    this.#rows.addEventListener('click', (event) => {
      const row = (event.target as Element).closest('[data-seq]')
      if (row) this.#onSelect(Number(row.getAttribute('data-seq')))
    })
    this.#list.addEventListener('keydown', (event) => {
      if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return
      event.preventDefault()
      const at = this.#selected === null ? -1 : this.#index(this.#selected)
      const next = this.#shown[Math.max(0, Math.min(this.#shown.length - 1, at + (event.key === 'ArrowDown' ? 1 : -1)))]
      if (next !== undefined) this.#onSelect(next)
    })
    new ResizeObserver(() => this.#schedule()).observe(this.#list)
  }

  /** Start over with another model. */
  setModel(model: SessionModel): void {
    this.#model = model
    this.#summaries = []
    this.#selected = null
    this.#refilter()
  }

  /** Open at the first event instead of following the newest (a stored session). */
  set follow(value: boolean) {
    this.#follow = value
  }

  /** New events arrived. */
  update(): void {
    this.#updateChips()
    this.#scan()
    this.#schedule()
  }

  /** Mark a row and scroll it into view. */
  select(seq: number): void {
    this.#selected = seq
    const index = this.#index(seq)
    const top = index * ROW_HEIGHT
    if (top < this.#list.scrollTop || top + ROW_HEIGHT > this.#list.scrollTop + this.#list.clientHeight) {
      this.#follow = false
      this.#list.scrollTop = Math.max(0, top - this.#list.clientHeight / 2)
    }
    this.#schedule()
  }

  /** Where a seq sits among the shown rows (or would, when filtered out). */
  #index(seq: number): number {
    let lo = 0
    let hi = this.#shown.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.#shown[mid] < seq) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  #summary(seq: number): string {
    return (this.#summaries[seq] ??= summarize(this.#model.events[seq], this.#model))
  }

  #passes(seq: number): boolean {
    const event = this.#model.events[seq]
    if (this.#hidden.has(event.type)) return false
    if (this.#query === '') return true
    return event.type.includes(this.#query) || this.#summary(seq).toLowerCase().includes(this.#query)
  }

  #scan(): void {
    const events = this.#model.events
    for (; this.#scanned < events.length; this.#scanned++) if (this.#passes(this.#scanned)) this.#shown.push(this.#scanned)
  }

  #refilter(): void {
    this.#shown = []
    this.#scanned = 0
    this.#updateChips()
    this.#scan()
    this.#schedule()
  }

  #setAll(on: boolean): void {
    this.#hidden.clear()
    if (!on) for (const type of this.#model.typeCounts.keys()) this.#hidden.add(type)
    for (const [type, chip] of this.#chipFor) chip.box.checked = !this.#hidden.has(type)
    this.#refilter()
  }

  #updateChips(): void {
    for (const [type, count] of this.#model.typeCounts) {
      let chip = this.#chipFor.get(type)
      if (!chip) {
        const box = el('input', { type: 'checkbox', 'data-type': type })
        box.checked = !this.#hidden.has(type)
        box.addEventListener('change', () => {
          if (box.checked) this.#hidden.delete(type)
          else this.#hidden.add(type)
          this.#refilter()
        })
        const counter = el('span', { class: 'n' })
        this.#chips.append(el('label', { class: 'chip', 'data-cat': category(type) }, box, ` ${type} `, counter))
        chip = { box, count: counter }
        this.#chipFor.set(type, chip)
      }
      chip.count.textContent = String(count)
    }
  }

  #render(): void {
    const total = this.#shown.length
    this.#spacer.style.height = `${total * ROW_HEIGHT}px`
    if (this.#follow) this.#list.scrollTop = this.#list.scrollHeight
    const first = Math.max(0, Math.floor(this.#list.scrollTop / ROW_HEIGHT) - OVERSCAN)
    const last = Math.min(total, Math.ceil((this.#list.scrollTop + this.#list.clientHeight) / ROW_HEIGHT) + OVERSCAN)
    const events = this.#model.events
    const t0 = events[0]?.time ?? 0
    const rows: HTMLElement[] = []
    for (let i = first; i < last; i++) {
      const seq = this.#shown[i]
      const event = events[seq]
      const row = el(
        'div',
        { class: `row${seq === this.#selected ? ' selected' : ''}`, role: 'row', 'data-seq': seq, 'data-type': event.type },
        el('span', { class: 'seq' }, `#${seq}`),
        el('span', { class: 'time' }, `+${((event.time - t0) / 1000).toFixed(3)}s`),
        el('span', { class: 'type', 'data-cat': category(event.type) }, event.type),
        el('span', { class: 'where' }, where(event)),
        el('span', { class: 'sum' }, this.#summary(seq)),
      )
      row.style.top = `${i * ROW_HEIGHT}px`
      rows.push(row)
    }
    this.#rows.replaceChildren(...rows)
    this.#count.textContent = total === events.length ? `${events.length} events` : `${total} of ${events.length} events`
    this.root.dataset.shown = String(total)
  }
}

/** The family of an event type, for its colour: `turn`, `step`, `assistant`, `tool`, `agent`… */
export function category(type: string): string {
  const head = type.split('/')[0]
  return /^[a-z-]+$/.test(head) ? head : 'other'
}

// The timeline: turns as bands across every row, steps and attempts inside
// them (with each attempt's streaming span), tool calls on lanes (calls that
// overlapped ran in parallel and are framed together; a call alone ran
// alone), inbox arrivals with a line to where each was claimed and a tick
// where it entered, and markers for cancels and errors. Only what is inside
// the visible window is in the DOM; it is redrawn at most once a frame.
import { el, frameScheduler, svg } from './dom.js'
import type { Item, SessionModel } from './model.js'

/** `time`: gaps between events drawn on a compressed (logarithmic) scale; `linear`: gaps in proportion; `order`: one slot per event. */
export type Scale = 'time' | 'linear' | 'order'

interface Metric {
  /** Width of one event's slot at zoom 1. */
  readonly unit: number
  /** Width of the gap before an event, at zoom 1, from the milliseconds since the previous one. */
  gap(ms: number): number
}

const METRICS: Record<Scale, Metric> = {
  time: { unit: 6, gap: (ms) => 10 * Math.log2(1 + ms / 5) },
  // gaps over ten minutes are shortened to ten minutes, so a long idle session stays within what a browser can draw
  linear: { unit: 3, gap: (ms) => 0.4 * Math.min(ms, 600_000) },
  order: { unit: 10, gap: () => 0 },
}
/** Auto zoom stretches a short session to the window, up to this much. */
const MAX_AUTO_ZOOM = 12

const ROW = { label: 16, inbox: 22, steps: 50, attempts: 76, waits: 104, tools: 132 }
const LANE = 22
const BOX = 18
/** Width the left column of row names covers. */
const GUTTER = 64

export class TimelineView {
  readonly root: HTMLElement
  readonly #scroller: HTMLElement
  readonly #canvas: HTMLElement
  readonly #svg: SVGSVGElement
  readonly #onSelect: (seq: number) => void
  readonly #onOpen: (sessionId: string) => void
  /** The logs of the subagents this session's calls started, by session id, drawn under their calls. */
  readonly children = new Map<string, SessionModel>()
  #model: SessionModel
  /** x of the left edge of each event's slot, at the current zoom. */
  #x: number[] = []
  #scale: Scale = 'time'
  #zoom = 1
  /** Zoom follows the session's length (a short one fills the window) until the user zooms. */
  #auto = true
  #follow = true
  #clock: number | null = null
  #selected: number | null = null
  #selectedUid = 0
  readonly #schedule = frameScheduler(() => this.#render())
  readonly #followBox: HTMLInputElement
  readonly #hover: HTMLElement
  readonly #now: HTMLElement
  /** False while the scroll position is being set by the view itself, so following is not switched off. */
  #userScroll = true

  constructor(root: HTMLElement, model: SessionModel, onSelect: (seq: number) => void, onOpen: (sessionId: string) => void = () => {}) {
    this.root = root
    this.#model = model
    this.#onSelect = onSelect
    this.#onOpen = onOpen
    const button = (label: string, title: string, action: () => void) => {
      const b = el('button', { type: 'button', title }, label)
      b.addEventListener('click', action)
      return b
    }
    const scale = el(
      'select',
      { 'aria-label': 'time scale', class: 'scale' },
      el('option', { value: 'time' }, 'time (compressed gaps)'),
      el('option', { value: 'linear' }, 'time (linear)'),
      el('option', { value: 'order' }, 'event order'),
    )
    scale.addEventListener('change', () => this.setScale(scale.value === 'order' || scale.value === 'linear' ? scale.value : 'time'))
    const follow = el('input', { type: 'checkbox', checked: '' })
    follow.addEventListener('change', () => {
      this.#follow = follow.checked
      if (this.#follow) this.#toEnd()
    })
    this.#followBox = follow
    const legend = el(
      'span',
      { class: 'legend' },
      ...['followup', 'steer', 'inject', 'next-step'].map((via) => el('span', { class: `key via-${via}` }, via)),
      el('span', { class: 'key parallel' }, 'parallel'),
      el('span', { class: 'key alone' }, 'alone'),
      el('span', { class: 'key failed' }, 'failed'),
    )
    this.#hover = el('span', { class: 'hover', 'aria-live': 'polite' })
    this.#now = el('span', { class: 'now', 'aria-live': 'polite' })
    const bar = el(
      'div',
      { class: 'toolbar' },
      el('strong', {}, 'Timeline'),
      el('label', {}, 'scale ', scale),
      button('−', 'zoom out (or ctrl + wheel)', () => this.zoomBy(1 / 1.6)),
      button('+', 'zoom in (or ctrl + wheel)', () => this.zoomBy(1.6)),
      button('fit', 'fit the whole session', () => this.fit()),
      el('label', { title: 'keep the newest events in view' }, follow, ' follow'),
      this.#now,
      legend,
    )
    this.#svg = svg('svg', { class: 'timeline-svg', role: 'img', 'aria-label': 'session timeline' })
    this.#canvas = el('div', { class: 'timeline-canvas' }, this.#svg)
    this.#scroller = el('div', { class: 'timeline-scroller' }, this.#canvas)
    root.append(bar, this.#scroller, el('div', { class: 'status' }, this.#hover))
    this.#svg.addEventListener('mousemove', (event) => {
      const target = (event.target as Element).closest('[data-uid]')
      const item = target ? this.#model.items.get(Number(target.getAttribute('data-uid'))) : undefined
      this.#hover.textContent = item ? hoverText(item, this.#model) : ''
    })
    this.#scroller.addEventListener('scroll', () => {
      const atEnd = this.#scroller.scrollLeft + this.#scroller.clientWidth >= this.#scroller.scrollWidth - 4
      if (!atEnd && this.#follow && this.#userScroll) this.#setFollow(false)
      this.#userScroll = true
      this.#schedule()
    })
    this.#scroller.addEventListener(
      'wheel',
      (event) => {
        if (!event.ctrlKey) return
        event.preventDefault()
        this.zoomBy(event.deltaY < 0 ? 1.25 : 0.8, event.clientX - this.#scroller.getBoundingClientRect().left)
      },
      { passive: false },
    )
    this.#svg.addEventListener('click', (event) => {
      const child = (event.target as Element).closest('[data-open]')
      if (child) return this.#onOpen(child.getAttribute('data-open') ?? '')
      const target = (event.target as Element).closest('[data-seq]')
      if (target) this.#onSelect(Number(target.getAttribute('data-seq')))
    })
    new ResizeObserver(() => this.#schedule()).observe(this.#scroller)
  }

  #setFollow(value: boolean): void {
    this.#follow = value
    this.#followBox.checked = value
  }

  /** Start over with another model (a reconnect that could not resume). */
  setModel(model: SessionModel): void {
    this.#model = model
    this.#x = []
    this.#selected = null
    this.update()
  }

  /** Stop following the tail (a stored session opens at its start). */
  set follow(value: boolean) {
    this.#setFollow(value)
  }

  setScale(scale: Scale): void {
    this.#scale = scale
    this.#x = []
    this.update()
  }

  zoomBy(factor: number, anchorX = this.#scroller.clientWidth / 2): void {
    const seq = this.#seqAt(this.#scroller.scrollLeft + anchorX)
    this.#auto = false
    this.#setZoom(this.#zoom * factor)
    this.#userScroll = false
    this.#canvas.style.width = `${this.#width()}px`
    this.#scroller.scrollLeft = Math.max(0, GUTTER + this.#pos(seq) - anchorX)
    this.#schedule()
  }

  /** Zoom so the whole session fits the window. */
  fit(): void {
    this.#extend()
    const width = this.#end() / this.#zoom
    if (width <= 0) return
    this.#auto = false
    this.#setZoom((this.#scroller.clientWidth - GUTTER - 48) / width)
    this.#userScroll = false
    this.#scroller.scrollLeft = 0
    this.#schedule()
  }

  /** New events or notes arrived. */
  update(): void {
    this.#extend()
    if (this.#auto && this.#model.events.length > 0) {
      const wanted = Math.min(MAX_AUTO_ZOOM, Math.max(1, (this.#scroller.clientWidth - GUTTER - 48) / (this.#end() / this.#zoom)))
      if (Math.abs(wanted - this.#zoom) / this.#zoom > 0.02) this.#setZoom(wanted)
    }
    if (this.#follow) this.#toEnd()
    this.#schedule()
  }

  /** Mark an event and bring it into view. */
  select(seq: number, uid: number): void {
    this.#selected = seq
    this.#selectedUid = uid
    if (seq < this.#x.length) {
      const x = GUTTER + this.#pos(seq)
      const view = this.#scroller.clientWidth
      if (x < this.#scroller.scrollLeft + GUTTER || x > this.#scroller.scrollLeft + view - 20) {
        this.#setFollow(false)
        this.#userScroll = false
        this.#scroller.scrollLeft = Math.max(0, x - view / 2)
      }
    }
    this.#schedule()
  }

  #toEnd(): void {
    this.#userScroll = false
    this.#canvas.style.width = `${this.#width()}px`
    this.#scroller.scrollLeft = this.#scroller.scrollWidth
  }

  #width(): number {
    return GUTTER + this.#end() + 48
  }

  #setZoom(zoom: number): void {
    this.#zoom = Math.min(64, Math.max(1 / 4096, zoom))
    this.#x = []
    this.#extend()
  }

  /** Place events not placed yet: each gets a slot, after the gap that precedes it. */
  #extend(): void {
    const events = this.#model.events
    const x = this.#x
    const metric = METRICS[this.#scale]
    const unit = metric.unit * this.#zoom
    for (let i = x.length; i < events.length; i++) {
      x[i] = i === 0 ? 0 : x[i - 1] + unit + metric.gap(Math.max(0, events[i].time - events[i - 1].time)) * this.#zoom
    }
  }

  /** Left edge of an event's slot; past the newest event, the right end. */
  #pos(seq: number): number {
    return seq < this.#x.length ? this.#x[seq] : this.#end()
  }

  /** Right end of the newest event's slot, and, while a live session has something open, of the time since it. */
  #end(): number {
    return this.#lastSlot() + this.#tail()
  }

  #lastSlot(): number {
    const n = this.#x.length
    return n === 0 ? 0 : this.#x[n - 1] + METRICS[this.#scale].unit * this.#zoom
  }

  /** How far "now" lies past the newest event: drawn only live, while a turn or a wait is open, so what runs has a length. */
  #tail(): number {
    const events = this.#model.events
    if (this.#clock === null || events.length === 0) return 0
    const open = this.#model.turns.at(-1)?.end === null || this.#model.waiting !== null
    if (!open) return 0
    return METRICS[this.#scale].gap(Math.max(0, this.#clock - events[events.length - 1].time)) * this.#zoom
  }

  /** The clock of a live session (epoch ms), or null for a stored one: open items reach it. */
  setNow(now: number | null): void {
    const before = this.#tail()
    this.#clock = now
    if (Math.abs(this.#tail() - before) < 0.5) return
    if (this.#follow) this.#toEnd()
    this.#schedule()
  }

  #seqAt(px: number): number {
    const x = this.#x
    let lo = 0
    let hi = Math.max(0, x.length - 1)
    const target = px - GUTTER
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (x[mid] <= target) lo = mid
      else hi = mid - 1
    }
    return lo
  }

  /** Left and right x of a span of seqs (inclusive); an open span reaches the newest event. */
  #span(start: number, end: number | null): [number, number] {
    const last = this.#x.length - 1
    const e = Math.min(end ?? last, last)
    const unit = METRICS[this.#scale].unit * this.#zoom
    if (end === null || start > last) return [GUTTER + this.#pos(start), GUTTER + this.#end()]
    return [GUTTER + this.#pos(start), GUTTER + this.#pos(e) + unit]
  }

  #render(): void {
    const model = this.#model
    const lanes = Math.max(1, model.lanes)
    // subagents: a row per tool lane that ran one, under the tool rows
    const nested = model.subagents.filter((link) => this.children.has(link.sessionId))
    const childTop = ROW.tools + lanes * LANE + 6
    const childLanes = nested.length > 0 ? lanes : 0
    const height = childTop + childLanes * (LANE + 6) + 30
    const width = this.#width()
    this.#canvas.style.width = `${width}px`
    this.#canvas.style.height = `${height}px`
    const left = this.#scroller.scrollLeft
    const view = this.#scroller.clientWidth
    const right = left + view
    this.#svg.setAttribute('width', String(view))
    this.#svg.setAttribute('height', String(height))
    this.#svg.setAttribute('viewBox', `${left} 0 ${view} ${height}`)
    this.#svg.style.left = `${left}px`
    this.root.dataset.turns = String(model.turns.length)
    this.root.dataset.lanes = String(model.lanes)
    const waiting = model.waiting
    this.#now.textContent = waiting ? `${waiting.label}${waiting.detail ? `: ${waiting.detail}` : ''}` : ''
    this.#now.dataset.wait = waiting?.wait ?? ''

    const layer = svg('g', {})
    const inView = (a: number, b: number) => b >= left && a <= right
    const selected = (item: Item) => (item.uid === this.#selectedUid ? ' selected' : '')
    // level of detail: an item that would land within a pixel or two of the one before it on its row is not drawn
    const drawnTo = new Map<string, number>()
    const crowded = (row: string, a: number, b: number, narrow = 3): boolean => {
      const last = drawnTo.get(row) ?? -Infinity
      if (b - a < narrow && a < last + 2) return true
      drawnTo.set(row, Math.max(last, b))
      return false
    }
    const label = (x: number, y: number, w: number, text: string, cls = 'label') => {
      if (w < text.length * 6 + 6) return null
      return svg('text', { x: x + 4, y, class: cls }, text)
    }

    turns: for (const [i, turn] of model.turns.entries()) {
      const [a, b] = this.#span(turn.start, turn.end)
      if (!inView(a, b) || (turn.uid !== this.#selectedUid && crowded('turns', a, b, 2))) continue turns
      const reason = turn.reason?.kind ?? 'open'
      const g = svg('g', {
        class: `turn reason-${reason}${i % 2 ? ' odd' : ''}${selected(turn)}`,
        'data-kind': 'turn',
        'data-uid': turn.uid,
        'data-seq': turn.start,
        'data-turn': turn.turn,
        'data-reason': reason,
      })
      g.append(svg('rect', { x: a, y: 0, width: Math.max(2, b - a), height }))
      const text = label(Math.max(a, left + GUTTER), 12, b - Math.max(a, left + GUTTER), `turn ${turn.turn} · ${reason}`)
      if (text) g.append(text)
      layer.append(g)
    }

    for (const step of model.steps) {
      const [a, b] = this.#span(step.start, step.end)
      if (!inView(a, b) || (step.uid !== this.#selectedUid && crowded('steps', a, b))) continue
      const g = svg('g', {
        class: `step${step.end === null ? ' open' : ''}${selected(step)}`,
        'data-kind': 'step',
        'data-uid': step.uid,
        'data-seq': step.start,
        'data-turn': step.turn,
        'data-step': step.step,
      })
      g.append(svg('rect', { x: a + 1, y: ROW.steps, width: Math.max(2, b - a - 2), height: BOX, rx: 3 }))
      const text = label(a, ROW.steps + 13, b - a, `step ${step.step}`)
      if (text) g.append(text)
      layer.append(g)
    }

    for (const attempt of model.attempts) {
      const [a, b] = this.#span(attempt.start, attempt.end)
      if (!inView(a, b) || (attempt.uid !== this.#selectedUid && crowded('attempts', a, b))) continue
      const retry = attempt.index > 1
      const g = svg('g', {
        class: `attempt outcome-${attempt.outcome}${retry ? ' retry' : ''}${selected(attempt)}`,
        'data-kind': 'attempt',
        'data-uid': attempt.uid,
        'data-seq': attempt.start,
        'data-attempt': attempt.index,
        'data-outcome': attempt.outcome,
      })
      g.append(svg('rect', { x: a + 1, y: ROW.attempts, width: Math.max(2, b - a - 2), height: BOX, rx: 3 }))
      if (attempt.streamStart !== null && attempt.streamEnd !== null) {
        const [sa, sb] = this.#span(attempt.streamStart, attempt.streamEnd)
        g.append(svg('rect', { class: 'stream', x: sa + 1, y: ROW.attempts + BOX - 5, width: Math.max(2, sb - sa - 2), height: 4, 'data-kind': 'stream' }))
      }
      const name = attempt.outcome === 'failed' ? `✕ ${attempt.failure?.code ?? ''}` : retry ? `retry ${attempt.index - 1}` : `attempt ${attempt.index}`
      const text = label(a, ROW.attempts + 12, b - a, name)
      if (text) g.append(text)
      layer.append(g)
    }

    for (const wait of model.waits) {
      const [a, b] = this.#span(wait.start, wait.end)
      const open = wait.end === null
      if (!inView(a, open ? right : b)) continue
      const g = svg('g', {
        class: `wait wait-${wait.wait}${open ? ' open' : ''}${selected(wait)}`,
        'data-kind': 'wait',
        'data-wait': wait.wait,
        'data-uid': wait.uid,
        'data-seq': wait.start,
        'data-state': open ? 'waiting' : 'done',
      })
      g.append(svg('rect', { x: a + 1, y: ROW.waits, width: Math.max(4, b - a - 2), height: BOX, rx: 3 }))
      // an open wait is what the agent is doing now: its name is always shown, reading leftwards at the right edge
      const text = open ? `${wait.label}…` : wait.label
      if (open || b - a >= text.length * 6 + 6) {
        const leftwards = open && a + text.length * 6.5 > right - 8
        g.append(svg('text', { x: leftwards ? b - 4 : a + 4, y: ROW.waits + 13, class: 'label', 'text-anchor': leftwards ? 'end' : 'start' }, text))
      }
      layer.append(g)
    }

    for (const group of model.groups) {
      if (group.calls.length < 2) continue
      const [a, b] = this.#span(group.start, group.end)
      if (!inView(a, b)) continue
      const top = Math.min(...group.calls.map((c) => c.lane))
      const bottom = Math.max(...group.calls.map((c) => c.lane))
      layer.append(
        svg(
          'rect',
          {
            class: 'group',
            'data-kind': 'group',
            'data-calls': group.calls.length,
            x: a - 1,
            y: ROW.tools + top * LANE - 3,
            width: b - a + 2,
            height: (bottom - top) * LANE + BOX + 6,
            rx: 5,
          },
          svg('title', {}, `${group.calls.length} calls ran in parallel`),
        ),
      )
    }

    for (const tool of model.tools) {
      const [a, b] = this.#span(tool.start, tool.end)
      if (!inView(a, b) || (tool.uid !== this.#selectedUid && crowded(`tools${tool.lane}`, a, b))) continue
      const together = tool.group.calls.length > 1 ? 'parallel' : 'alone'
      const g = svg('g', {
        class: `tool ${together}${tool.error ? ' error' : ''}${tool.synthetic ? ' synthetic' : ''}${tool.end === null ? ' open' : ''}${selected(tool)}`,
        'data-kind': 'tool',
        'data-uid': tool.uid,
        'data-seq': tool.start,
        'data-lane': tool.lane,
        'data-call': tool.callId,
        'data-together': together,
      })
      const y = ROW.tools + tool.lane * LANE
      g.append(svg('rect', { x: a + 1, y, width: Math.max(2, b - a - 2), height: BOX, rx: 3 }))
      const text = label(a, y + 13, b - a, tool.name)
      if (text) g.append(text)
      layer.append(g)
    }

    for (const link of nested) {
      const tool = model.tools.find((t) => t.callId === link.callId)
      const child = this.children.get(link.sessionId)
      if (!tool || !child) continue
      const [a, b] = this.#span(tool.start, tool.end)
      if (!inView(a, b)) continue
      const y = childTop + tool.lane * (LANE + 6)
      const n = Math.max(1, child.events.length)
      // the child's own events spread over the call that ran it
      const at = (seq: number) => a + 1 + ((b - a - 2) * seq) / n
      const turn = child.turns.at(-1)
      const state = turn ? (turn.reason?.kind ?? 'running') : 'starting'
      const g = svg('g', {
        class: `subagent state-${state}`,
        'data-kind': 'subagent',
        'data-call': link.callId,
        'data-session': link.sessionId,
        'data-open': link.sessionId,
        'data-turns': child.turns.length,
        'data-steps': child.steps.length,
        'data-state': state,
      })
      g.append(
        svg(
          'title',
          {},
          `subagent ${link.sessionId} of ${link.tool} #${link.callId}: ${state}, ${child.steps.length} steps — click to open its statechart and log`,
        ),
      )
      g.append(svg('rect', { class: 'frame', x: a + 1, y, width: Math.max(4, b - a - 2), height: LANE, rx: 3 }))
      for (const t of child.turns) {
        g.append(
          svg('rect', {
            class: `child-turn reason-${t.reason?.kind ?? 'open'}`,
            x: at(t.start),
            y: y + 2,
            width: Math.max(2, at((t.end ?? n - 1) + 1) - at(t.start)),
            height: 5,
          }),
        )
      }
      for (const step of child.steps) {
        g.append(svg('rect', { class: 'child-step', x: at(step.start), y: y + 9, width: Math.max(2, at((step.end ?? n - 1) + 1) - at(step.start)), height: 5 }))
      }
      for (const call of child.tools) {
        g.append(
          svg('rect', { class: 'child-tool', x: at(call.start), y: y + 16, width: Math.max(2, at((call.end ?? n - 1) + 1) - at(call.start)), height: 4 }),
        )
      }
      const text = `↳ ${link.sessionId}: ${state}`
      if (b - a > text.length * 6 + 8) g.append(svg('text', { x: a + 5, y: y + 14, class: 'label' }, text))
      layer.append(g)
    }

    for (const arrival of model.arrivals) {
      const end = arrival.enteredAt ?? arrival.claimedAt ?? arrival.discardedAt ?? null
      const [a] = this.#span(arrival.start, arrival.start)
      const [c, d] = end === null ? [a, a] : this.#span(end, end)
      if (!inView(a - 8, Math.max(a, d) + 8)) continue
      if (arrival.uid !== this.#selectedUid && crowded('inbox', a, Math.max(a, d), 12)) continue
      const via = model.viaOf(arrival)
      const state = arrival.discardedAt !== null ? 'discarded' : arrival.claimedAt !== null ? 'claimed' : 'pending'
      const g = svg('g', {
        class: `arrival via-${via} ${state}${selected(arrival)}`,
        'data-kind': 'arrival',
        'data-uid': arrival.uid,
        'data-seq': arrival.start,
        'data-via': via,
        'data-state': state,
      })
      const y = ROW.inbox + 6
      const mid = (c + d) / 2
      if (arrival.claimedAt !== null) {
        const [ca, cb] = this.#span(arrival.claimedAt, arrival.claimedAt)
        const cx = (ca + cb) / 2
        g.append(svg('line', { class: 'link', x1: a + 4, y1: y, x2: cx, y2: y }))
        g.append(svg('circle', { class: 'claim', cx, cy: y, r: 3, 'data-kind': 'claim', 'data-seq': arrival.claimedAt }))
        if (arrival.enteredAt !== null) g.append(svg('line', { class: 'enter', x1: mid, y1: y, x2: mid, y2: ROW.steps + 2 }))
      } else if (arrival.discardedAt !== null) {
        g.append(svg('line', { class: 'link', x1: a + 4, y1: y, x2: mid, y2: y }))
        g.append(svg('text', { x: mid - 3, y: y + 4, class: 'discard' }, '✕'))
      }
      g.append(svg('path', { class: 'mark', d: `M ${a} ${y - 6} L ${a + 8} ${y} L ${a} ${y + 6} z` }))
      layer.append(g)
    }

    // a label is drawn only where it does not run into the previous one on its line
    const labelEnd = { request: -Infinity, outcome: -Infinity }
    for (const marker of model.markers) {
      const [a, b] = this.#span(marker.seq, marker.seq)
      if (!inView(a - 2, b + 2)) continue
      const request = marker.type === 'cancel-request'
      const x = request ? a : b
      const g = svg('g', {
        class: `marker type-${marker.type}${selected(marker)}`,
        'data-kind': 'marker',
        'data-type': marker.type,
        'data-uid': marker.uid,
        'data-seq': marker.seq,
      })
      g.append(svg('line', { x1: x, y1: ROW.inbox - 4, x2: x, y2: height - 14 }))
      // labels near the right edge read leftwards; a request and its outcome sit on different lines
      const width = marker.label.length * 6
      const leftwards = x > right - width - 8
      const from = leftwards ? x - 3 - width : x + 3
      const line = request ? 'request' : 'outcome'
      if (from > labelEnd[line] + 6) {
        labelEnd[line] = from + width
        const anchor = leftwards ? 'end' : 'start'
        g.append(svg('text', { x: leftwards ? x - 3 : x + 3, y: request ? height - 16 : height - 4, class: 'label', 'text-anchor': anchor }, marker.label))
      }
      layer.append(g)
    }

    if (this.#selected !== null && this.#selected < model.events.length) {
      const [a, b] = this.#span(this.#selected, this.#selected)
      layer.append(svg('rect', { class: 'cursor', x: a, y: 0, width: Math.max(1, b - a), height }))
    }

    // row names stay at the left edge
    const names = svg('g', { class: 'rows' })
    names.append(svg('rect', { x: left, y: 0, width: GUTTER - 4, height }))
    const name = (y: number, text: string) => names.append(svg('text', { x: left + 4, y }, text))
    name(ROW.inbox + 10, 'inbox')
    name(ROW.steps + 13, 'steps')
    name(ROW.attempts + 13, 'attempts')
    name(ROW.waits + 13, 'waiting')
    for (let lane = 0; lane < lanes; lane++) name(ROW.tools + lane * LANE + 13, `tools ${lane + 1}`)
    for (let lane = 0; lane < childLanes; lane++) name(childTop + lane * (LANE + 6) + 14, `↳ sub ${lane + 1}`)
    layer.append(names)

    this.#svg.replaceChildren(layer)
  }
}

/** What the status line says about the item under the pointer. */
export function hoverText(item: Item, model: SessionModel): string {
  const range = (start: number, end: number | null) => `#${start}–${end ?? '…'}`
  switch (item.kind) {
    case 'turn': {
      const reason = item.reason
      let why = reason?.kind ?? 'open'
      if (reason?.kind === 'aborted') why = `aborted (${reason.reason?.kind ?? '?'}${reason.reason?.reason ? `: ${reason.reason.reason}` : ''})`
      if (reason?.kind === 'error') why = `error ${reason.error?.code ?? ''}: ${reason.error?.message ?? ''}`
      return `turn ${item.turn}: ${why}, ${item.steps.length} step${item.steps.length === 1 ? '' : 's'} (${range(item.start, item.end)})`
    }
    case 'step':
      return `turn ${item.turn} step ${item.step}: ${item.attempts.length} request${item.attempts.length === 1 ? '' : 's'} (${range(item.start, item.end)})`
    case 'attempt': {
      const failure = item.failure ? ` ${item.failure.code}: ${item.failure.message}` : ''
      return `turn ${item.turn} step ${item.step} attempt ${item.index}${item.index > 1 ? ' (retry)' : ''}: ${item.outcome}${failure}, ${item.chunks} chunks (${range(item.start, item.end)})`
    }
    case 'tool': {
      const together = item.group.calls.length > 1 ? `ran in parallel with ${item.group.calls.length - 1} more` : 'ran alone'
      const status = item.end === null ? 'running' : item.error ? `error ${item.error}` : 'ok'
      return `${item.name} #${item.callId} ${together}: ${status}${item.synthetic ? ' (never started)' : ''} (${range(item.start, item.end)})`
    }
    case 'arrival': {
      const fate =
        item.discardedAt !== null
          ? `discarded at #${item.discardedAt}`
          : item.claimedAt !== null
            ? `claimed at #${item.claimedAt}${item.claimedBy !== null ? ` by turn ${item.claimedBy}` : ''}${item.enteredAt !== null ? `, entered at #${item.enteredAt}` : ''}`
            : 'pending'
      return `${model.viaOf(item)} at #${item.start}: ${item.text} (${fate})`
    }
    case 'wait': {
      const how = item.outcome === null ? 'still waiting' : item.outcome
      return `${item.label}${item.detail ? ` (${item.detail})` : ''}: ${how} (${range(item.start, item.end)})`
    }
    case 'marker':
      return `#${item.seq}: ${item.label}`
  }
}

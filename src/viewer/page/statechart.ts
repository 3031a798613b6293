// The statechart: every machine definition the server sent, drawn as nested
// boxes (the browser's own layout does the work: compound states wrap their
// children, parallel regions stack), with the active configuration lit up,
// the transitions it could take next drawn faintly, and the last ones it took
// drawn as a fading trail. Click a compound state's name to fold it.
import type { ActorState, ChartMachine, ChartNode, ChartTransition, TransitionMark } from './protocol.js'
import { el, svg } from './dom.js'

/** How an event type reads on an edge: `always` for eventless, `done` for an onDone. */
export function eventLabel(event: string): string {
  if (event === '') return 'always'
  if (event.startsWith('xstate.done.state.')) return 'done'
  if (event.startsWith('xstate.done.actor.')) return 'done (actor)'
  return event
}

/** The paths a set of leaves makes active: each leaf and all its ancestors, the root (`''`) included. */
export function activePaths(leaves: readonly string[]): Set<string> {
  const out = new Set<string>([''])
  for (const leaf of leaves) {
    const keys = leaf.split('.')
    for (let i = 1; i <= keys.length; i++) out.add(keys.slice(0, i).join('.'))
  }
  return out
}

interface Drawn {
  readonly chart: ChartMachine
  readonly section: HTMLElement
  readonly edges: SVGSVGElement
  readonly boxes: Map<string, HTMLElement>
  readonly nodes: Map<string, ChartNode>
  active: Set<string>
}

interface Edge {
  readonly from: string
  readonly to: string
  readonly label: string
  readonly cls: string
}

export class StatechartView {
  readonly #root: HTMLElement
  readonly #machines = new Map<string, Drawn>()
  #actors: readonly ActorState[] = []
  #trail: readonly TransitionMark[] = []
  #showAll = false

  constructor(root: HTMLElement) {
    this.#root = root
    new ResizeObserver(() => this.#drawEdges()).observe(root)
  }

  /** Draw every edge of the machine, not only those leaving the active states. */
  set showAll(value: boolean) {
    this.#showAll = value
    this.#drawEdges()
  }

  /** Add a machine definition (the first one is the agent's root machine). */
  addChart(chart: ChartMachine): void {
    if (this.#machines.has(chart.id)) return
    const boxes = new Map<string, HTMLElement>()
    const nodes = new Map<string, ChartNode>()
    const body = this.#node(chart.root, boxes, nodes, true)
    const edges = svg('svg', { class: 'edges', 'aria-hidden': 'true' })
    edges.append(
      svg(
        'defs',
        {},
        ...['possible', 'trail', 'last'].map((kind) =>
          svg(
            'marker',
            {
              id: `arrow-${chart.id.replace(/[^A-Za-z0-9_-]/g, '_')}-${kind}`,
              viewBox: '0 0 10 10',
              refX: 9,
              refY: 5,
              markerUnits: 'userSpaceOnUse',
              markerWidth: 8,
              markerHeight: 8,
              orient: 'auto-start-reverse',
            },
            svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: `arrowhead ${kind}` }),
          ),
        ),
      ),
    )
    const section = el('section', { class: 'machine', 'data-machine': chart.id }, el('h3', {}, `machine ${chart.id}`), body, edges)
    this.#root.append(section)
    this.#machines.set(chart.id, { chart, section, edges, boxes, nodes, active: new Set() })
    this.#apply()
  }

  /** Light up a configuration and mark the trail of recent transitions (newest last). */
  show(actors: readonly ActorState[], trail: readonly TransitionMark[]): void {
    this.#actors = actors
    this.#trail = trail
    this.#apply()
  }

  #node(node: ChartNode, boxes: Map<string, HTMLElement>, nodes: Map<string, ChartNode>, isRoot = false): HTMLElement {
    const label = el('div', { class: 'label', title: isRoot ? 'the machine' : node.path }, isRoot ? '' : node.key)
    const box = el('div', { class: `state type-${node.type}${isRoot ? ' root' : ''}`, 'data-path': node.path, 'data-key': node.key })
    if (!isRoot) box.append(label)
    boxes.set(node.path, box)
    nodes.set(node.path, node)
    if (node.children.length > 0) {
      const holder = el('div', { class: node.type === 'parallel' ? 'regions' : 'children' })
      for (const child of node.children) {
        const childBox = this.#node(child, boxes, nodes)
        if (child.path === node.initial) childBox.classList.add('initial')
        holder.append(childBox)
      }
      box.append(holder)
      if (!isRoot) {
        label.classList.add('foldable')
        label.addEventListener('click', () => {
          box.classList.toggle('folded')
          this.#drawEdges()
        })
      }
    }
    return box
  }

  #apply(): void {
    const lastByMachine = new Map<string, TransitionMark>()
    for (const mark of this.#trail) if (mark.targets.length > 0) lastByMachine.set(mark.machine, mark)
    for (const drawn of this.#machines.values()) {
      const leaves = this.#actors.filter((a) => a.machine === drawn.chart.id).flatMap((a) => a.active)
      const active = leaves.length > 0 ? activePaths(leaves) : new Set<string>()
      const leafSet = new Set(leaves)
      for (const [path, box] of drawn.boxes) {
        box.classList.toggle('active', active.has(path))
        box.classList.toggle('leaf', leafSet.has(path))
        box.classList.remove('last-source', 'last-target')
      }
      drawn.active = active
      const last = lastByMachine.get(drawn.chart.id)
      if (last) {
        drawn.boxes.get(last.source)?.classList.add('last-source')
        for (const target of last.targets) drawn.boxes.get(target)?.classList.add('last-target')
      }
      drawn.section.dataset.active = leaves.join(' ')
    }
    this.#drawEdges()
  }

  /** The box an edge attaches to: the node's, or its nearest ancestor's when folded away. */
  #visible(drawn: Drawn, path: string): HTMLElement | undefined {
    let box = drawn.boxes.get(path)
    let keys = path === '' ? [] : path.split('.')
    while (box && box.parentElement?.closest('.folded') && keys.length > 0) {
      keys = keys.slice(0, -1)
      box = drawn.boxes.get(keys.join('.'))
    }
    return box
  }

  #edgesOf(drawn: Drawn): Edge[] {
    const edges: Edge[] = []
    const seen = new Set<string>()
    const push = (from: string, t: ChartTransition, cls: string) => {
      for (const to of t.targets) {
        const label = `${eventLabel(t.event)}${t.guard ? ` [${t.guard}]` : ''}`
        const key = `${from}>${to}>${label}`
        if (seen.has(key)) continue
        seen.add(key)
        edges.push({ from, to, label, cls })
      }
    }
    for (const [path, node] of drawn.nodes) {
      if (!this.#showAll && !drawn.active.has(path)) continue
      for (const t of node.transitions) push(path, t, 'possible')
    }
    const trail = this.#trail.filter((m) => m.machine === drawn.chart.id && m.targets.length > 0).slice(-5)
    trail.forEach((mark, i) => {
      const cls = i === trail.length - 1 ? 'last' : 'trail'
      for (const to of mark.targets) edges.push({ from: mark.source, to, label: eventLabel(mark.event), cls })
    })
    return edges
  }

  #drawEdges(): void {
    for (const drawn of this.#machines.values()) {
      const { section, edges: layer } = drawn
      const origin = section.getBoundingClientRect()
      layer.setAttribute('width', String(section.scrollWidth))
      layer.setAttribute('height', String(section.scrollHeight))
      const defs = layer.firstChild as SVGDefsElement
      layer.replaceChildren(defs)
      const markerBase = `arrow-${drawn.chart.id.replace(/[^A-Za-z0-9_-]/g, '_')}`
      for (const edge of this.#edgesOf(drawn)) {
        const a = this.#visible(drawn, edge.from)
        const b = this.#visible(drawn, edge.to)
        if (!a || !b) continue
        const ra = a.getBoundingClientRect()
        const rb = b.getBoundingClientRect()
        if (ra.width === 0 || rb.width === 0) continue
        const d = this.#path(ra, rb, origin, a === b)
        const g = svg('g', { class: `edge ${edge.cls}`, 'data-from': edge.from, 'data-to': edge.to })
        g.append(svg('path', { d: d.path, 'marker-end': `url(#${markerBase}-${edge.cls})` }))
        if (edge.cls !== 'trail') g.append(svg('text', { x: d.lx, y: d.ly }, edge.label))
        layer.append(g)
      }
    }
  }

  /** A curve from one box to another (or a loop on a box), with a point for its label. */
  #path(ra: DOMRect, rb: DOMRect, origin: DOMRect, self: boolean): { path: string; lx: number; ly: number } {
    const ox = origin.left
    const oy = origin.top
    if (self) {
      const x = ra.right - ox - 6
      const y = ra.top - oy + 2
      return { path: `M ${x - 14} ${y} C ${x - 10} ${y - 22}, ${x + 18} ${y - 16}, ${x + 4} ${y + 6}`, lx: x + 6, ly: y - 12 }
    }
    const ca = { x: ra.left + ra.width / 2 - ox, y: ra.top + ra.height / 2 - oy }
    const cb = { x: rb.left + rb.width / 2 - ox, y: rb.top + rb.height / 2 - oy }
    // leave and enter through the sides facing each other; nested boxes attach at the label corner
    const contains = (r: DOMRect, s: DOMRect) => r.left <= s.left && r.right >= s.right && r.top <= s.top && r.bottom >= s.bottom
    const anchor = (r: DOMRect, toward: { x: number; y: number }, inner: boolean) => {
      if (inner) return { x: r.left - ox + 8, y: r.top - oy + 8 }
      const c = { x: r.left + r.width / 2 - ox, y: r.top + r.height / 2 - oy }
      const dx = toward.x - c.x
      const dy = toward.y - c.y
      if (Math.abs(dx) * r.height > Math.abs(dy) * r.width) return { x: dx > 0 ? r.right - ox : r.left - ox, y: c.y }
      return { x: c.x, y: dy > 0 ? r.bottom - oy : r.top - oy }
    }
    const p = anchor(ra, cb, contains(ra, rb))
    const q = anchor(rb, ca, contains(rb, ra))
    const mx = (p.x + q.x) / 2
    const my = (p.y + q.y) / 2
    const bend = Math.min(40, Math.hypot(q.x - p.x, q.y - p.y) / 4)
    const nx = -(q.y - p.y)
    const ny = q.x - p.x
    const len = Math.hypot(nx, ny) || 1
    const cx = mx + (nx / len) * bend
    const cy = my + (ny / len) * bend
    return { path: `M ${p.x} ${p.y} Q ${cx} ${cy} ${q.x} ${q.y}`, lx: (p.x + 2 * cx + q.x) / 4, ly: (p.y + 2 * cy + q.y) / 4 - 3 }
  }
}

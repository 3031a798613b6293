// The statechart: every machine definition the server sent, drawn from the
// layout the server computed with ELK (nested boxes for compound states,
// regions side by side in a parallel state, orthogonal edges routed around
// the boxes, labels placed clear of them), with the active configuration lit
// up, the transitions it could take next drawn faintly, and the last ones it
// took drawn as a fading trail. The drawing zooms (− / + / fit) and scrolls;
// "follow" keeps the active leaf in view.
import type { ActorState, ChartLayoutEdge, ChartMachine, LayoutBox, TransitionMark } from './protocol.js'
import { el, svg } from './dom.js'

export { eventLabel } from './labels.js'

/** The paths a set of leaves makes active: each leaf and all its ancestors, the root (`''`) included. */
export function activePaths(leaves: readonly string[]): Set<string> {
  const out = new Set<string>([''])
  for (const leaf of leaves) {
    const keys = leaf.split('.')
    for (let i = 1; i <= keys.length; i++) out.add(keys.slice(0, i).join('.'))
  }
  return out
}

interface DrawnEdge {
  readonly edge: ChartLayoutEdge
  readonly g: SVGGElement
  readonly label: SVGGElement
}

interface Drawn {
  readonly chart: ChartMachine
  readonly section: HTMLElement
  readonly canvas: SVGSVGElement
  readonly boxes: Map<string, SVGGElement>
  readonly edges: DrawnEdge[]
  readonly byPair: Map<string, DrawnEdge>
  readonly width: number
  readonly height: number
  active: Set<string>
}

/** The smallest scale "follow" zooms to: below it the 11px labels stop being readable. */
const MIN_FOLLOW_ZOOM = 0.75

const pairKey = (from: string, to: string) => `${from}\u0000${to}`
const markerId = (machine: string, kind: string) => `arrow-${machine.replace(/[^A-Za-z0-9_-]/g, '_')}-${kind}`

export class StatechartView {
  readonly #root: HTMLElement
  readonly #machines = new Map<string, Drawn>()
  #actors: readonly ActorState[] = []
  #trail: readonly TransitionMark[] = []
  #showAll = false
  #zoom = 1
  #follow = true
  #onFollow: ((following: boolean) => void) | undefined

  constructor(root: HTMLElement) {
    this.#root = root
  }

  /** Draw every edge of the machine, not only those leaving the active states. */
  set showAll(value: boolean) {
    this.#showAll = value
    this.#apply()
  }

  /** Keep the active leaf in view as the machine moves. */
  set follow(value: boolean) {
    this.#follow = value
    if (value) this.#reveal()
  }

  get zoom(): number {
    return this.#zoom
  }

  /** Scale the drawings (1 is the layout's own size). */
  setZoom(zoom: number): void {
    this.#follow = false
    this.#onFollow?.(false)
    this.#zoom = Math.min(2, Math.max(0.1, zoom))
    for (const drawn of this.#machines.values()) this.#size(drawn)
    this.#root.dataset.zoom = this.#zoom.toFixed(2)
  }

  /** Told when zooming by hand stops the view from following the machine. */
  set onFollow(listener: (following: boolean) => void) {
    this.#onFollow = listener
  }

  /** Zoom so the widest machine fits the panel's width. */
  fit(): void {
    const widest = Math.max(1, ...[...this.#machines.values()].map((d) => d.width))
    this.setZoom((this.#root.clientWidth - 24) / widest)
  }

  /** Add a machine definition (the first one is the agent's root machine). */
  addChart(chart: ChartMachine): void {
    if (this.#machines.has(chart.id) || !chart.layout) return
    const layout = chart.layout
    const canvas = svg('svg', { class: 'chart-svg', viewBox: `0 0 ${layout.width} ${layout.height}`, role: 'img', 'aria-label': `statechart of ${chart.id}` })
    canvas.append(
      svg(
        'defs',
        {},
        ...['possible', 'trail', 'last', 'all'].map((kind) =>
          svg(
            'marker',
            {
              id: markerId(chart.id, kind),
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
    const boxes = new Map<string, SVGGElement>()
    const states = svg('g', { class: 'states' })
    // parents first, so children are drawn over them
    const visit = (node: ChartMachine['root'], parentType: string | null) => {
      const box = layout.boxes[node.path]
      if (box && node.path !== '') states.append(this.#state(node, box, parentType, boxes))
      for (const child of node.children) visit(child, node.type)
      const initial = node.initial !== undefined ? boxes.get(node.initial) : undefined
      const at = node.initial !== undefined ? layout.boxes[node.initial] : undefined
      if (initial && at) {
        initial.classList.add('initial')
        initial.append(svg('circle', { class: 'initial-dot', cx: at.x + 7, cy: at.y + 7, r: 3 }))
      }
    }
    visit(chart.root, null)
    const edgeLayer = svg('g', { class: 'edges' })
    const labelLayer = svg('g', { class: 'edge-labels' })
    const edges: DrawnEdge[] = []
    const byPair = new Map<string, DrawnEdge>()
    for (const edge of layout.edges) {
      const g = svg('g', { class: 'edge', 'data-from': edge.from, 'data-to': edge.to })
      const d = edge.points.map(([x, y], i) => `${i === 0 ? 'M' : 'L'} ${x} ${y}`).join(' ')
      g.append(svg('path', { d }))
      const { x, y, width, height, lines } = edge.label
      const label = svg('g', { class: 'edge-label', 'data-from': edge.from, 'data-to': edge.to })
      label.append(svg('title', {}, edge.title), svg('rect', { x, y, width, height, rx: 3 }))
      const text = svg('text', { x: x + 4, y: y + 2 })
      for (const [i, line] of lines.entries()) text.append(svg('tspan', { x: x + 4, dy: i === 0 ? 11 : 14 }, line))
      label.append(text)
      edgeLayer.append(g)
      labelLayer.append(label)
      const drawn = { edge, g, label }
      edges.push(drawn)
      byPair.set(pairKey(edge.from, edge.to), drawn)
    }
    canvas.append(states, edgeLayer, labelLayer)
    const section = el('section', { class: 'machine', 'data-machine': chart.id }, el('h3', {}, `machine ${chart.id}`), canvas)
    this.#root.append(section)
    const drawn: Drawn = { chart, section, canvas, boxes, edges, byPair, width: layout.width, height: layout.height, active: new Set() }
    this.#machines.set(chart.id, drawn)
    this.#size(drawn)
    this.#apply()
  }

  /** Light up a configuration and mark the trail of recent transitions (newest last). */
  show(actors: readonly ActorState[], trail: readonly TransitionMark[]): void {
    this.#actors = actors
    this.#trail = trail
    this.#apply()
  }

  #size(drawn: Drawn): void {
    drawn.canvas.setAttribute('width', String(Math.round(drawn.width * this.#zoom)))
    drawn.canvas.setAttribute('height', String(Math.round(drawn.height * this.#zoom)))
  }

  #state(node: ChartMachine['root'], box: LayoutBox, parentType: string | null, boxes: Map<string, SVGGElement>): SVGGElement {
    const leafLike = node.children.length === 0
    const region = parentType === 'parallel' ? ' region' : ''
    const g = svg('g', { class: `state type-${node.type}${region}`, 'data-path': node.path, 'data-key': node.key })
    g.append(svg('title', {}, node.path))
    g.append(svg('rect', { class: 'box', x: box.x, y: box.y, width: box.width, height: box.height, rx: 6 }))
    if (node.type === 'final') g.append(svg('rect', { class: 'inner', x: box.x + 3, y: box.y + 3, width: box.width - 6, height: box.height - 6, rx: 4 }))
    const name = leafLike
      ? svg('text', { class: 'name', x: box.x + box.width / 2, y: box.y + box.height / 2 + 4, 'text-anchor': 'middle' }, node.key)
      : svg('text', { class: 'name', x: box.x + 10, y: box.y + 17 }, node.key)
    g.append(name)
    boxes.set(node.path, g)
    return g
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
      this.#edges(drawn)
    }
    if (this.#follow) this.#reveal()
  }

  /** Which edges show, and how: the trail's, those leaving an active state, or all of them. */
  #edges(drawn: Drawn): void {
    const kinds = new Map<DrawnEdge, string>()
    const trail = this.#trail.filter((m) => m.machine === drawn.chart.id && m.targets.length > 0).slice(-5)
    trail.forEach((mark, i) => {
      for (const to of mark.targets) {
        const edge = drawn.byPair.get(pairKey(mark.source, to))
        if (edge) kinds.set(edge, i === trail.length - 1 ? 'last' : 'trail')
      }
    })
    for (const edge of drawn.edges) {
      if (kinds.has(edge)) continue
      if (drawn.active.has(edge.edge.from)) kinds.set(edge, 'possible')
      else if (this.#showAll) kinds.set(edge, 'all')
    }
    for (const edge of drawn.edges) {
      const kind = kinds.get(edge)
      edge.g.setAttribute('class', `edge${kind ? ` ${kind}` : ' hidden'}`)
      edge.label.setAttribute('class', `edge-label${kind ? ` ${kind}` : ' hidden'}`)
      edge.g.firstElementChild?.setAttribute('marker-end', kind ? `url(#${markerId(drawn.chart.id, kind)})` : '')
    }
  }

  /**
   * Point the panel at what matters now in the first machine: its active leaves, where they can go
   * next and the labels on the way, zoomed to fit (never above actual size, never so small it cannot be read).
   */
  #reveal(): void {
    const drawn = this.#machines.values().next().value
    const layout = drawn?.chart.layout
    if (!drawn || !layout) return
    const leaves = drawn.section.dataset.active ? drawn.section.dataset.active.split(' ') : []
    const boxes: LayoutBox[] = leaves.map((leaf) => layout.boxes[leaf]).filter((b): b is LayoutBox => b !== undefined)
    if (boxes.length === 0) return
    // the leaves' own ways out and the last step taken (an enclosing state's edges would widen the view to the whole chart)
    const from = new Set(leaves)
    for (const { edge, g } of drawn.edges) {
      if (!g.classList.contains('last') && !(from.has(edge.from) && g.classList.contains('possible'))) continue
      boxes.push(edge.label)
      const target = layout.boxes[edge.to]
      if (target && !leaves.some((leaf) => leaf.startsWith(`${edge.to}.`))) boxes.push(target)
      if (g.classList.contains('last') && layout.boxes[edge.from] && !leaves.some((leaf) => leaf.startsWith(`${edge.from}.`)))
        boxes.push(layout.boxes[edge.from])
    }
    const left = Math.min(...boxes.map((b) => b.x)) - 16
    const top = Math.min(...boxes.map((b) => b.y)) - 16
    const right = Math.max(...boxes.map((b) => b.x + b.width)) + 16
    const bottom = Math.max(...boxes.map((b) => b.y + b.height)) + 16
    const view = this.#root
    const fits = Math.min((view.clientWidth - 24) / (right - left), (view.clientHeight - 40) / (bottom - top))
    const zoom = Math.min(1, Math.max(MIN_FOLLOW_ZOOM, fits))
    // when it all does not fit at a readable size, the state just entered is the centre
    const entered = leaves.find((leaf) => drawn.boxes.get(leaf)?.classList.contains('last-target')) ?? leaves[0]
    const focus = zoom > fits ? layout.boxes[entered] : undefined
    const cx = focus ? focus.x + focus.width / 2 : (left + right) / 2
    const cy = focus ? focus.y + focus.height / 2 : (top + bottom) / 2
    if (Math.abs(zoom - this.#zoom) > 0.01) {
      this.#zoom = zoom
      for (const d of this.#machines.values()) this.#size(d)
      this.#root.dataset.zoom = zoom.toFixed(2)
    }
    const offset = drawn.canvas.getBoundingClientRect().top - view.getBoundingClientRect().top + view.scrollTop
    view.scrollLeft = Math.max(0, cx * zoom - view.clientWidth / 2)
    view.scrollTop = Math.max(0, offset + cy * zoom - view.clientHeight / 2)
  }
}

// The statechart's drawing, computed once per machine with ELK (the Eclipse
// Layout Kernel, as elkjs): layered, with the state hierarchy kept (a compound
// state's children are laid out inside it), orthogonal edges routed around the
// boxes, and each edge's label placed by ELK as a label of its own, so no label
// sits on a state. One edge per source and target: its label lists the
// transitions it stands for (event and guard), wrapped and cut to a few lines,
// with the whole text kept for the page's hover.
import type { ELK as Elk, ELKConstructorArguments, ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js'
import type { ChartLayout, ChartLayoutEdge, ChartMachine, ChartNode, LayoutBox } from './page/protocol.js'
import { labelLines, transitionText } from './page/labels.js'

/** Text metrics the page's stylesheet keeps: monospace 11px labels, a 12px bold state name. */
const LABEL_CHAR = 6.7
const LABEL_LINE = 14
const NAME_CHAR = 7.6
const NAME_HEIGHT = 18

let elk: Promise<Elk> | undefined
/** ELK, loaded on the first layout (its bundle is large, and importing the viewer need not parse it). */
function layouter(): Promise<Elk> {
  // the bundle is CommonJS: its module object is the constructor
  elk ??= import('elkjs/lib/elk.bundled.js').then(({ default: ELK }) => new (ELK as unknown as new (args?: ELKConstructorArguments) => Elk)())
  return elk
}
/** Layouts by chart definition: every viewer of the same machine shares one. */
const cache = new Map<string, Promise<ChartLayout>>()

const nodeId = (path: string) => (path === '' ? 'root' : `state:${path}`)

function elkNode(node: ChartNode): ElkNode {
  const nameWidth = node.key.length * NAME_CHAR + 16
  if (node.children.length === 0) {
    // a final state is drawn with a double border: a little more room
    const pad = node.type === 'final' ? 8 : 0
    return { id: nodeId(node.path), width: Math.max(56, nameWidth + 8) + pad, height: 30 + pad }
  }
  return {
    id: nodeId(node.path),
    // the name sits in the top band; ELK keeps the children below it and the box at least as wide as the name
    layoutOptions: {
      'elk.padding': `[top=${NAME_HEIGHT + 12},left=12,bottom=12,right=12]`,
      'elk.nodeSize.constraints': 'MINIMUM_SIZE',
      'elk.nodeSize.minimum': `(${nameWidth + 24}, ${NAME_HEIGHT + 30})`,
      // parallel regions sit side by side, compound children flow top to bottom
      ...(node.type === 'parallel' ? { 'elk.direction': 'RIGHT' } : {}),
    },
    children: node.children.map(elkNode),
  }
}

interface Pair {
  from: string
  to: string
  texts: string[]
}

/** The machine's transitions grouped by source and target (targetless transitions stay put and are not edges). */
function pairsOf(root: ChartNode): Pair[] {
  const pairs = new Map<string, Pair>()
  const visit = (node: ChartNode) => {
    for (const t of node.transitions) {
      for (const to of t.targets) {
        const key = `${node.path}\u0000${to}`
        let pair = pairs.get(key)
        if (!pair) pairs.set(key, (pair = { from: node.path, to, texts: [] }))
        pair.texts.push(transitionText(t.event, t.guard))
      }
    }
    node.children.forEach(visit)
  }
  visit(root)
  return [...pairs.values()]
}

function boxesOf(node: ElkNode, out: Record<string, LayoutBox>): void {
  const path = node.id === 'root' ? '' : node.id.slice('state:'.length)
  out[path] = { x: node.x ?? 0, y: node.y ?? 0, width: node.width ?? 0, height: node.height ?? 0 }
  for (const child of node.children ?? []) boxesOf(child, out)
}

async function compute(chart: ChartMachine): Promise<ChartLayout> {
  const pairs = pairsOf(chart.root)
  const edges: ElkExtendedEdge[] = pairs.map((pair, i) => {
    const lines = labelLines(pair.texts)
    return {
      id: `edge:${i}`,
      sources: [nodeId(pair.from)],
      targets: [nodeId(pair.to)],
      labels: [
        { id: `label:${i}`, text: lines.join('\n'), width: Math.max(...lines.map((l) => l.length)) * LABEL_CHAR + 8, height: lines.length * LABEL_LINE + 4 },
      ],
    }
  })
  const graph: ElkNode = {
    ...elkNode(chart.root),
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.edgeRouting': 'ORTHOGONAL',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
      'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
      'elk.spacing.nodeNode': '24',
      'elk.spacing.edgeLabel': '4',
      'elk.spacing.edgeEdge': '10',
      'elk.spacing.edgeNode': '14',
      'elk.layered.spacing.nodeNodeBetweenLayers': '32',
      'elk.layered.spacing.edgeNodeBetweenLayers': '14',
      'elk.padding': '[top=12,left=12,bottom=12,right=12]',
      // every coordinate relative to the chart's top left, so the page needs no arithmetic per nesting level
      'elk.json.shapeCoords': 'ROOT',
      'elk.json.edgeCoords': 'ROOT',
    },
    edges,
  }
  const out = await (await layouter()).layout(graph)
  const boxes: Record<string, LayoutBox> = {}
  boxesOf(out, boxes)
  const laidOut: ChartLayoutEdge[] = (out.edges ?? []).map((edge, i) => {
    const pair = pairs[i]
    const points: Array<readonly [number, number]> = []
    // whole pixels: ELK's crossings of a compound's border can leave sub-pixel jogs in a straight line
    const at = (p: { x: number; y: number }) => points.push([Math.round(p.x), Math.round(p.y)])
    for (const section of edge.sections ?? []) {
      at(section.startPoint)
      for (const bend of section.bendPoints ?? []) at(bend)
      at(section.endPoint)
    }
    const label = edge.labels?.[0]
    return {
      from: pair.from,
      to: pair.to,
      points,
      label: {
        x: label?.x ?? points[0]?.[0] ?? 0,
        y: label?.y ?? points[0]?.[1] ?? 0,
        width: label?.width ?? 0,
        height: label?.height ?? 0,
        lines: (label?.text ?? '').split('\n'),
      },
      title: pair.texts.join('\n'),
    }
  })
  return { width: out.width ?? 0, height: out.height ?? 0, boxes, edges: laidOut }
}

/** The drawing of a chart (computed once per definition: a machine's layout does not change). */
export function layoutChart(chart: ChartMachine): Promise<ChartLayout> {
  const key = JSON.stringify(chart)
  let layout = cache.get(key)
  if (!layout) {
    layout = compute(chart)
    cache.set(key, layout)
    layout.catch(() => cache.delete(key))
  }
  return layout
}

/** The chart with its drawing attached, as the page receives it. */
export async function withLayout(chart: ChartMachine): Promise<ChartMachine> {
  return { ...chart, layout: await layoutChart(chart) }
}

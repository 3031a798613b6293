// docs/telemetry.md shows examples/telemetry.ts, the span tree it really writes and the attributes of two of its
// spans; this test runs the example and fails when any of them drifts (AGENTCHART_REFRESH_DOCS=1 rewrites them).
import { readFileSync, writeFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { telemetryExample } from '../../examples/telemetry.js'
import { spanTree, type SpanNode } from '../telemetry/support.js'

const DOC = 'docs/telemetry.md'

/** The doc's fenced block after `<!-- captured:name -->`, checked against (or rewritten with) `text`. */
function captured(name: string, text: string): void {
  let source = readFileSync(DOC, 'utf8')
  const pattern = new RegExp(`(<!-- captured:${name} -->\\n\`\`\`\\w*\\n)[\\s\\S]*?(\\n\`\`\`)`)
  if (process.env.AGENTCHART_REFRESH_DOCS) {
    source = source.replace(pattern, (_all, open: string, close: string) => `${open}${text}${close}`)
    writeFileSync(DOC, source)
  }
  expect(pattern.exec(source)?.[0], `${DOC} ${name}: refresh with AGENTCHART_REFRESH_DOCS=1`).toContain(`\n${text}\n`)
}

// what each line of the drawing names besides the span: the attributes that tell the spans apart
const SHOWN = [
  'agentchart.turn.end_reason',
  'agentchart.step',
  'agentchart.attempt',
  'agentchart.retry',
  'agentchart.retry.delay_ms',
  'error.type',
  'gen_ai.response.finish_reasons',
  'gen_ai.tool.call.id',
]

/** The tree with box lines: `name  start–end ms  key=value …`, times from the first span's start. */
function drawing(nodes: readonly SpanNode[], prefix = ''): string[] {
  return nodes.flatMap((node, k) => {
    const last = k === nodes.length - 1
    const branch = prefix === '' && nodes.length === 1 ? '' : last ? '└─ ' : '├─ '
    const label = `${prefix}${branch}${node.name}`
    // the step number is shown on steps only: under a step it would repeat its parent's
    const shown = SHOWN.filter((key) => node.attributes[key] !== undefined && (key !== 'agentchart.step' || node.name === 'step')).map(
      (key) => `${key}=${JSON.stringify(node.attributes[key])}`,
    )
    const line = `${label.padEnd(34)} ${`${node.start}–${node.end} ms`.padEnd(10)} ${node.status.code === 2 ? 'ERROR ' : ''}${shown.join(' ')}`.trimEnd()
    const deeper = prefix === '' && nodes.length === 1 ? '' : prefix + (last ? '   ' : '│  ')
    return [line, ...drawing(node.children, deeper)]
  })
}

const attributesOf = (node: SpanNode) =>
  [`${node.name}`, ...Object.entries(node.attributes).map(([key, value]) => `  ${key} = ${JSON.stringify(value)}`)].join('\n')

describe('docs/telemetry.md', () => {
  it('shows examples/telemetry.ts, the span tree of its tool-using turn, and the same tree from the log', async () => {
    const { live, exported } = await telemetryExample()
    const tree = spanTree(live)
    expect(spanTree(exported)).toEqual(tree)
    captured('code', readFileSync('examples/telemetry.ts', 'utf8').trimEnd())
    captured('tree', drawing(tree).join('\n'))
    const [turn] = tree
    const step = turn.children[0]
    const answered = step.children.filter((n) => n.name.startsWith('chat '))[1]
    const call = step.children.find((n) => n.name.startsWith('execute_tool '))!
    captured('attributes', [attributesOf(turn), attributesOf(answered), attributesOf(call)].join('\n\n'))
  })
})

// The worked examples of README.md (streaming), docs/approvals.md, docs/forks.md, docs/subagents.md and docs/mcp.md: each doc shows
// the example's code and the log it really writes; this test runs the code
// and fails when either drifts (AGENTCHART_REFRESH_DOCS=1 rewrites the logs).
import { readFileSync, writeFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { approvalsExample } from '../../examples/approvals.js'
import { forksExample } from '../../examples/forks.js'
import { subagentsExample } from '../../examples/subagents.js'
import { mcpExample } from '../../examples/mcp.js'
import { streamingExample } from '../../examples/streaming.js'

/** One line per event, chunks left out: `seq type {data}` with message ids and times dropped. */
function logLines(events: readonly SessionEvent[]): string {
  return events
    .filter((e) => e.type !== 'assistant/chunk')
    .map((e) => {
      // message ids are generated (random per instance): shown as …
      const data = JSON.stringify(e.data, function (this: unknown, key: string, value: unknown) {
        return key === 'id' && typeof this === 'object' && this !== null && 'role' in this ? '…' : value
      })
      return `${String(e.seq).padStart(2)} ${e.type} ${data}`
    })
    .join('\n')
}

/** The doc's fenced block after `<!-- captured:name -->`, checked against (or rewritten with) `text`. */
function captured(doc: string, name: string, text: string): void {
  let source = readFileSync(doc, 'utf8')
  const pattern = new RegExp(`(<!-- captured:${name} -->\\n\`\`\`\\w*\\n)[\\s\\S]*?(\\n\`\`\`)`)
  if (process.env.AGENTCHART_REFRESH_DOCS) {
    source = source.replace(pattern, (_all, open: string, close: string) => `${open}${text}${close}`)
    writeFileSync(doc, source)
  }
  expect(pattern.exec(source)?.[0], `${doc} ${name}: refresh with AGENTCHART_REFRESH_DOCS=1`).toContain(`\n${text}\n`)
}

describe('worked examples', () => {
  it('docs/approvals.md shows examples/approvals.ts and the log it writes', async () => {
    const events = await approvalsExample()
    expect(checkSessionInvariants(events)).toEqual([])
    captured('docs/approvals.md', 'code', readFileSync('examples/approvals.ts', 'utf8').trimEnd())
    captured('docs/approvals.md', 'log', logLines(events))
  })

  it('README.md streams the answer to a user as examples/streaming.ts does, delta by delta', async () => {
    const written: string[] = []
    const result = await streamingExample((text) => written.push(text))
    expect(result.text).toBe('Your order A-17 shipped on Monday.')
    // the answer arrives in pieces before run() resolves, and the pieces are the whole answer
    expect(written.length).toBeGreaterThan(2)
    expect(written.join('')).toBe(`${result.text}\n`)
    const code = readFileSync('examples/streaming.ts', 'utf8').trimEnd()
    captured('README.md', 'streaming', code.replace("'../src/index.js'", "'agentchart'").replace("'../src/testing/index.js'", "'agentchart/testing'"))
  })

  it('docs/forks.md shows examples/forks.ts and the logs it writes', async () => {
    const { parent, fork } = await forksExample()
    for (const events of [parent, fork]) expect(checkSessionInvariants(events)).toEqual([])
    captured('docs/forks.md', 'code', readFileSync('examples/forks.ts', 'utf8').trimEnd())
    captured('docs/forks.md', 'parent', logLines(parent))
    captured('docs/forks.md', 'fork', logLines(fork))
  })

  it('docs/subagents.md shows examples/subagents.ts and the logs of the planner and a child', async () => {
    const { planner, children, text } = await subagentsExample()
    expect(text).toBe('Go in May and take the train.')
    expect(children).toHaveLength(3)
    for (const events of [planner, ...children]) expect(checkSessionInvariants(events)).toEqual([])
    captured('docs/subagents.md', 'code', readFileSync('examples/subagents.ts', 'utf8').trimEnd())
    captured('docs/subagents.md', 'planner', logLines(planner))
    captured('docs/subagents.md', 'child', logLines(children.find((c) => c.some((e) => JSON.stringify(e.data).includes('weather')))!))
  })

  it('docs/mcp.md shows examples/mcp.ts and the log it writes against server-everything', async () => {
    const { events, tools, text } = await mcpExample()
    expect(tools).toEqual(['everything_echo', 'everything_get-sum'])
    expect(text).toBe('2 + 40 is 42.')
    expect(checkSessionInvariants(events)).toEqual([])
    captured('docs/mcp.md', 'code', readFileSync('examples/mcp.ts', 'utf8').trimEnd())
    captured('docs/mcp.md', 'log', logLines(events))
  })
})

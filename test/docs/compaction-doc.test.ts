// docs/compaction.md shows the trace its worked example really logs.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { formatTrace, runCompactionExample } from './compaction-example.js'

describe('docs/compaction.md', () => {
  it('CP-2: the worked example logs exactly the trace the page shows, and the compacted request carries summary and tail', async () => {
    const { agent, requests } = await runCompactionExample()
    const page = readFileSync('docs/compaction.md', 'utf8')
    const shown = /<!-- trace:begin -->\n```text\n([\s\S]*?)\n```\n<!-- trace:end -->/.exec(page)![1]
    expect(formatTrace(agent.session.events).join('\n')).toBe(shown)
    expect(checkSessionInvariants(agent.session.events)).toEqual([])
    const summary = agent.session.events.find((e) => e.type === 'user/message' && e.surfaceOp !== 'append')!
    const answer3 = agent.session.events.filter((e) => e.type === 'assistant/message')[2]
    const last = requests.at(-1)!
    expect(last.messages.map((m) => m.id)).toEqual([(summary.data as { id: string }).id, 'q3', (answer3.data as { message: { id: string } }).message.id, 'q4'])
  })
})

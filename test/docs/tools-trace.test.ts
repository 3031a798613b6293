// docs/tools.md section 5 shows the trace scripts/tool-trace.ts prints (the
// log plus the hook calls and tool bodies between appends) and explains it line
// by line; it had drifted once unnoticed, so this test runs the script and
// compares. The order is fixed by the machine and by two timers of 5 and 300 ms
// set microtasks apart (300 ms of margin), never by how fast the machine is.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

describe('docs/tools.md worked example', () => {
  it('shows the trace scripts/tool-trace.ts prints', () => {
    const doc = readFileSync(path.join(root, 'docs/tools.md'), 'utf8')
    const section = doc.slice(doc.indexOf('## 5. Worked example'))
    const shown = /```text\n([\s\S]*?)\n```/.exec(section)?.[1]
    const printed = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/tool-trace.ts'], { cwd: root, encoding: 'utf8' }).trimEnd()
    expect(shown).toBe(printed)
  })
})

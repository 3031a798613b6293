// Two processes on one SQLite file: this one opens a long stored session while a
// child process drives a live session on the same file. The open must not hold
// the file's write lock while it reads and validates the log, or the live
// session's commits wait past their busy timeout and it halts with STORE_FAULT.
// The long session is 200,000 events and the child's busy timeout 500 ms: an
// open that replays the log under the lock takes several times that here.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { createAgent } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { buildLog, growthAgentOptions, recordTemplate } from '../../bench/growth-log.js'

const LONG_EVENTS = 200_000
const CHILD_BUSY_TIMEOUT_MS = 500
const child = fileURLToPath(new URL('./live-driver-child.ts', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'agentchart-open-lock-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Resolves once `check` holds, polling; rejects after `ms` naming what it waited for. */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('opening a long SQLite session beside a live one in another process', () => {
  it('the live session keeps committing its turns and is not halted while the long one opens', { timeout: 180_000 }, async () => {
    const path = join(dir, 'shared.db')
    const shape = { compaction: true }
    const seeding = sqliteStore({ path })
    const handle = await seeding.open('long')
    const events = buildLog(await recordTemplate(shape), LONG_EVENTS)
    for (let i = 0; i < events.length; i += 10_000) await handle.append(events.slice(i, i + 10_000))
    await handle.release()
    await seeding.close()

    const proc = spawn(process.execPath, ['--import', 'tsx', child, path, 'live', String(CHILD_BUSY_TIMEOUT_MS)], { stdio: ['pipe', 'pipe', 'pipe'] })
    const lines: string[] = []
    let stderr = ''
    let buffered = ''
    proc.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      const parts = buffered.split('\n')
      buffered = parts.pop()!
      lines.push(...parts)
    })
    proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    try {
      await until(() => lines.includes('READY'), 60_000, `the child to open its session (${stderr})`)
      proc.stdin.write('go\n')
      const turns = () => lines.filter((l) => l.startsWith('TURN ')).length
      await until(() => turns() >= 3, 60_000, `the live session's first turns (${stderr})`)

      const store = sqliteStore({ path })
      const long = await createAgent({ ...growthAgentOptions(shape), store, sessionId: 'long' })
      expect(long.session.length).toBe(events.length + 1) // every stored event and the seed's end marker
      const afterOpen = turns()
      await until(() => turns() >= afterOpen + 3 || lines.some((l) => l.startsWith('DONE')), 60_000, `live turns after the open (${stderr})`)
      await long.dispose()
      await store.close()

      proc.stdin.write('stop\n')
      await until(() => lines.some((l) => l.startsWith('DONE')), 60_000, `the child to stop (${stderr})`)
      const done = lines.find((l) => l.startsWith('DONE'))!
      expect(done.split(' ').slice(2).join(' ')).toBe('ok')
      expect(turns()).toBeGreaterThanOrEqual(afterOpen + 3)
    } finally {
      proc.kill()
    }
  })
})

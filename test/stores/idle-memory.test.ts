// Memory per idle stored session does not grow with the session's length: an
// idle agent over a long stored session (its history bounded by compaction)
// keeps no more heap than one over a short session, and under 64 KiB more.
// Heap deltas need --expose-gc, so a child process measures them.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, expect, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'agentchart-idle-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

it('RS-8: an idle agent over a long stored session keeps the heap of one over a short session', async () => {
  const child = fileURLToPath(new URL('./idle-memory-child.ts', import.meta.url))
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', child, join(dir, 'idle.db'), '100', '20000', '12'], {
    timeout: 170_000,
  })
  const { lengths, short, long, session } = JSON.parse(stdout.trim().split('\n').pop()!) as {
    lengths: { short: number; long: number }
    short: number
    long: number
    session: number
  }
  expect(lengths.long).toBeGreaterThan(100 * lengths.short)
  // what grows with the log's length: nothing beyond noise (an event kept per session would be 300 bytes each, 6 MB here)
  expect(long - short).toBeLessThan(16 * 1024)
  expect(long).toBeLessThan(64 * 1024)
  // the session itself: its history since the last compaction, the header and the inbox, not its log
  expect(session).toBeLessThan(64 * 1024)
}, 180_000)

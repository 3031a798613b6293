// Two processes on one SQLite file: one opens a long stored session, validating
// its whole log, while the other drives a live session whose busy timeout is
// far shorter than that open. The open reads outside the write lock, so the
// live session keeps committing turns while it runs and is never halted.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteStore } from '../../src/stores/index.js'
import { recordCycle, seedLongSession } from './long-log.js'

const LONG = Number(process.env.AGENTCHART_LONG_OPEN_EVENTS ?? 300_000)
const dir = mkdtempSync(join(tmpdir(), 'agentchart-long-open-'))
const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

/** A child under tsx; `lines` fills as it prints, `next(test)` waits for a matching line. */
function child(args: string[]) {
  const proc = spawn(process.execPath, ['--import', 'tsx', here('./long-open-child.ts'), ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  children.push(proc)
  const lines: string[] = []
  const waiting: { test: (line: string) => boolean; resolve: (line: string) => void }[] = []
  let stderr = ''
  let buffered = ''
  proc.stdout!.on('data', (data: Buffer) => {
    buffered += data.toString()
    const parts = buffered.split('\n')
    buffered = parts.pop()!
    for (const line of parts) {
      lines.push(line)
      for (const w of [...waiting]) {
        if (!w.test(line)) continue
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve(line)
      }
    }
  })
  proc.stderr!.on('data', (data: Buffer) => (stderr += data.toString()))
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  const next = (test: (line: string) => boolean) => {
    const seen = lines.find(test)
    return seen !== undefined ? Promise.resolve(seen) : new Promise<string>((resolve) => waiting.push({ test, resolve }))
  }
  return { proc, lines, next, exited, stderr: () => stderr }
}

describe('two processes on one SQLite file', () => {
  it('RS-8: a long session opening in one process does not hold up a live session driven by another', async () => {
    const path = join(dir, 'shared.db')
    const store = sqliteStore({ path })
    const length = await seedLongSession(store, 'long', await recordCycle(), LONG)
    await store.close()

    const live = child(['live', path, 'live', '200'])
    await live.next((line) => line === 'turn 1')
    const opener = child(['open', path, 'long', '200'])
    await opener.next((line) => line === 'opening')
    const turnsBefore = live.lines.filter((line) => line.startsWith('turn ')).length
    const opened = await opener.next((line) => line.startsWith('opened '))
    // the live session went on committing turns while the long log was read and validated
    const turnsDuring = live.lines.filter((line) => line.startsWith('turn ')).length - turnsBefore
    live.proc.stdin!.write('stop\n')
    const done = await live.next((line) => line.startsWith('done '))
    expect(await opener.exited, opener.stderr()).toBe(0)
    expect(await live.exited, live.stderr()).toBe(0)
    expect(opened).toBe(`opened ${length + 1}`)
    expect(done).toMatch(/^done \d+ none no-faults$/)
    expect(turnsDuring).toBeGreaterThan(0)
  }, 180_000)
})

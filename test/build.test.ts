// The build never leaves a clone without dist (issue #28): it builds beside
// dist and swaps, and `prepare` (run by npm ci and by npx inside the clone)
// rebuilds only a dist that is missing or older than its sources.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { distStale, prepareAction, removeLeftovers } from '../scripts/build.js'

let base = ''
afterEach(() => rmSync(base, { recursive: true, force: true }))

/** A stand-in clone: sources written at `sourceTime`, a complete dist at `builtTime` (epoch seconds). */
function clone(sourceTime: number, builtTime: number | null): string {
  base = mkdtempSync(join(tmpdir(), 'agentchart-build-'))
  const put = (file: string, time: number) => {
    mkdirSync(dirname(join(base, file)), { recursive: true })
    writeFileSync(join(base, file), 'x')
    utimesSync(join(base, file), time, time)
  }
  for (const file of ['src/index.ts', 'src/cli/index.ts', 'package.json', 'tsconfig.build.json']) put(file, sourceTime)
  for (const dir of ['src/cli', 'src']) utimesSync(join(base, dir), sourceTime, sourceTime)
  if (builtTime !== null) for (const file of ['index.js', 'index.d.ts', 'cli/index.js', 'viewer/assets/index.html']) put(join('dist', file), builtTime)
  return base
}

describe('the build', () => {
  it('a dist built after its sources is current: prepare (build --if-stale) leaves it alone', () => {
    expect(distStale(clone(1_000, 2_000))).toBe(false)
  })

  it('a missing dist, a partial one, or one older than a source is stale', () => {
    expect(distStale(clone(1_000, null))).toBe(true)
    rmSync(base, { recursive: true, force: true })
    const partial = clone(1_000, 2_000)
    rmSync(join(partial, 'dist/viewer'), { recursive: true })
    expect(distStale(partial)).toBe(true)
    rmSync(base, { recursive: true, force: true })
    const edited = clone(1_000, 2_000)
    utimesSync(join(edited, 'src/cli/index.ts'), 3_000, 3_000)
    expect(distStale(edited)).toBe(true)
  })

  it('under npx inside the clone (npm_command exec) prepare runs any complete dist as it is, and builds only a missing one', () => {
    const stale = clone(3_000, 2_000)
    expect(prepareAction({ npm_command: 'exec' }, stale)).toBe('skip-stale')
    expect(prepareAction({ npm_command: 'ci' }, stale)).toBe('build')
    expect(prepareAction({}, stale)).toBe('build')
    rmSync(join(stale, 'dist'), { recursive: true })
    expect(prepareAction({ npm_command: 'exec' }, stale)).toBe('build')
    rmSync(base, { recursive: true, force: true })
    expect(prepareAction({ npm_command: 'ci' }, clone(1_000, 2_000))).toBe('skip')
  })

  it("removes the folders of builds whose process is gone, never a running build's", () => {
    const dir = clone(1_000, 2_000)
    // pid 2^22 + 1 is above Linux's pid_max: no such process
    for (const name of ['dist.building-4194305', 'dist.old-4194305', `dist.building-${process.pid}`]) mkdirSync(join(dir, name))
    removeLeftovers(dir)
    expect(existsSync(join(dir, 'dist.building-4194305'))).toBe(false)
    expect(existsSync(join(dir, 'dist.old-4194305'))).toBe(false)
    expect(existsSync(join(dir, `dist.building-${process.pid}`))).toBe(true)
    expect(existsSync(join(dir, 'dist/index.js'))).toBe(true)
  })
})

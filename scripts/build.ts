// npm run build: compiles the package (declarations made readable by every
// zod peer, the viewer page, the CLI made executable) into a fresh folder and
// swaps it in for dist only once it is complete, so an interrupted build (a
// Ctrl-C during `npx agentchart demo` in a clone) leaves the old dist whole.
// `--if-stale` (what `prepare` runs) builds only when dist is missing or older
// than its sources, so npm install in a clone does not rebuild a current dist;
// under `npx agentchart` inside the clone (npm_command=exec) any complete dist
// is used as it is, so npx never waits on, or is interrupted in, a build.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { buildViewerPage } from './build-viewer.js'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)

/** What the build reads: a change to any of them makes dist stale. */
const INPUTS = ['src', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.ts', 'scripts/build-viewer.ts', 'scripts/compat-dts.mjs']
/** What a complete build has written (the first file, the CLI and the viewer page). */
const OUTPUTS = ['index.js', 'index.d.ts', 'cli/index.js', 'viewer/assets/index.html']

function newest(path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))))
}

/** True when `outDir` holds every output of a complete build (whether or not it is current). */
export function distComplete(outDir: string = join(root, 'dist')): boolean {
  return OUTPUTS.every((file) => existsSync(join(outDir, file)))
}

/**
 * What `build --if-stale` does: 'skip' a current dist, or under npx (`npm_command` exec) any complete one;
 * otherwise 'build'. Why: npx inside a clone runs prepare and packs the clone; a build there is a wait a Ctrl-C
 * can cut, leaving npm's own npx cache entry broken.
 */
export function prepareAction(env: Readonly<Record<string, string | undefined>>, base: string = root): 'skip' | 'skip-stale' | 'build' {
  if (!distStale(base)) return 'skip'
  return env.npm_command === 'exec' && distComplete(join(base, 'dist')) ? 'skip-stale' : 'build'
}

/** True when `outDir` lacks an output of a complete build, or one is older than any input under `base`. */
export function distStale(base: string = root, outDir: string = join(base, 'dist')): boolean {
  const outputs = OUTPUTS.map((file) => join(outDir, file))
  if (!distComplete(outDir)) return true
  const built = Math.min(...outputs.map((file) => statSync(file).mtimeMs))
  return (
    Math.max(
      ...INPUTS.map((input) => join(base, input))
        .filter((input) => existsSync(input))
        .map(newest),
    ) > built
  )
}

/** Leftovers of builds whose process is gone (killed mid-build): `dist.building-<pid>`, `dist.old-<pid>`. */
export function removeLeftovers(base: string): void {
  for (const name of readdirSync(base)) {
    const match = /^dist\.(building|old)-(\d+)$/.exec(name)
    if (match === null) continue
    const pid = Number(match[2])
    let alive = pid === process.pid
    try {
      if (!alive) alive = process.kill(pid, 0)
    } catch {
      alive = false
    }
    if (!alive) rmSync(join(base, name), { recursive: true, force: true })
  }
}

function run(args: readonly string[]): void {
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) throw new Error(`the build step failed: node ${args.join(' ')}`)
}

/** Builds into `dist.building-<pid>`, then swaps it in for dist (the old one is removed after). */
export function build(base: string = root): void {
  removeLeftovers(base)
  const out = join(base, 'dist')
  const staging = join(base, `dist.building-${process.pid}`)
  const old = join(base, `dist.old-${process.pid}`)
  // an interrupted build removes its half-made folder; dist is untouched until the swap
  const abandon = () => {
    rmSync(staging, { recursive: true, force: true })
    process.exit(130)
  }
  process.once('SIGINT', abandon)
  process.once('SIGTERM', abandon)
  try {
    rmSync(staging, { recursive: true, force: true })
    run([require.resolve('typescript/bin/tsc'), '-p', join(base, 'tsconfig.build.json'), '--outDir', staging])
    run([join(base, 'scripts/compat-dts.mjs'), staging])
    buildViewerPage(join(staging, 'viewer', 'assets'))
    chmodSync(join(staging, 'cli', 'index.js'), 0o755)
    // two renames: dist is missing only between them, never while the build runs
    if (existsSync(out)) renameSync(out, old)
    renameSync(staging, out)
    rmSync(old, { recursive: true, force: true })
  } catch (error) {
    rmSync(staging, { recursive: true, force: true })
    throw error
  } finally {
    process.off('SIGINT', abandon)
    process.off('SIGTERM', abandon)
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // a build killed outright (SIGKILL, or a wrapper that kills on Ctrl-C) leaves its folder behind: remove it here
  removeLeftovers(root)
  const action = process.argv.includes('--if-stale') ? prepareAction(process.env) : 'build'
  if (action === 'skip') console.log('dist is current: nothing to build')
  else if (action === 'skip-stale') console.error('agentchart: npx runs the dist this clone has, which is older than its sources; `npm run build` rebuilds it')
  else {
    build()
    console.log('built dist')
  }
}

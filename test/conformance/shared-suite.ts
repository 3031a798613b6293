// The generated suite, shared by every test file that runs it: generated
// once per version of src/ into node_modules/.cache and reused by later
// files and later runs. Test files in parallel workers take a directory lock;
// the one that gets it generates, the others wait for the finished folder.
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { generateSuite } from '../../src/testing/index.js'

const ROOT = resolve(import.meta.dirname, '../..')
const CACHE = join(ROOT, 'node_modules', '.cache', 'agentchart-conformance')

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true })
  const nested = await Promise.all(entries.map((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : Promise.resolve([join(dir, e.name)]))))
  return nested.flat().sort()
}

/** A key for the sources the suite is generated from. */
async function sourceKey(): Promise<string> {
  const hash = createHash('sha256')
  for (const file of await filesUnder(join(ROOT, 'src'))) hash.update(file.slice(ROOT.length)).update(await readFile(file))
  return hash.digest('hex').slice(0, 16)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The folder of the suite generated from the current src/, generating it if no worker has yet. */
export async function sharedSuite(): Promise<string> {
  const dir = join(CACHE, await sourceKey())
  const lock = `${dir}.lock`
  await mkdir(CACHE, { recursive: true })
  for (let waited = 0; ; waited += 200) {
    if (existsSync(join(dir, 'manifest.json'))) return dir
    try {
      await mkdir(lock)
    } catch {
      // another worker is generating it; a lock older than three minutes is a crashed run's
      if (waited > 180_000) await rm(lock, { recursive: true, force: true })
      await sleep(200)
      continue
    }
    try {
      const tmp = `${dir}.tmp-${process.pid}`
      await rm(tmp, { recursive: true, force: true })
      await generateSuite(tmp)
      await rename(tmp, dir)
      return dir
    } finally {
      await rm(lock, { recursive: true, force: true })
    }
  }
}

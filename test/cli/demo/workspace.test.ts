// The demo's tools stay inside their directory: `..`, absolute paths and
// symlinks that lead out are refused as error results, and nothing outside is
// read, listed or searched.
import { execFileSync } from 'node:child_process'
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseListing, parseSearch, Workspace, workspaceTools } from '../../../src/cli/demo/workspace.js'
import type { ToolDefinition, ToolResultValue } from '../../../src/index.js'

let base: string
let root: string
let ws: Workspace
let tools: Record<string, ToolDefinition<any>>
const SECRET = 'the secret outside'

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'agentchart-ws-'))
  root = join(base, 'project')
  mkdirSync(join(root, 'src', 'deep'), { recursive: true })
  mkdirSync(join(root, 'node_modules', 'dep'), { recursive: true })
  mkdirSync(join(base, 'outside'))
  writeFileSync(join(base, 'outside', 'secret.txt'), SECRET)
  writeFileSync(join(base, 'sibling.txt'), SECRET)
  writeFileSync(join(root, 'package.json'), '{"name":"p"}\n')
  writeFileSync(join(root, 'src', 'a.ts'), 'export const needle = 1\n// another needle here\n')
  writeFileSync(join(root, 'src', 'deep', 'needle.md'), '# Title\n')
  writeFileSync(join(root, 'node_modules', 'dep', 'x.js'), 'needle in a dependency\n')
  writeFileSync(join(root, 'binary.bin'), Buffer.from([0, 1, 2, 110, 101, 101, 100, 108, 101]))
  symlinkSync(join(base, 'outside'), join(root, 'out-dir'))
  symlinkSync(join(base, 'outside', 'secret.txt'), join(root, 'out-file'))
  symlinkSync(join(root, 'src', 'a.ts'), join(root, 'in-link.ts'))
  symlinkSync(join(base, 'outside', 'missing.txt'), join(root, 'out-missing'))
  ws = await Workspace.open(root)
  tools = Object.fromEntries(workspaceTools(ws).map((t) => [t.name, t]))
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

const signal = new AbortController().signal
async function run(name: string, args: unknown): Promise<ToolResultValue> {
  const tool = tools[name]
  const parsed = tool.input.parse(args) as unknown
  const result = await tool.execute(parsed, { callId: 'c', name, turn: 1, step: 1, signal, agent: null })
  return typeof result === 'string' ? { content: result } : result
}

describe('confinement', () => {
  it('refuses `..`, absolute paths and symlinks that lead outside, as error results', async () => {
    const attempts: Array<[string, Record<string, unknown>]> = [
      ['read_file', { path: '../sibling.txt' }],
      ['read_file', { path: 'src/../../sibling.txt' }],
      ['read_file', { path: join(base, 'outside', 'secret.txt') }],
      ['read_file', { path: '/etc/passwd' }],
      ['read_file', { path: 'out-file' }],
      ['read_file', { path: 'out-dir/secret.txt' }],
      ['read_file', { path: 'out-dir/never-there.txt' }],
      ['read_file', { path: 'out-missing' }],
      ['read_file', { path: 'a\u0000b' }],
      ['list_dir', { path: '..' }],
      ['list_dir', { path: 'out-dir' }],
      ['list_dir', { path: '/' }],
      ['search', { query: 'secret', path: '..' }],
      ['search', { query: 'secret', path: 'out-dir' }],
    ]
    for (const [name, args] of attempts) {
      const result = await run(name, args)
      expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true)
      expect(result.content, `${name} ${JSON.stringify(args)}`).toMatch(/^refused: /)
      expect(result.content).not.toContain(SECRET)
    }
  })

  it('allows paths that stay inside, however they are written', async () => {
    for (const path of ['package.json', './package.json', 'src/../package.json', join(root, 'package.json')]) {
      expect(await run('read_file', { path })).toMatchObject({ content: '{"name":"p"}\n', meta: { path: 'package.json' } })
    }
    expect((await run('read_file', { path: 'in-link.ts' })).content).toContain('needle')
  })

  it('search never follows a symlink and skips node_modules and binary files', async () => {
    const result = await run('search', { query: 'needle' })
    const found = parseSearch(result.content)
    expect(found.names).toEqual(['src/deep/needle.md'])
    expect(found.lines.map((l) => `${l.path}:${l.line}`)).toEqual(['src/a.ts:1', 'src/a.ts:2'])
    expect(found.total).toBe(2)
    expect(result.meta).toMatchObject({ names: 1, lines: 2, files: 1 })
    expect(result.content).not.toContain('in-link.ts')
    expect(result.content).not.toContain('node_modules')
    expect(result.content).not.toContain('binary.bin')
    expect((await run('search', { query: 'secret' })).content).not.toContain(SECRET)
  })

  it('lists links with where they lead, without following the ones that leave', async () => {
    const listing = (await run('list_dir', {})).content
    expect(listing).toContain('link  out-dir -> (outside the working directory)')
    expect(listing).toContain('link  in-link.ts -> src/a.ts')
    expect(parseListing(listing).map((e) => `${e.kind} ${e.name}`)).toEqual([
      'file binary.bin',
      'link in-link.ts',
      'dir node_modules',
      'link out-dir',
      'link out-file',
      'link out-missing',
      'file package.json',
      'dir src',
    ])
  })
})

describe('results the model can use', () => {
  it('reports missing files, directories and binaries as errors with their reason', async () => {
    expect(await run('read_file', { path: 'nope.txt' })).toMatchObject({ isError: true, content: 'no such file or directory: "nope.txt"' })
    expect(await run('read_file', { path: 'src' })).toMatchObject({ isError: true, content: '"src" is a directory: use list_dir' })
    expect(await run('read_file', { path: 'binary.bin' })).toMatchObject({ isError: true })
    expect(await run('list_dir', { path: 'package.json' })).toMatchObject({ isError: true, content: 'not a directory: "package.json"' })
  })

  it('cuts long files and says so', async () => {
    writeFileSync(join(root, 'long.txt'), 'x'.repeat(50))
    const result = await run('read_file', { path: 'long.txt', maxChars: 10 })
    expect(result.content).toBe(`${'x'.repeat(10)}\n[truncated: showing 10 of 50 characters]`)
    expect(result.meta).toEqual({ path: 'long.txt', chars: 50, shown: 10 })
    rmSync(join(root, 'long.txt'))
  })

  it('runs list_dir and read_file in the parallel lane and search in the exclusive lane', () => {
    expect(Object.values(tools).map((t) => [t.name, t.executionMode])).toEqual([
      ['list_dir', 'parallel'],
      ['read_file', 'parallel'],
      ['search', 'exclusive'],
    ])
  })
})

describe('what read_file opens (issue 30)', () => {
  /** Opening the FIFO for writing releases a reader that blocked on it, so a failing run cannot hang the worker. */
  const release = (fifo: string) => {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
    } catch {
      // no reader waits (ENXIO): nothing to release
    }
  }

  it('refuses a FIFO with a clear error, at once, without blocking on it', async () => {
    const fifo = join(root, 'pipe')
    execFileSync('mkfifo', [fifo])
    try {
      const outcome = await Promise.race([run('read_file', { path: 'pipe' }), new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), 3000))])
      expect(outcome).toEqual({ content: '"pipe" is a FIFO (named pipe): only regular files are read', isError: true, meta: { code: 'NOT_REGULAR_FILE' } })
      // search passes it over (it is no file), and still finishes
      expect((await run('search', { query: 'pipe' })).content).toContain('0 file names containing "pipe":')
    } finally {
      release(fifo)
      rmSync(fifo)
    }
  })

  it.skipIf(process.getuid?.() !== 0)('refuses a character device with a clear error instead of reading it without end', async () => {
    const device = join(root, 'zero')
    execFileSync('mknod', [device, 'c', '1', '5']) // what /dev/zero is
    try {
      expect(await run('read_file', { path: 'zero', maxChars: 100 })).toEqual({
        content: '"zero" is a character device: only regular files are read',
        isError: true,
        meta: { code: 'NOT_REGULAR_FILE' },
      })
    } finally {
      rmSync(device)
    }
  })

  it('reads at most what it returns: a 3 GiB file with maxChars 100 is read from its start, not whole', async () => {
    const big = join(root, 'big.log')
    writeFileSync(big, 'x'.repeat(64 * 1024))
    truncateSync(big, 3 * 1024 ** 3) // sparse: more than a Buffer can hold, so reading it whole would fail
    try {
      const result = await run('read_file', { path: 'big.log', maxChars: 100 })
      expect(result).toEqual({
        content: `${'x'.repeat(100)}\n[truncated: showing the first 100 characters of ${3 * 1024 ** 3} bytes]`,
        meta: { path: 'big.log', bytes: 3 * 1024 ** 3, shown: 100 },
      })
    } finally {
      rmSync(big)
    }
  })

  it('honours its abort signal: an aborted read ends with AbortError and reads nothing', async () => {
    const controller = new AbortController()
    controller.abort()
    const tool = tools.read_file
    await expect(
      tool.execute(tool.input.parse({ path: 'package.json' }), { callId: 'c', name: 'read_file', turn: 1, step: 1, signal: controller.signal, agent: null }),
    ).rejects.toMatchObject({
      name: 'AbortError',
    })
  })

  it('opens, then checks the opened file: a directory swapped for a symlink to outside mid-read never yields a file outside', async () => {
    const inner = join(root, 'swapped')
    const parked = join(root, '.swapped-real')
    mkdirSync(inner)
    writeFileSync(join(inner, 'note.txt'), 'inside')
    const outside = join(base, 'outside-swap')
    mkdirSync(outside)
    writeFileSync(join(outside, 'note.txt'), SECRET)
    // another thread swaps the directory for a link to outside and back, as fast as it can
    const swapper = new Worker(
      `const { renameSync, symlinkSync, unlinkSync } = require('node:fs')
       const { inner, parked, outside } = require('node:worker_threads').workerData
       for (;;) {
         renameSync(inner, parked)
         symlinkSync(outside, inner)
         unlinkSync(inner)
         renameSync(parked, inner)
       }`,
      { eval: true, workerData: { inner, parked, outside } },
    )
    const seen = { inside: 0, refused: 0, other: 0, leaked: 0 }
    try {
      for (let round = 0; round < 60; round++) {
        const results = await Promise.all(Array.from({ length: 50 }, () => run('read_file', { path: 'swapped/note.txt' })))
        for (const r of results) {
          if (r.content === SECRET) seen.leaked++
          else if (r.content === 'inside') seen.inside++
          else if (r.isError) seen.refused++
          else seen.other++
        }
      }
    } finally {
      await swapper.terminate()
      for (const path of [inner, parked, outside]) rmSync(path, { recursive: true, force: true })
    }
    expect(seen.leaked).toBe(0)
    expect(seen.other).toBe(0)
    expect(seen.inside).toBeGreaterThan(0)
  }, 60_000)
})

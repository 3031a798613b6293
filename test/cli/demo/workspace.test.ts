// The demo's tools stay inside their directory: `..`, absolute paths and
// symlinks that lead out are refused as error results, and nothing outside is
// read, listed or searched.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
  const result = await tool.execute(parsed, { callId: 'c', name, signal, agent: null })
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

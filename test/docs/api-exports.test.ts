// docs/api.md promises "every export, with a short example each" (issue #2):
// every value an entry point of package.json exports must at least be named
// there, so a new export cannot ship undocumented. Type-only exports are not
// seen at run time and are left to the signatures the doc quotes.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const doc = readFileSync(path.join(root, 'docs/api.md'), 'utf8')
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { import?: string }>
}

/** Each entry point and the source module its built file comes from. */
const entries = Object.entries(manifest.exports).flatMap(([name, target]) => {
  const built = typeof target === 'string' ? target : target.import
  if (built === undefined || !built.startsWith('./dist/')) return []
  return [{ name: name === '.' ? 'agentchart' : `agentchart/${name.slice(2)}`, source: path.join(root, 'src', built.slice('./dist/'.length)) }]
})

const named = (word: string) => new RegExp(`(^|[^\\w$])${word.replace(/\$/g, '\\$')}([^\\w$]|$)`).test(doc)

describe('docs/api.md', () => {
  it('covers every entry point of package.json', () => {
    expect(entries.map((e) => e.name)).toContain('agentchart')
    for (const { name } of entries) expect(doc, name).toContain(`\`${name}\``)
  })

  it.each(entries)('names every runtime export of $name', async ({ source }) => {
    const module = (await import(source)) as Record<string, unknown>
    expect(Object.keys(module).filter((key) => !named(key))).toEqual([])
  })
})

// docs/behaviours.md is the catalogue that code comments and test names cite.
// These tests keep the two in step: every cited id has a heading, every
// "Proved by" link names a test file whose test names cite that id (and no such
// file is left out), and every core entry has a test. The checker is also fed
// broken copies of the repository, so it is seen to fail.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { checkCatalogue, DOC, FAMILIES, parseCatalogue, readRepo, slug, testNames, type Repo } from './catalogue.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const repo = readRepo(root)
const exists = (file: string) => existsSync(path.join(root, file))
const catalogue = parseCatalogue(repo.doc)
const entries = [...catalogue.entries.values()]
const core = entries.filter((e) => e.tag === 'Core')

/** The doc with one entry (heading to the next heading) cut out. */
function without(doc: string, id: string): string {
  const entry = catalogue.entries.get(id)!
  const lines = doc.split('\n')
  return [...lines.slice(0, entry.start), ...lines.slice(entry.end)].join('\n')
}

/** A copy of the repository with some files replaced or added. */
function withFiles(changes: Partial<Repo>, sources: Record<string, string> = {}, tests: Record<string, string> = {}): Repo {
  return {
    doc: changes.doc ?? repo.doc,
    sources: new Map([...repo.sources, ...Object.entries(sources)]),
    tests: new Map([...repo.tests, ...Object.entries(tests)]),
  }
}

describe('docs/behaviours.md', () => {
  it('agrees with every citation in src/, docs/, README.md and test/', () => {
    expect(checkCatalogue(repo, exists)).toEqual([])
  })

  it('has a heading for each family, each a core or later entry, and the nine decisions', () => {
    for (const family of FAMILIES) expect(entries.some((e) => e.id.startsWith(`${family}-`))).toBe(true)
    expect(core.length).toBeGreaterThan(100)
    expect([...catalogue.decisions.keys()].sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9])
    for (const entry of entries.filter((e) => e.tag === 'Later')) expect(entry.notBuilt || entry.proofs.length > 0).toBe(true)
  })

  it('is linked from the README and from the lifecycle guide', () => {
    expect(repo.sources.get('README.md')).toContain('](docs/behaviours.md)')
    const lifecycle = repo.sources.get('docs/lifecycle.md') ?? ''
    expect(lifecycle).toContain('](behaviours.md)')
    expect(lifecycle).toMatch(/^\[[A-Z]{2}-\d+\]: behaviours\.md#[a-z]{2}-\d+-[a-z0-9-]+$/m)
  })
})

describe('the catalogue checker', () => {
  const [first] = core
  const proved = core.find((e) => e.proofs.length > 1)!

  it('reads test names, .each titles included, and not the rest of the file', () => {
    const source = [
      "describe('suite A', () => {",
      "  it('name one', () => {})",
      "  it.each([1, 2])('name %s', () => {})",
      '  test.skip(`name ${3} three`, () => {})',
      "  const note = 'not a name'",
      '})',
    ].join('\n')
    expect(testNames('x.test.ts', source)).toEqual(['suite A', 'name one', 'name %s', 'name ${3} three'])
  })

  it('makes anchors the way GitHub does', () => {
    expect(slug('TU-5 A rejected first proposal')).toBe('tu-5-a-rejected-first-proposal')
    expect(slug('Decision 7 `agent/error` names it')).toBe('decision-7-agenterror-names-it')
  })

  it('fails when a cited id has no heading', () => {
    const problems = checkCatalogue(withFiles({ doc: without(repo.doc, first.id) }), exists)
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`cites ${first.id}, which has no heading`)))
  })

  it('fails when code cites an id past the end of its family', () => {
    const family = first.id.slice(0, 2)
    const next = `${family}-${entries.filter((e) => e.id.startsWith(family)).length + 1}`
    const problems = checkCatalogue(withFiles({}, { 'src/extra.ts': `// see ${next}\n` }), exists)
    expect(problems).toEqual([`src/extra.ts cites ${next}, which has no heading in ${DOC}`])
  })

  it('fails when a test name cites an id in a file its entry does not link', () => {
    const problems = checkCatalogue(withFiles({}, {}, { 'test/extra.test.ts': `it('${first.id}: again', () => {})\n` }), exists)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(
      new RegExp(`^${first.id} is proved by tests in test/extra.test.ts .* should read: Core · Proved by: .*\\(\\.\\./test/extra\\.test\\.ts\\)`),
    )
  })

  it('fails when a link points at a missing file, or at one whose test names do not cite the id', () => {
    const elsewhere = core.find((e) => e.proofs.length > 0 && !e.proofs.includes('test/smoke.test.ts') && e.id !== proved.id)!
    const moved = repo.doc.split('\n')
    moved[proved.start + 2] = moved[proved.start + 2].replaceAll(proved.proofs[0], 'test/behaviours/gone.test.ts')
    const gone = moved.join('\n')
    expect(checkCatalogue(withFiles({ doc: gone }), exists)).toContainEqual(`${proved.id} is "proved by" test/behaviours/gone.test.ts, which does not exist`)
    const lines = repo.doc.split('\n')
    lines[elsewhere.start + 2] += ', [test/smoke.test.ts](../test/smoke.test.ts)'
    const wrong = lines.join('\n')
    expect(checkCatalogue(withFiles({ doc: wrong }), exists)).toContainEqual(
      `${elsewhere.id} is "proved by" test/smoke.test.ts, but no test name there cites ${elsewhere.id}`,
    )
  })

  it('fails when a core entry has no test, or a later one claims "Not built yet" while tested', () => {
    const lines = repo.doc.split('\n')
    lines[first.start + 2] = 'Core · Not built yet.'
    const tests = new Map([...repo.tests].map(([file, text]) => [file, text.replace(new RegExp(`\\b${first.id}\\b`, 'g'), 'XX')]))
    expect(checkCatalogue({ ...repo, doc: lines.join('\n'), tests }, exists)).toEqual([`${first.id} is core, but no test name cites it`])
    expect(checkCatalogue({ ...repo, doc: lines.join('\n') }, exists)).toContainEqual(`${first.id} says "Not built yet", but tests cite it`)
  })

  it('fails on a broken anchor link and on an unknown decision', () => {
    const decision = `Decision ${catalogue.decisions.size + 2}` // built here so this file cites no such decision itself
    const problems = checkCatalogue(withFiles({}, { 'docs/extra.md': `See [it](behaviours.md#no-such-entry) and ${decision}.\n` }), exists)
    expect(problems).toEqual([
      `docs/extra.md cites ${decision}, which docs/behaviours.md does not have`,
      'docs/extra.md links behaviours.md#no-such-entry, an anchor docs/behaviours.md does not have',
    ])
  })

  it('fails when the catalogue links an anchor another doc does not have', () => {
    const doc = repo.doc.replace('## Words\n', '## Words\n\nSee [the API](api.md#no-such-section).\n')
    expect(checkCatalogue(withFiles({ doc }), exists)).toEqual([`${DOC} links api.md#no-such-section, an anchor docs/api.md does not have`])
  })

  it('fails when an entry lacks its tag line or repeats a heading', () => {
    const lines = repo.doc.split('\n')
    const tagLine = lines[first.start + 2]
    lines[first.start + 2] = 'Proved somewhere.'
    const problems = checkCatalogue({ ...repo, doc: lines.join('\n') }, exists)
    expect(problems.some((p) => p.includes(`${first.id} needs a line "Core · Proved by: …"`))).toBe(true)
    lines[first.start + 2] = tagLine
    const twice = [...lines.slice(0, first.end), ...lines.slice(first.start, first.end), ...lines.slice(first.end)].join('\n')
    expect(checkCatalogue({ ...repo, doc: twice }, exists).some((p) => p.includes(`${first.id} has a second heading`))).toBe(true)
  })
})

// Every relative link in the repository's Markdown must land somewhere: the
// file exists and, for a `#anchor` into a Markdown file, a heading (or an
// explicit `id`) of that file has that slug. Broken links are how docs rot
// first, and a reader who follows one stops trusting the rest.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { slug } from './catalogue.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const SKIP = new Set(['node_modules', 'dist', '.git', 'coverage'])

/** Markdown files of the repository, relative to its root. */
function markdownFiles(dir = ''): string[] {
  const out: string[] = []
  for (const name of readdirSync(path.join(root, dir))) {
    if (SKIP.has(name)) continue
    const rel = path.join(dir, name)
    if (statSync(path.join(root, rel)).isDirectory()) out.push(...markdownFiles(rel))
    else if (name.endsWith('.md')) out.push(rel)
  }
  return out
}

/** The text outside fenced code blocks. */
function unfenced(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
}

/** The text outside code (fenced and inline), where links are links. */
function prose(text: string): string {
  return unfenced(text).replace(/`[^`\n]*`/g, '')
}

/** Anchors a Markdown file offers: GitHub heading slugs (repeats get -1, -2, …) and explicit ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const match of unfenced(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, ''))
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  for (const match of text.matchAll(/\bid="([^"]+)"/g)) anchors.add(match[1])
  return anchors
}

/** Links of one file that do not resolve, as "file: target (why)". */
export function brokenLinks(file: string, text: string, exists: (rel: string) => boolean, read: (rel: string) => string): string[] {
  const broken: string[] = []
  const inline = [...prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1])
  const definitions = [...unfenced(text).matchAll(/^\[[^\]]+\]:\s+(\S+)/gm)].map((m) => m[1])
  for (const target of [...inline, ...definitions]) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
    const [where, anchor] = target.split('#', 2) as [string, string | undefined]
    const rel = where === '' ? file : path.normalize(path.join(path.dirname(file), decodeURIComponent(where)))
    if (!exists(rel)) {
      broken.push(`${file}: ${target} (no such file)`)
      continue
    }
    if (anchor !== undefined && rel.endsWith('.md') && !anchorsOf(read(rel)).has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor})`)
  }
  return broken
}

const read = (rel: string) => readFileSync(path.join(root, rel), 'utf8')
const exists = (rel: string) => existsSync(path.join(root, rel))

describe('Markdown links', () => {
  it('every relative link and anchor in the repository resolves', () => {
    const files = markdownFiles()
    expect(files).toContain('README.md')
    expect(files.flatMap((file) => brokenLinks(file, read(file), exists, read))).toEqual([])
  })

  it('the checker reports a missing file, a missing anchor (inline or in a reference definition) and a repeated heading’s slug', () => {
    const docs: Record<string, string> = { 'a.md': '# Top\n## Part\n## Part\n', 'b.md': '' }
    const has = (rel: string) => rel in docs
    const get = (rel: string) => docs[rel]
    expect(brokenLinks('b.md', '[x](a.md#part-1) [y](a.md#top)', has, get)).toEqual([])
    expect(brokenLinks('b.md', '[x](c.md) [y](a.md#part-2) `[z](nowhere.md)`\n\n[Ref]: a.md#nope\n', has, get)).toEqual([
      'b.md: c.md (no such file)',
      'b.md: a.md#part-2 (no heading #part-2)',
      'b.md: a.md#nope (no heading #nope)',
    ])
  })
})

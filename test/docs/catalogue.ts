// Reads docs/behaviours.md and everything that cites it (ids in src/ and the
// docs, ids in test names), and lists where the two disagree. Pure over its
// input, so the test can feed it a broken copy and watch it complain.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

/** The families of the catalogue, in the order the doc lists them. */
export const FAMILIES = ['IN', 'PH', 'TU', 'ST', 'RQ', 'TL', 'CX', 'MT', 'SS', 'RS', 'HK', 'CP'] as const

/** A catalogue id anywhere in text. */
export const ID = new RegExp(`\\b(?:${FAMILIES.join('|')})-\\d+\\b`, 'g')

/** A decision cited in text, e.g. "(Decision 5)". */
export const DECISION = /\bDecision (\d+)\b/g

/** Where the doc lives, relative to the repository root. */
export const DOC = 'docs/behaviours.md'

/** One `### XX-n title` entry of the doc. */
export interface Entry {
  id: string
  anchor: string
  tag: 'Core' | 'Later'
  /** Repository-relative paths of the "Proved by" links. */
  proofs: string[]
  notBuilt: boolean
  /** Line indexes of the heading and of the line after the entry's last line. */
  start: number
  end: number
}

/** The parsed doc. */
export interface Catalogue {
  entries: Map<string, Entry>
  decisions: Map<number, string>
  anchors: Set<string>
  problems: string[]
}

/** What the checker looks at: file texts by repository-relative path. */
export interface Repo {
  doc: string
  /** src/**, docs/** (except the catalogue) and README.md: any id in them is a citation. */
  sources: Map<string, string>
  /** test/** files: any id in them is a citation; ids in test names are proofs. */
  tests: Map<string, string>
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-')
}

/** Distinct ids in text, in first-seen order. */
export function idsIn(text: string): string[] {
  return [...new Set(text.match(ID) ?? [])]
}

const TAG = /^(Core|Later) · (?:Proved by: (.+)|(Not built yet\b.*))$/
const LINK = /\[([^\]]+)\]\(([^)\s]+)\)/g
const ENTRY = new RegExp(`^### ((?:${FAMILIES.join('|')})-\\d+) \\S`)
const DECISION_HEADING = /^### Decision (\d+) \S/

/** Parse the catalogue: entries, decisions, every heading anchor, and shape problems. */
export function parseCatalogue(doc: string): Catalogue {
  const lines = doc.split('\n')
  const entries = new Map<string, Entry>()
  const decisions = new Map<number, string>()
  const anchors = new Set<string>()
  const problems: string[] = []
  let fenced = false
  let open: Entry | null = null
  for (const [i, line] of lines.entries()) {
    if (line.startsWith('```')) fenced = !fenced
    const heading = fenced ? null : /^(#{1,6}) (.+)$/.exec(line)
    if (!heading) continue
    if (open) open.end = i
    open = null
    const anchor = slug(heading[2])
    if (anchors.has(anchor)) problems.push(`${DOC}:${i + 1}: two headings share the anchor #${anchor}`)
    anchors.add(anchor)
    const decision = DECISION_HEADING.exec(line)
    if (decision) decisions.set(Number(decision[1]), anchor)
    const id = ENTRY.exec(line)?.[1]
    if (!id) continue
    if (anchor !== heading[2].toLowerCase().replace(/ /g, '-'))
      problems.push(`${DOC}:${i + 1}: the heading of ${id} has characters its anchor drops (#${anchor})`)
    if (entries.has(id)) problems.push(`${DOC}:${i + 1}: ${id} has a second heading`)
    const tagIndex = lines.findIndex((l, k) => k > i && l.trim() !== '')
    const tag = TAG.exec(lines[tagIndex] ?? '')
    if (!tag) {
      problems.push(`${DOC}:${tagIndex + 1}: ${id} needs a line "Core · Proved by: …" or "Later · Not built yet …" right under its heading`)
      continue
    }
    const proofs: string[] = []
    for (const [, text, target] of (tag[2] ?? '').matchAll(LINK)) {
      const file = path.posix.normalize(path.posix.join(path.posix.dirname(DOC), target))
      if (text !== file) problems.push(`${DOC}:${tagIndex + 1}: ${id} links ${target} under the text ${text}; use the path itself as the text`)
      proofs.push(file)
    }
    if (tag[2] !== undefined && proofs.length === 0) problems.push(`${DOC}:${tagIndex + 1}: ${id} says "Proved by:" but links no file`)
    open = { id, anchor, tag: tag[1] as Entry['tag'], proofs, notBuilt: tag[3] !== undefined, start: i, end: lines.length }
    entries.set(id, open)
  }
  return { entries, decisions, anchors, problems }
}

const TEST_CALLS = new Set(['it', 'test', 'describe', 'suite', 'bench'])

const namesCache = new Map<string, string[]>()

/** The names of the tests and suites declared in a test file (the title arguments of it/test/describe, .each included). */
export function testNames(file: string, source: string): string[] {
  const key = `${file}\0${source}`
  const cached = namesCache.get(key)
  if (cached) return cached
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS)
  const names: string[] = []
  const rootOf = (e: ts.Expression): string | null => {
    if (ts.isIdentifier(e)) return e.text
    if (ts.isPropertyAccessExpression(e)) return rootOf(e.expression)
    if (ts.isCallExpression(e)) return rootOf(e.expression) // it.each([...])('title', …)
    return null
  }
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && TEST_CALLS.has(rootOf(node.expression) ?? '')) {
      const title = node.arguments[0]
      if (title && (ts.isStringLiteral(title) || ts.isNoSubstitutionTemplateLiteral(title) || ts.isTemplateExpression(title))) {
        names.push(title.getText(sf).slice(1, -1))
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  namesCache.set(key, names)
  return names
}

/** Everything wrong between the doc and the repository; [] when they agree. */
export function checkCatalogue(repo: Repo, exists: (file: string) => boolean): string[] {
  const catalogue = parseCatalogue(repo.doc)
  const problems = [...catalogue.problems]
  const { entries } = catalogue

  // numbering: each family runs 1..n with no gaps
  for (const family of FAMILIES) {
    const numbers = [...entries.keys()].filter((id) => id.startsWith(`${family}-`)).map((id) => Number(id.slice(3)))
    if (numbers.length === 0) problems.push(`${DOC}: no entry of the ${family} family`)
    for (let n = 1; n <= Math.max(0, ...numbers); n++) if (!numbers.includes(n)) problems.push(`${DOC}: ${family}-${n} is missing between its neighbours`)
  }

  // every citation has a heading
  const cited = new Map<string, string>()
  for (const [file, text] of [...repo.sources, ...repo.tests]) {
    for (const id of idsIn(text)) if (!cited.has(id)) cited.set(id, file)
    for (const [, n] of text.matchAll(DECISION)) {
      if (!catalogue.decisions.has(Number(n))) problems.push(`${file} cites Decision ${n}, which ${DOC} does not have`)
    }
  }
  for (const [id, file] of cited) if (!entries.has(id)) problems.push(`${file} cites ${id}, which has no heading in ${DOC}`)

  // proofs: ids in test names, by file
  const proving = new Map<string, string[]>()
  for (const [file, text] of repo.tests) {
    if (!file.endsWith('.test.ts')) continue
    for (const id of idsIn(testNames(file, text).join('\n'))) proving.set(id, [...(proving.get(id) ?? []), file])
  }
  for (const entry of entries.values()) {
    const expected = (proving.get(entry.id) ?? []).sort(byProofOrder)
    for (const file of entry.proofs) {
      if (!exists(file)) problems.push(`${entry.id} is "proved by" ${file}, which does not exist`)
      else if (!expected.includes(file)) problems.push(`${entry.id} is "proved by" ${file}, but no test name there cites ${entry.id}`)
    }
    const missing = expected.filter((file) => !entry.proofs.includes(file))
    if (missing.length > 0) {
      problems.push(
        `${entry.id} is proved by tests in ${missing.join(', ')} that its heading does not link; its line should read: ${proofLine(entry.tag, expected)}`,
      )
    }
    if (entry.tag === 'Core' && expected.length === 0) problems.push(`${entry.id} is core, but no test name cites it`)
    if (entry.notBuilt && expected.length > 0) problems.push(`${entry.id} says "Not built yet", but tests cite it`)
  }

  // links with an anchor: into the catalogue from any doc, and out of the catalogue into the other docs
  const anchorsOf = (file: string): Set<string> => (file === DOC ? catalogue.anchors : parseCatalogue(repo.sources.get(file) ?? '').anchors)
  for (const [file, text] of [[DOC, repo.doc] as const, ...repo.sources]) {
    if (!file.endsWith('.md')) continue
    for (const target of linkTargets(text)) {
      const [page, anchor] = target.split('#')
      if (anchor === undefined || /^[a-z]+:/.test(page)) continue
      const into = page === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), page))
      if (into !== DOC && file !== DOC) continue
      if (!into.endsWith('.md') || !(into === DOC || repo.sources.has(into))) continue
      if (!anchorsOf(into).has(anchor)) problems.push(`${file} links ${target}, an anchor ${into} does not have`)
    }
  }
  return problems
}

/** Targets of inline links `[text](target)` and of reference definitions `[label]: target`, outside code fences. */
export function linkTargets(markdown: string): string[] {
  const targets: string[] = []
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    if (fenced) continue
    for (const [, , target] of line.matchAll(LINK)) targets.push(target)
    const definition = /^\[[^\]]+\]: (\S+)/.exec(line)
    if (definition) targets.push(definition[1])
  }
  return targets
}

/** Behaviour tests first, then the rest, each alphabetically. */
export function byProofOrder(a: string, b: string): number {
  const rank = (f: string) => (f.startsWith('test/behaviours/') ? 0 : 1)
  return rank(a) - rank(b) || a.localeCompare(b)
}

/** The tag line an entry proved by these files should have. */
export function proofLine(tag: Entry['tag'], files: readonly string[]): string {
  return `${tag} · Proved by: ${files.map((f) => `[${f}](${path.posix.relative(path.posix.dirname(DOC), f)})`).join(', ')}`
}

/** The repository as the checker sees it, read from disk under root. */
export function readRepo(root: string): Repo {
  const read = (file: string) => readFileSync(path.join(root, file), 'utf8')
  const walk = (dir: string): string[] =>
    readdirSync(path.join(root, dir)).flatMap((name) => {
      const file = path.posix.join(dir, name)
      return statSync(path.join(root, file)).isDirectory() ? walk(file) : [file]
    })
  const text = (file: string) => /\.(ts|md|mmd)$/.test(file)
  const sources = new Map<string, string>()
  for (const file of [...walk('src'), ...walk('docs'), 'README.md']) if (text(file) && file !== DOC) sources.set(file, read(file))
  const tests = new Map<string, string>()
  for (const file of walk('test')) if (text(file)) tests.set(file, read(file))
  return { doc: existsSync(path.join(root, DOC)) ? read(DOC) : '', sources, tests }
}

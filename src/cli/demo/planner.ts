// The local model's mind: a pure function from the conversation to the next
// move. It reads the open requests (the prompt and any steering since the last
// answer), looks at which tool results it already has, and either asks for the
// calls it still needs or writes an answer from what those results contain.
// Nothing here is canned: every answer is built from files it read.
import type { Message } from '../../index.js'
import { parseListing, parseSearch, type ListedEntry } from './workspace.js'

/** A tool call the planner wants: one of the workspace tools and its arguments. */
export interface PlannedCall {
  readonly name: 'list_dir' | 'read_file' | 'search'
  readonly args: Readonly<Record<string, string | number>>
}

/** The next move: call tools (with a sentence saying why), or answer. */
export type Reply =
  { readonly kind: 'tools'; readonly text: string; readonly calls: readonly PlannedCall[] } | { readonly kind: 'answer'; readonly text: string }

/** What one request needs next: more calls, or its answer. */
type Move = { calls: PlannedCall[] } | { answer: string }

interface Observation {
  readonly content: string
  readonly isError: boolean
}

/** Tool results seen since the open requests began, keyed by call (name and canonical arguments). */
class Observations {
  readonly #byCall = new Map<string, Observation>()
  static key(call: PlannedCall): string {
    const args = Object.keys(call.args)
      .sort()
      .map((k) => [k, call.args[k]])
    return `${call.name} ${JSON.stringify(args)}`
  }
  set(call: PlannedCall, observation: Observation): void {
    this.#byCall.set(Observations.key(call), observation)
  }
  get(call: PlannedCall): Observation | undefined {
    return this.#byCall.get(Observations.key(call))
  }
  get size(): number {
    return this.#byCall.size
  }
}

/** What a request's plan can read: the tool results so far, and the whole conversation (for recaps). */
interface Context {
  readonly seen: Observations
  readonly earlier: readonly Message[]
}

type Plan = (ctx: Context) => Move

/** At most this many tool rounds for one set of open requests; then it answers with what it has. */
const MAX_ROUNDS = 6

const call = (name: PlannedCall['name'], args: PlannedCall['args']): PlannedCall => ({ name, args })
const listRoot = call('list_dir', { path: '.' })

// ---- reading the conversation --------------------------------------------------------

const textOf = (m: Message) =>
  m.content
    .filter((b) => b.type === 'text')
    .map((b) => (b as { text: string }).text)
    .join('\n')
    .trim()

const isToolResult = (m: Message) => m.role === 'user' && m.source.kind === 'tool'
const toolCallsOf = (m: Message) => m.content.filter((b) => b.type === 'tool-call') as Array<{ id: string; name: string; arguments: string }>
const isAnswer = (m: Message) => m.role === 'assistant' && toolCallsOf(m).length === 0
/** The runtime's text for a call cancelled with its turn: the turn ended there, whatever came before it is closed. */
const isAbortedResult = (m: Message) =>
  isToolResult(m) && m.content.some((b) => b.type === 'tool-result' && typeof b.content === 'string' && b.content.startsWith('Error: tool call aborted'))

/**
 * Decide the next move for a conversation. Why: the local model must plan from what the
 * tools returned, deterministically, so the demo works offline and tests can rely on it.
 * The open requests are the user messages after the last answer (a prompt, then steering);
 * an answer covers all of them, the first one first.
 */
export function decide(messages: readonly Message[]): Reply {
  let start = 0
  messages.forEach((m, i) => {
    if (isAnswer(m) || isAbortedResult(m)) start = i + 1
  })
  const open = messages.slice(start)
  const requests = open.filter((m) => m.role === 'user' && !isToolResult(m)).map(textOf)
  if (requests.length === 0) return { kind: 'answer', text: 'There is no question for me to answer yet: ask me about the files in this directory.' }

  const seen = new Observations()
  const pending = new Map<string, PlannedCall>()
  let rounds = 0
  for (const m of open) {
    if (m.role === 'assistant') {
      rounds++
      for (const c of toolCallsOf(m)) {
        let args: PlannedCall['args'] = {}
        try {
          args = JSON.parse(c.arguments) as PlannedCall['args']
        } catch {
          // a call it did not write; its result is kept under the raw text
        }
        pending.set(c.id, call(c.name as PlannedCall['name'], args))
      }
    } else if (isToolResult(m)) {
      for (const b of m.content) {
        if (b.type !== 'tool-result') continue
        const asked = pending.get(b.toolCallId)
        if (asked) seen.set(asked, { content: typeof b.content === 'string' ? b.content : JSON.stringify(b.content), isError: b.isError === true })
      }
    }
  }

  const ctx: Context = { seen, earlier: messages.slice(0, start) }
  const moves = requests.map((text) => planFor(text)(ctx))
  const wanted = new Map<string, PlannedCall>()
  for (const move of moves) {
    if (!('calls' in move)) continue
    for (const c of move.calls) if (!seen.get(c)) wanted.set(Observations.key(c), c)
  }
  if (wanted.size > 0 && rounds < MAX_ROUNDS) {
    const calls = [...wanted.values()]
    return { kind: 'tools', text: narrate(calls), calls }
  }
  const answers = moves.map((move) => ('answer' in move ? move.answer : 'I ran out of tool rounds before I could finish this one; here is where I stopped.'))
  if (answers.length === 1) return { kind: 'answer', text: answers[0] }
  return {
    kind: 'answer',
    text: answers.map((a, i) => (i === 0 ? a : `You also asked: ${JSON.stringify(clip(requests[i], 80))}\n${a}`)).join('\n\n'),
  }
}

/**
 * The sentence streamed before a round of calls, in the order the scheduler runs them:
 * e.g. `Reading package.json and the start of package-lock.json in parallel, then searching the tree for "vitest".`
 */
function narrate(calls: readonly PlannedCall[]): string {
  const phrase = (c: PlannedCall) => {
    if (c.name === 'list_dir') return c.args.path === '.' ? 'listing the working directory' : `listing ${String(c.args.path)}`
    if (c.name === 'search') return `searching the tree for ${JSON.stringify(c.args.query)}`
    return c.args.maxChars !== undefined ? `the start of ${String(c.args.path)}` : String(c.args.path)
  }
  // runs of parallel-lane calls (list_dir, read_file) share a clause; a search runs on its own
  const groups: PlannedCall[][] = []
  for (const c of calls) {
    const last = groups[groups.length - 1]
    if (last && c.name !== 'search' && last[0].name !== 'search') last.push(c)
    else groups.push([c])
  }
  const clauses = groups.map((group) => {
    const parts: string[] = []
    group.forEach((c, i) => parts.push(c.name === 'read_file' && (i === 0 || group[i - 1].name !== 'read_file') ? `reading ${phrase(c)}` : phrase(c)))
    return `${joinAnd(parts)}${group.length > 1 ? ' in parallel' : ''}`
  })
  const sentence = clauses.join(', then ')
  return `${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}.`
}

// ---- choosing a plan ------------------------------------------------------------------

const CANNOT_VERBS =
  /\b(write|create|edit|modify|change|update|delete|remove|rename|move|copy|run|execute|install|uninstall|commit|push|deploy|download|upload|fetch|browse|send|email|fix|refactor|build|compile|format|lint|test)\b/i

/** The plan for one request, by what it asks (first match wins). */
export function planFor(text: string): Plan {
  const t = text.toLowerCase()
  const files = fileMentions(text)
  if (
    /\b(what did i (ask|say)|what have (i|we) (asked|done|talked)|earlier|before this|previous(ly)?|so far|recap|remind me)\b/.test(t) &&
    files.length === 0
  ) {
    return recap
  }
  if (/^\s*(hi|hello|hey|help|what can you do|who are you)\b/.test(t)) return () => ({ answer: capabilities() })
  if (/package[ -]?manager|\b(npm|yarn|pnpm|bun) or (npm|yarn|pnpm|bun)\b|\block ?file\b/.test(t)) return packageManager
  const imperative = /^\s*(please\s+)?(can you\s+|could you\s+)?(\w+)/.exec(t)?.[3] ?? ''
  if (CANNOT_VERBS.test(imperative) && !/^(find|search|read|list|show)$/.test(imperative)) return () => ({ answer: cannot(text, imperative) })
  const query = searchQuery(text)
  if (query !== null) return searchFor(query)
  const wanted = /\b(find|locate|where is|where's)\b/.test(t) ? (files[0] ?? quoted(text)) : null
  if (wanted) return findFile(wanted, /\b(read|open|show|summari[sz]e|what'?s in|contents?)\b/.test(t))
  if (
    /\b(what (is|does) this (project|repo|repository)|about this (project|repo)|summari[sz]e (the|this) (project|repo|repository)|overview|describe (the|this) (project|repo))\b/.test(
      t,
    )
  ) {
    return overview
  }
  const dirLike = files.length > 0 && !/\.\w+$/.test(files[0])
  if (
    (/\b(list|ls|what files|which files|show (me )?(the )?(files|directory|folder)|what'?s in (the |this )?(\S+ )?(dir|directory|folder))\b/.test(t) &&
      (files.length === 0 || dirLike)) ||
    (/\b(what'?s|what is) in\b/.test(t) && dirLike)
  ) {
    return listDir(files[0] ?? directoryWord(text) ?? '.')
  }
  if (files.length > 0) return readFiles(files)
  const verb = CANNOT_VERBS.exec(t)?.[1]
  if (verb) return () => ({ answer: cannot(text, verb) })
  return () => ({ answer: notUnderstood(text) })
}

/** Paths named in a request: `package.json`, `src/cli/main.ts`, `docs/`, `README`. */
export function fileMentions(text: string): string[] {
  const found: string[] = []
  const token =
    /(?:^|[\s"'`(“])((?:\.{1,2}\/|~\/|\/)?[\w@][\w@.-]*(?:\/[\w@.-]+)*\.[A-Za-z][A-Za-z0-9]{0,9}|(?:\.{1,2}\/|~\/|\/)?[\w@.-]+(?:\/[\w@.-]+)+\/?|\/[\w@.-]+\/?|[\w.-]+\/|README|LICENSE|Makefile|Dockerfile)(?=$|[\s"'`),:;?!.”])/g
  for (const m of text.matchAll(token)) {
    const path = m[1].replace(/\/$/, (s) => (m[1].length > 1 ? s : ''))
    if (/^(e\.g|i\.e|etc|vs)$/i.test(path)) continue
    if (!found.includes(path)) found.push(path)
  }
  return found
}

const quoted = (text: string): string | null => /["“'`]([^"”'`]{1,80})["”'`]/.exec(text)?.[1] ?? null

const FILLER = new Set([
  'the',
  'a',
  'an',
  'word',
  'words',
  'term',
  'string',
  'text',
  'for',
  'all',
  'any',
  'mentions',
  'mention',
  'of',
  'occurrences',
  'uses',
  'use',
  'usages',
])

/** The text a search request looks for: a quoted phrase, else the first meaningful word after the verb. */
function searchQuery(text: string): string | null {
  const m =
    /\b(?:search(?: the (?:code|tree|repo|project|files))? for|grep(?: for)?|look for|find (?:the word|mentions of|occurrences of|uses of|usages of|references to)|which files (?:mention|contain|use|reference)|where (?:is|are) (?:the word )?)\s+(.*)$/i.exec(
      text,
    )
  if (!m) return null
  if (/^where/i.test(m[0]) && !/\b(used|mentioned|defined|called|referenced)\b/i.test(m[1])) return null
  const inQuotes = quoted(m[1])
  if (inQuotes) return inQuotes
  const words = m[1].split(/\s+/).map((w) => w.replace(/^[("'`]+|[)"'`,.;:?!]+$/g, ''))
  return words.find((w) => w.length > 0 && !FILLER.has(w.toLowerCase())) ?? null
}

/** A directory named by a list request in words: "list the src folder", "what is in test". */
function directoryWord(text: string): string | null {
  const m = /\b(?:in|list|of)\s+(?:the\s+)?([\w.-]+)(?:\s+(?:dir|directory|folder))?\b/i.exec(text)
  const word = m?.[1]
  if (!word || /^(this|the|here|it|files|directory|folder|dir|working|current|project|repo|repository)$/i.test(word)) return null
  return word
}

// ---- the plans ----------------------------------------------------------------------

const LOCKFILES: ReadonlyArray<readonly [string, string]> = [
  ['package-lock.json', 'npm'],
  ['npm-shrinkwrap.json', 'npm'],
  ['yarn.lock', 'yarn'],
  ['pnpm-lock.yaml', 'pnpm'],
  ['bun.lock', 'bun'],
  ['bun.lockb', 'bun'],
]
const MANAGERS = ['npm', 'yarn', 'pnpm', 'bun'] as const

/** "Which package manager": list the root, read package.json and the start of each lockfile, answer from them. */
const packageManager: Plan = ({ seen }) => {
  const root = seen.get(listRoot)
  if (!root) return { calls: [listRoot] }
  if (root.isError) return { answer: `I could not list the working directory: ${root.content}` }
  const entries = parseListing(root.content)
  const names = new Set(entries.filter((e) => e.kind !== 'dir').map((e) => e.name))
  const locks = LOCKFILES.filter(([file]) => names.has(file))
  const pkgCall = call('read_file', { path: 'package.json' })
  const lockCalls = locks.filter(([file]) => file !== 'bun.lockb').map(([file]) => call('read_file', { path: file, maxChars: 300 }))
  const needed = [...(names.has('package.json') ? [pkgCall] : []), ...lockCalls]
  const missing = needed.filter((c) => !seen.get(c))
  if (missing.length > 0) return { calls: missing }

  const evidence: string[] = []
  const votes = new Map<string, number>()
  const vote = (manager: string, weight: number) => votes.set(manager, (votes.get(manager) ?? 0) + weight)

  if (!names.has('package.json')) {
    const other = otherEcosystem(names)
    const lockNote = locks.length
      ? ` There is a ${locks.map(([f]) => f).join(' and a ')}, though, which ${locks.length === 1 ? 'points' : 'point'} to ${joinAnd(unique(locks.map(([, m]) => m)))}.`
      : ''
    return {
      answer: `There is no package.json in the working directory, so no Node.js package manager is configured here.${lockNote}${other ? ` ${other}` : ''}`,
    }
  }

  let pinned: string | null = null
  const pkg = seen.get(pkgCall)!
  let manifest: Record<string, unknown> | null = null
  if (pkg.isError) evidence.push(`I could not read package.json (${clip(pkg.content, 80)}).`)
  else {
    try {
      const parsed: unknown = JSON.parse(pkg.content)
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) manifest = parsed as Record<string, unknown>
      else evidence.push('package.json is not a JSON object.')
    } catch {
      evidence.push('package.json is not valid JSON, so I could not read its fields.')
    }
  }

  // 1. locks on disk
  for (const [file, manager] of locks) {
    const head = seen.get(call('read_file', { path: file, maxChars: 300 }))
    evidence.push(`${file} is in the project root${lockDetail(file, head?.isError ? '' : (head?.content ?? ''))}.`)
    vote(manager, 3)
  }
  const absent = LOCKFILES.filter(([f]) => !names.has(f) && f !== 'npm-shrinkwrap.json' && f !== 'bun.lock').map(([f]) =>
    f === 'bun.lockb' ? 'bun lockfile' : f,
  )
  if (locks.length === 0) evidence.push(`There is no lockfile (no ${joinOr(absent)}).`)
  else if (locks.length === 1) evidence[evidence.length - 1] = evidence[evidence.length - 1].replace(/\.$/, `, and there is no ${joinOr(absent)}.`)

  if (manifest) {
    // 2. the packageManager field (Corepack)
    const field = manifest.packageManager
    if (typeof field === 'string' && field.length > 0) {
      const name = /^(npm|yarn|pnpm|bun)@/.exec(field)?.[1]
      pinned = name ?? null
      evidence.push(`package.json pins ${JSON.stringify(field)} in its "packageManager" field${name ? ', which Corepack enforces' : ''}.`)
      if (name) vote(name, 10)
    } else {
      evidence.push('package.json has no "packageManager" field, so Corepack does not pin another tool.')
    }
    // 3. what the scripts call
    const scripts = manifest.scripts && typeof manifest.scripts === 'object' ? (manifest.scripts as Record<string, unknown>) : {}
    const calls: Array<[string, string, string]> = []
    for (const [name, command] of Object.entries(scripts)) {
      if (typeof command !== 'string') continue
      const m = /\b(npm|npx|yarn|pnpm|pnpx|bun|bunx)\b/.exec(command)
      if (m)
        calls.push([
          name,
          command,
          m[1]
            .replace(/^npx$/, 'npm')
            .replace(/^pnpx$/, 'pnpm')
            .replace(/^bunx$/, 'bun'),
        ])
    }
    if (calls.length > 0) {
      const [name, command, manager] = calls[0]
      const others = calls.length > 1 ? ` (${calls.length - 1} more script${calls.length === 2 ? ' calls' : 's call'} a package manager too)` : ''
      evidence.push(`Its scripts call ${manager}: ${JSON.stringify(name)} runs ${JSON.stringify(clip(command, 70))}${others}.`)
      for (const [, , m] of calls) vote(m, 1)
    } else if (Object.keys(scripts).length > 0) {
      evidence.push(`None of its ${Object.keys(scripts).length} scripts calls a package manager by name.`)
    }
    const engines = manifest.engines && typeof manifest.engines === 'object' ? Object.keys(manifest.engines) : []
    const engineManagers = engines.filter((e) => (MANAGERS as readonly string[]).includes(e))
    if (engineManagers.length > 0) {
      evidence.push(`Its "engines" field names ${joinAnd(engineManagers)}.`)
      for (const e of engineManagers) vote(e, 1)
    }
  }

  const ranked = [...votes.entries()].sort((a, b) => b[1] - a[1])
  let verdict: string
  if (ranked.length === 0) {
    verdict = 'Nothing here names a package manager, so this project works with the default one, npm.'
  } else {
    const [winner] = ranked[0]
    const lockManagers = unique(locks.map(([, m]) => m))
    if (pinned) verdict = `This project uses ${winner}.`
    else if (lockManagers.length > 1)
      verdict = `This project has lockfiles for ${joinAnd(lockManagers)}; ${winner} has the most evidence, but the stray lockfile${lockManagers.length > 2 ? 's' : ''} should be removed.`
    else verdict = `This project uses ${winner}.`
    if (pinned && lockManagers.some((m) => m !== pinned))
      verdict += ` (A lockfile of another tool is present too; the "packageManager" pin is what Corepack enforces.)`
  }
  const advice = ranked.length > 0 ? `\n\n${usage(ranked[0][0])}` : ''
  return { answer: `${verdict}\n\nWhat I found:\n${evidence.map((e) => `- ${e}`).join('\n')}${advice}` }
}

/** What the start of a lockfile says about who wrote it. */
function lockDetail(file: string, head: string): string {
  if (file === 'package-lock.json' || file === 'npm-shrinkwrap.json') {
    const v = /"lockfileVersion"\s*:\s*(\d+)/.exec(head)?.[1]
    if (v === '3' || v === '2') return ` (lockfileVersion ${v}, written by npm 7 or later)`
    if (v === '1') return ' (lockfileVersion 1, written by npm 5 or 6)'
    return ''
  }
  if (file === 'yarn.lock')
    return /__metadata/.test(head) ? ' (a Yarn Berry lockfile, Yarn 2 or later)' : /yarn lockfile v1/.test(head) ? ' (a Yarn Classic v1 lockfile)' : ''
  if (file === 'pnpm-lock.yaml') {
    const v = /lockfileVersion:\s*'?([\d.]+)/.exec(head)?.[1]
    return v ? ` (lockfileVersion ${v})` : ''
  }
  return ''
}

function usage(manager: string): string {
  switch (manager) {
    case 'npm':
      return 'So install with `npm ci` (or `npm install` to update the lockfile) and run scripts with `npm run <script>`, e.g. `npm test`.'
    case 'yarn':
      return 'So install with `yarn install` and run scripts with `yarn <script>`.'
    case 'pnpm':
      return 'So install with `pnpm install` and run scripts with `pnpm <script>`.'
    default:
      return `So install with \`${manager} install\` and run scripts with \`${manager} run <script>\`.`
  }
}

function otherEcosystem(names: ReadonlySet<string>): string | null {
  const marks: Array<[string, string]> = [
    ['Cargo.toml', 'a Rust crate (Cargo.toml)'],
    ['pyproject.toml', 'a Python project (pyproject.toml)'],
    ['requirements.txt', 'a Python project (requirements.txt)'],
    ['go.mod', 'a Go module (go.mod)'],
    ['pom.xml', 'a Maven project (pom.xml)'],
    ['build.gradle', 'a Gradle project (build.gradle)'],
    ['Gemfile', 'a Ruby project (Gemfile)'],
  ]
  const found = marks.filter(([file]) => names.has(file)).map(([, what]) => what)
  return found.length ? `It looks like ${joinAnd(found)}.` : null
}

/** "Read X": read each named file (finding it by name when it is not where the request says), then describe it. */
function readFiles(paths: readonly string[]): Plan {
  const plans = paths.slice(0, 4).map((p) => findFile(p, true, true))
  return (ctx) => {
    const moves = plans.map((plan) => plan(ctx))
    const calls = moves.flatMap((m) => ('calls' in m ? m.calls : []))
    if (calls.length > 0) return { calls }
    return { answer: moves.map((m) => (m as { answer: string }).answer).join('\n\n') }
  }
}

/**
 * Find a file by name, and optionally read and describe it. `direct` tries the path as given first
 * (a request that names `src/a.ts`), and searches by name only when that read fails.
 */
function findFile(name: string, read: boolean, direct = false): Plan {
  const asGiven = call('read_file', { path: name })
  const base = name.replace(/\/$/, '').split('/').pop() || name
  const lookup = call('search', { query: base })
  return ({ seen }) => {
    if (direct) {
      const first = seen.get(asGiven)
      if (!first) return { calls: [asGiven] }
      if (!first.isError) return { answer: describeFile(name, first.content) }
      // refused, or not a regular file (a FIFO, a device): it is there, and searching for it would not help
      if (/^refused|only regular files are read$/.test(first.content)) return { answer: `I did not read ${name}: ${first.content}.` }
      if (/is a directory/.test(first.content)) return listDir(name)({ seen, earlier: [] })
    }
    const found = seen.get(lookup)
    if (!found) return { calls: [lookup] }
    if (found.isError) return { answer: `I could not search for ${JSON.stringify(base)}: ${found.content}` }
    const { names } = parseSearch(found.content)
    const exact = names.filter((n) => n === name || n.endsWith(`/${base}`) || n === base)
    const candidates = exact.length > 0 ? exact : names
    if (candidates.length === 0) {
      return { answer: `There is no file named ${JSON.stringify(base)} anywhere in the working directory${direct ? ` (${name} does not exist)` : ''}.` }
    }
    const where =
      candidates.length === 1
        ? candidates[0] === base
          ? `${base} is in the root of the working directory.`
          : `${base} is at ${candidates[0]}.`
        : `${candidates.length} files match ${JSON.stringify(base)}: ${joinAnd(candidates.slice(0, 8))}${candidates.length > 8 ? ', …' : ''}.`
    if (!read) return { answer: where }
    const best = call('read_file', { path: candidates[0] })
    const content = seen.get(best)
    if (!content) return { calls: [best] }
    const prefix = direct ? `There is no ${name} where you said, but ${where}` : where
    return { answer: `${prefix}\n\n${content.isError ? `I could not read it: ${content.content}` : describeFile(candidates[0], content.content)}` }
  }
}

function listDir(path: string): Plan {
  const list = call('list_dir', { path })
  return ({ seen }) => {
    const result = seen.get(list)
    if (!result) return { calls: [list] }
    if (result.isError) {
      if (path === '.') return { answer: `I could not list the working directory: ${result.content}` }
      const root = seen.get(listRoot)
      if (!root) return { calls: [listRoot] }
      return { answer: `I could not list ${path} (${result.content}). ${describeListing('.', parseListing(root.content))}` }
    }
    return { answer: describeListing(path, parseListing(result.content)) }
  }
}

function describeListing(path: string, entries: readonly ListedEntry[]): string {
  const where = path === '.' ? 'The working directory' : path.replace(/\/?$/, '/')
  if (entries.length === 0) return `${where} is empty.`
  const dirs = entries.filter((e) => e.kind === 'dir').map((e) => `${e.name}/`)
  const files = entries.filter((e) => e.kind !== 'dir').map((e) => e.name)
  const show = (list: string[]) => `${list.slice(0, 12).join(', ')}${list.length > 12 ? `, and ${list.length - 12} more` : ''}`
  const parts = [
    `${where} has ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}:`,
    dirs.length ? `- ${dirs.length} director${dirs.length === 1 ? 'y' : 'ies'}: ${show(dirs)}` : null,
    files.length ? `- ${files.length} file${files.length === 1 ? '' : 's'}: ${show(files)}` : null,
  ]
  const names = new Set(files)
  const kind = names.has('package.json') ? 'package.json makes it a Node.js package.' : otherEcosystem(names)
  return [...parts.filter((p) => p !== null), ...(kind ? ['', kind] : [])].join('\n')
}

function searchFor(query: string): Plan {
  const search = call('search', { query })
  return ({ seen }) => {
    const result = seen.get(search)
    if (!result) return { calls: [search] }
    if (result.isError) return { answer: `The search for ${JSON.stringify(query)} failed: ${result.content}` }
    const { names, lines, total, files, hidden } = parseSearch(result.content)
    if (names.length === 0 && total === 0)
      return { answer: `Nothing in the working directory mentions ${JSON.stringify(query)}, in file names or in file contents.` }
    const byFile = new Map<string, typeof lines>()
    for (const l of lines) byFile.set(l.path, [...(byFile.get(l.path) ?? []), l])
    const out = [
      total > 0
        ? `${JSON.stringify(query)} appears in ${total} line${total === 1 ? '' : 's'} of ${files} file${files === 1 ? '' : 's'}${names.length ? `, and in ${names.length} file name${names.length === 1 ? '' : 's'}` : ''}.`
        : `No file mentions ${JSON.stringify(query)} in its text, but ${names.length} file name${names.length === 1 ? ' contains' : 's contain'} it.`,
    ]
    for (const [path, hits] of [...byFile.entries()].slice(0, 8)) {
      const count = hits.length + (hidden.get(path) ?? 0)
      out.push(`- ${path} (${count} line${count === 1 ? '' : 's'}), e.g. line ${hits[0].line}: ${clip(hits[0].text, 90)}`)
    }
    if (files > Math.min(byFile.size, 8)) out.push(`- … and ${files - Math.min(byFile.size, 8)} more file${files - Math.min(byFile.size, 8) === 1 ? '' : 's'}`)
    if (names.length) out.push(`Files named after it: ${joinAnd(names.slice(0, 6))}${names.length > 6 ? ', …' : ''}.`)
    return { answer: out.join('\n') }
  }
}

/** "What is this project": the root listing, then the README and package.json side by side. */
const overview: Plan = ({ seen }) => {
  const root = seen.get(listRoot)
  if (!root) return { calls: [listRoot] }
  const entries = parseListing(root.content)
  const readme = entries.find((e) => e.kind === 'file' && /^readme(\.md|\.txt|\.rst)?$/i.test(e.name))?.name
  const reads = [
    ...(readme ? [call('read_file', { path: readme, maxChars: 4000 })] : []),
    ...(entries.some((e) => e.name === 'package.json') ? [call('read_file', { path: 'package.json' })] : []),
  ]
  const missing = reads.filter((c) => !seen.get(c))
  if (missing.length > 0) return { calls: missing }
  const parts = reads.map((c) => {
    const r = seen.get(c)!
    return r.isError ? `I could not read ${String(c.args.path)}: ${r.content}` : describeFile(String(c.args.path), r.content)
  })
  if (parts.length === 0) parts.push(describeListing('.', entries))
  return { answer: parts.join('\n\n') }
}

/** "What did I ask before": the earlier prompts, the answers' first lines and the files read, from the conversation itself. */
const recap: Plan = ({ earlier }) => {
  const asked: string[] = []
  const read = new Set<string>()
  let unanswered: number[] = []
  for (const m of earlier) {
    if (m.role === 'user' && m.source.kind !== 'tool') {
      asked.push(`${asked.length + 1}. ${JSON.stringify(clip(textOf(m), 100))}`)
      unanswered.push(asked.length - 1)
    } else if (m.role === 'assistant') {
      for (const c of toolCallsOf(m)) {
        if (c.name !== 'read_file') continue
        try {
          const path = (JSON.parse(c.arguments) as { path?: unknown }).path
          if (typeof path === 'string') read.add(path)
        } catch {
          // not a call it can read
        }
      }
      const text = textOf(m)
      if (isAnswer(m) && text && unanswered.length > 0) {
        // one reply answers the prompt and the steering that joined it
        const [first, ...rest] = unanswered
        asked[first] += `, and I answered ${JSON.stringify(clip(text.split('\n')[0], 90))}`
        for (const i of rest) asked[i] += ' (answered in the same reply)'
        unanswered = []
      }
    }
  }
  if (asked.length === 0) return { answer: 'This is the start of our conversation: there is nothing earlier to recap.' }
  const files = read.size ? `\n\nFiles I read along the way: ${joinAnd([...read])}.` : ''
  return { answer: `Earlier in this conversation you asked:\n${asked.join('\n')}${files}` }
}

// ---- describing a file ------------------------------------------------------------------

/** A short, content-derived description of a file: its shape, its title or keys, its first lines. */
export function describeFile(path: string, content: string): string {
  const truncated = /\n\[truncated: showing (\d+) of (\d+) characters\]$/.exec(content)
  // a file cut before its end was read: its size is known in bytes only
  const cut = truncated ? null : /\n\[truncated: showing the first (\d+) characters of (\d+) bytes\]$/.exec(content)
  const marker = truncated ?? cut
  const body = marker ? content.slice(0, marker.index) : content
  const lines = body.split('\n')
  const count = (text: string) => Number(text).toLocaleString('en-US')
  const size = truncated
    ? `${count(truncated[2])} characters (I read the first ${count(truncated[1])})`
    : cut
      ? `${count(cut[2])} bytes (I read the first ${count(cut[1])} characters)`
      : `${lines.length} line${lines.length === 1 ? '' : 's'}`
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? ''
  const head = `${path} has ${size}.`
  if (ext === 'json') return `${head} ${describeJson(path, body)}`
  if (ext === 'md' || ext === 'markdown' || /^readme$/i.test(path)) return `${head} ${describeMarkdown(lines)}`
  if (/^(ts|tsx|js|jsx|mjs|cjs|mts|cts|py|rs|go|java|kt|rb|c|h|cc|cpp|hpp|cs|swift|php|sh)$/.test(ext)) return `${head} ${describeCode(lines)}`
  const first = lines.filter((l) => l.trim() !== '').slice(0, 3)
  return first.length ? `${head} It starts with:\n${first.map((l) => `  ${clip(l, 100)}`).join('\n')}` : `${head} It is empty.`
}

function describeJson(path: string, body: string): string {
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return 'It is not valid JSON (or I only read part of it).'
  }
  if (Array.isArray(value)) return `It is a JSON array of ${value.length} item${value.length === 1 ? '' : 's'}.`
  if (!value || typeof value !== 'object') return `It holds the JSON value ${clip(JSON.stringify(value), 60)}.`
  const obj = value as Record<string, unknown>
  const keys = Object.keys(obj)
  if (/(^|\/)package\.json$/.test(path)) {
    const name = typeof obj.name === 'string' ? obj.name : '(unnamed)'
    const version = typeof obj.version === 'string' ? ` ${obj.version}` : ''
    const description = typeof obj.description === 'string' ? `: ${JSON.stringify(clip(obj.description, 140))}` : ''
    const count = (k: string) => (obj[k] && typeof obj[k] === 'object' ? Object.keys(obj[k]).length : 0)
    const scripts = obj.scripts && typeof obj.scripts === 'object' ? Object.keys(obj.scripts) : []
    return [
      `It describes the package ${name}${version}${description}.`,
      scripts.length ? `Scripts (${scripts.length}): ${scripts.slice(0, 10).join(', ')}${scripts.length > 10 ? ', …' : ''}.` : 'It has no scripts.',
      `${count('dependencies')} dependencies, ${count('devDependencies')} devDependencies${count('peerDependencies') ? `, ${count('peerDependencies')} peerDependencies` : ''}.`,
    ].join(' ')
  }
  return `It is a JSON object with ${keys.length} key${keys.length === 1 ? '' : 's'}: ${keys.slice(0, 12).join(', ')}${keys.length > 12 ? ', …' : ''}.`
}

function describeMarkdown(lines: readonly string[]): string {
  let inFence = false
  const headings: string[] = []
  let title: string | null = null
  const paragraph: string[] = []
  let paragraphDone = false
  for (const line of lines) {
    if (/^\s*```/.test(line)) {
      inFence = !inFence
      if (paragraph.length) paragraphDone = true
      continue
    }
    if (inFence) continue
    const h = /^(#{1,6})\s+(.*)$/.exec(line)
    if (h) {
      if (h[1].length === 1 && title === null) title = h[2].trim()
      else headings.push(h[2].trim())
      if (paragraph.length) paragraphDone = true
      continue
    }
    if (!paragraphDone && line.trim() !== '' && !/^[|<!\-*>]/.test(line.trim())) paragraph.push(line.trim())
    else if (paragraph.length && line.trim() === '') paragraphDone = true
  }
  const parts = [title ? `Its title is ${JSON.stringify(title)}.` : 'It has no top-level title.']
  if (headings.length) parts.push(`Sections: ${headings.slice(0, 8).join(' · ')}${headings.length > 8 ? ' · …' : ''}.`)
  if (paragraph.length) parts.push(`It opens with: ${JSON.stringify(clip(paragraph.join(' '), 240))}`)
  return parts.join(' ')
}

function describeCode(lines: readonly string[]): string {
  const comment = lines
    .slice(0, 12)
    .filter((l) => /^\s*(\/\/|#(?!!)|\*|\/\*)/.test(l))
    .map((l) => l.replace(/^\s*(\/\/+|#+|\/?\*+\/?)\s?/, '').trim())
    .filter(Boolean)
    .slice(0, 2)
    .join(' ')
  const exports = [
    ...lines
      .join('\n')
      .matchAll(/^export\s+(?:default\s+)?(?:declare\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm),
  ].map((m) => m[1])
  const defs = exports.length ? [] : [...lines.join('\n').matchAll(/^(?:def|class|fn|func|pub fn)\s+([A-Za-z_]\w*)/gm)].map((m) => m[1])
  const parts: string[] = []
  if (comment) parts.push(`Its opening comment says: ${JSON.stringify(clip(comment, 200))}.`)
  if (exports.length) parts.push(`It exports ${exports.length}: ${exports.slice(0, 10).join(', ')}${exports.length > 10 ? ', …' : ''}.`)
  else if (defs.length) parts.push(`It defines ${defs.slice(0, 10).join(', ')}${defs.length > 10 ? ', …' : ''}.`)
  if (parts.length === 0) parts.push(`It starts with: ${JSON.stringify(clip(lines.find((l) => l.trim()) ?? '', 100))}.`)
  return parts.join(' ')
}

// ---- honest limits --------------------------------------------------------------------

function capabilities(): string {
  return [
    "I'm agentchart's built-in local model: a small offline planner, not a language model.",
    'I can list directories, read files and search text inside the working directory, and answer from what I read. Try:',
    '- "Which package manager does this project use?"',
    '- "Read README.md" or "find tsconfig.json"',
    '- "Search for createAgent" or "list src"',
    '- "What did I ask before?"',
    'For open-ended questions, set OPENAI_API_KEY or DEEPSEEK_API_KEY and run the demo again.',
  ].join('\n')
}

function cannot(text: string, verb: string): string {
  return (
    `I can't ${verb.toLowerCase()} anything here: my tools only list, read and search files inside the working directory, and they change nothing. ` +
    `If you want me to look at something for ${JSON.stringify(clip(text, 60))}, name a file or a word to search for.`
  )
}

function notUnderstood(text: string): string {
  return (
    `I'm the built-in offline model, so I only understand requests about the files here, and I could not find a file or a word to look up in ${JSON.stringify(clip(text, 80))}. ` +
    'Try "read README.md", "search for createAgent", "list src" or "which package manager does this project use?". ' +
    'For anything else, set OPENAI_API_KEY or DEEPSEEK_API_KEY to talk to a real model.'
  )
}

// ---- words ------------------------------------------------------------------------------

function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim()
  return one.length > max ? `${one.slice(0, max - 1)}…` : one
}
const unique = <T>(list: readonly T[]): T[] => [...new Set(list)]
function joinWith(list: readonly string[], word: string): string {
  if (list.length <= 1) return list.join('')
  return `${list.slice(0, -1).join(', ')} ${word} ${list[list.length - 1]}`
}
const joinAnd = (list: readonly string[]) => joinWith(list, 'and')
const joinOr = (list: readonly string[]) => joinWith(list, 'or')

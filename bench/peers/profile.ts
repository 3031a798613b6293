// Where a loop's step time goes: V8's sampling CPU profiler (the one behind
// `node --cpu-prof`) around the timed turns only, self time grouped by where
// the code lives; and, for agentchart, how many machine events and
// microsteps one turn of the workload takes.
import { mkdirSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { fileURLToPath } from 'node:url'
import type { Conversation, Loop } from './harness.js'

/** The parts of a .cpuprofile this summary reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

export interface ProfileSummary {
  /** Sampled time inside the turns, ms. */
  totalMs: number
  turns: number
  chunks: number
  /** Category → share of self time (0..1). */
  categories: Record<string, number>
  /** Share of samples whose stack has a frame of the category (time under it, callees included). */
  inclusive: Record<string, number>
  top: { function: string; where: string; category: string; share: number }[]
  file?: string
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** Which part of the process a frame belongs to. */
export function categorise(functionName: string, url: string, root = ROOT): string {
  if (functionName === '(garbage collector)') return 'GC'
  if (functionName === '(program)' || functionName === '(idle)' || functionName === '(root)') return 'VM (program, idle)'
  const path = url.startsWith('file://') ? fileURLToPath(url) : url
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path)
  if (pkg) {
    if (pkg[1] === 'xstate') return 'XState'
    if (pkg[1] === 'zod') return 'zod'
    return pkg[1]
  }
  if (path.startsWith(`${root}src/`) || path.startsWith(`${root}dist/`)) return 'agentchart'
  if (path.startsWith(`${root}bench/`)) return 'bench (fake model, tools, harness)'
  if (path.startsWith('node:')) return 'Node internals'
  if (path === '') return 'V8 builtins and runtime'
  return 'other'
}

/** File and line of a frame; TypeScript run through tsx reports line 1 for everything, so its line is left out. */
function where(url: string, line: number): string {
  if (url === '') return '(native)'
  const path = url.startsWith('file://') ? fileURLToPath(url) : url
  const rel = path.startsWith(ROOT) ? path.slice(ROOT.length) : path
  return rel.endsWith('.ts') ? rel : `${rel.replace(/^.*node_modules\//, '')}:${line + 1}`
}

/** Self time by category, time under XState and zod, and the top functions, from one profile. */
export function summarise(profile: CpuProfile, top = 20): Omit<ProfileSummary, 'turns' | 'chunks'> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const self = new Map<number, number>()
  const under: Record<string, number> = { XState: 0, zod: 0, agentchart: 0 }
  let total = 0
  profile.samples.forEach((id, k) => {
    // a sample's weight is the time until the next one
    const dt = profile.timeDeltas[k + 1] ?? 0
    total += dt
    self.set(id, (self.get(id) ?? 0) + dt)
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame
      const cat = categorise(frame.functionName, frame.url)
      if (cat in under && !seen.has(cat)) {
        seen.add(cat)
        under[cat] += dt
      }
    }
  })
  const categories: Record<string, number> = {}
  const functions = new Map<string, { function: string; where: string; category: string; us: number }>()
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame
    const category = categorise(functionName, url)
    categories[category] = (categories[category] ?? 0) + us
    const key = `${functionName}@${url}:${lineNumber}`
    const entry = functions.get(key) ?? { function: functionName || '(anonymous)', where: where(url, lineNumber), category, us: 0 }
    entry.us += us
    functions.set(key, entry)
  }
  const share = (us: number) => (total === 0 ? 0 : us / total)
  return {
    totalMs: total / 1000,
    categories: Object.fromEntries(
      Object.entries(categories)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => [k, share(v)]),
    ),
    inclusive: Object.fromEntries(Object.entries(under).map(([k, v]) => [k, share(v)])),
    top: [...functions.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map(({ us, ...rest }) => ({ ...rest, share: share(us) })),
  }
}

export interface ProfileOptions {
  chunks?: number
  turns?: number
  warmupTurns?: number
  /** Sampling interval, µs. */
  intervalUs?: number
  /** Where to write the .cpuprofile; none when omitted. */
  out?: string
}

/** Profile `turns` turns (each in a conversation created before the profiler starts). */
export async function profile(loop: Loop, options: ProfileOptions): Promise<ProfileSummary> {
  const c = options.chunks ?? 16
  const turns = options.turns ?? 600
  loop.setChunks(c)
  for (let i = 0; i < (options.warmupTurns ?? 300); i++) {
    const conv = await loop.conversation()
    await conv.turn(`warm-up ${i}`)
    await conv.close?.()
  }
  const conversations: Conversation[] = []
  for (let i = 0; i < turns; i++) conversations.push(await loop.conversation())
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: options.intervalUs ?? 50 })
  await session.post('Profiler.start')
  for (let i = 0; i < turns; i++) await conversations[i].turn(`question ${i}`)
  const { profile: result } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile }
  session.disconnect()
  for (const conv of conversations) await conv.close?.()
  if (options.out) {
    mkdirSync(new URL('.', `file://${options.out}`), { recursive: true })
    writeFileSync(options.out, JSON.stringify(result))
  }
  return { ...summarise(result), turns, chunks: c, ...(options.out ? { file: options.out } : {}) }
}

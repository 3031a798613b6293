// Run by idle-memory.test.ts as `node --expose-gc --import tsx`: seeds short and
// long stored sessions in one SQLite file (or a PostgreSQL database given by URL), gives each a checkpoint (one open and
// one turn), then opens them all again and prints, as JSON, the heap each idle
// agent keeps (a heap delta over many agents, after collection), per length.
import { createAgent, type Agent } from '../../src/index.js'
import { postgresStore, sqliteStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse } from '../../src/testing/index.js'
import { recordCycle, seedLongSession } from './long-log.js'

const gc = globalThis.gc
if (typeof gc !== 'function') throw new Error('idle-memory-child needs node --expose-gc')
const [path, short, long, count] = process.argv.slice(2).map((v, i) => (i === 0 ? v : Number(v))) as [string, number, number, number]
// how the measured opens validate (default: the agent's own, 'auto')
const validate = (process.argv[6] ?? 'auto') as 'auto' | 'full'
const store = path.startsWith('postgres://') ? postgresStore({ connectionString: path }) : sqliteStore({ path })
const recorded = await recordCycle()
const quiet = { error: () => {} }
const compaction = { contextWindow: 400, auto: false, keepRecent: 0, summarise: () => 'what was said so far' } as const

const lengths: Record<string, number> = {}
for (const [name, n] of [
  ['short', short],
  ['long', long],
] as const) {
  for (let i = 0; i < count; i++) {
    const id = `${name}-${i}`
    await seedLongSession(store, id, recorded, n)
    // one driven turn: the session ends at a safe point with a checkpoint, as a served session does
    const agent = await createAgent({ model: scriptedModel([textResponse('hi')]), store, sessionId: id, compaction, logger: quiet })
    agent.followup('hello')
    await agent.whenIdle()
    await agent.dispose()
    lengths[name] = agent.session.length
  }
}

const settle = async () => {
  for (let i = 0; i < 4; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
  }
  return process.memoryUsage().heapUsed
}

/** The heap `count` idle agents over sessions `name-*` keep, per agent: the median of three rounds after an unmeasured one. */
async function perAgent(name: string): Promise<number> {
  const rounds: number[] = []
  for (let round = 0; round < 4; round++) {
    const bytes = await roundOf(name)
    if (round > 0) rounds.push(bytes)
  }
  return rounds.sort((a, b) => a - b)[1]
}

/** One round of `perAgent`: opens the agents, measures, disposes them. */
async function roundOf(name: string): Promise<number> {
  const before = await settle()
  const held: Agent[] = []
  for (let i = 0; i < count; i++) {
    const agent = await createAgent({ model: scriptedModel([]), store, sessionId: `${name}-${i}`, compaction, logger: quiet, validate })
    await agent.whenIdle()
    held.push(agent)
  }
  const after = await settle()
  for (const agent of held) await agent.dispose()
  return (after - before) / count
}

/** The heap the sessions of `count` opened and disposed agents keep, per session (a long one stays trimmed). */
async function perSession(name: string): Promise<number> {
  const before = await settle()
  const held: unknown[] = []
  for (let i = 0; i < count; i++) {
    const agent = await createAgent({ model: scriptedModel([]), store, sessionId: `${name}-${i}`, compaction, logger: quiet, validate })
    await agent.whenIdle()
    await agent.dispose()
    held.push(agent.session)
  }
  const after = await settle()
  held.length = 0
  return (after - before) / count
}

const result = { lengths, short: await perAgent('short'), long: await perAgent('long'), session: await perSession('long') }
await store.close()
process.stdout.write(`${JSON.stringify(result)}\n`)

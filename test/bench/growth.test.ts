// The long-session builder of the growth measure, run small: its logs must be
// ones the agent itself writes (invariants pass, equal to a live run's log but
// for ids and times) and must resume to the requests a live agent makes. No
// timing is asserted.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { ModelAdapter, ModelRequest } from '../../src/index.js'
import { createAgent, createSession, userMessage } from '../../src/index.js'
import { memoryStore, sqliteStore, type SessionStore } from '../../src/stores/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import {
  buildLog,
  growthAgentOptions,
  growthModel,
  normalised,
  promptText,
  recordTemplate,
  runLive,
  turnsIn,
  type GrowthShape,
} from '../../bench/growth-log.js'

const dir = mkdtempSync(join(tmpdir(), 'agentchart-growth-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The growth model, keeping what each request carried at dispatch (all but the signal and the session id). */
function recording(): { model: ModelAdapter; requests: unknown[] } {
  const inner = growthModel()
  const requests: unknown[] = []
  const model: ModelAdapter = {
    provider: inner.provider,
    model: inner.model,
    stream(request: ModelRequest) {
      const { signal: _signal, sessionId: _id, ...rest } = request
      requests.push(JSON.parse(JSON.stringify(rest)))
      return inner.stream(request)
    },
  }
  return { model, requests }
}

/** Writes `events` into the store under `id` through an ordinary lease. */
async function seedStore(store: SessionStore, id: string, events: Parameters<typeof buildLog>[0]['prefix']) {
  const handle = await store.open(id)
  await handle.append(events)
  await handle.release()
}

const shapes: [string, GrowthShape, number][] = [
  // past the live prefix and a few periods, so repeated copies are what is checked
  ['compacted', { compaction: true }, 12_000],
  ['never compacted', { compaction: false }, 1_500],
]

describe.each(shapes)('growth logs, %s', (_name, shape, length) => {
  it('are valid session logs: the invariants pass and a session accepts them as a seed', async () => {
    const template = await recordTemplate(shape)
    const log = buildLog(template, length)
    expect(log.length).toBeGreaterThanOrEqual(length)
    expect(log.length).toBeGreaterThan(template.prefix.length + 2 * template.period.length)
    expect(log.at(-1)?.type).toBe('turn/end')
    expect(checkSessionInvariants(log)).toEqual([])
    if (shape.compaction) expect(log.filter((e) => e.type === 'compaction/completed').length).toBeGreaterThan(3)
    const session = createSession({ seed: log })
    expect(session.length).toBe(log.length + 1) // the seed's end marker
  })

  it('equal the log the agent writes when it runs the same turns live, ids and times aside', async () => {
    const template = await recordTemplate(shape)
    const built = buildLog(template, length)
    const live = await runLive(shape, turnsIn(built))
    expect(live.length).toBe(built.length)
    expect(normalised(built)).toEqual(normalised(live))
  })

  it('resume to the requests a live agent makes, on a memory store and on SQLite, opened from the log and again after a turn', async () => {
    const template = await recordTemplate(shape)
    const built = buildLog(template, length)
    const turns = turnsIn(built)
    const live = recording()
    const liveAgent = createAgent(growthAgentOptions(shape, live.model))
    for (let t = 1; t <= turns + 4; t++) {
      liveAgent.followup(userMessage(promptText(t)))
      await liveAgent.whenIdle()
    }
    await liveAgent.dispose()
    expect(live.requests).toHaveLength(turns + 4)

    for (const store of [memoryStore(), sqliteStore({ path: join(dir, `${shape.compaction ? 'c' : 'p'}.db`) })]) {
      await seedStore(store, 'built', built)
      // the first open reads a log written straight into the store; the second one what its agent stored at a turn end
      for (const [from, to] of [
        [turns + 1, turns + 1],
        [turns + 2, turns + 4],
      ]) {
        const resumed = recording()
        const agent = await createAgent({ ...growthAgentOptions(shape, resumed.model), store, sessionId: 'built', validate: 'checkpoint' })
        for (let t = from; t <= to; t++) {
          agent.followup(userMessage(promptText(t)))
          await agent.whenIdle()
        }
        await agent.dispose()
        expect(normalised(resumed.requests), `${store.kind}, turns ${from}-${to}`).toEqual(normalised(live.requests.slice(from - 1, to)))
      }
      await store.close()
    }
  })
})

describe('growth template', () => {
  it('a period that does not continue the log builds a log the invariants refuse (the validity check can fail)', async () => {
    const template = await recordTemplate({ compaction: true })
    // the period without its last event (a turn end): every copy leaves a turn open
    const broken = { ...template, period: template.period.slice(0, -1) }
    expect(checkSessionInvariants(buildLog(broken, template.prefix.length + 3 * template.period.length)).length).toBeGreaterThan(0)
  })
})

// SQLite as the embedded default: a killed process loses nothing it had
// committed and the next one repairs and continues; a damaged file is refused
// by seq and its bytes are left exactly as they were.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { createAgent, SessionInUseError, StoredLogError, type Agent, type SessionEvent } from '../../src/index.js'
import { sqliteStore, type SessionStore } from '../../src/stores/index.js'
import { checkSessionInvariants, scriptedModel, textResponse } from '../../src/testing/index.js'
import { plain, until } from './support.js'

const dir = mkdtempSync(join(tmpdir(), 'agentchart-sqlite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const child = fileURLToPath(new URL('./crash-child.ts', import.meta.url))
const quiet = { error: () => {} }

/** Runs the crash child until `stop` says so, then kills it with SIGKILL; returns the events it saw acknowledged. */
async function crash(path: string, mode: 'stream' | 'tool', stop: (acknowledged: SessionEvent[], lines: string[]) => boolean): Promise<SessionEvent[]> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, path, 'chat', mode], { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const acknowledged: SessionEvent[] = []
  let stderr = ''
  let partial = ''
  proc.stderr.on('data', (data: Buffer) => (stderr += String(data)))
  proc.stdout.on('data', (data: Buffer) => {
    const text = partial + String(data)
    const parts = text.split('\n')
    partial = parts.pop()!
    for (const line of parts) {
      lines.push(line)
      if (line.startsWith('{')) acknowledged.push(JSON.parse(line) as SessionEvent)
    }
  })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)))
  try {
    await until(() => stop(acknowledged, lines) || proc.exitCode !== null, 20_000, `the child to reach the crash point (${stderr})`)
  } finally {
    proc.kill('SIGKILL')
  }
  expect(await exited).toBe('SIGKILL')
  return acknowledged
}

/** Opens the session again, retrying while the dead child's lease is still live (it lapses after 300 ms). */
async function reopen(store: SessionStore, script = [textResponse('back again')]): Promise<Agent> {
  for (;;) {
    try {
      return await createAgent({ model: scriptedModel(script), store, sessionId: 'chat', logger: quiet })
    } catch (error) {
      if (!(error instanceof SessionInUseError)) throw error
      expect(error.holder).toMatch(/^crash-child-\d+$/)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

describe('a process killed with SIGKILL', () => {
  for (const mode of ['stream', 'tool'] as const) {
    it(`RS-8: mid-${mode}: the next process finds every acknowledged event, closes the turn interrupted, and runs the next followup`, async () => {
      const path = join(dir, `crash-${mode}.db`)
      const acknowledged = await crash(path, mode, (events, lines) =>
        mode === 'stream' ? events.filter((e) => e.type === 'assistant/chunk').length >= 30 : lines.includes('TOOL-RUNNING'),
      )
      const store = sqliteStore({ path })
      const agent = await reopen(store)
      const events = agent.session.events
      expect(plain(events.slice(0, acknowledged.length))).toEqual(plain(acknowledged))
      const ended = events.findLast((e) => e.type === 'turn/end')
      expect(ended?.data).toEqual({ turn: 1, reason: { kind: 'interrupted' } })
      if (mode === 'tool') {
        expect(acknowledged.at(-1)?.type).toBe('tool/call')
        const result = events.find((e) => e.type === 'tool/result')
        expect(result?.data).toMatchObject({ error: { code: 'TOOL_OUTCOME_UNKNOWN' } })
      } else {
        expect(acknowledged.filter((e) => e.type === 'assistant/chunk').length).toBeGreaterThanOrEqual(30)
      }
      expect(checkSessionInvariants(events)).toEqual([])
      agent.followup('are you there?')
      await agent.whenIdle()
      expect(agent.session.events.findLast((e) => e.type === 'turn/end')?.data).toEqual({ turn: 2, reason: { kind: 'completed' } })
      expect(checkSessionInvariants(agent.session.events)).toEqual([])
      expect(plain(await store.load('chat'))).toEqual(plain(agent.session.events))
      await agent.dispose()
      await store.close()
    })
  }
})

describe('a damaged SQLite file', () => {
  const fingerprint = (path: string) => ({
    sha: createHash('sha256').update(readFileSync(path)).digest('hex'),
    files: readdirSync(dir)
      .filter((f) => f.startsWith(path.split('/').pop()!))
      .sort(),
  })

  /** A closed file holding a two-turn session, and the session's events. */
  async function written(name: string): Promise<{ path: string; events: readonly SessionEvent[] }> {
    const path = join(dir, name)
    const store = sqliteStore({ path })
    const agent = await createAgent({ model: scriptedModel([textResponse('a'), textResponse('b')]), store, sessionId: 'chat', logger: quiet })
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    await agent.dispose()
    await store.close()
    return { path, events: agent.session.events }
  }

  /** Flips bytes wherever `find` is stored (freed pages may hold stale copies); same length, so pages stay well-formed. */
  function edit(path: string, find: string, replace: string): void {
    expect(replace).toHaveLength(find.length)
    const bytes = readFileSync(path)
    let hits = 0
    for (let at = bytes.indexOf(find); at >= 0; at = bytes.indexOf(find, at + 1), hits++) Buffer.from(replace).copy(bytes, at)
    expect(hits, `${find} is in the file`).toBeGreaterThan(0)
    writeFileSync(path, bytes)
  }

  const cases = [
    {
      what: 'an unknown event type',
      damage: (events: readonly SessionEvent[]) => ({
        seq: events.findLast((e) => e.type === 'turn/start')!.seq,
        find: '"type":"turn/start","data":{"turn":2}',
        replace: '"type":"turn/stXrt","data":{"turn":2}',
        says: /unknown event type "turn\/stXrt"/,
      }),
    },
    {
      what: 'malformed JSON',
      damage: (events: readonly SessionEvent[]) => {
        const seq = events.findLast((e) => e.type === 'step/end')!.seq
        return { seq, find: `{"seq":${seq},"time"`, replace: `["seq":${seq},"time"`, says: /malformed JSON/ }
      },
    },
  ]

  for (const { what, damage } of cases) {
    it(`with ${what} in a row fails the open naming the seq, and its bytes are unchanged afterwards`, async () => {
      const { path, events } = await written(`damaged-${what.replaceAll(' ', '-')}.db`)
      const { seq, find, replace, says } = damage(events)
      edit(path, find, replace)
      const before = fingerprint(path)
      const store = sqliteStore({ path })
      const refused = await createAgent({ model: scriptedModel([]), store, sessionId: 'chat' }).catch((error: unknown) => error)
      await store.close()
      expect(refused).toBeInstanceOf(StoredLogError)
      expect(refused).toMatchObject({ code: 'STORED_LOG_INVALID', sessionId: 'chat', seq })
      expect((refused as Error).message).toMatch(says)
      expect(fingerprint(path)).toEqual(before)
    })
  }

  it('that is not a database at all is refused when the store is made, and left alone', () => {
    const path = join(dir, 'garbage.db')
    writeFileSync(path, Buffer.alloc(8192, 0x5a))
    const before = fingerprint(path)
    expect(() => sqliteStore({ path })).toThrow(StoredLogError)
    expect(() => sqliteStore({ path })).toThrow(/cannot open the SQLite database .*garbage\.db/)
    expect(fingerprint(path)).toEqual(before)
  })
})

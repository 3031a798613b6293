// `agentchart view`: a stored log read-only, or the paced demo live, until stopped.
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli, type CliIO } from '../../src/cli/main.js'
import { z } from 'zod'
import { agentTool, createAgent } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { until } from '../stores/support.js'
import { get, openLive } from '../viewer/sse.js'

const dir = mkdtempSync(join(tmpdir(), 'agentchart-view-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Run `agentchart view …` until the test stops it; resolves the printed URL as soon as it is printed. */
function start(args: string[]) {
  const out: string[] = []
  const err: string[] = []
  const controller = new AbortController()
  let printed!: (url: string) => void
  const url = new Promise<string>((resolve) => (printed = resolve))
  const io: CliIO = {
    out: (text) => {
      out.push(text)
      const found = /agentchart viewer: (\S+)/.exec(text)
      if (found) printed(found[1])
    },
    err: (text) => err.push(text),
    cwd: dir,
    stop: controller.signal,
  }
  const exit = runCli(['view', ...args], io)
  return { url, exit, out, err, stop: () => controller.abort() }
}

const liveUrl = (url: string) => {
  const u = new URL(url)
  return `http://${u.host}/api/live?token=${u.searchParams.get('token')}`
}

describe('agentchart view', () => {
  it('serves a stored JSONL log read-only on loopback until stopped', async () => {
    const agent = createAgent({ model: scriptedModel([textResponse('hello')]), logger: { error: () => {} } })
    agent.followup('hi')
    await agent.whenIdle()
    const events = agent.session.events
    await agent.dispose()
    writeFileSync(join(dir, 'session.jsonl'), events.map((e) => JSON.stringify(e)).join('\n'))

    const run = start(['--log', 'session.jsonl'])
    const url = await run.url
    expect(new URL(url).hostname).toBe('127.0.0.1')
    expect(run.out[0]).toBe(`${events.length} events, 1 turn (read-only)`)
    expect((await get(url)).status).toBe(200)
    const channel = await openLive(liveUrl(url))
    expect(await channel.until('hello')).toMatchObject({ mode: 'stored', title: 'session.jsonl' })
    await channel.until('end')
    expect(channel.messages.flatMap((m) => (m.kind === 'events' ? m.events : []))).toEqual(JSON.parse(JSON.stringify(events)))
    channel.close()
    run.stop()
    expect(await run.exit).toBe(0)
    await expect(get(url)).rejects.toThrow()
  })

  it('refuses a file that is not a session log, and a bad port', async () => {
    writeFileSync(join(dir, 'bad.jsonl'), '{"seq":0,"time":1,"type":"turn/start","data":{"turn":"x"}}\n')
    const bad = start(['--log', 'bad.jsonl'])
    expect(await bad.exit).toBe(1)
    expect(bad.err[0]).toMatch(/^invalid session log at seq 0/)
    const port = start(['--port', 'eighty'])
    expect(await port.exit).toBe(2)
    expect(port.err[0]).toMatch(/--port must be a number/)
  })

  it('with no log, runs the paced demo agent live', async () => {
    const run = start(['--port', '0'])
    const url = await run.url
    const channel = await openLive(liveUrl(url))
    expect(await channel.until('hello')).toMatchObject({ mode: 'live' })
    await channel.until('events', (m) => m.events.some((e) => e.type === 'turn/start'))
    await channel.until('state', (m) => m.status === 'running')
    channel.close()
    run.stop()
    expect(await run.exit).toBe(0)
  })

  it('serves one session of a SQLite store read-only: --session, or the most recent by default', async () => {
    const path = join(dir, 'chat.db')
    const store = sqliteStore({ path })
    const logs: Record<string, unknown> = {}
    for (const [sessionId, answer] of [
      ['older', 'first answer'],
      ['newer', 'second answer'],
    ] as const) {
      const agent = await createAgent({ model: scriptedModel([textResponse(answer)]), store, sessionId, logger: { error: () => {} } })
      agent.followup('hi')
      await agent.whenIdle()
      logs[sessionId] = JSON.parse(JSON.stringify(agent.session.events))
      await agent.dispose()
    }
    await store.close()

    const streamed = async (args: string[]) => {
      const run = start(args)
      const channel = await openLive(liveUrl(await run.url))
      const hello = await channel.until('hello')
      await channel.until('end')
      const events = channel.messages.flatMap((m) => (m.kind === 'events' ? m.events : []))
      channel.close()
      run.stop()
      expect(await run.exit).toBe(0)
      return { hello, events }
    }
    const latest = await streamed(['--store', 'chat.db'])
    expect(latest.hello).toMatchObject({ mode: 'stored', title: 'chat.db · newer' })
    expect(latest.events).toEqual(logs.newer)
    const named = await streamed(['--store', 'chat.db', '--session', 'older'])
    expect(named.events).toEqual(logs.older)

    const unknown = start(['--store', 'chat.db', '--session', 'nope'])
    expect(await unknown.exit).toBe(1)
    expect(unknown.err[0]).toMatch(/has no session "nope"/)
    const missing = start(['--store', 'missing.db'])
    expect(await missing.exit).toBe(1)
    expect(missing.err[0]).toMatch(/^no store at /)
    const both = start(['--store', 'chat.db', '--log', 'session.jsonl'])
    expect(await both.exit).toBe(2)
  })

  it("opens a stored parent's subagents from the same store: each linked, and served as its own session", async () => {
    const path = join(dir, 'delegation.db')
    const store = sqliteStore({ path })
    const ask = agentTool({
      name: 'ask',
      description: 'Ask a helper',
      input: z.object({ task: z.string() }),
      agent: () => ({ model: scriptedModel([textResponse('the helper answers')]), logger: { error: () => {} } }),
    })
    const planner = await createAgent({
      model: scriptedModel([toolCallResponse([{ id: 'c1', name: 'ask', arguments: '{"task":"look it up"}' }]), textResponse('done')]),
      tools: [ask],
      store,
      sessionId: 'planner',
      logger: { error: () => {} },
    })
    await planner.run('go')
    await planner.dispose()
    await store.close()

    const run = start(['--store', 'delegation.db', '--session', 'planner'])
    const parent = await openLive(liveUrl(await run.url))
    // the child was stored beside its parent under the id its call's result names
    expect((await parent.until('links')).links).toEqual([{ callId: 'c1', sessionId: 'planner.c1', tool: 'ask' }])
    const child = await openLive(`${liveUrl(await run.url)}&session=planner.c1`)
    expect(await child.until('hello')).toMatchObject({ mode: 'stored', sessionId: 'planner.c1' })
    await child.until('end')
    const events = child.messages.flatMap((m) => (m.kind === 'events' ? m.events : []))
    expect(events.find((e) => e.type === 'user/message')?.data).toMatchObject({ source: { parentSessionId: 'planner', parentCallId: 'c1' } })
    parent.close()
    child.close()
    run.stop()
    expect(await run.exit).toBe(0)
  })

  it('refuses a SQLite file that is not an agentchart store, and leaves it as it was: no tables created, no WAL', async () => {
    const path = join(dir, 'foreign.db')
    const foreign = new Database(path)
    foreign.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)')
    foreign.prepare('INSERT INTO notes (body) VALUES (?)').run('an application of its own')
    foreign.close()
    const bytes = readFileSync(path)
    const run = start(['--store', 'foreign.db'])
    expect(await run.exit).toBe(1)
    expect(run.err).toEqual([`${path} is not an agentchart store: a SQLite database without the tables agentchart_sessions and agentchart_events`])
    expect(readFileSync(path).equals(bytes)).toBe(true)
    expect(existsSync(`${path}-wal`) || existsSync(`${path}-shm`)).toBe(false)
    const after = new Database(path, { readonly: true })
    expect(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: 'notes' }])
    expect(after.pragma('journal_mode', { simple: true })).toBe('delete')
    after.close()

    writeFileSync(join(dir, 'notes.txt'), 'just some text, not a database\n'.repeat(200))
    const text = start(['--store', 'notes.txt'])
    expect(await text.exit).toBe(1)
    expect(text.err).toEqual([`${join(dir, 'notes.txt')} is not an agentchart store: not a SQLite database`])
  })

  it('views a read-only store file (chmod 0444, in a directory nobody may write) and writes nothing beside it', async () => {
    const shelf = mkdtempSync(join(tmpdir(), 'agentchart-view-ro-'))
    const path = join(shelf, 'chat.db')
    try {
      const store = sqliteStore({ path })
      const agent = await createAgent({ model: scriptedModel([textResponse('read-only answer')]), store, sessionId: 'kept', logger: { error: () => {} } })
      agent.followup('hi')
      await agent.whenIdle()
      const log = JSON.parse(JSON.stringify(agent.session.events)) as unknown
      await agent.dispose()
      await store.close()
      chmodSync(path, 0o444)
      chmodSync(shelf, 0o555)
      const files = readdirSync(shelf)
      const bytes = readFileSync(path)
      const cli = fileURLToPath(new URL('../../src/cli/index.ts', import.meta.url))
      // root ignores file modes: the viewer then runs as another user, for whom they hold, when that user can read the
      // clone (a clone under root's private home it cannot: there root runs it, and only "writes nothing" is checked)
      const asOther = process.getuid?.() === 0 && nobodyCanRead(cli) ? { uid: 65534, gid: 65534 } : {}
      const proc = spawn(process.execPath, ['--import', 'tsx', cli, 'view', '--store', path], { stdio: ['ignore', 'pipe', 'pipe'], ...asOther })
      let out = ''
      let err = ''
      proc.stdout.on('data', (d: Buffer) => (out += String(d)))
      proc.stderr.on('data', (d: Buffer) => (err += String(d)))
      const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
      try {
        await until(() => /agentchart viewer: \S+/.test(out) || proc.exitCode !== null, 20_000, 'the viewer to listen')
        expect(err).toBe('')
        const channel = await openLive(liveUrl(/agentchart viewer: (\S+)/.exec(out)![1]))
        expect(await channel.until('hello')).toMatchObject({ mode: 'stored', title: 'chat.db · kept' })
        await channel.until('end')
        expect(channel.messages.flatMap((m) => (m.kind === 'events' ? m.events : []))).toEqual(log)
        channel.close()
      } finally {
        proc.kill('SIGTERM')
      }
      expect(await exited).toBe(0)
      expect(readdirSync(shelf)).toEqual(files)
      expect(readFileSync(path).equals(bytes)).toBe(true)
    } finally {
      chmodSync(shelf, 0o755)
      rmSync(shelf, { recursive: true, force: true })
    }
  }, 30_000)
})

/** Whether the unprivileged user 65534 can read `file` and the packages beside it (it cannot under a 0700 home). */
function nobodyCanRead(file: string): boolean {
  const tsx = fileURLToPath(new URL('../../node_modules/tsx/package.json', import.meta.url))
  const probe = spawnSync(process.execPath, ['-e', 'for (const f of process.argv.slice(1)) require("fs").accessSync(f)', file, tsx], {
    uid: 65534,
    gid: 65534,
    cwd: tmpdir(),
    stdio: 'ignore',
  })
  return probe.status === 0
}

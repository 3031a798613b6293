// The check, with real processes: one client process and several
// worker processes share sessions through a real PostgreSQL (embedded) or one
// SQLite file; one worker is SIGKILLed mid-turn. Afterwards every message the
// client sent entered exactly one log exactly once, every cancel ended its
// turn aborted, every run() resolved with the turn that consumed its input,
// every watch() equals the committed log, and every log is sound.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunResult, SessionEvent, SessionEventOf } from '../../src/index.js'
import { postgresStore, sqliteStore, type SessionStore } from '../../src/service/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { createDatabase, startPostgres, type PostgresServer } from '../../scripts/embedded-postgres.js'

const SESSIONS = Number(process.env.AGENTCHART_SCALE_SESSIONS ?? 50)
const DELAY_MS = Number(process.env.AGENTCHART_SCALE_DELAY_MS ?? 300)
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

let server: PostgresServer
let dir: string
const children: ChildProcess[] = []
beforeAll(async () => {
  server = await startPostgres()
  dir = mkdtempSync(join(tmpdir(), 'agentchart-scale-'))
}, 120_000)
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
}, 60_000)

/** A child process running `file` under tsx, with a way to wait for a line it prints. */
function child(file: string, args: string[]) {
  const proc = spawn(process.execPath, ['--import', 'tsx', here(file), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(proc)
  const lines: string[] = []
  const waiting: { test: (line: string) => boolean; resolve: () => void; reject: (error: Error) => void }[] = []
  let stderr = ''
  let buffered = ''
  proc.stdout!.on('data', (data: Buffer) => {
    buffered += data.toString()
    const parts = buffered.split('\n')
    buffered = parts.pop()!
    for (const line of parts) {
      lines.push(line)
      for (const w of [...waiting]) {
        if (!w.test(line)) continue
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve()
      }
    }
  })
  proc.stderr!.on('data', (data: Buffer) => (stderr += data.toString()))
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  // a child that ends (its output read to the end) before the line it was waited for fails the wait with its stderr
  // instead of hanging the test until its timeout
  proc.on('close', (code, signal) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`${file} ended (${code ?? signal}) before the awaited line:\n${stderr}`))
  })
  return {
    proc,
    lines,
    exited,
    stderr: () => stderr,
    line: (test: (line: string) => boolean) =>
      lines.some(test) ? Promise.resolve() : new Promise<void>((resolve, reject) => waiting.push({ test, resolve, reject })),
  }
}

interface Report {
  sessions: string[]
  sent: { sessionId: string; messageId: string; kind: string }[]
  runs: { sessionId: string; messageId: string; result: RunResult }[]
  cancels: { sessionId: string; turn: number }[]
  watched: Record<string, SessionEvent[]>
}

async function scenario(kind: 'postgres' | 'sqlite', target: string, store: SessionStore, workerCount: number) {
  const workers = Array.from({ length: workerCount }, (_, k) => child('./sessions-worker-child.ts', [kind, target, `w${k}`, String(DELAY_MS)]))
  await Promise.all(workers.map((w) => w.line((l) => l === 'ready')))
  const out = join(dir, `${kind}-report.json`)
  const client = child('./sessions-client-child.ts', [kind, target, String(SESSIONS), out])
  // the first worker dies mid-turn, once it has started a few turns of phase A
  const victim = workers[0]
  await victim.line(() => victim.lines.filter((l) => l.startsWith('turn ')).length >= 3)
  // until one of those turns is committed open in the store (a turn/start not yet stored is lost unacknowledged and
  // leaves nothing to repair), well short of its model call's end
  const turnStoredOpen = async () => {
    for (const id of new Set(victim.lines.filter((l) => l.startsWith('turn ')).map((l) => l.split(' ')[1]))) {
      const log = ((await store.load(id)) ?? []) as SessionEvent[]
      if (log.findLast((e) => e.type === 'turn/start' || e.type === 'turn/end')?.type === 'turn/start') return true
    }
    return false
  }
  const deadline = Date.now() + DELAY_MS
  while (!(await turnStoredOpen()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5))
  victim.proc.kill('SIGKILL')
  await victim.exited
  const killedSessions = new Set(victim.lines.filter((l) => l.startsWith('turn ')).map((l) => l.split(' ')[1]))
  let timer: ReturnType<typeof setTimeout> | undefined
  const code = await Promise.race([client.exited, new Promise<string>((resolve) => (timer = setTimeout(() => resolve('timed out'), 150_000)))])
  clearTimeout(timer)
  const diagnosis = [client.lines.join('\n'), client.stderr(), ...workers.map((w) => w.stderr())].join('\n---\n')
  expect(code, diagnosis).toBe(0)
  for (const w of workers.slice(1)) w.proc.kill('SIGTERM')
  await Promise.all(workers.slice(1).map((w) => w.exited))
  const report = JSON.parse(readFileSync(out, 'utf8')) as Report

  const logs = new Map<string, SessionEvent[]>()
  for (const id of report.sessions) logs.set(id, (await store.load(id)) as SessionEvent[])

  // every log is sound, and every watch saw exactly the committed log
  for (const [id, log] of logs) {
    expect(checkSessionInvariants(log), id).toEqual([])
    expect(report.watched[id], id).toEqual(log)
  }
  // every message entered exactly one log, exactly once, and left the inbox once: entered by a step (logged as a
  // user/message, once), discarded by a cancel, or claimed by a turn a crash cut short before its step (interrupted)
  const inserted = new Map<string, string[]>()
  const logged = new Map<string, number>()
  const removals = new Map<string, { canceled: boolean; turn: number }[]>()
  const endOf = new Map<string, string>()
  for (const [id, log] of logs) {
    const lists: Record<string, string[]> = { 'next-turn': [], 'next-step': [] }
    let turn = 0
    for (const e of log) {
      if (e.type === 'turn/start') turn = e.data.turn
      else if (e.type === 'turn/end') endOf.set(`${id}/${e.data.turn}`, e.data.reason.kind)
      else if (e.type === 'user/message') logged.set(e.data.id, (logged.get(e.data.id) ?? 0) + 1)
      else if (e.type === 'agent/inbox/spliced') {
        for (const m of e.data.inserted) inserted.set(m.id, [...(inserted.get(m.id) ?? []), id])
        const removed = lists[e.data.target].splice(e.data.start, e.data.removedCount ?? 0, ...e.data.inserted.map((m) => m.id))
        for (const m of removed) removals.set(m, [...(removals.get(m) ?? []), { canceled: e.data.outcome === 'canceled', turn }])
      }
    }
  }
  expect(report.sent.length).toBe(SESSIONS * (3 + 1) + Math.ceil(SESSIONS / 3))
  let cutShort = 0
  for (const message of report.sent) {
    const what = `${message.kind} ${message.messageId}`
    expect(inserted.get(message.messageId), what).toEqual([message.sessionId])
    const [removal, ...more] = removals.get(message.messageId) ?? []
    expect(removal, `${what} never left the inbox`).toBeDefined()
    expect(more, what).toEqual([])
    if (removal.canceled) expect(logged.get(message.messageId) ?? 0, what).toBe(0)
    else if ((logged.get(message.messageId) ?? 0) === 0) {
      expect(endOf.get(`${message.sessionId}/${removal.turn}`), what).toBe('interrupted')
      cutShort++
    } else expect(logged.get(message.messageId), what).toBe(1)
  }
  // only the killed worker's sessions can have one
  expect(cutShort).toBeLessThanOrEqual(killedSessions.size)
  // each cancel ended the turn it landed in aborted, unless a takeover closed that turn first (the killed worker, or
  // one whose lease lapsed under load, held it when the cancel was sent): only a repair writes `interrupted` (RS-4)
  expect(report.cancels.length).toBe(Math.ceil(SESSIONS / 3))
  for (const { sessionId, turn } of report.cancels) {
    const end = logs.get(sessionId)!.find((e) => e.type === 'turn/end' && e.data.turn === turn) as SessionEventOf<'turn/end'>
    expect([{ kind: 'aborted', reason: { kind: 'user' } }, { kind: 'interrupted' }], `${sessionId} turn ${turn}`).toContainEqual(end.data.reason)
  }
  // every run resolved with the turn whose first step took its input, and that turn's logged end
  for (const { sessionId, messageId, result } of report.runs) {
    const log = logs.get(sessionId)!
    const claim = log.find((e) => e.type === 'user/message' && e.data.id === messageId)
    if (claim === undefined) {
      expect(result.end.kind, messageId).toBe('discarded')
      continue
    }
    const turn = (log.filter((e) => e.type === 'turn/start' && e.seq < claim.seq).pop() as SessionEventOf<'turn/start'>).data.turn
    const end = log.find((e) => e.type === 'turn/end' && e.data.turn === turn) as SessionEventOf<'turn/end'>
    expect(result.turn, messageId).toBe(turn)
    expect(result.end, messageId).toEqual(end.data.reason)
  }
  // the killed worker's sessions were taken over: their crashed turn was closed by a repair, and they went on
  expect(killedSessions.size).toBeGreaterThan(0)
  const repaired = [...killedSessions].filter((id) => logs.get(id)!.some((e) => e.type === 'turn/end' && e.data.reason.kind === 'interrupted'))
  expect(repaired.length).toBeGreaterThan(0)
  return { repaired: repaired.length, killed: killedSessions.size }
}

describe('sessions across real processes', () => {
  it(`PostgreSQL: one client and three workers serve ${SESSIONS} sessions; a worker SIGKILLed mid-turn loses nothing`, async () => {
    const url = await createDatabase(server, 'scale')
    const store = postgresStore({ connectionString: url })
    try {
      await scenario('postgres', url, store, 3)
    } finally {
      await store.close()
    }
  }, 240_000)

  it(`SQLite: one client and two workers on one file serve ${SESSIONS} sessions; a worker SIGKILLed mid-turn loses nothing`, async () => {
    const path = join(dir, 'scale.db')
    const store = sqliteStore({ path })
    try {
      await scenario('sqlite', path, store, 2)
    } finally {
      await store.close()
    }
  }, 240_000)
})

// The demo driven as a person drives it: a real process in a pseudo-terminal
// (tmux), keys typed into it, the screen read back. A steer typed while a tool
// runs joins the next step; Ctrl-C while the answer streams ends the turn
// aborted with what was streamed kept; a second run over the same log
// continues the conversation. The test knobs (a slow tool that a steer
// releases, a slow stream) make each moment wait for the screen, not a clock.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSessionLog } from '../../../src/cli/replay.js'
import type { SessionEvent } from '../../../src/index.js'
import { checkSessionInvariants } from '../../../src/testing/index.js'

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url))
const HAVE_TMUX = spawnSync('tmux', ['-V'], { encoding: 'utf8' }).status === 0
if (!HAVE_TMUX) console.warn('test/cli/demo/terminal.test.ts: SKIPPED, tmux is not installed (apt-get install -y tmux; .ci/run installs it)')

let dir: string
let sessions = 0

/** One demo process in its own tmux server (own socket: nothing else's tmux is touched). */
class Terminal {
  readonly socket = `agentchart-test-${process.pid}-${++sessions}`

  constructor(args: string[], env: Record<string, string> = {}) {
    const vars = { NO_COLOR: '1', OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '', AGENTCHART_DEMO_THINK_MS: '0', ...env }
    const assignments = Object.entries(vars).map(([k, v]) => `${k}=${shellQuote(v)}`)
    const demo = ['env', ...assignments, shellQuote(process.execPath), '--import', 'tsx', 'src/cli/index.ts', 'demo', ...args.map(shellQuote)].join(' ')
    // the shell stays after the demo exits, so its exit code can be read from the screen
    const command = `cd ${shellQuote(repoRoot)} && ${demo}; echo "[exit $?]"; sleep 120`
    this.#tmux('new-session', '-d', '-s', 'demo', '-x', '110', '-y', '50', command)
  }

  #tmux(...args: string[]): string {
    const result = spawnSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' })
    if (result.status !== 0) throw new Error(`tmux ${args[0]} failed: ${result.stderr}`)
    return result.stdout
  }

  /** Type text (literally), then Enter. */
  typeLine(text: string): void {
    this.#tmux('send-keys', '-t', 'demo', '-l', text)
    this.#tmux('send-keys', '-t', 'demo', 'Enter')
  }

  ctrlC(): void {
    this.#tmux('send-keys', '-t', 'demo', 'C-c')
  }

  /** Everything the terminal showed, scrollback included, wrapped lines joined. */
  screen(): string {
    return this.#tmux('capture-pane', '-p', '-J', '-S', '-', '-t', 'demo')
  }

  /** Poll the screen until `pattern` shows (or fail with the screen in the message). */
  async waitFor(pattern: RegExp, timeoutMs = 45_000): Promise<RegExpMatchArray> {
    const until = Date.now() + timeoutMs
    for (;;) {
      const screen = this.screen()
      const match = pattern.exec(screen)
      if (match) return match
      if (Date.now() > until) throw new Error(`timed out waiting for ${pattern} on the screen:\n${screen}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  /** The demo's exit code, once it has exited. */
  async exitCode(): Promise<number> {
    return Number((await this.waitFor(/\[exit (\d+)\]/))[1])
  }

  close(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'])
  }
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

function readLog(file: string): SessionEvent[] {
  return parseSessionLog(readFileSync(file, 'utf8')) as SessionEvent[]
}

async function readStore(path: string): Promise<SessionEvent[]> {
  const { sqliteStore } = await import('../../../src/stores/index.js')
  const store = sqliteStore({ path })
  try {
    return ((await store.load('demo')) ?? []) as SessionEvent[]
  } finally {
    await store.close()
  }
}

const textOf = (e: SessionEvent) =>
  e.type === 'user/message' || e.type === 'assistant/message'
    ? ('message' in e.data ? e.data.message.content : e.data.content).map((b) => (b.type === 'text' ? b.text : '')).join('')
    : ''

describe.skipIf(!HAVE_TMUX)('the demo in a terminal (tmux)', () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agentchart-tty-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('a steer typed while a tool runs joins the next step; a second run with the same --store continues the conversation', async () => {
    const db = join(dir, 'steer.db')
    const term = new Terminal(['--store', db], { AGENTCHART_DEMO_SLOW_TOOL: 'list_dir:60000' })
    try {
      // the listing is held (up to a minute) until input is pending: type while it runs
      await term.waitFor(/list_dir \{"path":"\."\} {2}parallel {2}\+\d+ ms {2}running /)
      term.typeLine('also search for vitest')
      await term.waitFor(/turn 1 completed/)
      const screen = term.screen()
      expect(screen).toMatch(/↳ steer queued: also search for vitest · it joins the next step/)
      expect(screen).toMatch(/ {2}step 2\n {4}steer › also search for vitest\n/)
      expect(screen).toMatch(/✓ search \{"query":"vitest"\} {2}exclusive/)
      expect(screen).toContain('You also asked: "also search for vitest"')
      term.ctrlC() // idle: quits
      expect(await term.exitCode()).toBe(0)
    } finally {
      term.close()
    }

    const events = await readStore(db)
    expect(checkSessionInvariants(events)).toEqual([])
    const steer = events.findIndex((e) => e.type === 'user/message' && textOf(e) === 'also search for vitest')
    expect(events.slice(0, steer).findLast((e) => e.type === 'step/start')).toMatchObject({ data: { turn: 1, step: 2 } })
    expect(events.slice(steer).find((e) => e.type === 'turn/end')).toMatchObject({ data: { turn: 1, reason: { kind: 'completed' } } })

    // the same store again: the conversation goes on where it stopped
    const again = new Terminal(['--store', db, 'what did I ask before?'])
    try {
      await again.waitFor(/turn 2 completed/)
      // the answer is wrapped to the terminal's width: read it as one line
      const screen = again.screen().replace(/\n +/g, ' ')
      expect(screen).toMatch(/session demo resumed from .*steer\.db \(SQLite\) · 1 earlier turn, \d+ events/)
      expect(screen).toContain('last asked: also search for vitest')
      expect(screen).toMatch(/1\. "Read package\.json and tell me which package manager this project uses", and I answered/)
      expect(screen).toContain('2. "also search for vitest"')
      again.ctrlC()
      expect(await again.exitCode()).toBe(0)
    } finally {
      again.close()
    }
    const resumed = await readStore(db)
    expect(checkSessionInvariants(resumed)).toEqual([])
    expect(resumed.slice(0, events.length)).toEqual(events)
    expect(resumed.filter((e) => e.type === 'turn/start').map((e) => e.data.turn)).toEqual([1, 2])
  }, 120_000)

  it('Ctrl-C while the answer streams ends the turn aborted with the streamed prefix kept; a second Ctrl-C exits with the log balanced', async () => {
    const log = join(dir, 'cancel.jsonl')
    const term = new Terminal(['--log', log], { AGENTCHART_DEMO_STREAM_DELAY_MS: '120' })
    try {
      await term.waitFor(/This project uses npm\./)
      term.ctrlC()
      await term.waitFor(/turn 1 aborted \(user\)/)
      const screen = term.screen()
      expect(screen).toMatch(/⏹ interrupted: the \d+ characters streamed so far are kept/)
      expect(screen).not.toContain('So install with')
      term.ctrlC()
      expect(await term.exitCode()).toBe(0)
      expect(term.screen()).toMatch(/summary {2}1 turn · 3 steps · 3 requests · 0 retries · 3 tool calls/)
    } finally {
      term.close()
    }
    const events = readLog(log)
    expect(checkSessionInvariants(events)).toEqual([])
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } } })
    const prefix = events.findLast((e) => e.type === 'assistant/message')!
    expect(prefix).toMatchObject({ data: { step: 3, interrupted: true } })
    expect(textOf(prefix)).toMatch(/^This project uses npm\./)
    expect(textOf(prefix)).not.toContain('So install with')
  }, 120_000)

  it('--inspect feeds the Stately inspector over a local WebSocket and serves the offline viewer', async () => {
    const port = await freePort()
    const term = new Terminal(['--inspect', '--inspect-port', String(port)])
    try {
      const viewerUrl = (await term.waitFor(/viewer {4}open (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/))[1]
      expect(term.screen()).toContain(`inspector open http://localhost:${port}`)
      await term.waitFor(/turn 1 completed/)
      // the bridge replays what it buffered to a client that connects late
      const { createWebSocketReceiver } = await import('@statelyai/inspect')
      const received: Array<{ type: string; sessionId?: string }> = []
      const receiver = createWebSocketReceiver({ server: `ws://localhost:${port}` })
      const sub = receiver.subscribe((event) => received.push(event as never))
      for (let i = 0; i < 100 && received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 100))
      sub.unsubscribe()
      expect(received.length).toBeGreaterThan(0)
      expect(received.some((e) => e.type === '@xstate.snapshot' || e.type === '@xstate.event')).toBe(true)
      const page = await fetch(viewerUrl)
      expect(page.status).toBe(200)
      expect(await page.text()).toMatch(/<html/i)
      term.ctrlC()
      expect(await term.exitCode()).toBe(0)
    } finally {
      term.close()
    }
  }, 120_000)
})

describe.skipIf(!HAVE_TMUX)('a provider failure in the chat (tmux)', () => {
  it('a rejected API key ends the chat with one line on stderr and exit 1', async () => {
    const server = createHttpServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    const term = new Terminal(['--provider', 'openai', '--base-url', `http://127.0.0.1:${port}/v1`], { OPENAI_API_KEY: 'sk-bad' })
    try {
      expect(await term.exitCode()).toBe(1)
      const screen = term.screen()
      expect(screen).toMatch(/turn 1 failed: (AUTH|INVALID_CREDENTIAL)/)
      expect(screen).toMatch(/\nagentchart demo: openai refused the API key \((AUTH|INVALID_CREDENTIAL) \(HTTP 401\): .*\); check OPENAI_API_KEY\n\[exit 1\]/)
    } finally {
      term.close()
      await new Promise((resolve) => server.close(resolve))
    }
  }, 60_000)
})

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer()
    server.listen(0, () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

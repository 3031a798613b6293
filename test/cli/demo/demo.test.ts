// `agentchart demo` as a command: the default run answers from this
// repository offline, --json is one event a line, --log survives a restart,
// and every mistake a newcomer can make is one clear line and a non-zero exit.
import { execFile, execFileSync, spawn } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isTerminalSafe } from '../../../src/cli/escape.js'
import { runCli, type CliIO } from '../../../src/cli/main.js'
import { parseSessionLog } from '../../../src/cli/replay.js'
import type { SessionEvent } from '../../../src/index.js'
import { checkSessionInvariants } from '../../../src/testing/index.js'

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url))
let dir: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentchart-demo-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Run the CLI in-process as a script would (no terminal), with no API keys. */
async function demo(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = []
  const err: string[] = []
  const io: CliIO = { out: (t) => out.push(t), err: (t) => err.push(t), cwd: repoRoot, env }
  const code = await runCli(['demo', ...args], io)
  return { code, out, err }
}

describe('the default run', () => {
  it('lists, reads and answers that this project uses npm, printing the tree and a summary', async () => {
    const { code, out, err } = await demo([])
    expect(code).toBe(0)
    expect(err).toEqual([])
    const text = out.join('\n')
    expect(text).toContain('model local/agentchart-local (built in, offline)')
    for (const line of ['turn 1', '  step 1', '  step 2', '  step 3', '    attempt 1 · local/agentchart-local']) expect(out).toContain(line)
    expect(text).toMatch(/✓ list_dir \{"path":"\."\} {2}parallel {2}\+\d+ ms {2}\d+ ms → \d+ entries/)
    expect(text).toMatch(/✓ read_file \{"path":"package\.json"\} {2}parallel /)
    expect(out).toContain('      This project uses npm.')
    expect(text).toMatch(/turn 1 completed · 3 steps · 3 requests · 0 retries · 3 tool calls \(3 parallel\) · [\d,]+ tokens/)
    expect(out.at(-1)).toMatch(
      /^summary {2}1 turn · 3 steps · 3 requests · 0 retries · 3 tool calls \(3 parallel\) · [\d,]+ tokens \([\d,]+ in, [\d,]+ out\) · \d+/,
    )
    for (const line of out) expect(isTerminalSafe(line), line).toBe(true)
  })

  it('runs offline: with every network call made to fail, the real executable still answers and exits 0', async () => {
    const blocker = join(dir, 'no-network.mjs')
    writeFileSync(
      blocker,
      [
        "import net from 'node:net'",
        "import dns from 'node:dns'",
        "const refuse = () => { throw new Error('network access attempted') }",
        'net.Socket.prototype.connect = refuse',
        'dns.lookup = refuse',
        'globalThis.fetch = refuse',
      ].join('\n'),
    )
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--import', blocker, 'src/cli/index.ts', 'demo'], {
      cwd: repoRoot,
      timeout: 60_000,
      env: { ...process.env, OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '', NO_COLOR: '1' },
    })
    expect(stdout).toContain('This project uses npm.')
    expect(stdout).toContain('turn 1 completed')
  }, 60_000)

  it('answers a prompt given as words, from a file, or about another directory', async () => {
    expect((await demo(['search', 'for', 'createAgent'])).out).toContain('    you › search for createAgent')
    writeFileSync(join(dir, 'prompt.txt'), 'list src\n')
    const fromFile = await demo(['--prompt-file', join(dir, 'prompt.txt')])
    expect(fromFile.out.join('\n')).toMatch(/\n {6}src\/ has \d+ entries:\n {6}- \d+ directories: adapters\/, (\w+\/, )*cli\//)
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'elsewhere', packageManager: 'yarn@4.5.0' }))
    const other = await demo(['--dir', dir])
    expect(other.out.join('\n')).toContain(`confined to ${dir}`)
    expect(other.out).toContain('      This project uses yarn.')
  })
})

describe('signals when not in a terminal', () => {
  it('SIGINT cancels the running turn, which still closes balanced with its prefix kept, and exits 130', async () => {
    const log = join(dir, 'sigint.jsonl')
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'demo', '--log', log], {
      cwd: repoRoot,
      env: { ...process.env, OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '', AGENTCHART_DEMO_STREAM_DELAY_MS: '100' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += String(chunk)
        // the answer's first line has streamed: interrupt the rest
        if (stdout.includes('This project uses npm.')) resolve()
      })
    })
    child.kill('SIGINT')
    expect(await exited).toBe(130)
    expect(stdout).toContain('⏹ cancelling the turn')
    expect(stdout).toMatch(/turn 1 aborted \(user\)/)
    const events = parseSessionLog(readFileSync(log, 'utf8')) as SessionEvent[]
    expect(checkSessionInvariants(events)).toEqual([])
    expect(events.findLast((e) => e.type === 'assistant/message')).toMatchObject({ data: { interrupted: true } })
  }, 60_000)
})

describe('a file that is not a regular file (issue 30)', () => {
  it('read_file on a FIFO answers at once with why, and the demo exits 0 without any signal', async () => {
    const project = join(dir, 'with-fifo')
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), '{"name":"fifo"}\n')
    execFileSync('mkfifo', [join(project, 'pipe.txt')])
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'demo', '--dir', project, 'read', 'pipe.txt'], {
      cwd: repoRoot,
      env: { ...process.env, OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += String(chunk)))
    const signalled: string[] = []
    // a demo that hangs is stopped the way a person would, then for good: the test fails either way
    const interrupt = setTimeout(() => {
      signalled.push('SIGINT')
      child.kill('SIGINT')
    }, 15_000)
    const kill = setTimeout(() => child.kill('SIGKILL'), 25_000)
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
    clearTimeout(interrupt)
    clearTimeout(kill)
    expect(signalled).toEqual([])
    expect(code).toBe(0)
    expect(stdout).toContain('I did not read pipe.txt: "pipe.txt" is a FIFO (named pipe): only regular files are read.')
  }, 60_000)
})

describe('--inspect without a terminal', () => {
  it('keeps the inspector and the viewer serving after the run until SIGINT, then closes them and exits 0', async () => {
    const probe = createNetServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as { port: number }).port
    await new Promise((resolve) => probe.close(resolve))
    const signals = new EventEmitter()
    const out: string[] = []
    const err: string[] = []
    const io: CliIO = { out: (t) => out.push(t), err: (t) => err.push(t), cwd: repoRoot, env: {}, signals: signals as unknown as CliIO['signals'] }
    let exited: number | undefined
    const running = runCli(['demo', '--inspect', '--inspect-port', String(port)], io).then((code) => (exited = code))
    while (exited === undefined && !err.some((line) => line.includes('keep serving'))) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(out.join('\n')).toContain('turn 1 completed')
    const viewerUrl = /the viewer at (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(err.join('\n'))![1]
    // the run is over and the demo is still up: both pages answer
    const page = await fetch(viewerUrl)
    expect(page.status).toBe(200)
    expect(await page.text()).toMatch(/<html/i)
    expect((await fetch(`http://localhost:${port}`).catch(() => null))?.status).toBeDefined()
    expect(exited).toBeUndefined()
    signals.emit('SIGINT')
    expect(await running).toBe(0)
    await expect(fetch(viewerUrl)).rejects.toThrow()
  }, 60_000)
})

describe('--json', () => {
  it('prints one JSON event per line: a start record, the session log as it is written, tool timings, a summary', async () => {
    const { code, out } = await demo(['--json'])
    expect(code).toBe(0)
    const events = out.map((line) => JSON.parse(line) as { type: string; seq?: number; [k: string]: unknown })
    expect(events[0]).toMatchObject({ type: 'demo/start', provider: 'local', model: 'agentchart-local', resumed: false })
    expect(events.at(-1)).toMatchObject({ type: 'demo/summary', turns: 1, steps: 3, requests: 3, retries: 0, toolCalls: 3, exitCode: 0 })
    const log = events.filter((e) => typeof e.seq === 'number') as unknown as SessionEvent[]
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i))
    expect(checkSessionInvariants(log)).toEqual([])
    expect(log.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
    const settled = events.filter((e) => e.type === 'demo/tool-settled')
    expect(settled.map((e) => [e.name, e.lane])).toEqual([
      ['list_dir', 'parallel'],
      ['read_file', 'parallel'],
      ['read_file', 'parallel'],
    ])
    expect(events.filter((e) => e.type === 'demo/attempt-start')).toHaveLength(3)
  })
})

describe('--store', () => {
  it('keeps the session in SQLite, and a second run continues the same conversation', async () => {
    const db = join(dir, 'chat.db')
    const first = await demo(['--store', db])
    expect(first.code).toBe(0)
    expect(first.out.join('\n')).toContain(`session demo · new, kept in ${db} (SQLite)`)

    const second = await demo(['--store', db, 'what did I ask before?'])
    expect(second.code).toBe(0)
    const text = second.out.join('\n')
    expect(text).toMatch(new RegExp(`session demo resumed from ${db.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(SQLite\\) · 1 earlier turn, \\d+ events`))
    expect(text.replace(/\n +/g, ' ')).toContain(
      '1. "Read package.json and tell me which package manager this project uses", and I answered "This project uses npm."',
    )

    const { sqliteStore } = await import('../../../src/stores/index.js')
    const store = sqliteStore({ path: db })
    try {
      const events = (await store.load('demo')) as SessionEvent[]
      expect(checkSessionInvariants(events)).toEqual([])
      expect(events.filter((e) => e.type === 'turn/start').map((e) => e.data.turn)).toEqual([1, 2])
      // another session in the same store starts fresh
      expect((await demo(['--store', db, '--session', 'other', '--json'])).out[0]).toContain('"resumed":false')
      expect((await store.list()).map((s) => s.id).sort()).toEqual(['demo', 'other'])

      // a session another process drives is refused in one line
      const held = await store.open('demo', { holder: 'someone-else' })
      const busy = await demo(['--store', db])
      expect(busy.code).toBe(1)
      expect(busy.err).toHaveLength(1)
      expect(busy.err[0]).toMatch(
        /^agentchart demo: session demo in .*chat\.db is in use by someone-else \(another demo\? if that process is gone, its lease lapses in \d+ s\)$/,
      )
      await held.release()
    } finally {
      await store.close()
    }
  })

  it('is one place to keep a session: --store with --log, or --session without --store, is a usage mistake', async () => {
    expect((await demo(['--store', 'a.db', '--log', 'a.jsonl'])).err).toEqual([
      'agentchart: demo: keep the session in --store or in --log, not both; run "agentchart demo --help" for usage',
    ])
    expect((await demo(['--session', 'x'])).err[0]).toMatch(/^agentchart: demo: --session names a session in a store: it needs --store;/)
  })
})

describe('--log', () => {
  it('keeps the session in a JSONL file, and a second run continues the same conversation', async () => {
    const log = join(dir, 'chat.jsonl')
    const first = await demo(['--log', log])
    expect(first.code).toBe(0)
    expect(first.out.join('\n')).toContain(`session chat · new, kept in ${log} (a JSONL file)`)
    const stored = parseSessionLog(readFileSync(log, 'utf8')) as SessionEvent[]
    expect(checkSessionInvariants(stored)).toEqual([])

    const second = await demo(['--log', log, 'what did I ask before?'])
    expect(second.code).toBe(0)
    const text = second.out.join('\n')
    expect(text).toContain(`session chat resumed from ${log} (a JSONL file) · 1 earlier turn, ${stored.length} events`)
    expect(text).toContain('  last asked: Read package.json and tell me which package manager this project uses')
    expect(text).toContain('turn 2')
    // the answer is wrapped to the width: read it as one line
    expect(text.replace(/\n +/g, ' ')).toContain(
      '1. "Read package.json and tell me which package manager this project uses", and I answered "This project uses npm."',
    )

    const all = parseSessionLog(readFileSync(log, 'utf8')) as SessionEvent[]
    expect(checkSessionInvariants(all)).toEqual([])
    expect(all.slice(0, stored.length)).toEqual(stored)
    expect(all.filter((e) => e.type === 'turn/start').map((e) => e.data.turn)).toEqual([1, 2])
    expect(all.find((e, i) => i > stored.length && e.type === 'request/header')).toMatchObject({ data: { reason: 'resume' } })
    expect(await runCli(['replay', log], { out: () => {}, err: () => {} })).toBe(0)
  })

  it('repairs a log cut off mid-turn (a killed run) and goes on', async () => {
    const log = join(dir, 'cut.jsonl')
    await demo(['--log', log])
    const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean)
    const cut = lines.findIndex((l) => l.includes('"type":"step/start"') && l.includes('"step":2'))
    // the last line half-written, as a crash mid-write leaves it
    writeFileSync(log, `${lines.slice(0, cut + 1).join('\n')}\n${lines[cut + 1].slice(0, 20)}`)
    const again = await demo(['--log', log, 'list src'])
    expect(again.code).toBe(0)
    const all = parseSessionLog(readFileSync(log, 'utf8')) as SessionEvent[]
    expect(checkSessionInvariants(all)).toEqual([])
    expect(all.filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind)).toEqual(['interrupted', 'completed'])
  })

  it('refuses a file that is not a session log, in one line', async () => {
    writeFileSync(join(dir, 'junk.jsonl'), '{"hello":1}\n')
    const { code, err } = await demo(['--log', join(dir, 'junk.jsonl')])
    expect(code).toBe(1)
    expect(err).toHaveLength(1)
    expect(err[0]).toMatch(/^agentchart demo: .*junk\.jsonl holds a log the session refuses: /)
  })
})

// the step limit is a documented turn end like completed (TU-16 in docs/behaviours.md), not a failure
describe('--max-steps', () => {
  const note = 'agentchart demo: the turn stopped at its step limit (2 steps) before the model gave its final answer; raise --max-steps to let it go on'

  it('a turn that stops at the step limit shows why in the tree, says so in one line on stderr, and exits 0', async () => {
    const { code, out, err } = await demo(['--max-steps', '2'])
    expect(code).toBe(0)
    expect(err).toEqual([note])
    const text = out.join('\n')
    expect(text).toMatch(/turn 1 stopped after 2 steps \(maxSteps\) · 2 steps · 2 requests · 0 retries · 3 tool calls \(3 parallel\)/)
    expect(out).not.toContain('  step 3')
    expect(out.at(-1)).toMatch(/^summary {2}1 turn · 2 steps · 2 requests/)
  })

  it('with --json the log ends max-steps and the summary says exit code 0', async () => {
    const { code, out, err } = await demo(['--max-steps', '2', '--json'])
    expect(code).toBe(0)
    expect(err).toEqual([note])
    const events = out.map((line) => JSON.parse(line) as { type: string; seq?: number; [k: string]: unknown })
    const log = events.filter((e) => typeof e.seq === 'number') as unknown as SessionEvent[]
    expect(log.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'max-steps', limit: 2 } } })
    expect(checkSessionInvariants(log)).toEqual([])
    expect(events.at(-1)).toMatchObject({ type: 'demo/summary', turns: 1, steps: 2, exitCode: 0 })
  })

  it('a limit high enough changes nothing', async () => {
    const { code, out, err } = await demo(['--max-steps', '3'])
    expect(code).toBe(0)
    expect(err).toEqual([])
    expect(out).toContain('      This project uses npm.')
  })
})

describe('mistakes a newcomer can make: one line, non-zero exit', () => {
  let server: Server
  let port: number
  let closedPort: number
  beforeAll(async () => {
    // an OpenAI-compatible endpoint that rejects every key
    server = createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided: sk-bad', type: 'invalid_request_error', code: 'invalid_api_key' } }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
    // a port nothing listens on
    const probe = createNetServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    closedPort = (probe.address() as { port: number }).port
    await new Promise((resolve) => probe.close(resolve))
  })
  afterAll(() => new Promise((resolve) => server.close(resolve)))

  const cases: Array<[string, string[], Record<string, string>, number, RegExp]> = [
    ['an unknown flag', ['--nope'], {}, 2, /^agentchart: demo: Unknown option '--nope'; run "agentchart demo --help" for usage$/],
    [
      'an unreadable prompt file',
      ['--prompt-file', 'no/such/prompt.txt'],
      {},
      2,
      /^agentchart: demo: cannot read the prompt file "no\/such\/prompt.txt": no such file; run/,
    ],
    ['an unknown provider', ['--provider', 'claude'], {}, 2, /^agentchart: demo: unknown provider "claude" \(expected local, openai or deepseek\)/],
    ['a provider without its key', ['--provider', 'openai'], {}, 2, /^agentchart: demo: --provider openai needs OPENAI_API_KEY in the environment/],
    ['a bad knob', [], { AGENTCHART_DEMO_STREAM_DELAY_MS: 'soon' }, 2, /^agentchart: demo: AGENTCHART_DEMO_STREAM_DELAY_MS must be a whole number/],
    [
      'a step limit that is not a positive whole number',
      ['--max-steps', '0'],
      {},
      2,
      /^agentchart: demo: --max-steps must be a whole number of steps from 1, got "0"/,
    ],
    ['a directory that does not exist', ['--dir', 'no/such/dir'], {}, 2, /^agentchart: demo: cannot use .*no\/such\/dir as the working directory: ENOENT/],
  ]
  for (const [what, args, env, code, line] of cases) {
    it(what, async () => {
      const result = await demo(args, env)
      expect(result.code).toBe(code)
      expect(result.out).toEqual([])
      expect(result.err).toHaveLength(1)
      expect(result.err[0]).toMatch(line)
    })
  }

  it('a bad API key', async () => {
    const result = await demo(['--provider', 'openai', '--base-url', `http://127.0.0.1:${port}/v1`, '--once'], { OPENAI_API_KEY: 'sk-bad' })
    expect(result.code).toBe(1)
    expect(result.err).toHaveLength(1)
    expect(result.err[0]).toMatch(
      /^agentchart demo: openai refused the API key \((AUTH|INVALID_CREDENTIAL) \(HTTP 401\): .*Incorrect API key provided.*\); check OPENAI_API_KEY$/,
    )
  })

  it('an unreachable provider', async () => {
    const result = await demo(['--provider', 'deepseek', '--base-url', `http://127.0.0.1:${closedPort}`, '--once'], { DEEPSEEK_API_KEY: 'sk-x' })
    expect(result.code).toBe(1)
    expect(result.err).toHaveLength(1)
    expect(result.err[0]).toMatch(new RegExp(`^agentchart demo: cannot reach deepseek at http://127\\.0\\.0\\.1:${closedPort} \\(TRANSPORT: `))
  })

  it('--help shows the demo options with examples', async () => {
    const { code, out } = await demo(['--help'])
    expect(code).toBe(0)
    for (const flag of ['--prompt-file', '--provider', '--model', '--dir', '--log', '--once', '--json', '--inspect', '--max-steps'])
      expect(out[0]).toContain(flag)
    expect(out[0]).toContain('agentchart demo "search for createAgent"')
  })
})

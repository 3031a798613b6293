// The agentchart CLI: the functions behind each command, the dispatcher, and
// one run of the real entry point in a child process.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { machineDiagrams, writeMachineDiagrams } from '../../src/cli/diagram.js'
import { runCli, USAGE, type CliIO } from '../../src/cli/main.js'
import { formatReplay, parseSessionLog, replayFile, SessionLogSyntaxError } from '../../src/cli/replay.js'
import { createAgent, userMessage, type SessionEvent } from '../../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { defineTool } from '../../src/tools/define.js'
import { z } from 'zod'

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
let dir: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentchart-cli-'))
})
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

/** An io that records what the CLI prints, resolving relative paths against the temp dir. */
function capture(): { io: CliIO; out: string[]; err: string[] } {
  const out: string[] = []
  const err: string[] = []
  return { io: { out: (t) => out.push(t), err: (t) => err.push(t), cwd: dir }, out, err }
}

/** A real agent's log: one turn with a tool step and an answer step. */
async function realLog(): Promise<SessionEvent[]> {
  const add = defineTool({
    name: 'add',
    description: 'Add two numbers',
    input: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }) => String(a + b),
  })
  const model = scriptedModel([toolCallResponse([{ id: 'c1', name: 'add', arguments: '{"a":1,"b":2}' }]), textResponse('3')])
  const agent = createAgent({ model, tools: [add] })
  agent.followup(userMessage('1 + 2?'))
  await agent.whenIdle()
  const events = [...agent.session.events]
  await agent.dispose()
  return JSON.parse(JSON.stringify(events)) as SessionEvent[]
}

describe('diagram', () => {
  it('renders the five machines as Mermaid state diagrams', () => {
    const diagrams = machineDiagrams()
    expect(Object.keys(diagrams)).toEqual(['agent', 'turn', 'step', 'attempt', 'tool-batch'])
    for (const text of Object.values(diagrams)) {
      expect(text.startsWith('stateDiagram-v2\n')).toBe(true)
      expect(text).toContain('[*] --> ')
    }
    // each diagram stops where the next machine begins
    expect(diagrams.agent).toContain('the turn machine')
    expect(diagrams.turn).toContain('the step machine')
    expect(diagrams.step).toContain('the attempt machine')
    expect(diagrams.step).toContain('the tool-batch machine')
  })

  it('is deterministic', () => {
    expect(machineDiagrams()).toEqual(machineDiagrams())
  })

  it('writes per machine a .mmd diagram, a .json definition and a .machine.ts source (the CLI resolves --out against the working directory)', async () => {
    const { io, out } = capture()
    expect(await runCli(['diagram', '--out', 'diagrams'], io)).toBe(0)
    const outDir = join(dir, 'diagrams')
    const machines = ['agent', 'attempt', 'step', 'tool-batch', 'turn']
    expect(readdirSync(outDir).sort()).toEqual(machines.flatMap((m) => [`${m}.json`, `${m}.machine.ts`, `${m}.mmd`]).sort())
    expect(out).toHaveLength(15)
    const diagrams = machineDiagrams()
    for (const [name, text] of Object.entries(diagrams)) {
      const file = readFileSync(join(outDir, `${name}.mmd`), 'utf8')
      expect(file.endsWith(text)).toBe(true)
      // everything before the diagram is Mermaid comments
      for (const line of file
        .slice(0, file.length - text.length)
        .split('\n')
        .filter(Boolean))
        expect(line.startsWith('%%')).toBe(true)
    }
    expect(writeMachineDiagrams(join(dir, 'again'))).toHaveLength(5)
  })
})

describe('replay', () => {
  it('accepts a real agent log as a JSON array and as JSONL', async () => {
    const events = await realLog()
    const json = join(dir, 'session.json')
    const jsonl = join(dir, 'session.jsonl')
    writeFileSync(json, JSON.stringify(events, null, 2))
    writeFileSync(jsonl, `${events.map((e) => JSON.stringify(e)).join('\n')}\n`)

    for (const file of [json, jsonl]) {
      const result = await replayFile(file)
      expect(result.kind).toBe('checked')
      if (result.kind !== 'checked') return
      expect(result.ok).toBe(true)
      expect(result.violations).toEqual([])
      expect(result.events).toHaveLength(events.length)
      expect(result.turns).toBe(1)
      expect(result.tree).toContain('tool/call add')
      expect(formatReplay(result).at(-1)).toBe(`${events.length} events, 1 turn, 0 violations`)
    }

    const { io, out, err } = capture()
    expect(await runCli(['replay', 'session.jsonl'], io)).toBe(0)
    expect(err).toEqual([])
    expect(out.join('\n')).toContain('turn 1 ended completed')
  })

  it('reports the violations of a hand-broken log and exits 1', async () => {
    const events = await realLog()
    // the turn never ends: every event is valid on its own, the log is not
    const broken = events.filter((e) => e.type !== 'turn/end')
    writeFileSync(join(dir, 'broken.json'), JSON.stringify(broken))

    const result = await replayFile(join(dir, 'broken.json'))
    expect(result.kind).toBe('checked')
    if (result.kind !== 'checked') return
    expect(result.ok).toBe(false)
    expect(result.violations.map((v) => v.rule)).toContain('balanced')

    const { io, out } = capture()
    expect(await runCli(['replay', 'broken.json'], io)).toBe(1)
    expect(out.some((line) => /^violation balanced at seq \d+: /.test(line))).toBe(true)
    expect(out.at(-1)).toBe(`${broken.length} events, 1 turn, ${result.violations.length} violation${result.violations.length === 1 ? '' : 's'}`)
  })

  it('names the seq and path of an event the session refuses', async () => {
    const events = await realLog()
    const bad = structuredClone(events) as Array<{ seq: number; data: Record<string, unknown> }>
    const at = events.findIndex((e) => e.type === 'step/start')
    bad[at].data.step = 'one'
    writeFileSync(join(dir, 'invalid.json'), JSON.stringify(bad))

    const result = await replayFile(join(dir, 'invalid.json'))
    expect(result).toMatchObject({ ok: false, kind: 'invalid', seq: at })
    if (result.kind !== 'invalid') return
    expect(result.path).toMatch(new RegExp(`^seed\\[${at}\\]`))

    const { io, out, err } = capture()
    expect(await runCli(['replay', 'invalid.json'], io)).toBe(1)
    expect(out).toEqual([])
    expect(err.join('\n')).toContain(`invalid session log at seq ${at} (seed[${at}]`)
  })

  it('names the JSONL line that does not parse', async () => {
    writeFileSync(join(dir, 'garbage.jsonl'), '{"seq":0}\nnot json\n')
    const result = await replayFile(join(dir, 'garbage.jsonl'))
    expect(result).toMatchObject({ ok: false, kind: 'invalid', path: 'line 2' })
    expect(parseSessionLog('')).toEqual([])
    expect(() => parseSessionLog('{"not":"an array"')).toThrow(expect.objectContaining({ name: 'SessionLogSyntaxError', line: 1 }))
    expect(() => parseSessionLog('{"seq":0}')).not.toThrow()
    expect(() => parseSessionLog('[1')).toThrow(SessionLogSyntaxError)
  })
})

describe('replay refuses what it cannot read faithfully (issue 30)', () => {
  it('refuses a log with bytes that are not UTF-8, naming the line, instead of reading them as U+FFFD', async () => {
    const events = await realLog()
    const lines = events.map((e) => JSON.stringify(e))
    const at = lines.findIndex((l) => l.includes('1 + 2?'))
    const bytes = Buffer.from(`${lines.join('\n')}\n`)
    const start = bytes.indexOf(Buffer.from(lines[at]))
    const column = lines[at].indexOf('1 + 2?')
    bytes[start + column] = 0xff // the '1' of the prompt: a byte that UTF-8 never uses
    writeFileSync(join(dir, 'not-utf8.jsonl'), bytes)

    const result = await replayFile(join(dir, 'not-utf8.jsonl'))
    expect(result).toEqual({
      ok: false,
      kind: 'invalid',
      path: `line ${at + 1}`,
      message: `not a session log: line ${at + 1} is not valid UTF-8 (byte ${column + 1} of the line)`,
    })
    const { io, err } = capture()
    expect(await runCli(['replay', 'not-utf8.jsonl'], io)).toBe(1)
    expect(err).toEqual([`invalid session log (line ${at + 1}): not a session log: line ${at + 1} is not valid UTF-8 (byte ${column + 1} of the line)`])
  })

  it('refuses an over-long line by its number, before holding it whole', async () => {
    const events = await realLog()
    const lines = events.map((e) => JSON.stringify(e))
    // a prompt of 10,000 characters makes its line longer than the bound given
    const at = lines.findIndex((l) => l.includes('1 + 2?'))
    lines[at] = lines[at].replace('1 + 2?', 'x'.repeat(10_000))
    writeFileSync(join(dir, 'long-line.jsonl'), `${lines.join('\n')}\n`)
    expect(await replayFile(join(dir, 'long-line.jsonl'), { maxLineBytes: 4096 })).toEqual({
      ok: false,
      kind: 'invalid',
      path: `line ${at + 1}`,
      message: `not a session log: line ${at + 1} is longer than 4096 bytes`,
    })
    // the same log as one JSON array document is bounded as a whole
    writeFileSync(
      join(dir, 'long-array.json'),
      JSON.stringify(
        events.map((e, i) => (i === at ? JSON.parse(lines[at]) : e)),
        null,
        1,
      ),
    )
    const array = await replayFile(join(dir, 'long-array.json'), { maxLineBytes: 4096 })
    expect(array).toMatchObject({
      ok: false,
      kind: 'invalid',
      message: expect.stringMatching(
        /^not a session log: (line \d+ is longer than 4096 bytes|the JSON array reaches past 4096 bytes at line \d+; write the log as JSONL)$/,
      ),
    })
    // within the default bound the log is read as before
    expect(await replayFile(join(dir, 'long-line.jsonl'))).toMatchObject({ kind: 'checked', ok: true })
  })
})

describe('dispatch', () => {
  it('prints the usage for --help and no arguments', async () => {
    for (const argv of [[], ['--help'], ['-h'], ['help'], ['replay', '--help']]) {
      const { io, out, err } = capture()
      expect(await runCli(argv, io)).toBe(0)
      expect(out.join('\n')).toBe(USAGE.trimEnd())
      expect(err).toEqual([])
    }
  })

  it('answers an unknown command or option with one line on stderr and exit 2', async () => {
    for (const argv of [
      ['nope'],
      ['demo', '--nope'],
      ['replay'],
      ['replay', 'a', 'b'],
      ['diagram', 'extra'],
      ['conformance'],
      ['conformance', 'generate'],
      ['conformance', 'walk'],
    ]) {
      const { io, out, err } = capture()
      expect(await runCli(argv, io), argv.join(' ')).toBe(2)
      expect(out).toEqual([])
      expect(err, argv.join(' ')).toHaveLength(1)
      expect(err[0]).toMatch(/^agentchart: .+; run "agentchart (\w+ )?--help" for usage$/)
    }
    const { io, err } = capture()
    await runCli(['nope'], io)
    expect(err[0]).toBe('agentchart: unknown command "nope" (the commands are demo, diagram, replay, view and conformance); run "agentchart --help" for usage')
  })

  it('--help lists every command with an example', () => {
    for (const command of ['demo', 'diagram', 'replay', 'view', 'conformance generate', 'conformance run']) {
      expect(USAGE).toContain(`  ${command}`)
      expect(USAGE).toContain(`e.g. agentchart ${command.split(' ')[0]}`)
    }
  })

  it('reports a failure without the usage and exits 1', async () => {
    const { io, err } = capture()
    expect(await runCli(['replay', 'missing.json'], io)).toBe(1)
    expect(err).toHaveLength(1)
    expect(err[0]).toMatch(/^agentchart replay: ENOENT/)
  })
})

describe('the executable', () => {
  it('starts with a shebang, and package.json names it as the agentchart bin', () => {
    expect(readFileSync(join(repoRoot, 'src/cli/index.ts'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true)
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin?: Record<string, string>; files?: string[] }
    expect(pkg.bin).toEqual({ agentchart: './dist/cli/index.js' })
    expect(pkg.files).toContain('dist')
    expect(existsSync(join(repoRoot, 'tsconfig.build.json'))).toBe(true)
  })
})

describe('committed diagrams', () => {
  it('docs/machines holds the diagrams the machines generate today (run `npm run diagrams` after changing a machine)', async () => {
    const { renderMachineDiagrams, diagramFile } = await import('../../src/cli/diagram.js')
    const { readFileSync } = await import('node:fs')
    for (const diagram of renderMachineDiagrams()) {
      expect(readFileSync(`docs/machines/${diagram.name}.mmd`, 'utf8'), diagram.name).toBe(diagramFile(diagram))
    }
  })
})

// The one escaping function the CLI prints foreign text through, and the
// commands that use it: nothing from a model, a tool or a stored log reaches
// the terminal as a raw control, bidi or lone-surrogate character.
import fc from 'fast-check'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clipText, escapeTerminal, isTerminalSafe, jsonLine } from '../../src/cli/escape.js'
import { runCli, type CliIO } from '../../src/cli/main.js'
import { formatSessionTree } from '../../src/cli/tree.js'
import { createAgent, defineTool, userMessage, type SessionEvent } from '../../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { z } from 'zod'
import { propertyRuns } from '../helpers.js'

/** Every character a terminal could act on: C0, DEL, C1, bidi controls, line/paragraph separators. */
// eslint-disable-next-line no-control-regex -- the test looks for exactly these
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Text built from the dangerous characters and ordinary ones. */
const hostile = fc
  .array(
    fc.oneof(
      fc.string(),
      fc.constantFrom(
        '\u001b[2J',
        '\u001b]0;owned\u0007',
        '\u009b31m',
        '\r',
        '\n',
        '\t',
        '\u202e',
        '\u2066',
        '\u0000',
        '\u007f',
        '\ud800',
        '\udc00',
        '😀',
        'é',
      ),
      fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)),
    ),
    { maxLength: 20 },
  )
  .map((parts) => parts.join(''))

describe('escapeTerminal', () => {
  it('leaves no raw control, bidi or lone surrogate in any text, single-line or multi-line', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const one = escapeTerminal(text)
        expect(RAW.test(one) || one.includes('\n')).toBe(false)
        expect(LONE_SURROGATE.test(one)).toBe(false)
        expect(isTerminalSafe(one)).toBe(true)
        const many = escapeTerminal(text, { multiline: true })
        expect(RAW.test(many)).toBe(false)
        expect(LONE_SURROGATE.test(many)).toBe(false)
        expect(isTerminalSafe(many, { multiline: true })).toBe(true)
      }),
      { numRuns: propertyRuns(300) },
    )
  })

  it('is idempotent and leaves safe text alone', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const once = escapeTerminal(text)
        expect(escapeTerminal(once)).toBe(once)
        const lines = escapeTerminal(text, { multiline: true })
        expect(escapeTerminal(lines, { multiline: true })).toBe(lines)
      }),
      { numRuns: propertyRuns(200) },
    )
    for (const safe of ['plain ASCII, punctuation: {}[]()"\'\\', 'accents é ü, CJK 漢字, emoji 😀👍🏽', '']) expect(escapeTerminal(safe)).toBe(safe)
  })

  it('writes each unsafe character as a visible escape that is also a JSON string escape', () => {
    expect(escapeTerminal('a\u001b[2Jb')).toBe('a\\u001b[2Jb')
    expect(escapeTerminal('x\ny\tz\r')).toBe('x\\ny\\tz\\r')
    expect(escapeTerminal('\u202eevil')).toBe('\\u202eevil')
    expect(escapeTerminal('\u009b')).toBe('\\u009b')
    expect(escapeTerminal('\ud800')).toBe('\\ud800')
    expect(escapeTerminal('line 1\r\nline\t2\u0007', { multiline: true })).toBe('line 1\nline  2\\u0007')
    expect(JSON.parse(`"${escapeTerminal('\u001b\u202e\u0085')}"`)).toBe('\u001b\u202e\u0085')
  })

  it('jsonLine stays valid JSON with nothing raw in it', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const line = jsonLine({ text })
        expect(isTerminalSafe(line)).toBe(true)
        expect((JSON.parse(line) as { text: string }).text).toBe(text)
      }),
      { numRuns: propertyRuns(200) },
    )
  })

  it('clipText cuts escaped text, never a surrogate pair in half', () => {
    expect(clipText('abcdef', 4)).toBe('abc…')
    expect(clipText('ab😀cd', 4)).toBe('ab…')
    expect(clipText('\u001b', 20)).toBe('\\u001b')
  })
})

describe('the commands print foreign text escaped', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agentchart-escape-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const EVIL = 'ok\u001b]0;pwned\u0007\u001b[2J\u202e\u009b31m'

  /** A real log whose model text, tool name arguments and results carry terminal escapes. */
  async function hostileLog(): Promise<SessionEvent[]> {
    const tool = defineTool({ name: 'echo', description: 'echo', input: z.object({ s: z.string() }), execute: ({ s }) => `${s}${EVIL}` })
    const model = scriptedModel(
      [toolCallResponse([{ id: 'c1', name: 'echo', arguments: JSON.stringify({ s: EVIL }) }], EVIL), textResponse(`answer ${EVIL}`)],
      {
        model: `m${EVIL}`,
      },
    )
    const agent = createAgent({ model, tools: [tool] })
    agent.followup(userMessage(`prompt ${EVIL}`))
    await agent.whenIdle()
    const events = JSON.parse(JSON.stringify(agent.session.events)) as SessionEvent[]
    await agent.dispose()
    return events
  }

  it('the session tree and `agentchart replay`', async () => {
    const events = await hostileLog()
    const tree = formatSessionTree(events)
    expect(tree).toContain('echo')
    for (const line of tree.split('\n')) expect(isTerminalSafe(line), line).toBe(true)

    writeFileSync(join(dir, 'evil.jsonl'), events.map((e) => JSON.stringify(e)).join('\n'))
    const out: string[] = []
    const err: string[] = []
    const io: CliIO = { out: (t) => out.push(t), err: (t) => err.push(t), cwd: dir }
    expect(await runCli(['replay', 'evil.jsonl'], io)).toBe(0)
    expect(out.join('\n')).toContain('\\u001b]0;pwned')
    for (const text of [...out, ...err]) expect(isTerminalSafe(text, { multiline: true }), text).toBe(true)
  })

  it('an invalid log whose message quotes hostile data', async () => {
    writeFileSync(join(dir, 'bad.jsonl'), `{"seq":0,"time":1,"type":"x${EVIL}","data":{}}\n`)
    const err: string[] = []
    expect(await runCli(['replay', 'bad.jsonl'], { out: () => {}, err: (t) => err.push(t), cwd: dir })).toBe(1)
    expect(err).toHaveLength(1)
    expect(isTerminalSafe(err[0])).toBe(true)
  })
})

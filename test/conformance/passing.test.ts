// What "pass" means (docs/conformance.md section 6), rule by rule, on a small
// hand-written scenario: the comparison, free values, the first difference
// the runner reports, and the checks made when a suite is read from disk.
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { agentchartDriver, formatResult, judge, readSuite, runSuite, ScenarioSchema, type Scenario } from '../../src/testing/index.js'

const tool = (name: string, executionMode: 'parallel' | 'exclusive') => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: 'object', properties: {}, additionalProperties: {} },
  executionMode,
})
const m1 = { id: 'm1', role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }], source: { kind: 'user' as const } }
const chunks = [
  { type: 'block-start' as const, index: 0, blockType: 'text' as const },
  { type: 'text-delta' as const, index: 0, text: 'hello' },
  { type: 'block-end' as const, index: 0, block: { type: 'text' as const, text: 'hello' } },
  { type: 'usage' as const, usage: { inputTokens: 3, outputTokens: 1 } },
  { type: 'finish' as const, reason: { kind: 'stop' as const } },
]

/** One prompt answered with text, written by hand in format 7 (a format 2 file with its version raised: nothing in it changed). */
const scenario: Scenario = ScenarioSchema.parse({
  formatVersion: 7,
  id: 'hello',
  description: 'one prompt answered with text',
  setup: { model: { provider: 'acme', model: 'm-1' }, tools: [tool('x', 'exclusive'), tool('p', 'parallel')], maxParallelToolCalls: 10 },
  inputs: [
    { type: 'send', message: m1, target: 'next-turn', wakeup: true },
    { type: 'pre-step', action: 'next' },
    { type: 'request', action: 'next' },
    { type: 'model', chunks, end: true },
    { type: 'turn-stopping', action: 'return' },
  ],
  expected: [
    { seq: 0, type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, inserted: [m1] } },
    { seq: 1, type: 'turn/start', data: { turn: 1 } },
    { seq: 2, type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, removedCount: 1, inserted: [] } },
    { seq: 3, type: 'step/start', data: { turn: 1, step: 1 } },
    { seq: 4, type: 'user/message', data: m1, surfaceOp: 'append' },
    {
      seq: 5,
      type: 'request/header',
      data: {
        reason: 'initial',
        header: {
          config: { provider: 'acme', model: 'm-1' },
          tools: [tool('p', 'parallel'), tool('x', 'exclusive')].map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
        },
      },
    },
    { seq: 6, type: 'request/context', data: { provider: 'acme', model: 'm-1' } },
    ...chunks.map((chunk, i) => ({ seq: 7 + i, type: 'assistant/chunk', data: { turn: 1, step: 1, chunk } })),
    {
      seq: 12,
      type: 'assistant/message',
      data: {
        turn: 1,
        step: 1,
        usage: { inputTokens: 3, outputTokens: 1 },
        message: { id: '*', role: 'assistant', content: [{ type: 'text', text: 'hello' }], source: { kind: 'model', provider: 'acme', model: 'm-1' } },
      },
      surfaceOp: 'append',
      sourceEventSeqs: [7, 8, 9, 10, 11],
      free: ['/data/message/id'],
    },
    { seq: 13, type: 'step/end', data: { turn: 1, step: 1 } },
    { seq: 14, type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } } },
  ],
  invariants: ['session', 'turn-closes-once'],
})

async function logOf(s: Scenario = scenario) {
  return (await agentchartDriver.run(s)).map((e) => JSON.parse(JSON.stringify(e)))
}

describe('passing a scenario', () => {
  it('a hand-written scenario passes on agentchart: every field compared but time and the free message id', async () => {
    const log = await logOf()
    expect(judge(scenario, log)).toEqual({ id: 'hello', description: 'one prompt answered with text', passed: true })
    expect(log[12].data.message.id).not.toBe('*')
  })

  it('a changed value, an extra field, a missing or extra event is the first difference, with its JSON Pointer', async () => {
    const log = await logOf()
    const changed = structuredClone(log)
    changed[8].data.chunk.text = 'hellO'
    expect(judge(scenario, changed).divergence).toMatchObject({ index: 8, path: '/data/chunk/text', reason: 'expected "hello", got "hellO"' })
    const extra = structuredClone(log)
    extra[3].data.note = 1
    expect(judge(scenario, extra).divergence).toMatchObject({ index: 3, path: '/data/note', reason: 'unexpected field 1' })
    const envelope = structuredClone(log)
    envelope[1].ignorable = true
    expect(judge(scenario, envelope).divergence).toMatchObject({ index: 1, path: '/ignorable' })
    expect(judge(scenario, log.slice(0, -1)).divergence).toMatchObject({ index: 14, path: '', reason: 'the log ends here; expected turn/end' })
    expect(judge(scenario, [...log, { ...log[14], seq: 15 }]).divergence).toMatchObject({
      index: 15,
      reason: 'an extra event turn/end after the end of the expected log',
    })
    const citations = structuredClone(log)
    delete citations[12].sourceEventSeqs
    expect(judge(scenario, citations).divergence).toMatchObject({ index: 12, path: '/sourceEventSeqs', reason: 'missing, expected [7,8,9,10,11]' })
  })

  it('time is never compared; a free value must be a non-empty string that no other message uses', async () => {
    const log = await logOf()
    expect(
      judge(
        scenario,
        log.map((e) => ({ ...e, time: 0 })),
      ).passed,
    ).toBe(true)
    const { time: _time, ...timeless } = log[0]
    expect(judge(scenario, [timeless, ...log.slice(1)]).passed).toBe(true)
    const empty = structuredClone(log)
    empty[12].data.message.id = ''
    expect(judge(scenario, empty).divergence).toMatchObject({ index: 12, path: '/data/message/id', reason: 'a free value must be a non-empty string, got ""' })
    const twin = structuredClone(log)
    twin[12].data.message.id = 'm1'
    expect(judge(scenario, twin).divergence).toMatchObject({ index: 12, reason: 'message id "m1" is also the id of the message at seq 4' })
  })

  it('the runner reports each failing scenario with expected and actual event; a rejecting driver fails its scenario', async () => {
    const rejecting = { name: 'broken', run: async () => Promise.reject(new Error('cannot start')) }
    const report = await runSuite([scenario], rejecting)
    expect(report).toMatchObject({ driver: 'broken', passed: 0, failed: 1 })
    expect(formatResult(report.results[0])).toBe('FAIL hello (one prompt answered with text)\n  the driver failed: cannot start')
    const wrong = {
      name: 'wrong',
      run: async () => (await logOf()).map((e) => (e.type === 'turn/end' ? { ...e, data: { ...e.data, reason: { kind: 'blocked' } } } : e)),
    }
    const text = formatResult((await runSuite([scenario], wrong)).results[0])
    expect(text.split('\n')).toEqual([
      'FAIL hello (one prompt answered with text)',
      '  first difference: event #14 at /data/reason/kind: expected "completed", got "blocked"',
      '  expected: {"seq":14,"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}',
      expect.stringMatching(/^ {2}actual: {3}\{"seq":14,"time":\d+,"type":"turn\/end","data":\{"turn":1,"reason":\{"kind":"blocked"\}\}\}$/),
      // then the events around it on both sides, the differing one marked
      '  expected around it:',
      expect.stringMatching(/^ {6}#11 /),
      expect.stringMatching(/^ {6}#12 /),
      expect.stringMatching(/^ {6}#13 /),
      '    > #14 turn/end {"turn":1,"reason":{"kind":"completed"}}',
      '  actual around it:',
      expect.stringMatching(/^ {6}#11 /),
      expect.stringMatching(/^ {6}#12 /),
      expect.stringMatching(/^ {6}#13 /),
      '    > #14 turn/end {"turn":1,"reason":{"kind":"blocked"}}',
    ])
  })

  it('a store failure is an input: the reference driver refuses the append through session.failNextAppend', async () => {
    const failing = ScenarioSchema.parse({
      ...scenario,
      id: 'store',
      inputs: [{ type: 'fail-append', eventType: 'turn/start', message: 'disk full' }, scenario.inputs[0]],
      expected: [scenario.expected[0]],
      invariants: ['session'],
    })
    expect(judge(failing, await logOf(failing)).passed).toBe(true)
  })
})

describe('reading a suite', () => {
  async function folder(manifest: unknown, files: Record<string, unknown> = {}) {
    const dir = await mkdtemp(join(tmpdir(), 'agentchart-suite-'))
    await mkdir(join(dir, 'scenarios'))
    await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest))
    for (const [name, body] of Object.entries(files)) await writeFile(join(dir, 'scenarios', name), JSON.stringify(body))
    return dir
  }
  const manifest = { format: 'agentchart-conformance/7', formatVersion: 7, generatedBy: 'a test', scenarios: ['hello'] }

  it('reads the scenarios the manifest lists, in its order, and runs a folder by path', async () => {
    const dir = await folder(manifest, { 'hello.json': scenario })
    expect((await readSuite(dir)).scenarios.map((s) => s.id)).toEqual(['hello'])
    expect(await runSuite(dir, agentchartDriver)).toMatchObject({ passed: 1, failed: 0 })
  })

  it('refuses another format version, a file that does not match the schema, and a misnamed file, naming what is wrong', async () => {
    await expect(readSuite(await folder({ ...manifest, format: 'agentchart-conformance/1', formatVersion: undefined }))).rejects.toThrow(
      /format "agentchart-conformance\/1" version undefined; this runner reads agentchart-conformance\/7 version 7/,
    )
    await expect(readSuite(await folder(manifest, { 'hello.json': { ...scenario, inputs: [{ type: 'model', response: 'text' }] } }))).rejects.toThrow(
      /^scenarios\/hello\.json: inputs\.0: /,
    )
    await expect(readSuite(await folder(manifest, { 'hello.json': { ...scenario, id: 'other' } }))).rejects.toThrow(
      'scenarios/hello.json: id "other" differs from its file name',
    )
    await expect(readSuite(await folder(manifest))).rejects.toThrow(/^scenarios\/hello\.json: cannot read/)
  })
})

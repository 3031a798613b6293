// npm pack smoke test: build, pack, check what the tarball holds, then install
// it into scratch projects the way users would and run real code there:
//   - zod 4 + openai: the README example, every subpath import, and a typecheck of a consumer
//   - zod 3.25 (zod/v4): tools defined with zod/v4 run a turn; a consumer typechecks with skipLibCheck off
//   - zod/mini without openai: tools defined with zod/mini run a turn; agentchart and
//     agentchart/testing import fine, and the OpenAI adapter says what is missing;
//     `agentchart demo` (the installed bin) answers offline
// Installs prefer the local npm cache (the registry is used only for what the cache lacks).
// Usage: node scripts/pack-smoke.mjs [--keep]   (--keep leaves the scratch directory)
/* global process, console */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const keep = process.argv.includes('--keep')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const scratch = mkdtempSync(join(tmpdir(), 'agentchart-pack-'))
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

let failures = 0
const step = (name, fn) => {
  const started = Date.now()
  try {
    fn()
    console.log(`ok   ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`)
  } catch (error) {
    failures++
    console.log(`FAIL ${name}\n${String(error?.stdout ?? '')}${String(error?.stderr ?? '')}${error?.stdout || error?.stderr ? '' : error?.stack}`)
  }
}
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
const expect = (ok, message) => {
  if (!ok) throw new Error(message)
}

// ---- pack -----------------------------------------------------------------------

run(npm, ['run', 'build'], root)
const [packed] = JSON.parse(run(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], root))
const tarball = join(scratch, packed.filename)
const files = packed.files.map((f) => f.path)

step('the tarball holds the license, readme, docs and dist, and no sources or tests', () => {
  for (const needed of [
    'LICENSE',
    'README.md',
    'package.json',
    'dist/index.js',
    'dist/index.d.ts',
    'dist/adapters/openai.js',
    'dist/adapters/deepseek.js',
    'dist/adapters/ai-sdk.js',
    'docs/api.md',
  ]) {
    expect(files.includes(needed), `missing ${needed}`)
  }
  const stray = files.filter((f) => f.startsWith('src/') || f.startsWith('test/') || f.startsWith('scratch'))
  expect(stray.length === 0, `unexpected files: ${stray.join(', ')}`)
})

step('every source map carries its sources inline, so it resolves without src/', () => {
  const maps = files.filter((f) => f.endsWith('.js.map'))
  expect(maps.length > 0, 'no source maps')
  for (const file of maps) {
    const map = JSON.parse(readFileSync(join(root, file), 'utf8'))
    expect(
      Array.isArray(map.sourcesContent) && map.sourcesContent.length === map.sources.length && map.sourcesContent.every((s) => typeof s === 'string'),
      `${file} has no inline sources`,
    )
  }
})

// ---- scratch projects ---------------------------------------------------------

/** A scratch project with the tarball and `deps` installed, holding `sources`. */
function project(name, deps, sources) {
  const dir = join(scratch, name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `smoke-${name}`, private: true, type: 'module' }, null, 2))
  for (const [file, text] of Object.entries(sources)) writeFileSync(join(dir, file), text)
  run(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball, ...deps], dir)
  return dir
}

const devVersion = (name) => pkg.devDependencies[name].replace(/^[\^~]/, '')

/** The README's first TypeScript example that is not a captured one (plain JavaScript as it stands). */
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const example = /(?<!-->\n)```ts\n([\s\S]*?)```/.exec(readme)?.[1]

/** A strict consumer that also checks our declaration files (skipLibCheck off). */
const TSCONFIG = JSON.stringify({
  compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: false, types: [] },
  files: ['consumer.ts'],
})

// agentchart/mcp imports without its peers (the SDK and ajv load when mcpTools runs)
const SUBPATHS = [
  'agentchart',
  'agentchart/machines',
  'agentchart/testing',
  'agentchart/adapters/openai',
  'agentchart/adapters/deepseek',
  'agentchart/adapters/ai-sdk',
  'agentchart/telemetry',
  'agentchart/mcp',
  'agentchart/chat',
]

/** The model of the tool turn: agentchart/testing's scripted model, or the same answers from a hand-written adapter. */
const SCRIPTED = `import { scriptedModel, textResponse, toolCallResponse } from 'agentchart/testing'
const model = scriptedModel([toolCallResponse([{ id: 'c1', name: 'add', arguments: '{"a":2,"b":3}' }, { id: 'c2', name: 'add', arguments: '{"a":"x"}' }]), textResponse('5')])`
const HANDWRITTEN = `const answers = [
  [{ id: 'c1', name: 'add', arguments: '{"a":2,"b":3}' }, { id: 'c2', name: 'add', arguments: '{"a":"x"}' }].map((call, index) => ({ type: 'block-end', index, block: { type: 'tool-call', ...call } })),
  [{ type: 'block-end', index: 0, block: { type: 'text', text: '5' } }],
]
const model = {
  provider: 'local', model: 'local-1', requests: [],
  async *stream(request) {
    this.requests.push(request)
    const chunks = answers.shift()
    yield* chunks
    yield { type: 'finish', reason: { kind: chunks[0].block.type === 'tool-call' ? 'tool-calls' : 'stop' } }
  },
}`

/** A two-step tool turn with the given schema library: a valid call runs, an invalid one is refused by the schema. */
const toolTurn = (zodImport, schema, modelSource) => `${zodImport}
import { createAgent, defineTool } from 'agentchart'
${modelSource}

const add = defineTool({ name: 'add', description: 'adds', input: ${schema}, execute: ({ a, b }) => String(a + b) })
const agent = createAgent({ model, tools: [add] })
const result = await agent.run('2 + 3?')
const results = agent.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data.message.content[0].content)
if (result.end.kind !== 'completed' || result.text !== '5' || results[0] !== '5' || !/^Error: invalid arguments for tool add: /.test(results[1])) {
  throw new Error('unexpected turn: ' + JSON.stringify({ result, results }))
}
const parameters = model.requests[0].tools[0].inputSchema
if ('$schema' in parameters || parameters.type !== 'object') throw new Error('bad tool schema: ' + JSON.stringify(parameters))
console.log('turn ok')
`

step('zod 4 + openai: the README example runs, every subpath imports, and a consumer typechecks', () => {
  expect(example !== undefined, 'README has no ts example')
  const dir = project('zod4', [`zod@${devVersion('zod')}`, `openai@${devVersion('openai')}`], {
    'readme.mjs': example,
    'imports.mjs':
      SUBPATHS.map((p, k) => `import * as m${k} from '${p}'\nif (Object.keys(m${k}).length === 0) throw new Error('${p} exports nothing')`).join('\n') +
      '\nconsole.log("imports ok")\n',
    'consumer.ts': `import { z } from 'zod'
import * as zm from 'zod/mini'
import { createAgent, defineTool, type RunResult } from 'agentchart'
import { deepseekModel, openaiModel } from 'agentchart/adapters/openai'
import { deepseekModel as again } from 'agentchart/adapters/deepseek'
import { scriptedModel } from 'agentchart/testing'
import { agentMachine } from 'agentchart/machines'
const classic = defineTool({ name: 'a', description: '', input: z.object({ n: z.number() }), execute: ({ n }) => String(n + 1) })
const mini = defineTool({ name: 'b', description: '', input: zm.object({ s: zm.string() }), execute: ({ s }) => s.toUpperCase() })
const json = defineTool({ name: 'c', description: '', input: { jsonSchema: { type: 'object' }, validate: (v: unknown): v is { k: string } => true }, execute: ({ k }) => k })
const agent = createAgent({ model: scriptedModel([]), tools: [classic, mini, json], request: { responseFormat: z.object({ ok: z.boolean() }), toolChoice: 'auto' } })
const pending: Promise<RunResult<{ ok: boolean }>> = agent.run<{ ok: boolean }>('hi')
void pending
void [openaiModel({ model: 'm' }), deepseekModel({ model: 'm', thinking: true, reasoningEffort: 'max' }), again, agentMachine, agent.usage.totalTokens]
`,
    'tsconfig.json': TSCONFIG,
  })
  const printed = run('node', ['readme.mjs'], dir)
  expect(printed.includes('2 + 3 = 5 (completed, 2 steps)'), `README example printed:\n${printed}`)
  expect(run('node', ['imports.mjs'], dir).includes('imports ok'), 'imports failed')
  run('node', [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], dir)
})

step('zod 3.25: tools defined with zod/v4 run a turn (agentchart/testing included), and a consumer typechecks against our declarations', () => {
  const dir = project('zod3', ['zod@3.25.76'], {
    'turn.mjs': toolTurn("import { z } from 'zod/v4'", 'z.object({ a: z.number(), b: z.number() })', SCRIPTED),
    'handwritten.mjs': toolTurn("import { z } from 'zod/v4'", 'z.object({ a: z.number(), b: z.number() })', HANDWRITTEN),
    'consumer.ts': `import { z } from 'zod/v4'
import { createAgent, defineTool, UserMessageSchema, type ModelAdapter } from 'agentchart'
const add = defineTool({ name: 'add', description: '', input: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => String(a + b) })
const model: ModelAdapter = { provider: 'p', model: 'm', async *stream() {} }
const agent = createAgent({ model, tools: [add], request: { responseFormat: z.object({ ok: z.boolean() }) } })
void [agent.run('hi'), UserMessageSchema.parse]
`,
    'tsconfig.json': TSCONFIG,
  })
  expect(run('node', ['turn.mjs'], dir).includes('turn ok'), 'no turn on the scripted model of agentchart/testing')
  expect(run('node', ['handwritten.mjs'], dir).includes('turn ok'), 'no turn on a hand-written adapter')
  run('node', [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], dir)
  // the installed CLI writes the committed schema byte for byte (not one recomputed by the consumer's zod) and passes its suite
  const cli = join(dir, 'node_modules/.bin/agentchart')
  execFileSync(cli, ['conformance', 'generate', '--out', 'suite'], { cwd: dir, encoding: 'utf8' })
  const shipped = readFileSync(join(dir, 'node_modules/agentchart/docs/conformance/scenario.schema.json'), 'utf8')
  expect(readFileSync(join(dir, 'suite/scenario.schema.json'), 'utf8') === shipped, 'the generated scenario.schema.json differs from the shipped one')
  const ran = execFileSync(cli, ['conformance', 'run', 'suite'], { cwd: dir, encoding: 'utf8' })
  expect(/\b0 failed\b/.test(ran), `the installed suite did not pass:\n${ran.slice(-2000)}`)
})

step('zod/mini without openai: tools run a turn; agentchart and agentchart/testing import; the adapter names the missing package', () => {
  const dir = project('mini', [`zod@${devVersion('zod')}`], {
    'turn.mjs': toolTurn("import * as z from 'zod/mini'", 'z.object({ a: z.number(), b: z.number() })', SCRIPTED),
    'adapter.mjs': `import { createAgent } from 'agentchart'
import { openaiModel } from 'agentchart/adapters/openai'
const agent = createAgent({ model: openaiModel({ model: 'm', apiKey: 'k' }) })
const result = await agent.run('hi')
if (result.end.kind !== 'error' || result.end.error.code !== 'MISSING_DEPENDENCY') throw new Error(JSON.stringify(result.end))
console.log('adapter ok')
`,
  })
  let openaiInstalled = true
  try {
    run('node', ['-e', "import('openai')"], dir)
  } catch {
    openaiInstalled = false
  }
  expect(!openaiInstalled, 'openai got installed without being asked for')
  expect(run('node', ['turn.mjs'], dir).includes('turn ok'), 'no turn')
  expect(run('node', ['adapter.mjs'], dir).includes('adapter ok'), 'adapter did not report MISSING_DEPENDENCY')
  // the installed CLI: the demo runs offline on the built-in model (no openai, no key) and reads this project
  const demo = execFileSync(join(dir, 'node_modules/.bin/agentchart'), ['demo', '--once'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' },
  })
  expect(demo.includes('This project uses npm.') && demo.includes('turn 1 completed'), `the installed demo did not answer:\n${demo}`)
})

if (!keep) rmSync(scratch, { recursive: true, force: true })
else console.log(`scratch projects kept in ${scratch}`)
console.log(failures === 0 ? 'pack smoke: all passed' : `pack smoke: ${failures} failed`)
process.exit(failures === 0 ? 0 : 1)

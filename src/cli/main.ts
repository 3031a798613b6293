// The `agentchart` command line: argument parsing and dispatch. The executable
// entry point is src/cli/index.ts; this module has no side effects on import,
// so tests call runCli() directly.
import { existsSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { DEMO_USAGE, DemoUsageError, parseDemoArgs } from './demo/options.js'
import { DemoError, runDemo, type DemoIO } from './demo/run.js'
import { escapeTerminal } from './escape.js'
import { writeMachineDiagrams } from './diagram.js'
import { writeMachineExports } from './machine-export.js'
import { formatReplay, replayFile } from './replay.js'
import { runView } from './view.js'

export const USAGE = `Usage: agentchart <command> [options]

Commands:
  demo [prompt]                          run an agent with confined file tools (list_dir, read_file,
                                         search) on the built-in offline model, or on OpenAI/DeepSeek
                                         when a key is set; live tree, steer, cancel, resume
                                         e.g. agentchart demo "search for createAgent"
                                         (agentchart demo --help lists its options)
  diagram [--out <dir>]                  write per machine (agent, turn, step, attempt, tool-batch) a Mermaid
                                         stateDiagram-v2 (.mmd), its definition (.json) and one literal
                                         createMachine source for editors (.machine.ts); default --out: docs/machines
                                         e.g. agentchart diagram --out diagrams/
  replay <file>                          validate a session log (JSON array or JSONL), check its
                                         invariants and print it as a tree; exit 1 on a violation
                                         e.g. agentchart replay chat.jsonl   (a log kept by demo --log)
  view [--log <file> | --store <db> [--session <id>]] [--port <n>] [--host <h>]
                                         serve the offline viewer (statechart, timeline, log) on
                                         127.0.0.1 and print its URL: a stored log read-only (a
                                         JSONL file, or a session of a SQLite store, by default its
                                         most recent), or with neither a paced demo agent live
                                         e.g. agentchart view --log chat.jsonl
                                         e.g. agentchart view --store chat.db --session s1
  conformance generate --out <dir>       export the conformance suite to <dir>
                                         e.g. agentchart conformance generate --out suite/
  conformance run <dir> [--driver <m>]   run the suite in <dir> against the driver module <m>
              [--filter <id>]            (agentchart itself when none is given); exit 1 on a failure;
                                         --filter runs only the scenarios whose id contains <id> (a,b: either)
                                         e.g. agentchart conformance run suite/ --driver ./my-driver.mjs

Options:
  -h, --help                             show this text (agentchart demo --help: the demo's options)
`

/** Where the CLI writes; the default is the process's stdout and stderr. */
export interface CliIO {
  /** One line (or block) of normal output. */
  out(text: string): void
  /** One line of diagnostics. */
  err(text: string): void
  /** The directory relative paths are resolved against; default `process.cwd()`. */
  cwd?: string
  /** Ends a long-running command (`view`); default: SIGINT or SIGTERM. */
  stop?: AbortSignal
  /** Environment variables (API keys, demo knobs); default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>
  /** The process's terminal streams, for the demo's live tree and chat; absent in tests. */
  stdout?: DemoIO['stdout']
  stdin?: DemoIO['stdin']
  /** Where SIGINT arrives; absent in tests. */
  signals?: DemoIO['signals']
  /** All of stdin as text, for `--prompt-file -`. */
  readStdin?: () => Promise<string>
}

/** A signal aborted by Ctrl-C (SIGINT) or SIGTERM, for commands that run until stopped. */
function signalStop(): AbortSignal {
  const controller = new AbortController()
  const stop = () => controller.abort()
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  controller.signal.addEventListener('abort', () => {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  })
  return controller.signal
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let text = ''
  for await (const chunk of stream) text += String(chunk)
  return text
}

const processIO: CliIO = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
  stdout: process.stdout,
  stdin: process.stdin,
  signals: process,
  readStdin: () => readAll(process.stdin),
}

/** A command-line mistake: reported with the usage text, exit code 2. */
class UsageError extends Error {}

const HELP = { help: { type: 'boolean', short: 'h' } } as const

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options: { ...HELP, ...options }, allowPositionals: true, strict: true })
  } catch (err) {
    // parseArgs reports unknown options and missing option values as TypeErrors with an ERR_PARSE_ARGS_* code
    if (err instanceof TypeError && String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError(err.message.replace(/\. To specify a positional argument.*$/s, ''))
    }
    throw err
  }
}

function expectPositionals(command: string, positionals: string[], min: number, max: number, what: string): void {
  if (positionals.length < min) throw new UsageError(`${command}: missing ${what}`)
  if (positionals.length > max) throw new UsageError(`${command}: unexpected argument ${JSON.stringify(positionals[max])}`)
}

/** src/testing/conformance/cli.ts, loaded only when a conformance command runs (it pulls in the model graph). */
const loadConformance = () => import('../testing/conformance/cli.js')

/** A driver given as a path (relative to cwd) becomes a file URL; a package name is passed through. */
function driverSpecifier(driver: string, cwd: string): string {
  const pathLike = driver.startsWith('.') || isAbsolute(driver) || existsSync(resolve(cwd, driver))
  return pathLike ? pathToFileURL(resolve(cwd, driver)).href : driver
}

async function demo(args: string[], io: CliIO, cwd: string): Promise<number> {
  const env = io.env ?? {}
  let options
  try {
    options = await parseDemoArgs(args, env, { cwd, ...(io.readStdin ? { readStdin: io.readStdin } : {}) })
  } catch (err) {
    if (err instanceof DemoUsageError) throw new UsageError(`demo: ${err.message}`)
    throw err
  }
  if (options === 'help') {
    io.out(DEMO_USAGE.trimEnd())
    return 0
  }
  try {
    return await runDemo(options, {
      out: (text) => io.out(text),
      err: (text) => io.err(text),
      env,
      ...(io.stdout ? { stdout: io.stdout } : {}),
      ...(io.stdin ? { stdin: io.stdin } : {}),
      ...(io.signals ? { signals: io.signals } : {}),
    })
  } catch (err) {
    if (err instanceof DemoError) {
      if (err.code === 2) throw new UsageError(`demo: ${err.message}`)
      throw err
    }
    throw err
  }
}

function diagram(args: string[], io: CliIO, cwd: string): number {
  const { values, positionals } = parse(args, { out: { type: 'string', short: 'o' } })
  if (values.help) return help(io)
  expectPositionals('diagram', positionals, 0, 0, '')
  const outDir = resolve(cwd, values.out ?? 'docs/machines')
  const written = [...writeMachineDiagrams(outDir), ...writeMachineExports(outDir)]
  for (const path of written) io.out(`wrote ${path}`)
  return 0
}

async function replay(args: string[], io: CliIO, cwd: string): Promise<number> {
  const { values, positionals } = parse(args, {})
  if (values.help) return help(io)
  expectPositionals('replay', positionals, 1, 1, 'the session log file')
  const result = await replayFile(resolve(cwd, positionals[0]))
  const lines = formatReplay(result)
  if (result.kind === 'invalid') {
    for (const line of lines) io.err(line)
    return 1
  }
  for (const line of lines) io.out(line)
  return result.ok ? 0 : 1
}

async function view(args: string[], io: CliIO, cwd: string): Promise<number> {
  const { values, positionals } = parse(args, {
    log: { type: 'string', short: 'l' },
    store: { type: 'string' },
    session: { type: 'string' },
    port: { type: 'string', short: 'p' },
    host: { type: 'string' },
  })
  if (values.help) return help(io)
  expectPositionals('view', positionals, 0, 0, '')
  if (values.log !== undefined && values.store !== undefined) throw new UsageError('view: give --log or --store, not both')
  if (values.session !== undefined && values.store === undefined) throw new UsageError('view: --session names a session of a --store')
  let port: number | undefined
  if (values.port !== undefined) {
    port = Number(values.port)
    if (!/^\d+$/.test(values.port) || port > 65535) throw new UsageError(`view: --port must be a number from 0 to 65535, got ${JSON.stringify(values.port)}`)
  }
  return runView(
    {
      ...(values.log !== undefined ? { log: resolve(cwd, values.log) } : {}),
      ...(values.store !== undefined ? { store: resolve(cwd, values.store) } : {}),
      ...(values.session !== undefined ? { session: values.session } : {}),
      ...(values.host !== undefined ? { host: values.host } : {}),
      ...(port !== undefined ? { port } : {}),
    },
    { out: (text) => io.out(text), err: (text) => io.err(text), stop: io.stop ?? signalStop() },
  )
}

async function conformance(args: string[], io: CliIO, cwd: string): Promise<number> {
  const [sub, ...rest] = args
  if (sub === undefined || sub === '-h' || sub === '--help') {
    if (sub === undefined) throw new UsageError('conformance: missing subcommand (generate or run)')
    return help(io)
  }
  if (sub === 'generate') {
    const { values, positionals } = parse(rest, { out: { type: 'string', short: 'o' } })
    if (values.help) return help(io)
    expectPositionals('conformance generate', positionals, 0, 0, '')
    if (values.out === undefined) throw new UsageError('conformance generate: missing --out <dir>')
    const outDir = resolve(cwd, values.out)
    const { scenarios, coverage } = await (await loadConformance()).generateSuite(outDir)
    io.out(`wrote ${scenarios} scenario${scenarios === 1 ? '' : 's'} to ${outDir} (${coverage})`)
    return 0
  }
  if (sub === 'run') {
    const { values, positionals } = parse(rest, { driver: { type: 'string', short: 'd' }, filter: { type: 'string', short: 'f' } })
    if (values.help) return help(io)
    expectPositionals('conformance run', positionals, 1, 1, 'the suite directory')
    const driver = values.driver === undefined ? undefined : driverSpecifier(values.driver, cwd)
    const filter = values.filter === undefined ? [] : [{ filter: values.filter }]
    const { passed, failed, lines } = await (await loadConformance()).runSuiteFromDir(resolve(cwd, positionals[0]), driver, ...filter)
    for (const line of lines) io.out(line)
    io.out(`${passed} passed, ${failed} failed`)
    return failed > 0 ? 1 : 0
  }
  throw new UsageError(`conformance: unknown subcommand ${JSON.stringify(sub)} (expected generate or run)`)
}

function help(io: CliIO): number {
  io.out(USAGE.trimEnd())
  return 0
}

/**
 * Run the CLI on `argv` (the arguments after the program name) and return the exit code:
 * 0 success, 1 a failed check or an error, 2 a usage mistake (one line on stderr), 130 a
 * one-shot demo cancelled with Ctrl-C. Everything printed through `io` is escaped for the
 * terminal (escapeTerminal), so no log, model or tool text can reach it raw.
 */
export async function runCli(argv: readonly string[], given: CliIO = processIO): Promise<number> {
  const io: CliIO = {
    ...given,
    out: (text) => given.out(escapeTerminal(text, { multiline: true })),
    err: (text) => given.err(escapeTerminal(text, { multiline: true })),
  }
  const cwd = io.cwd ?? process.cwd()
  const [command, ...rest] = argv
  try {
    switch (command) {
      case undefined:
      case 'help':
      case '-h':
      case '--help':
        return help(io)
      case 'demo':
        return await demo(rest, io, cwd)
      case 'diagram':
        return diagram(rest, io, cwd)
      case 'replay':
        return await replay(rest, io, cwd)
      case 'view':
        return await view(rest, io, cwd)
      case 'conformance':
        return await conformance(rest, io, cwd)
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)} (the commands are demo, diagram, replay, view and conformance)`)
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(
        `agentchart: ${err.message}; run "agentchart ${command && ['demo', 'diagram', 'replay', 'view', 'conformance'].includes(command) ? `${command} ` : ''}--help" for usage`,
      )
      return 2
    }
    io.err(`agentchart ${command}: ${err instanceof Error ? err.message : String(err)}`)
    return 1
  }
}

// `agentchart demo` options: the flags, the environment, and what they mean
// together (which model, which directory, which log). Mistakes are reported
// as one line naming the flag.
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'

/** The prompt the demo answers when none is given. */
export const DEFAULT_PROMPT = 'Read package.json and tell me which package manager this project uses'

export type ProviderName = 'local' | 'openai' | 'deepseek'

/** Default model of each provider. */
export const DEFAULT_MODELS: Record<Exclude<ProviderName, 'local'>, string> = { openai: 'gpt-4.1-mini', deepseek: 'deepseek-v4-flash' }
/** The environment variable holding each provider's key. */
export const KEY_VARIABLES: Record<Exclude<ProviderName, 'local'>, string> = { openai: 'OPENAI_API_KEY', deepseek: 'DEEPSEEK_API_KEY' }

export interface DemoOptions {
  /** The prompt to send first; undefined when none was given. */
  prompt?: string
  provider: ProviderName
  model?: string
  baseURL?: string
  /** The directory the tools may read (absolute). */
  dir: string
  /** A JSONL session log to keep and resume (absolute). */
  log?: string
  /** A SQLite database to keep and resume the session in (absolute), and the session's id in it. */
  store?: string
  session: string
  json: boolean
  once: boolean
  inspect: boolean
  inspectPort: number
  /** The agent's step limit per turn (createAgent maxSteps); undefined = the library default. */
  maxSteps?: number
  /** Test knobs (environment): model pacing and one slow tool. */
  pacing: Pacing
}

/** How fast the local model and the tools go; see docs/demo.md ("Test knobs"). */
export interface Pacing {
  /** Milliseconds before the local model's first chunk; undefined = the default for the output. */
  thinkMs?: number
  /** Milliseconds between the local model's chunks; undefined = the default for the output. */
  chunkMs?: number
  /** A tool whose calls wait this long first (a steer typed meanwhile ends the wait). */
  slowTool?: { name: string; ms: number }
}

/** A command-line mistake, reported in one line with exit code 2. */
export class DemoUsageError extends Error {
  override readonly name = 'DemoUsageError'
}

export const DEMO_FLAGS = {
  'prompt-file': { type: 'string', short: 'f' },
  provider: { type: 'string', short: 'p' },
  model: { type: 'string', short: 'm' },
  'base-url': { type: 'string' },
  dir: { type: 'string', short: 'C' },
  log: { type: 'string', short: 'l' },
  store: { type: 'string', short: 's' },
  session: { type: 'string' },
  json: { type: 'boolean' },
  once: { type: 'boolean' },
  inspect: { type: 'boolean' },
  'inspect-port': { type: 'string' },
  'max-steps': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

export const DEMO_USAGE = `Usage: agentchart demo [prompt] [options]

Runs an agent with three tools confined to a directory (list_dir, read_file, search) and shows
its turns, steps, attempts and tool calls live. Without a prompt it asks:
  "${DEFAULT_PROMPT}"
In a terminal it is a chat: type while a turn runs to steer it, press Enter when idle to ask a
follow-up; Ctrl-C cancels the running turn, a second Ctrl-C (or Ctrl-D) quits.

Options:
  -f, --prompt-file <file>   read the prompt from a file ("-" reads stdin)
  -p, --provider <name>      local (built in, offline), openai or deepseek; default: deepseek when
                             DEEPSEEK_API_KEY is set, else openai when OPENAI_API_KEY is set, else local
  -m, --model <name>         the provider's model (default ${DEFAULT_MODELS.openai} / ${DEFAULT_MODELS.deepseek})
      --base-url <url>       an OpenAI-compatible endpoint (a proxy or a local server)
  -C, --dir <path>           the directory the tools may read (default: the current directory)
  -s, --store <file.db>      keep the session in a SQLite database; run again with it to continue
      --session <id>         the session's id in the store (default "demo"; one store holds many)
  -l, --log <file.jsonl>     keep the session in a JSONL file instead; run again with it to continue
      --once                 answer the prompt and exit, even in a terminal
      --max-steps <n>        stop a turn after n steps (default 100); a turn that stops there
                             still exits 0, with a note on stderr
      --json                 print one JSON event per line instead of the tree (for scripts)
      --inspect              watch the machines live: the Stately inspector and the offline viewer
                             (prints the URLs to open)
      --inspect-port <n>     the inspector bridge's port (default 8080)
  -h, --help                 show this text

Examples:
  agentchart demo
  agentchart demo "search for createAgent"
  agentchart demo --store chat.db "what did I ask before?"
  OPENAI_API_KEY=… agentchart demo --provider openai "summarise README.md"
`

function nonNegativeInt(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined
  if (!/^\d+$/.test(raw)) throw new DemoUsageError(`${name} must be a whole number of milliseconds, got ${JSON.stringify(raw)}`)
  return Number(raw)
}

/** Read the pacing knobs from the environment. */
export function pacingFrom(env: Readonly<Record<string, string | undefined>>): Pacing {
  const pacing: Pacing = {}
  const think = nonNegativeInt('AGENTCHART_DEMO_THINK_MS', env.AGENTCHART_DEMO_THINK_MS)
  const chunk = nonNegativeInt('AGENTCHART_DEMO_STREAM_DELAY_MS', env.AGENTCHART_DEMO_STREAM_DELAY_MS)
  if (think !== undefined) pacing.thinkMs = think
  if (chunk !== undefined) pacing.chunkMs = chunk
  const slow = env.AGENTCHART_DEMO_SLOW_TOOL
  if (slow) {
    const m = /^([A-Za-z0-9_.-]+)(?::(\d+))?$/.exec(slow)
    if (!m) throw new DemoUsageError(`AGENTCHART_DEMO_SLOW_TOOL must be <tool>[:<ms>], got ${JSON.stringify(slow)}`)
    pacing.slowTool = { name: m[1], ms: m[2] === undefined ? 30_000 : Number(m[2]) }
  }
  return pacing
}

/** Where the prompt file is read from, for `--prompt-file -`. */
export interface PromptSources {
  cwd: string
  readStdin?: () => Promise<string>
}

/**
 * Parse `agentchart demo` arguments and the environment into options.
 * Why: every mistake a newcomer can make here must become one clear line, before anything starts.
 */
export async function parseDemoArgs(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  sources: PromptSources,
): Promise<DemoOptions | 'help'> {
  let parsed
  try {
    parsed = parseArgs({ args: [...args], options: DEMO_FLAGS, allowPositionals: true, strict: true })
  } catch (error) {
    throw new DemoUsageError((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''))
  }
  const { values, positionals } = parsed
  if (values.help) return 'help'

  let prompt = positionals.length > 0 ? positionals.join(' ') : undefined
  const file = values['prompt-file']
  if (file !== undefined) {
    if (prompt !== undefined) throw new DemoUsageError('give the prompt either as words or with --prompt-file, not both')
    try {
      prompt =
        file === '-'
          ? await (sources.readStdin ?? (() => Promise.reject(new Error('stdin is not available'))))()
          : await readFile(resolve(sources.cwd, file), 'utf8')
    } catch (error) {
      const code = (error as { code?: unknown }).code
      const why =
        code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message
      throw new DemoUsageError(`cannot read the prompt file ${JSON.stringify(file)}: ${why}`)
    }
    prompt = prompt.trim()
    if (prompt === '') throw new DemoUsageError(`the prompt file ${JSON.stringify(file)} is empty`)
  }
  if (prompt !== undefined && prompt.trim() === '') throw new DemoUsageError('the prompt is empty')

  const provider = (values.provider ?? (env.DEEPSEEK_API_KEY ? 'deepseek' : env.OPENAI_API_KEY ? 'openai' : 'local')) as ProviderName
  if (!['local', 'openai', 'deepseek'].includes(provider)) {
    throw new DemoUsageError(`unknown provider ${JSON.stringify(values.provider)} (expected local, openai or deepseek)`)
  }
  if (provider === 'local' && values.model !== undefined)
    throw new DemoUsageError('the local model has no variants: --model needs --provider openai or deepseek')
  if (provider === 'local' && values['base-url'] !== undefined) throw new DemoUsageError('--base-url needs --provider openai or deepseek')
  if (provider !== 'local' && !env[KEY_VARIABLES[provider]] && values['base-url'] === undefined) {
    throw new DemoUsageError(
      `--provider ${provider} needs ${KEY_VARIABLES[provider]} in the environment (or leave --provider out to use the built-in local model)`,
    )
  }
  if (values['base-url'] !== undefined && !/^https?:\/\/\S+$/.test(values['base-url'])) {
    throw new DemoUsageError(`--base-url must be an http(s) URL, got ${JSON.stringify(values['base-url'])}`)
  }
  if (values.log !== undefined && values.store !== undefined) throw new DemoUsageError('keep the session in --store or in --log, not both')
  if (values.session !== undefined && values.store === undefined) throw new DemoUsageError('--session names a session in a store: it needs --store')
  if (values.session !== undefined && !/^[A-Za-z0-9_.:-]{1,128}$/.test(values.session)) {
    throw new DemoUsageError(`--session must be 1-128 letters, digits, '_', '.', ':' or '-', got ${JSON.stringify(values.session)}`)
  }
  let inspectPort = 8080
  if (values['inspect-port'] !== undefined) {
    inspectPort = Number(values['inspect-port'])
    if (!/^\d+$/.test(values['inspect-port']) || inspectPort < 1 || inspectPort > 65535) {
      throw new DemoUsageError(`--inspect-port must be a port number from 1 to 65535, got ${JSON.stringify(values['inspect-port'])}`)
    }
  }
  let maxSteps: number | undefined
  const rawSteps = values['max-steps']
  if (rawSteps !== undefined) {
    maxSteps = Number(rawSteps)
    if (!/^\d+$/.test(rawSteps) || !Number.isSafeInteger(maxSteps) || maxSteps < 1) {
      throw new DemoUsageError(`--max-steps must be a whole number of steps from 1, got ${JSON.stringify(rawSteps)}`)
    }
  }

  return {
    ...(prompt !== undefined ? { prompt } : {}),
    provider,
    ...(values.model !== undefined ? { model: values.model } : {}),
    ...(values['base-url'] !== undefined ? { baseURL: values['base-url'] } : {}),
    dir: resolve(sources.cwd, values.dir ?? '.'),
    ...(values.log !== undefined ? { log: resolve(sources.cwd, values.log) } : {}),
    ...(values.store !== undefined ? { store: resolve(sources.cwd, values.store) } : {}),
    session: values.session ?? 'demo',
    json: values.json === true,
    once: values.once === true,
    inspect: values.inspect === true,
    inspectPort,
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    pacing: pacingFrom(env),
  }
}

// `agentchart demo`: wires a model (the built-in local one, or a provider),
// the confined tools, an optional log file and inspector to an agent, draws
// what it does, and turns the keyboard into steer / follow-up / cancel.
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:net'
import {
  createAgent,
  createSession,
  SessionInUseError,
  StoredLogError,
  type Agent,
  type AgentOptions,
  type ModelAdapter,
  type Session,
  type ToolDefinition,
  type TurnEndReason,
} from '../../index.js'
import { escapeTerminal, jsonLine } from '../escape.js'
import { Keyboard, type KeyboardStream } from './keyboard.js'
import { LOCAL_MODEL, LOCAL_PROVIDER, localModel } from './local-model.js'
import { LogFileError, openLogFile, type LoggedSession } from './log-file.js'
import { DEFAULT_MODELS, DEFAULT_PROMPT, KEY_VARIABLES, type DemoOptions } from './options.js'
import { plainScreen, terminalScreen, type TerminalStream } from './screen.js'
import { instrumentTools, Tracker, type Progress } from './tracker.js'
import { describeFailure, TreeView } from './view.js'
import { Workspace, workspaceTools } from './workspace.js'

/** What the demo talks to: plain lines, and (when they are terminals) the real streams. */
export interface DemoIO {
  /** One line of output (plain tree lines, or JSON lines). */
  out(text: string): void
  /** One line of diagnostics. */
  err(text: string): void
  env: Readonly<Record<string, string | undefined>>
  /** The terminal to draw on live; without it (or when it is not a TTY) the tree is printed line by line. */
  stdout?: TerminalStream & { isTTY?: boolean }
  /** The keyboard; the demo is a chat only when this and stdout are TTYs. */
  stdin?: KeyboardStream
  /** Where Ctrl-C arrives when the keyboard is not in raw mode (process); absent in tests. */
  signals?: Pick<NodeJS.Process, 'on' | 'off'>
}

/** A failure to report in one line; `code` is the exit code. */
export class DemoError extends Error {
  override readonly name = 'DemoError'
  constructor(
    message: string,
    readonly code = 1,
  ) {
    super(message)
  }
}

/** Codes after which every later request would fail the same way: the chat ends. */
const FATAL_CODES = new Set(['AUTH', 'INVALID_CREDENTIAL', 'MISSING_CREDENTIAL', 'UNKNOWN_MODEL'])

/**
 * How long a cancelled turn waits for a tool still running before it is closed without it (CX-17): a Ctrl-C
 * always ends the turn, even if a tool ignored its abort signal (its call closes TOOL_OUTCOME_UNKNOWN).
 */
const CANCEL_GRACE_MS = 2000

/** Cancel what runs, within the grace. */
const cancelTurn = (agent: Agent) => agent.cancel({ kind: 'user' }, { graceMs: CANCEL_GRACE_MS })

const SYSTEM_PROMPT = (root: string) =>
  `You are the agentchart demo agent, working in the directory ${root}. ` +
  'Use list_dir, read_file and search to look at the files before you answer, and say which files your answer comes from. ' +
  'Your tools can only read inside that directory; say so plainly when a request needs anything else. Answer concisely.'

/** The endpoint a provider is reached at, for error messages. */
function endpointOf(options: DemoOptions, env: DemoIO['env']): string {
  if (options.baseURL) return options.baseURL
  if (options.provider === 'deepseek') return 'https://api.deepseek.com'
  return env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1'
}

/** The model the options name; a provider's SDK is loaded only when it is used, so the local model never touches the network. */
async function buildModel(options: DemoOptions, interactive: boolean): Promise<ModelAdapter> {
  if (options.provider === 'local') {
    // paced for a person in a terminal, instant otherwise; the knobs override both
    const thinkMs = options.pacing.thinkMs ?? (interactive ? 350 : 0)
    const chunkMs = options.pacing.chunkMs ?? (interactive ? 12 : 0)
    return localModel({ thinkMs, chunkMs })
  }
  const { deepseekModel, openaiModel } = await import('../../adapters/openai.js')
  const model = options.model ?? DEFAULT_MODELS[options.provider]
  const baseURL = options.baseURL ? { baseURL: options.baseURL } : {}
  // DeepSeek through its own adapter: thinking with tools needs its reasoning sent back
  return options.provider === 'deepseek' ? deepseekModel({ model, ...baseURL }) : openaiModel({ provider: 'openai', model, ...baseURL })
}

/** Slow down one tool's calls (a test knob); a steer typed meanwhile ends the wait, so a test can steer mid-tool without racing. */
function slowDown(tools: readonly ToolDefinition<any>[], slow: DemoOptions['pacing']['slowTool']): ToolDefinition<any>[] {
  if (!slow) return [...tools]
  return tools.map((tool) => {
    if (tool.name !== slow.name) return tool
    return {
      ...tool,
      async execute(args: unknown, context: { signal: AbortSignal; agent: Agent }) {
        const until = Date.now() + slow.ms
        while (Date.now() < until && !context.signal.aborted && context.agent.inbox.nextStep.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
        return tool.execute(args, context as never)
      },
    } as ToolDefinition<any>
  })
}

/** Whether a TCP port on localhost is free to listen on. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', () => resolve(false))
    probe.listen(port, () => probe.close(() => resolve(true)))
  })
}

interface Inspection {
  inspect: (event: unknown) => void
  /** The Stately inspector bridge page. */
  url: string
  /** The offline viewer (agentchart/viewer), once started; or why it did not start. */
  viewerUrl?: string
  viewerError?: string
  stop(): void
}

/** Start @statelyai/inspect's bridge server and a WebSocket inspector feeding it. */
async function startInspector(port: number): Promise<Inspection> {
  if (!(await portIsFree(port))) throw new DemoError(`--inspect: port ${port} is in use (choose another with --inspect-port)`, 2)
  let inspectLib: typeof import('@statelyai/inspect')
  let serverLib: typeof import('@statelyai/inspect/server')
  try {
    inspectLib = await import('@statelyai/inspect')
    serverLib = await import('@statelyai/inspect/server')
  } catch {
    throw new DemoError('--inspect needs the @statelyai/inspect package: npm install @statelyai/inspect', 2)
  }
  const server = serverLib.createInspectorServer({ port, autoOpen: false })
  const inspector = inspectLib.createWebSocketInspector({ url: `ws://localhost:${port}` })
  return {
    inspect: (event) => inspector.inspect.next?.(event as never),
    url: `http://localhost:${port}`,
    stop() {
      inspector.stop()
      server.stop()
    },
  }
}

/**
 * Waits for Ctrl-C (SIGINT) or SIGTERM while the inspector bridge and the viewer go on serving, after a run
 * without a terminal. Why: `demo --inspect` from a script or an IDE task printed its URLs and exited at once.
 * Said on stderr, so `--json` output stays one event a line. Without a signal source (in-process use) it returns.
 */
async function keepServing(inspection: Inspection, io: DemoIO): Promise<void> {
  const signals = io.signals
  if (signals === undefined) return
  const viewer = inspection.viewerUrl ? ` and the viewer at ${escapeTerminal(inspection.viewerUrl)}` : ''
  io.err(`agentchart demo: the run is over; the inspector at ${inspection.url}${viewer} keep serving until Ctrl-C (SIGINT) or SIGTERM`)
  await new Promise<void>((resolve) => {
    const stop = () => {
      signals.off('SIGINT', stop)
      signals.off('SIGTERM', stop)
      resolve()
    }
    signals.on('SIGINT', stop)
    signals.on('SIGTERM', stop)
  })
}

/** The last exchange of a stored log, for the "resumed" header. */
function lastExchange(session: Session): { turns: number; prompt?: string; answer?: string } {
  let turns = 0
  let prompt: string | undefined
  let answer: string | undefined
  for (const e of session.events) {
    if (e.type === 'turn/start') turns++
    else if (e.type === 'user/message' && e.data.source.kind === 'user') {
      prompt = e.data.content.map((b) => (b.type === 'text' ? b.text : '')).join(' ')
      answer = undefined
    } else if (e.type === 'assistant/message' && !e.data.message.content.some((b) => b.type === 'tool-call')) {
      answer = e.data.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    }
  }
  return { turns, ...(prompt !== undefined ? { prompt } : {}), ...(answer !== undefined ? { answer } : {}) }
}

/** Where the session is kept between runs, and how much of it was there already. */
interface Kept {
  /** The file (a JSONL log or a SQLite database). */
  where: string
  /** How it is kept, in words: `a JSONL file`, `SQLite`. */
  what: string
  /** Events stored before this run (0: a new session). */
  stored: number
}

/** Open (or create) the session in a SQLite store and the agent over it; every failure is one line. */
async function openStore(path: string, sessionId: string, agentOptions: AgentOptions): Promise<{ agent: Agent; kept: Kept; close(): Promise<void> }> {
  const { sqliteStore } = await import('../../stores/index.js')
  let store
  try {
    store = sqliteStore({ path })
  } catch (error) {
    throw new DemoError(`--store ${path}: ${(error as Error).message}`)
  }
  try {
    const stored = (await store.load(sessionId))?.length ?? 0
    const agent = await createAgent({ ...agentOptions, store, sessionId })
    return { agent, kept: { where: path, what: 'SQLite', stored }, close: () => store.close() }
  } catch (error) {
    await store.close()
    if (error instanceof SessionInUseError) {
      const lapse = Math.max(1, Math.ceil((error.expiresAt - Date.now()) / 1000))
      throw new DemoError(
        `session ${sessionId} in ${path} is in use by ${error.holder} (another demo? if that process is gone, its lease lapses in ${lapse} s)`,
      )
    }
    if (error instanceof StoredLogError) throw new DemoError(`${path} holds a session the demo refuses: ${error.message}`)
    throw new DemoError(`--store ${path}: ${(error as Error).message}`)
  }
}

/** One line on a failed turn, naming what to do about it. */
export function failureLine(reason: Extract<TurnEndReason, { kind: 'error' }>, options: DemoOptions, env: DemoIO['env']): string {
  const { error } = reason
  const provider = options.provider
  if (error.code === 'AUTH' || error.code === 'INVALID_CREDENTIAL' || error.status === 401 || error.status === 403) {
    return `${provider} refused the API key (${describeFailure(error)}); check ${provider === 'local' ? 'the key' : KEY_VARIABLES[provider]}`
  }
  if (error.code === 'MISSING_CREDENTIAL') return `no API key for ${provider}: set ${provider === 'local' ? 'one' : KEY_VARIABLES[provider]}`
  if (error.code === 'TRANSPORT' || error.code === 'TIMEOUT')
    return `cannot reach ${provider} at ${escapeTerminal(endpointOf(options, env))} (${describeFailure(error)})`
  if (error.code === 'UNKNOWN_MODEL')
    return `${provider} does not know the model ${escapeTerminal(options.model ?? DEFAULT_MODELS[provider as 'openai'])} (${describeFailure(error)}); choose another with --model`
  return `the turn failed: ${describeFailure(error)}`
}

/**
 * Run the demo and return the exit code: 0 done (a turn stopped at its step limit included), 1 a failed turn
 * or a setup failure, 2 a usage mistake, 130 a one-shot run cancelled with Ctrl-C, 143 SIGTERM. Why: the newcomer's first two minutes
 * should show steps, parallel and exclusive tools, steering, cancellation and resume, for real.
 */
export async function runDemo(options: DemoOptions, io: DemoIO): Promise<number> {
  const tty = io.stdout?.isTTY === true && !options.json
  const interactive = tty && io.stdin?.isTTY === true && !options.once
  const workspace = await Workspace.open(options.dir).catch((error: unknown) => {
    throw new DemoError(`cannot use ${options.dir} as the working directory: ${(error as Error).message}`, 2)
  })
  const model = await buildModel(options, tty)
  const baseTools = workspaceTools(workspace)
  const tracker = new Tracker(baseTools)
  const tools = instrumentTools(slowDown(baseTools, options.pacing.slowTool), tracker)

  let kept: Kept | null = null
  let inspection: Inspection | null = null
  let agent: Agent | null = null
  const cleanups: Array<() => void | Promise<void>> = []
  try {
    if (options.inspect) {
      inspection = await startInspector(options.inspectPort)
      const inspector = inspection
      cleanups.push(() => inspector.stop())
    }
    const agentOptions: AgentOptions = {
      model,
      tools,
      systemPrompt: SYSTEM_PROMPT(workspace.root),
      ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
      ...(inspection ? { inspect: inspection.inspect } : {}),
      logger: { error: (message, error) => io.err(escapeTerminal(`agentchart demo: ${message}: ${error instanceof Error ? error.message : String(error)}`)) },
    }
    if (options.store) {
      const opened = await openStore(options.store, options.session, agentOptions)
      cleanups.push(() => opened.close())
      kept = opened.kept
      agent = opened.agent
    } else {
      let logged: LoggedSession | null = null
      if (options.log) {
        try {
          logged = openLogFile(options.log)
        } catch (error) {
          throw new DemoError(error instanceof LogFileError ? error.message : String(error))
        }
        logged.follow()
        const log = logged
        cleanups.push(() => log.close())
        kept = { where: options.log, what: 'a JSONL file', stored: logged.stored }
      }
      const session = logged?.session ?? createSession({ id: `demo-${randomUUID().slice(0, 8)}` })
      try {
        agent = createAgent({ ...agentOptions, session })
      } catch (error) {
        throw new DemoError(`cannot resume ${options.log ?? 'the session'}: ${(error as Error).message}`)
      }
    }
    tracker.attach(agent)
    cleanups.push(() => tracker.detach())
    if (inspection) {
      // the offline viewer beside the Stately inspector; a viewer that cannot start does not stop the demo
      try {
        const { serveViewer } = await import('../../viewer/index.js')
        const viewer = await serveViewer(agent, { print: false, title: `agentchart demo · ${agent.id}` })
        inspection.viewerUrl = viewer.url
        cleanups.push(() => viewer.close())
      } catch (error) {
        inspection.viewerError = (error as Error).message
      }
    }
    const code = await drive(agent, { options, io, tty, interactive, tracker, model, workspace, kept, inspection, afterwards: [] })
    // without a terminal the run is over here, but what --inspect serves is for looking at it afterwards
    if (inspection && !interactive) await keepServing(inspection, io)
    return code
  } finally {
    if (agent) await agent.dispose()
    for (const cleanup of cleanups.reverse()) await cleanup()
  }
}

interface DriveContext {
  options: DemoOptions
  io: DemoIO
  tty: boolean
  interactive: boolean
  tracker: Tracker
  model: ModelAdapter
  workspace: Workspace
  kept: Kept | null
  inspection: Inspection | null
  /** Lines for stderr, said after the tree is closed. */
  afterwards: Array<() => void>
}

/** Send the prompt, draw the run, and handle the keyboard until the run is over; returns the exit code. */
async function drive(agent: Agent, ctx: DriveContext): Promise<number> {
  const { options, io, tracker, model, workspace, kept } = ctx
  const label = `${model.provider}/${model.model}`
  const resumed = kept !== null && kept.stored > 0
  const exchange = resumed ? lastExchange(agent.session) : null
  const prompt = options.prompt ?? (resumed && ctx.interactive ? undefined : DEFAULT_PROMPT)

  // ---- JSON lines: one event a line, nothing else on stdout
  if (options.json) {
    const emit = (value: object) => io.out(jsonLine(value))
    emit({
      type: 'demo/start',
      session: agent.id,
      provider: model.provider,
      model: model.model,
      dir: workspace.root,
      resumed,
      storedEvents: kept?.stored ?? 0,
      ...(kept ? { keptIn: kept.where } : {}),
      ...(ctx.inspection ? { inspector: ctx.inspection.url, ...(ctx.inspection.viewerUrl ? { viewer: ctx.inspection.viewerUrl } : {}) } : {}),
    })
    tracker.subscribe((p) => {
      if (p.type === 'session-event') emit(p.event)
      else if (p.type === 'attempt-start') emit({ type: 'demo/attempt-start', turn: p.turn, step: p.step, attempt: p.attempt })
      else if (p.type === 'attempt-failed') emit({ type: 'demo/attempt-failed', attempt: p.attempt, failure: p.failure, retry: p.retry })
      else if (p.type === 'tool-settled')
        emit({
          type: 'demo/tool-settled',
          callId: p.call.callId,
          name: p.call.name,
          lane: p.call.lane,
          offsetMs: p.call.offsetMs,
          durationMs: p.call.durationMs,
          isError: p.call.isError,
        })
    })
    const code = await oneShot(agent, ctx, prompt ?? DEFAULT_PROMPT)
    emit({ type: 'demo/summary', ...tracker.totals(), exitCode: code })
    return code
  }

  // ---- the tree
  const noColor = io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== ''
  const screen = ctx.tty && io.stdout ? terminalScreen(io.stdout, !noColor) : plainScreen((line) => io.out(line))
  const view = new TreeView(screen, label)
  const s = view.style
  tracker.subscribe((p: Progress) => view.on(p))
  const where = model.provider === LOCAL_PROVIDER ? `${LOCAL_PROVIDER}/${LOCAL_MODEL} (built in, offline)` : `${label} at ${endpointOf(options, io.env)}`
  view.print(
    `${s.bold('agentchart demo')} ${s.dim('·')} model ${escapeTerminal(where)}`,
    `${s.dim('tools')} list_dir, read_file ${s.dim('(parallel)')}, search ${s.dim('(exclusive)')} ${s.dim('· confined to')} ${escapeTerminal(workspace.root)}`,
  )
  if (kept) {
    const where = `${escapeTerminal(kept.where)} ${s.dim(`(${kept.what})`)}`
    view.print(
      resumed
        ? `${s.dim('session')} ${escapeTerminal(agent.id)} resumed from ${where} ${s.dim(`· ${exchange!.turns} earlier turn${exchange!.turns === 1 ? '' : 's'}, ${kept.stored} events`)}`
        : `${s.dim('session')} ${escapeTerminal(agent.id)} ${s.dim('· new, kept in')} ${where}`,
    )
    if (exchange?.prompt) view.print(`${s.dim('  last asked:')} ${escapeTerminal(clipOne(exchange.prompt, 100))}`)
    if (exchange?.answer) view.print(`${s.dim('  last answer:')} ${escapeTerminal(clipOne(exchange.answer, 100))}`)
  }
  if (ctx.inspection) {
    const { url, viewerUrl, viewerError } = ctx.inspection
    view.print(`${s.dim('inspector')} open ${url} ${s.dim('(the Stately inspector, fed live over a local WebSocket)')}`)
    if (viewerUrl) view.print(`${s.dim('viewer   ')} open ${escapeTerminal(viewerUrl)} ${s.dim('(the offline viewer: statechart, timeline, log)')}`)
    else view.print(`${s.dim('viewer   ')} ${s.yellow(`not started: ${escapeTerminal(viewerError ?? 'unknown reason')}`)}`)
  }
  view.print('')

  let code: number
  try {
    code = ctx.interactive ? await chat(agent, ctx, view, prompt) : await oneShot(agent, ctx, prompt ?? DEFAULT_PROMPT, view)
  } finally {
    view.close()
  }
  view.print('', view.summary(tracker.totals()))
  for (const say of ctx.afterwards) say()
  return code
}

const clipOne = (text: string, max: number) => {
  const one = text.replace(/\s+/g, ' ').trim()
  return one.length > max ? `${one.slice(0, max - 1)}…` : one
}

/** Non-interactive: run one prompt to the end; Ctrl-C (SIGINT) or SIGTERM cancels it, and the turn still closes. */
async function oneShot(agent: Agent, ctx: DriveContext, prompt: string, view?: TreeView): Promise<number> {
  const { io } = ctx
  let signalled: 'SIGINT' | 'SIGTERM' | null = null
  const stop = (signal: 'SIGINT' | 'SIGTERM') => () => {
    if (signalled === null) view?.print(view.style.yellow('  ⏹ cancelling the turn'))
    signalled ??= signal
    cancelTurn(agent)
  }
  const onSigint = stop('SIGINT')
  const onSigterm = stop('SIGTERM')
  io.signals?.on('SIGINT', onSigint)
  io.signals?.on('SIGTERM', onSigterm)
  let result
  try {
    result = await agent.run(prompt)
  } finally {
    io.signals?.off('SIGINT', onSigint)
    io.signals?.off('SIGTERM', onSigterm)
  }
  if (signalled === 'SIGTERM') return 143
  const { end } = result
  switch (end.kind) {
    case 'completed':
    case 'max-tokens':
      return 0
    case 'max-steps':
      // TU-16: a documented turn end, not a failure; the one thing to say is that the answer may be unfinished
      io.err(
        `agentchart demo: the turn stopped at its step limit (${end.limit} steps) before the model gave its final answer; raise --max-steps to let it go on`,
      )
      return 0
    case 'error':
      io.err(`agentchart demo: ${failureLine(end, ctx.options, io.env)}`)
      return 1
    case 'aborted':
    case 'discarded':
      return signalled ? 130 : 1
    default:
      // blocked, or parked behind a turn that did not complete: the prompt got no answer
      io.err(`agentchart demo: the prompt got no answer (the turn ended ${end.kind})`)
      return 1
  }
}

/** Interactive: a chat. Enter steers a running turn or asks a follow-up; Ctrl-C cancels, then quits. */
async function chat(agent: Agent, ctx: DriveContext, view: TreeView, prompt: string | undefined): Promise<number> {
  const { io, options } = ctx
  const s = view.style
  let done!: (code: number) => void
  const finished = new Promise<number>((resolve) => (done = resolve))
  let cancelling = false

  const keyboard = new Keyboard(io.stdin!, {
    line(text) {
      if (agent.status === 'running' && !cancelling) {
        agent.steer(text)
        view.print(`    ${s.yellow('↳ steer queued:')} ${escapeTerminal(clipOne(text, 100))} ${s.dim('· it joins the next step')}`)
      } else {
        agent.followup(text)
      }
      view.redraw()
    },
    interrupt() {
      if (agent.status === 'running' && !cancelling) {
        cancelling = true
        view.note(s.yellow('⏹ cancelling the turn… (Ctrl-C again quits)'))
        cancelTurn(agent)
      } else if (agent.status !== 'running' && keyboard.buffer !== '') {
        keyboard.clear() // like a shell: Ctrl-C on a half-typed line drops the line
      } else done(0)
    },
    end() {
      done(0)
    },
    changed() {
      view.redraw()
    },
  })

  view.setInput({
    lines() {
      const running = agent.status === 'running'
      const typed = escapeTerminal(keyboard.buffer)
      const hint = running ? 'type to steer this turn · Enter sends · Ctrl-C cancels' : 'type a follow-up · Enter sends · Ctrl-C or Ctrl-D quits'
      const label = running ? s.yellow('steer ›') : s.cyan('you ›')
      return ['', `${label} ${typed === '' ? s.dim(hint) : typed}`]
    },
  })

  const offStatus = agent.on('agent/status', () => view.redraw())
  const sub = agent.session.events$.subscribe((event) => {
    if (event.type !== 'turn/end') return
    cancelling = false
    const reason = event.data.reason
    if (reason.kind === 'error') {
      const line = failureLine(reason, options, io.env)
      view.print(`  ${s.red(line)}`)
      if (FATAL_CODES.has(reason.error.code)) {
        // said on stderr once the live region is gone, so the two streams do not interleave on screen
        ctx.afterwards.push(() => io.err(`agentchart demo: ${line}`))
        done(1)
      }
    }
  })
  // signals from outside the terminal (kill -INT, kill -TERM): the same as the keys
  const onSigint = () => keyboard.interruptKey()
  const onSigterm = () => done(143)
  io.signals?.on('SIGINT', onSigint)
  io.signals?.on('SIGTERM', onSigterm)
  keyboard.start()
  try {
    if (prompt !== undefined) agent.followup(prompt)
    view.redraw()
    return await finished
  } finally {
    io.signals?.off('SIGINT', onSigint)
    io.signals?.off('SIGTERM', onSigterm)
    keyboard.stop()
    offStatus()
    sub.unsubscribe()
    view.setInput(null)
    if (agent.status === 'running') {
      // quitting mid-turn still closes the turn, so the log stays balanced (and the tree shows how it ended)
      view.print(s.yellow('  ⏹ quitting: closing the turn first'))
      cancelTurn(agent)
      await agent.whenIdle()
    }
  }
}

// Tools: the input schema (any zod v4 schema, or a JSON Schema with a
// validate function) is both the argument check and the JSON Schema the model
// sees; bodies return a string or a richer result.
import { ConfigError } from '../errors.js'
import { describeThrown, describeValue, fieldsOf, isArrayLike, isRecordLike, peek } from '../values/foreign.js'
import { describeIssues, toCheckedSchema, type CheckedSchema, type CheckResult, type InferSchema, type SchemaInput } from '../request/schema.js'
import { formatPath, toFrozenJson } from '../session/lossless.js'
import { InboxMessageSchema, ToolSchemaSchema, type ToolSchema, type UserMessage } from '../session/schemas.js'
import { userMessage } from '../request/messages.js'
import { redactSecrets } from '../adapters/failure.js'
import type { Facts, ToolOutcome } from '../machines/types.js'
import type { SessionStore } from '../stores/types.js'
import { errorOutcome } from '../machines/tool-batch.js'

export type ExecutionMode = 'parallel' | 'exclusive'

/** What a tool body receives besides its parsed arguments (TL-11). */
export interface ToolContext<A = unknown> {
  callId: string
  /** The tool's name as the model called it. */
  name: string
  /** The turn and step whose model request asked for the call. */
  turn: number
  step: number
  signal: AbortSignal
  agent: A
}

/** The richer form a body may return. */
export interface ToolResultValue {
  content: string
  isError?: boolean
  concludesTurn?: boolean
  additionalContexts?: Array<string | UserMessage>
  meta?: unknown
}

export interface ToolDefinition<S extends SchemaInput<any> = SchemaInput<any>> {
  readonly name: string
  readonly description: string
  /** The schema as given. */
  readonly input: S
  readonly executionMode: ExecutionMode | ((args: InferSchema<S>) => ExecutionMode)
  /**
   * A call whose body has not settled after this many milliseconds ends as an error result with code
   * TOOL_TIMEOUT; the body's signal is aborted and its late result dropped. Absent: no limit.
   */
  readonly timeoutMs?: number
  readonly execute: (args: InferSchema<S>, context: ToolContext<any>) => string | ToolResultValue | Promise<string | ToolResultValue>
}

/**
 * How a tool's calls cut short by a crash are settled when the session resumes, by tool. Why a registry: it is
 * how agentTool tells a resuming parent what became of a child without the agent knowing about subagents;
 * ordinary tools have none and keep the catalogue's repair (RS-5).
 */
const recoveries = new WeakMap<object, CallRecovery>()

/** Registers `tool`'s crash recovery (in-house: agentTool). */
export function setCallRecovery(tool: ToolDefinition<any>, recover: CallRecovery): void {
  recoveries.set(tool, recover)
}

/** The crash recovery of `tool`, if it has one. */
export function callRecoveryOf(tool: ToolDefinition<any>): CallRecovery | undefined {
  return recoveries.get(tool)
}

/** A call a crash cut short, as the resuming session knows it. */
export interface InterruptedCall {
  callId: string
  name: string
  /** The arguments as the model sent them (JSON text). */
  arguments: string
  /** The turn and step the call was made in. */
  turn: number
  step: number
  sessionId: string
  store: SessionStore
  logger: ToolLogger
}

/** Where a tool's faults that end no call are reported (the agent's logger). */
export interface ToolLogger {
  error(message: string, error: unknown): void
}

/** The result a recovered call is closed with instead of TOOL_OUTCOME_UNKNOWN, or null to keep the repair's. */
export type CallRecovery = (call: InterruptedCall) => Promise<{ content: string; isError: boolean; meta?: unknown } | null>

/** Checked schemas of the definitions seen, so a hand-built definition is converted once too. */
const checkedSchemas = new WeakMap<object, CheckedSchema>()

/** The tool's input schema in checked form (JSON Schema plus argument check). */
function checkedSchemaOf(tool: ToolDefinition): CheckedSchema {
  let checked = checkedSchemas.get(tool)
  if (checked === undefined) {
    checked = toCheckedSchema(tool.input, `tool ${tool.name}: input`)
    checkedSchemas.set(tool, checked)
  }
  return checked
}

/**
 * What defineTool checks of a definition, and what a tool built by hand is held to as well: its name, input schema,
 * body, execution mode and timeout. `at` prefixes each error's path (where a tool list holds it).
 */
function checkDefinition(definition: Partial<Record<keyof ToolDefinition, unknown>>, at = '') {
  if (typeof definition?.name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(definition.name)) {
    throw new ConfigError(`tool name must be 1-64 letters, digits, '_', '.' or '-', got ${JSON.stringify(definition?.name)}`, { path: `${at}name` })
  }
  const checked = toCheckedSchema(definition.input, `tool ${definition.name}: input`)
  if (typeof definition.execute !== 'function') throw new ConfigError(`tool ${definition.name}: execute must be a function`, { path: `${at}execute` })
  const mode = (definition.executionMode ?? 'exclusive') as ToolDefinition['executionMode']
  if (mode !== 'parallel' && mode !== 'exclusive' && typeof mode !== 'function') {
    throw new ConfigError(`tool ${definition.name}: executionMode must be 'parallel', 'exclusive' or a function`, { path: `${at}executionMode` })
  }
  const { timeoutMs } = definition
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0 && !Number.isNaN(timeoutMs))) {
    throw new ConfigError(`tool ${definition.name}: timeoutMs must be a positive number of milliseconds (or Infinity), got ${describeValue(timeoutMs)}`, {
      path: `${at}timeoutMs`,
    })
  }
  return { checked, mode }
}

/**
 * Define a tool; its name, schema and body are checked here, not at the first call.
 * `input` is any zod v4 schema (classic, zod/mini, zod/v4 of zod 3.25) or `{ jsonSchema, validate? }`.
 */
export function defineTool<S extends SchemaInput<any>>(definition: {
  name: string
  description: string
  input: S
  executionMode?: ExecutionMode | ((args: InferSchema<S>) => ExecutionMode)
  /** Milliseconds after which an unsettled call ends as a TOOL_TIMEOUT error result (default: no limit). */
  timeoutMs?: number
  execute: (args: InferSchema<S>, context: ToolContext<any>) => string | ToolResultValue | Promise<string | ToolResultValue>
}): ToolDefinition<S> {
  const { checked, mode } = checkDefinition(definition)
  const tool: ToolDefinition<S> = Object.freeze({ ...definition, description: definition.description ?? '', executionMode: mode })
  checkedSchemas.set(tool, checked)
  toolSchemaOf(tool) // its header entry, checked and made now rather than at the first request
  return tool
}

/** The tool list the request header carries, in canonical order by name; no `$schema` key goes to providers. */
export function toolSchemas(tools: readonly ToolDefinition[]): ToolSchema[] {
  return [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(toolSchemaOf)
}

/** Each frozen tool's header entry. Why: a tool is defined once and serves many agents, whose headers then share it. */
const toolSchemaCache = new WeakMap<ToolDefinition, ToolSchema>()

/**
 * A tool's entry in the request header, deep-frozen and checked against ToolSchemaSchema: made once for a
 * frozen tool (defineTool's), else each time. Why here: the header is logged on the trusted path, unchecked later.
 */
function toolSchemaOf(tool: ToolDefinition): ToolSchema {
  const cached = toolSchemaCache.get(tool)
  if (cached) return cached
  const { name, description } = tool
  const candidate = { name, ...(description === undefined || description === '' ? {} : { description }), inputSchema: checkedSchemaOf(tool).jsonSchema }
  const parsed = ToolSchemaSchema.safeParse(candidate)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = typeof name === 'string' && name !== '' ? `tool ${name}` : 'a tool'
    throw new ConfigError(`${where} at ${issue.path.join('.') || '(root)'}: ${issue.message}`, { path: issue.path.join('.') })
  }
  const entry: ToolSchema = Object.freeze({ ...candidate, inputSchema: toFrozenJson(candidate.inputSchema, `tools.${name}.inputSchema`) })
  if (Object.isFrozen(tool)) toolSchemaCache.set(tool, entry)
  return entry
}

/**
 * A tool list as given (createAgent's `tools`, or what prompt assembly returns): an array of tools made by
 * defineTool with distinct names. Throws a ConfigError naming the entry; `path` is where the list came from.
 */
export function checkToolList<T = never>(value: unknown, path: string, options: { allow?: (entry: unknown) => entry is T } = {}): Array<ToolDefinition | T> {
  if (!isArrayLike(value)) throw new ConfigError(`${path} must be an array of tools made by defineTool, got ${describeValue(value)}`, { path })
  const tools = Array.from(value as ArrayLike<unknown>)
  const names = new Set<string>()
  for (const [index, tool] of tools.entries()) {
    if (options.allow?.(tool)) continue // an entry the caller reads otherwise (a tool source)
    if (!isRecordLike(tool) || typeof tool.name !== 'string') {
      throw new ConfigError(`${path}[${index}] must be a tool made by defineTool, got ${describeValue(tool)}`, { path: `${path}.${index}` })
    }
    if (names.has(tool.name)) throw new ConfigError(`${path}: two tools are named ${tool.name}`, { path })
    // one not made by defineTool is held to what defineTool checks
    if (!checkedSchemas.has(tool)) checkedSchemas.set(tool, checkDefinition(tool, `${path}.${index}.`).checked)
    names.add(tool.name)
  }
  return tools as Array<ToolDefinition | T>
}

/** TL-1/TL-9: check parsed model arguments against the tool's schema; a refusal names every failing path. */
export function checkArguments(tool: ToolDefinition, args: unknown): CheckResult<unknown> | Promise<CheckResult<unknown>> {
  return checkedSchemaOf(tool).check(args)
}

/** TL-2: parallel only on an exact 'parallel'; unknown tools and throwing classifiers are exclusive. */
export function classify(tool: ToolDefinition | undefined, args: unknown): ExecutionMode {
  if (!tool) return 'exclusive'
  try {
    const mode = typeof tool.executionMode === 'function' ? tool.executionMode(args) : tool.executionMode
    return mode === 'parallel' ? 'parallel' : 'exclusive'
  } catch {
    return 'exclusive'
  }
}

/** TL-2: each tool's execution mode as a fact: fixed, or `per-call` when it is a function of the arguments. */
export function modesOf(tools: readonly ToolDefinition[]): Facts['modes'] {
  const modes: Record<string, 'parallel' | 'exclusive' | 'per-call'> = {}
  for (const tool of tools) modes[tool.name] = typeof tool.executionMode === 'function' ? 'per-call' : tool.executionMode
  return Object.freeze(modes)
}

/** Explain refused arguments to the model in one line: the failing paths and what was expected. */
export function describeInvalidArgs(name: string, failed: Extract<CheckResult<unknown>, { ok: false }>): string {
  return `invalid arguments for tool ${name}: ${describeIssues(failed.issues)}`
}

/**
 * A user message someone else built, as a checked frozen JSON copy; a refusal reads as one sentence naming the path.
 * Why: messages from tool results and listeners enter the inbox and the log, so they meet the inbox's rules (IN-7, IN-8).
 */
export function checkedMessage(value: unknown, where: string): UserMessage {
  const copy = toFrozenJson(value, where)
  const parsed = InboxMessageSchema.safeParse(copy)
  if (parsed.success) return copy as UserMessage
  const issue = parsed.error.issues[0]
  throw new TypeError(`${where} is not a user message: ${formatPath(where, issue.path)}: ${issue.message}`)
}

/** Additional contexts of a result or a post-execute decision (TL-12): strings become plugin messages of the tool. */
export function contextsOf(callName: string, contexts: unknown, what = `tool ${callName}`): UserMessage[] | undefined {
  if (contexts === undefined) return undefined
  if (!isArrayLike(contexts)) throw new TypeError(`${what}: additionalContexts must be an array of strings or user messages`)
  return Array.from(contexts, (c, i) =>
    typeof c === 'string'
      ? userMessage(c, { source: { kind: 'plugin', plugin: `tool:${callName}`, form: 'additional-context' } })
      : checkedMessage(c, `${what}: additionalContexts[${i}]`),
  )
}

/**
 * Normalize whatever a body returned into a frozen tool outcome, reading each field once; throws a TypeError
 * naming what is wrong. Why: the outcome goes into the machine and the log as plain data.
 */
export function toOutcome(callName: string, value: unknown): ToolOutcome {
  if (typeof value === 'string') return Object.freeze({ isError: false, content: value })
  const invalid = `tool ${callName} returned neither a string nor { content: string }`
  if (!isRecordLike(value)) throw new TypeError(invalid)
  const field = fieldsOf(value, `tool ${callName}'s result`)
  const content = field('content')
  if (typeof content !== 'string') throw new TypeError(invalid)
  const flag = (key: 'isError' | 'concludesTurn') => {
    const value = field(key)
    if (value !== undefined && typeof value !== 'boolean') throw new TypeError(`tool ${callName} returned ${key} ${describeValue(value)}, not a boolean`)
    return value === true
  }
  const meta = field('meta')
  const additionalContexts = contextsOf(callName, field('additionalContexts'))
  return Object.freeze({
    isError: flag('isError'),
    content,
    ...(meta !== undefined ? { meta: toFrozenJson(meta, 'meta') } : {}),
    ...(additionalContexts && additionalContexts.length ? { additionalContexts: Object.freeze(additionalContexts) as UserMessage[] } : {}),
    ...(flag('concludesTurn') ? { concludesTurn: true } : {}),
  })
}

/**
 * The error result of a body that threw (TL-9): its message, and `{name, code}` when it carries a string code.
 * Why: whatever was thrown (a null-prototype object, a revoked proxy, getters that throw) must become a result;
 * reads that throw count as absent, and credentials in the message are redacted like a model failure's.
 */
export function thrownOutcome(thrown: unknown): ToolOutcome {
  const code = peek(thrown, 'code')
  const name = peek(thrown, 'name')
  const info = typeof code === 'string' && code !== '' ? { name: typeof name === 'string' && name !== '' ? name : 'Error', code } : undefined
  return Object.freeze(errorOutcome(redactSecrets(thrownMessage(thrown)), info))
}

/** What a thrown value says: an Error's message, a string `message`, else its string form (or a description). */
function thrownMessage(thrown: unknown): string {
  const message = peek(thrown, 'message')
  if (typeof message === 'string') return message
  try {
    return String(message ?? thrown)
  } catch {
    return describeThrown(thrown)
  }
}

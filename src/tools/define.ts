// Tools: the input schema (any zod v4 schema, or a JSON Schema with a
// validate function) is both the argument check and the JSON Schema the model
// sees; bodies return a string or a richer result.
import { ConfigError } from '../errors.js'
import { describeIssues, toCheckedSchema, type CheckedSchema, type CheckResult, type InferSchema, type SchemaInput } from '../schema.js'
import { toFrozenJson } from '../session/lossless.js'
import { UserMessageSchema, type ToolSchema, type UserMessage } from '../session/schemas.js'
import { userMessage } from '../messages.js'
import type { ToolOutcome } from '../machines/types.js'

export type ExecutionMode = 'parallel' | 'exclusive'

/** What a tool body receives besides its parsed arguments (TL-11). */
export interface ToolContext<A = unknown> {
  callId: string
  /** The tool's name as the model called it. */
  name: string
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
  readonly execute: (args: InferSchema<S>, context: ToolContext<any>) => string | ToolResultValue | Promise<string | ToolResultValue>
}

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
 * Define a tool; its name, schema and body are checked here, not at the first call.
 * `input` is any zod v4 schema (classic, zod/mini, zod/v4 of zod 3.25) or `{ jsonSchema, validate? }`.
 */
export function defineTool<S extends SchemaInput<any>>(definition: {
  name: string
  description: string
  input: S
  executionMode?: ExecutionMode | ((args: InferSchema<S>) => ExecutionMode)
  execute: (args: InferSchema<S>, context: ToolContext<any>) => string | ToolResultValue | Promise<string | ToolResultValue>
}): ToolDefinition<S> {
  if (typeof definition?.name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(definition.name)) {
    throw new ConfigError(`tool name must be 1-64 letters, digits, '_', '.' or '-', got ${JSON.stringify(definition?.name)}`, { path: 'name' })
  }
  const checked = toCheckedSchema(definition.input, `tool ${definition.name}: input`)
  if (typeof definition.execute !== 'function') throw new ConfigError(`tool ${definition.name}: execute must be a function`, { path: 'execute' })
  const mode = definition.executionMode ?? 'exclusive'
  if (mode !== 'parallel' && mode !== 'exclusive' && typeof mode !== 'function') {
    throw new ConfigError(`tool ${definition.name}: executionMode must be 'parallel', 'exclusive' or a function`, { path: 'executionMode' })
  }
  const tool: ToolDefinition<S> = Object.freeze({ ...definition, description: definition.description ?? '', executionMode: mode })
  checkedSchemas.set(tool, checked)
  return tool
}

/** The tool list the request header carries, in canonical order by name; no `$schema` key goes to providers. */
export function toolSchemas(tools: readonly ToolDefinition[]): ToolSchema[] {
  return [...tools]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((tool) => ({
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      inputSchema: toFrozenJson(checkedSchemaOf(tool).jsonSchema, `tools.${tool.name}.inputSchema`),
    }))
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

/** Explain refused arguments to the model: the failing paths and what was expected. */
export function describeInvalidArgs(name: string, failed: Extract<CheckResult<unknown>, { ok: false }>): string {
  return `invalid arguments for tool ${name}: ${describeIssues(failed.issues)}`
}

function contextsOf(callName: string, contexts: unknown): UserMessage[] | undefined {
  if (contexts === undefined) return undefined
  if (!Array.isArray(contexts)) throw new TypeError('additionalContexts must be an array')
  return contexts.map((c, i) =>
    typeof c === 'string'
      ? userMessage(c, { source: { kind: 'plugin', plugin: `tool:${callName}`, form: 'additional-context' } })
      : toFrozenJson<UserMessage>(UserMessageSchema.parse(c), `additionalContexts[${i}]`),
  )
}

/** Normalize whatever a body returned into a tool outcome. */
export function toOutcome(callName: string, value: unknown): ToolOutcome {
  if (typeof value === 'string') return { isError: false, content: value }
  if (value === null || typeof value !== 'object' || typeof (value as ToolResultValue).content !== 'string') {
    throw new TypeError(`tool ${callName} returned neither a string nor { content: string }`)
  }
  const v = value as ToolResultValue
  const additionalContexts = contextsOf(callName, v.additionalContexts)
  return {
    isError: v.isError === true,
    content: v.content,
    ...(v.meta !== undefined ? { meta: toFrozenJson(v.meta, 'meta') } : {}),
    ...(additionalContexts && additionalContexts.length ? { additionalContexts } : {}),
    ...(v.concludesTurn === true ? { concludesTurn: true } : {}),
  }
}

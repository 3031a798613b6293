// Request options as users write them (a zod schema as the response format,
// provider options merged per provider) turned into the LlmCallConfig the log
// records, plus the validators of the output schemas seen on the way.
import { ConfigError } from '../errors.js'
import { canonical } from '../values/canonical.js'
import { isRecordLike } from '../values/foreign.js'
import { isJsonSchemaInput, isZodV4Schema, toCheckedSchema, type CheckedSchema, type SchemaInput } from './schema.js'
import { toFrozenJson } from '../session/lossless.js'
import { LlmCallConfigSchema, type LlmCallConfig, type ProviderOptions, type ResponseFormat } from '../session/schemas.js'

/** A response format as written: the logged form, a schema, or `{ type: 'json', schema }` with a schema object. */
export type ResponseFormatInput = ResponseFormat | SchemaInput | { type: 'json'; schema: SchemaInput; name?: string; description?: string; strict?: boolean }

/** Request options a user may set (createAgent `request`, adapter defaults, `agent/request` results). */
export type RequestOptions = Partial<Omit<LlmCallConfig, 'provider' | 'model' | 'responseFormat'>> & {
  responseFormat?: ResponseFormatInput
}

/** What an `agent/request` listener may return: a config whose response format may still be a schema. */
export type RequestConfigInput = Omit<LlmCallConfig, 'responseFormat'> & { responseFormat?: ResponseFormatInput }

/**
 * The checks of the JSON output schemas this agent has seen: a turn's
 * structured answer is validated with the check of the schema the agent's
 * last request was made with (the turn's last request made its answer). That
 * is known in memory only: two zod schemas with one JSON Schema log the same
 * header (and a header is logged only when it changes), so otherwise the
 * check is found by the logged schema's canonical JSON, the latest registered.
 */
export class OutputSchemas {
  readonly #bySchema = new WeakMap<object, CheckedSchema>()
  readonly #byKey = new Map<string, CheckedSchema>()
  #last: { schema: Record<string, unknown>; checked: CheckedSchema } | undefined

  /** Remember `checked` as the check of `logged`, the JSON Schema object a config now holds. */
  register(logged: Record<string, unknown>, checked: CheckedSchema): void {
    this.#bySchema.set(logged, checked)
    this.#byKey.set(canonical(logged), checked)
  }

  /** A request is made with `config`: an answer to it is checked with its own schema's check. */
  requested(config: LlmCallConfig): void {
    const schema = config.responseFormat?.type === 'json' ? config.responseFormat.schema : undefined
    const checked = schema && this.#bySchema.get(schema)
    this.#last = schema && checked ? { schema, checked } : undefined
  }

  /** The check for an answer asked with this logged JSON Schema, if any. */
  lookup(schema: Record<string, unknown>): CheckedSchema | undefined {
    const last = this.#last
    if (last !== undefined && (last.schema === schema || canonical(last.schema) === canonical(schema))) return last.checked
    return this.#bySchema.get(schema) ?? this.#byKey.get(canonical(schema))
  }
}

/** A schema object inside a response format becomes its JSON Schema; its check is returned, to register once the format is logged. */
function normalizeResponseFormat(value: unknown, where: string): { format: unknown; checked?: CheckedSchema } {
  if (isZodV4Schema(value) || isJsonSchemaInput(value)) {
    const checked = toCheckedSchema(value, where)
    return { format: { type: 'json', schema: checked.jsonSchema }, checked }
  }
  if (isRecordLike(value) && value.type === 'json' && (isZodV4Schema(value.schema) || isJsonSchemaInput(value.schema))) {
    const checked = toCheckedSchema(value.schema, `${where}.schema`)
    return { format: { ...value, schema: checked.jsonSchema }, checked }
  }
  return { format: value }
}

const PartialRouteConfigSchema = LlmCallConfigSchema.partial({ provider: true, model: true })

/** Refuses a config that does not fit LlmCallConfigSchema, naming its first issue in one line. */
function checkConfig(where: string, value: unknown, partialRoute: boolean): void {
  const parsed = (partialRoute ? PartialRouteConfigSchema : LlmCallConfigSchema).safeParse(value)
  if (parsed.success) return
  const issue = parsed.error.issues[0]
  throw new ConfigError(`${where} at ${issue.path.join('.') || '(root)'}: ${issue.message}`, { path: [where, ...issue.path.map(String)].join('.') })
}

/**
 * A config as the log records it: schemas in `responseFormat` become JSON
 * Schemas (their checks registered), the rest is checked against
 * LlmCallConfigSchema and frozen. Why: listeners and options may hand us zod
 * schemas, but the header holds lossless JSON only (SS-2, RQ-2).
 * `partialRoute` lets provider/model be missing (the machine's route check reports that, RQ-3).
 */
export function toLoggedConfig(value: unknown, schemas: OutputSchemas, where: string, partialRoute = false): LlmCallConfig {
  if (!isRecordLike(value)) throw new ConfigError(`${where} must be an object`, { path: where })
  // an option given as undefined is an option not given, as it is for a TypeScript caller
  const given = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined))
  const normalized = 'responseFormat' in given ? normalizeResponseFormat(given.responseFormat, `${where}.responseFormat`) : undefined
  const candidate = normalized ? { ...given, responseFormat: normalized.format } : given
  // the copy is what is checked and logged, so a getter is read once; a value JSON cannot hold is named by the schema first
  let config: unknown
  try {
    config = toFrozenJson(candidate, where)
  } catch (error) {
    checkConfig(where, candidate, partialRoute)
    throw error
  }
  checkConfig(where, config, partialRoute)
  const logged = config as LlmCallConfig
  if (normalized?.checked && logged.responseFormat?.type === 'json' && logged.responseFormat.schema) {
    schemas.register(logged.responseFormat.schema, normalized.checked)
  }
  return logged
}

/** Provider options of two layers, merged one level deep: the later layer's fields win within each provider. */
export function mergeProviderOptions(base: ProviderOptions | undefined, over: ProviderOptions | undefined): ProviderOptions | undefined {
  if (base === undefined) return over
  if (over === undefined) return base
  const out: ProviderOptions = { ...base }
  for (const [provider, fields] of Object.entries(over)) out[provider] = { ...(base[provider] ?? {}), ...fields }
  return out
}

/**
 * The seed config of a new agent instance (RQ-2): the adapter's route and
 * defaults, then the agent's `request` options, then `maxTokens`.
 */
export function seedConfig(
  route: { provider: string; model: string },
  adapterDefaults: RequestOptions | undefined,
  options: RequestOptions | undefined,
  maxTokens: number | undefined,
  schemas: OutputSchemas,
): LlmCallConfig {
  for (const [name, layer] of [
    ['model.defaultConfig', adapterDefaults],
    ['request', options],
  ] as const) {
    if (layer !== undefined && !isRecordLike(layer)) throw new ConfigError(`${name} must be an object`, { path: name })
    if (layer !== undefined && ('provider' in layer || 'model' in layer)) {
      throw new ConfigError(`${name} cannot set provider or model (they come from the model adapter)`, { path: name })
    }
  }
  const providerOptions = mergeProviderOptions(adapterDefaults?.providerOptions, options?.providerOptions)
  const merged = {
    ...adapterDefaults,
    ...options,
    ...route,
    ...(providerOptions !== undefined ? { providerOptions } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
  }
  return toLoggedConfig(merged, schemas, 'request')
}

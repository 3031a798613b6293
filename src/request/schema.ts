// Schemas users already have: any zod v4 schema (classic, zod/mini, or zod/v4
// from zod 3.25), recognised by its shape rather than by `instanceof`, or a
// plain JSON Schema with an optional validate function. Both become one
// CheckedSchema: the JSON Schema a provider sees plus a check of values.
import { z } from 'zod/v4'
import { ConfigError } from '../errors.js'
import { formatPath, toFrozenJson } from '../session/lossless.js'

/** The Standard Schema interface zod v4 implements (`~standard`), as far as we read it. */
interface StandardProps {
  readonly version: 1
  readonly vendor: string
  readonly validate: (value: unknown) => StandardResult | Promise<StandardResult>
}
type StandardResult = { readonly value: unknown; readonly issues?: undefined } | { readonly issues: readonly StandardIssue[] }
interface StandardIssue {
  readonly message: string
  readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[]
}

/** A zod v4 schema of any flavour and version: what we need of it is its internals and its Standard Schema face. */
export interface ZodV4Schema<O = unknown> {
  readonly _zod: { readonly def: unknown; readonly output: O }
  readonly '~standard': StandardProps
}

/** A JSON Schema object (lossless JSON). */
export type JsonSchema = Record<string, unknown>

/**
 * A plain JSON Schema with its own check. `validate` returns true for a valid
 * value (an Ajv-compiled function fits: its `errors` name what failed) or
 * throws; without it, any JSON value is accepted as is.
 */
export interface JsonSchemaInput<T = unknown> {
  readonly jsonSchema: JsonSchema
  readonly validate?: ((value: unknown) => value is T) | ((value: unknown) => boolean)
}

/** What tool inputs and response formats accept. */
export type SchemaInput<T = unknown> = ZodV4Schema<T> | JsonSchemaInput<T>

/** The value type a schema describes (zod's output type, or the validate guard's type). */
export type InferSchema<S> = S extends { readonly _zod: { readonly output: infer O } } ? O : S extends JsonSchemaInput<infer T> ? T : unknown

/** One reason a value was refused: where, and what was expected. */
export interface SchemaIssue {
  path: string
  message: string
}

export type CheckResult<T> = { ok: true; value: T } | { ok: false; issues: SchemaIssue[] }

/** A schema in the one form the loop uses: the JSON Schema sent to providers and a check of values. */
export interface CheckedSchema<T = unknown> {
  /** Frozen lossless JSON, without a top-level `$schema` key (providers reject or ignore it). */
  readonly jsonSchema: JsonSchema
  /** Synchronous unless the schema has async refinements. */
  check(value: unknown): CheckResult<T> | Promise<CheckResult<T>>
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null

/** True for any zod v4 schema (classic, mini, zod/v4 of zod 3.25): checked by shape, never by `instanceof`. */
export function isZodV4Schema(x: unknown): x is ZodV4Schema {
  if (!isObject(x) && typeof x !== 'function') return false
  const internals = (x as { _zod?: unknown })._zod
  const standard = (x as { '~standard'?: unknown })['~standard']
  return isObject(internals) && isObject(internals.def) && isObject(standard) && typeof standard.validate === 'function'
}

/** True for `{ jsonSchema, validate? }`. */
export function isJsonSchemaInput(x: unknown): x is JsonSchemaInput {
  if (!isObject(x) || !isObject(x.jsonSchema) || Array.isArray(x.jsonSchema)) return false
  return x.validate === undefined || typeof x.validate === 'function'
}

/** The JSON Schema without its top-level `$schema` dialect marker, frozen. */
function forProviders(schema: JsonSchema, path: string): JsonSchema {
  const { $schema: _dialect, ...rest } = schema
  return toFrozenJson(rest, path)
}

function standardIssues(issues: readonly StandardIssue[]): SchemaIssue[] {
  return issues.map((issue) => ({
    path:
      formatPath(
        '',
        (issue.path ?? []).map((p) => (isObject(p) ? (p as { key: PropertyKey }).key : p)),
      ) || '(root)',
    message: issue.message,
  }))
}

function fromStandard<T>(result: StandardResult): CheckResult<T> {
  return result.issues ? { ok: false, issues: standardIssues(result.issues) } : { ok: true, value: result.value as T }
}

/** Ajv-style `errors` on the validate function, else a generic refusal. */
function validatorIssues(validate: object, fallback: string): SchemaIssue[] {
  const errors = (validate as { errors?: unknown }).errors
  if (Array.isArray(errors) && errors.length > 0) {
    return errors.map((e: { instancePath?: unknown; message?: unknown }) => ({
      path: typeof e?.instancePath === 'string' && e.instancePath !== '' ? e.instancePath : '(root)',
      message: typeof e?.message === 'string' ? e.message : fallback,
    }))
  }
  return [{ path: '(root)', message: fallback }]
}

/**
 * Normalizes a zod v4 schema or a `{ jsonSchema, validate? }` into a CheckedSchema.
 * Why: tools and structured output must take the schemas users already have,
 * whichever zod build made them; `where` names the option in the ConfigError.
 */
export function toCheckedSchema<T = unknown>(input: unknown, where: string): CheckedSchema<T> {
  if (isZodV4Schema(input)) {
    let generated: JsonSchema
    try {
      generated = z.toJSONSchema(input as unknown as z.ZodType, { unrepresentable: 'any' })
    } catch (error) {
      throw new ConfigError(`${where}: the zod schema cannot be turned into a JSON Schema: ${(error as Error)?.message ?? String(error)}`, {
        path: where,
        cause: error,
      })
    }
    const standard = input['~standard']
    return Object.freeze({
      jsonSchema: forProviders(generated, `${where}.jsonSchema`),
      check(value: unknown) {
        const result = standard.validate(value)
        return result instanceof Promise ? result.then((r) => fromStandard<T>(r)) : fromStandard<T>(result)
      },
    })
  }
  if (isJsonSchemaInput(input)) {
    const { validate } = input
    return Object.freeze({
      jsonSchema: forProviders(input.jsonSchema, `${where}.jsonSchema`),
      check(value: unknown): CheckResult<T> {
        if (validate === undefined) return { ok: true, value: value as T }
        try {
          return validate(value) === true ? { ok: true, value: value as T } : { ok: false, issues: validatorIssues(validate, 'refused by validate') }
        } catch (error) {
          return { ok: false, issues: [{ path: '(root)', message: (error as Error)?.message ?? String(error) }] }
        }
      },
    })
  }
  const zod3 = isObject(input) && isObject((input as { _def?: unknown })._def) && !('_zod' in input)
  throw new ConfigError(
    zod3
      ? `${where}: this is a zod 3 schema; use zod 4 (or import { z } from 'zod/v4' with zod 3.25)`
      : `${where}: expected a zod v4 schema (zod, zod/mini, or zod/v4) or { jsonSchema, validate? }`,
    { path: where },
  )
}

/** Issues as one line for a model or a user: `a.b: expected number; c: required`. */
export function describeIssues(issues: readonly SchemaIssue[]): string {
  // one line, whatever a refinement's message holds
  return issues.map((issue) => `${issue.path}: ${issue.message}`.replace(/\s*[\r\n]+\s*/g, ' ')).join('; ')
}

// The check of a remote tool's arguments against the JSON Schema the server
// published, with Ajv (an optional peer, loaded only by agentchart/mcp).
// Why Ajv and not zod's fromJSONSchema: the server's schema is the contract,
// so the check must be a full JSON Schema validator of the schema's own
// dialect (draft-07 from most SDK servers, 2020-12 by MCP's default), not a
// conversion that covers part of the keywords (docs/mcp.md).
import { ConfigError } from '../errors.js'
import { formatPath } from '../session/lossless.js'

/** One refusal as Ajv reports it (the fields we read). */
interface AjvIssue {
  instancePath: string
  keyword: string
  message?: string
  params?: Record<string, unknown>
}

interface AjvValidate {
  (value: unknown): boolean
  errors?: AjvIssue[] | null
}

interface AjvInstance {
  compile(schema: object): AjvValidate
  removeSchema(schema: object): unknown
}

type AjvClass = new (options: Record<string, unknown>) => AjvInstance

/** The validate function agentchart's `{ jsonSchema, validate }` input calls; its `errors` name paths as zod's refusals do. */
export interface ArgumentCheck {
  (value: unknown): boolean
  errors?: { instancePath: string; message: string }[]
}

/** The Ajv build for each dialect a schema may name; one instance each per tool set. */
export interface Validators {
  compile(schema: Record<string, unknown>): ArgumentCheck
}

// value-free: never changes args (the runtime hands them frozen), checks every keyword, tolerates unknown ones
const OPTIONS = { allErrors: true, strict: false, validateSchema: false, validateFormats: false, useDefaults: false, coerceTypes: false }

/** Loads Ajv; the error says what to install when it is missing. */
export async function loadValidators(): Promise<Validators> {
  let draft07: AjvClass
  let draft2019: AjvClass
  let draft2020: AjvClass
  try {
    ;[draft07, draft2019, draft2020] = await Promise.all(['ajv', 'ajv/dist/2019.js', 'ajv/dist/2020.js'].map(loadClass))
  } catch (error) {
    throw new ConfigError(
      'agentchart/mcp checks tool arguments with ajv, which is not installed: npm install ajv (it is an optional peer, and a dependency of @modelcontextprotocol/sdk)',
      { path: 'ajv', cause: error },
    )
  }
  const instances = new Map<AjvClass, AjvInstance>()
  const instanceOf = (kind: AjvClass) => {
    let ajv = instances.get(kind)
    if (!ajv) instances.set(kind, (ajv = new kind(OPTIONS)))
    return ajv
  }
  return {
    compile(schema) {
      const { $schema: dialect, ...rest } = schema
      const ajv = instanceOf(dialectClass(dialect, draft07, draft2019, draft2020))
      const validate = ajv.compile(rest)
      // compiled code keeps what it needs; leaving the schema in the instance would leak it and clash on a reused $id
      ajv.removeSchema(rest)
      const check: ArgumentCheck = (value) => {
        const ok = validate(value)
        check.errors = ok ? undefined : issuesOf(validate.errors ?? [])
        return ok
      }
      return check
    },
  }
}

async function loadClass(specifier: string): Promise<AjvClass> {
  const module = (await import(specifier)) as { default: AjvClass | { default: AjvClass } }
  const exported = module.default
  return typeof exported === 'function' ? exported : exported.default
}

/** MCP's default dialect is 2020-12; SDK servers built on zod 3 name draft-07. */
function dialectClass(dialect: unknown, draft07: AjvClass, draft2019: AjvClass, draft2020: AjvClass): AjvClass {
  if (typeof dialect !== 'string') return draft2020
  if (/draft-0[4-7]/.test(dialect)) return draft07
  if (dialect.includes('2019-09')) return draft2019
  return draft2020
}

/** Ajv's refusals with the paths agentchart's zod refusals use (`items[0].name`, the missing property itself). */
function issuesOf(errors: readonly AjvIssue[]): { instancePath: string; message: string }[] {
  return errors.map((error) => {
    const keys: PropertyKey[] = error.instancePath
      .split('/')
      .slice(1)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((part) => (/^(0|[1-9]\d*)$/.test(part) ? Number(part) : part))
    const extra = error.params?.missingProperty ?? error.params?.additionalProperty
    if (typeof extra === 'string') keys.push(extra)
    const message =
      error.keyword === 'required' ? 'required' : error.keyword === 'additionalProperties' ? 'not allowed' : (error.message ?? `fails ${error.keyword}`)
    return { instancePath: formatPath('', keys), message }
  })
}

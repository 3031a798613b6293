// A suite on disk: `manifest.json` (format, scenario ids, coverage),
// `scenario.schema.json`, and one `scenarios/<id>.json` per scenario.
// Reading validates every file at the boundary and names what is wrong.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { FORMAT_VERSION, SUITE_FORMAT, ScenarioSchema, type Scenario, type Suite } from './format.js'

/** What `manifest.json` holds. */
export interface Manifest {
  format: typeof SUITE_FORMAT
  formatVersion: typeof FORMAT_VERSION
  generatedBy: string
  scenarios: string[]
  /** The agent machine's transitions and which of them the scenarios take; `unreachable` lists those no scenario can take, with the reason. */
  coverage: { machine: string; transitions: number; covered: number; unreachable: Array<{ key: string; reason: string }> }
}

async function readJson(path: string, what: string): Promise<unknown> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new Error(`${what}: cannot read ${path}: ${(error as Error).message}`, { cause: error })
  }
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new Error(`${what}: not JSON: ${(error as Error).message}`, { cause: error })
  }
}

/** Read a suite folder; the manifest's format must be this runner's, and every scenario file must match the schema. */
export async function readSuite(dir: string): Promise<Suite> {
  const manifest = (await readJson(join(dir, 'manifest.json'), 'manifest.json')) as Partial<Manifest> | null
  if (manifest?.format !== SUITE_FORMAT || manifest.formatVersion !== FORMAT_VERSION) {
    throw new Error(
      `manifest.json: format ${JSON.stringify(manifest?.format)} version ${JSON.stringify(manifest?.formatVersion)}; this runner reads ${SUITE_FORMAT} version ${FORMAT_VERSION} (regenerate the suite with \`agentchart conformance generate\`)`,
    )
  }
  if (!Array.isArray(manifest.scenarios)) throw new Error('manifest.json: scenarios must be an array of scenario ids')
  const scenarios: Scenario[] = []
  for (const id of manifest.scenarios) {
    const file = `scenarios/${id}.json`
    const parsed = ScenarioSchema.safeParse(await readJson(join(dir, file), file))
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      throw new Error(`${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`)
    }
    if (parsed.data.id !== id) throw new Error(`${file}: id ${JSON.stringify(parsed.data.id)} differs from its file name`)
    scenarios.push(parsed.data)
  }
  return { format: SUITE_FORMAT, generatedBy: manifest.generatedBy ?? 'read from disk', scenarios }
}

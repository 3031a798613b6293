// The tools of a step: the agent's plain tools and what its tool sources list
// now, read before each step's request. Why a snapshot: the request header,
// the execution-mode facts and the calls of one step must all see the same
// tools, whatever a source does meanwhile.
import { isRecordLike } from '../values/foreign.js'
import { toolSchemas, type ToolDefinition, type ToolLogger } from './define.js'
import { isToolSource, type ToolRead, type ToolSource } from './source.js'

export type ToolEntry = ToolDefinition | ToolSource

/** A tool a source may hand over: what the loop reads of a definition is there. */
const isToolLike = (value: unknown): value is ToolDefinition => isRecordLike(value) && typeof value.name === 'string' && typeof value.execute === 'function'

export class StepTools {
  readonly #entries: readonly ToolEntry[]
  /** The sources among the entries, told apart once (a source is asked nothing else until a step). */
  readonly #sources: ReadonlySet<ToolEntry>
  readonly #logger: ToolLogger
  /** What each source listed last (a failing source keeps its last list). */
  readonly #listed = new Map<ToolSource, readonly ToolDefinition[]>()
  readonly #plain: ReadonlySet<ToolDefinition>
  /** Tools from sources already asked whether their schema can be sent. */
  readonly #checkedTools = new WeakMap<ToolDefinition, boolean>()
  #raw: readonly ToolDefinition[] = []
  #current: readonly ToolDefinition[]

  /** `entries` were checked by createAgent: plain tools (unique names) and tool sources. */
  constructor(entries: readonly ToolEntry[], logger: ToolLogger) {
    this.#entries = entries
    this.#logger = logger
    this.#sources = new Set(entries.filter(isToolSource))
    this.#plain = new Set(entries.filter((entry): entry is ToolDefinition => !this.#sources.has(entry)))
    // a source's first list is taken as it is when it answers at once; a promise waits for the first step
    for (const source of this.#sources as ReadonlySet<ToolSource>) {
      try {
        const listed = source.currentTools()
        if (!(listed instanceof Promise)) this.#listed.set(source, this.#checked(listed))
        else listed.catch(() => {}) // the first step asks again and reports a failure then
      } catch {
        // the same: reported at the first step
      }
    }
    this.#current = this.#snapshot(this.#flatten())
  }

  /** The tools the step prepared last offers and runs with (or the initial ones before any step). */
  get current(): readonly ToolDefinition[] {
    return this.#current
  }

  /** Re-reads every source; the same snapshot when no tool changed, so the header and facts stay as they were. */
  async refresh(read: ToolRead): Promise<readonly ToolDefinition[]> {
    for (const source of this.#sources as ReadonlySet<ToolSource>) {
      try {
        this.#listed.set(source, this.#checked(await source.currentTools(read)))
      } catch (error) {
        this.#logger.error('agentchart: a tool source failed to list its tools; the step keeps its last list', error)
      }
    }
    const raw = this.#flatten()
    if (raw.length !== this.#raw.length || raw.some((tool, i) => tool !== this.#raw[i])) this.#current = this.#snapshot(raw)
    return this.#current
  }

  /** A source's answer as an array of tool-like values; anything else is an error for the caller to report. */
  #checked(listed: unknown): readonly ToolDefinition[] {
    if (!Array.isArray(listed)) throw new TypeError(`currentTools() must return an array of tools, got ${typeof listed}`)
    return [...(listed as unknown[])].filter((tool, i): tool is ToolDefinition => {
      if (isToolLike(tool)) return true
      this.#logger.error(`agentchart: a tool source listed something that is not a tool at [${i}]; it is left out`, tool)
      return false
    })
  }

  /** Whether a source's tool has a schema a request can carry (plain tools are not asked: createAgent throws for them). */
  #sendable(tool: ToolDefinition): boolean {
    if (this.#plain.has(tool)) return true
    let ok = this.#checkedTools.get(tool)
    if (ok === undefined) {
      try {
        toolSchemas([tool])
        ok = true
      } catch (problem) {
        this.#logger.error(`agentchart: tool ${tool.name} from a tool source has an input schema that cannot be sent; it is left out`, problem)
        ok = false
      }
      this.#checkedTools.set(tool, ok)
    }
    return ok
  }

  /** Every tool in entry order: plain tools and each source's last list. */
  #flatten(): ToolDefinition[] {
    const out: ToolDefinition[] = []
    for (const entry of this.#entries) {
      if (!this.#sources.has(entry)) out.push(entry as ToolDefinition)
      else out.push(...(this.#listed.get(entry as ToolSource) ?? []))
    }
    return out
  }

  #snapshot(raw: readonly ToolDefinition[]): readonly ToolDefinition[] {
    this.#raw = raw
    const byName = new Map<string, ToolDefinition>()
    for (const tool of raw) {
      // the first of two tools of one name wins: a source may not shadow a tool the agent was made with
      if (byName.has(tool.name)) this.#logger.error(`agentchart: two tools are named ${tool.name}; the later one is left out`, tool)
      else if (this.#sendable(tool)) byName.set(tool.name, tool)
    }
    const tools = [...byName.values()]
    // plain tools were checked at createAgent: a schema of theirs that cannot be sent throws there, as it always did
    toolSchemas(tools)
    return Object.freeze(tools)
  }
}

// Prompt assembly (HK-12): the system text and the tools one step sends, made
// from createAgent's `systemPrompt` and `tools` (each a value or a function of
// the step) and the `system-prompt/assemble` listeners, and checked here once
// per step, before agent/pre-step.
import { describeValue, fieldsOf, isArrayLike, isRecordLike } from '../values/foreign.js'
import type { ToolSchema, UserMessage } from '../session/schemas.js'
import { checkToolList, toolSchemas, type ToolDefinition } from '../tools/define.js'
import type { ToolSource } from '../tools/source.js'

/** What one step is assembled for: the payload of `system-prompt/assemble` and of a `systemPrompt` or `tools` function. */
export interface PromptContext<A = unknown> {
  turn: number
  step: number
  /** The messages this step's proposal claimed, before agent/pre-step decides about it. */
  messages: readonly UserMessage[]
  /** The turn's signal: aborted when the turn is cancelled. */
  signal: AbortSignal
  agent: A
}

/**
 * What one step sends: the system prompt as sections (joined by a blank line; with none, or only empty ones,
 * the request has no system field) and its tools.
 */
export interface PromptAssembly {
  sections: readonly string[]
  tools: readonly ToolDefinition<any>[]
}

/** createAgent's `systemPrompt`: fixed text, or text made for each step (sync or async). */
export type SystemPromptOption<A = unknown> = string | ((context: PromptContext<A>) => string | Promise<string>)
/**
 * createAgent's `tools`: tools and tool sources (a source is read again at every step), or a function giving the
 * list for each step; a change takes effect at the next step (TL-5).
 */
export type ToolsOption<A = unknown> = readonly (ToolDefinition<any> | ToolSource)[] | ToolSource | ToolsFunction<A>
type ToolsFunction<A> = (context: PromptContext<A>) => readonly ToolDefinition<any>[] | Promise<readonly ToolDefinition<any>[]>

/** An assembly as requests use it: the joined text and the tools' schemas. */
export interface Assembled {
  system?: string
  tools: readonly ToolDefinition[]
  toolSchemas: readonly ToolSchema[]
}

/** The assembly of a step with no listener: the options, evaluated for this step. */
export async function assembleFromOptions<A>(
  systemPrompt: SystemPromptOption<A> | undefined,
  tools: readonly ToolDefinition<any>[] | ToolsFunction<A>,
  context: PromptContext<A>,
): Promise<PromptAssembly> {
  const text = typeof systemPrompt === 'function' ? await systemPrompt(context) : systemPrompt
  if (text !== undefined && typeof text !== 'string') throw new TypeError(`systemPrompt() must return a string, got ${describeValue(text)}`)
  const list = typeof tools === 'function' ? await tools(context) : tools
  return { sections: text ? [text] : [], tools: checkToolList(list, typeof tools === 'function' ? 'tools()' : 'tools') }
}

/** Reads what the assembly chain returned; throws a TypeError naming the field. */
export function checkAssembly(value: unknown): PromptAssembly {
  const shape = '{ sections: string[], tools }'
  if (!isRecordLike(value)) throw new TypeError(`system-prompt/assemble must return ${shape}, got ${describeValue(value)}`)
  const field = fieldsOf(value, 'system-prompt/assemble result')
  const sections = field('sections')
  if (!isArrayLike(sections)) throw new TypeError(`system-prompt/assemble must return ${shape}: sections is ${describeValue(sections)}`)
  const texts = Array.from(sections as ArrayLike<unknown>, (section, index) => {
    if (typeof section !== 'string') throw new TypeError(`system-prompt/assemble: sections[${index}] must be a string, got ${describeValue(section)}`)
    return section
  })
  return { sections: texts, tools: checkToolList(field('tools'), 'system-prompt/assemble: tools') }
}

/**
 * The assembly in the form requests use; the previous one's schemas are kept when the tools are the same.
 * Why: schemas are derived per tool, and an unchanged list is the common case at every step.
 */
export function toAssembled(assembly: PromptAssembly, previous: Assembled): Assembled {
  const text = assembly.sections.filter((section) => section !== '').join('\n\n')
  const given = assembly.tools as readonly ToolDefinition[]
  const same = given.length === previous.tools.length && given.every((tool, index) => tool === previous.tools[index])
  if (same && (text || undefined) === previous.system) return previous
  const tools = same ? previous.tools : Object.freeze([...given])
  return { ...(text ? { system: text } : {}), tools, toolSchemas: same ? previous.toolSchemas : Object.freeze(toolSchemas(tools)) }
}

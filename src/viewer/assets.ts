// The page's files: compiled at build time into dist/viewer/assets (see
// scripts/build-viewer.ts) and read into memory once, so a request can only
// ever name one of them: no path from a request reaches the file system.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ConfigError } from '../errors.js'

export interface Asset {
  readonly body: Buffer
  readonly type: string
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
}

/**
 * Where the compiled page lives: `assets/` beside this module in the published package
 * (dist/viewer/assets), or dist/viewer/assets of the checkout when this module runs from src/.
 */
export function defaultAssetsDir(): string {
  const beside = fileURLToPath(new URL('./assets/', import.meta.url))
  if (existsSync(join(beside, 'index.html'))) return beside
  return fileURLToPath(new URL('../../dist/viewer/assets/', import.meta.url))
}

/** Read the page's files (index.html, the compiled modules, the stylesheet) into a name → file map. */
export function loadAssets(dir: string = defaultAssetsDir()): Map<string, Asset> {
  if (!existsSync(join(dir, 'index.html'))) {
    throw new ConfigError(`the viewer page is not built (no index.html in ${dir}): run npm run build`, { path: 'assetsDir' })
  }
  const assets = new Map<string, Asset>()
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)]
    const file = join(dir, name)
    if (type === undefined || !statSync(file).isFile()) continue
    assets.set(name, { body: readFileSync(file), type })
  }
  return assets
}

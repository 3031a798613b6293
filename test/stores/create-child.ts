// One of several processes creating SQLite stores on new files at the same
// moment: for each `go <path>` line on stdin it makes a store over that file,
// opens and releases one session of its own, closes the store, and reports
// `OK <path>` or `ERR <path> <error name> <code> <message>`.
import { createInterface } from 'node:readline'
import { sqliteStore } from '../../src/stores/index.js'

const [name] = process.argv.slice(2)
const say = (line: string) => process.stdout.write(`${line}\n`)

say('READY')
for await (const line of createInterface({ input: process.stdin })) {
  const path = line.slice('go '.length)
  try {
    const store = sqliteStore({ path })
    const handle = await store.open(`session-${name}`, { holder: name })
    await handle.release()
    await store.close()
    say(`OK ${path}`)
  } catch (error) {
    const { name: kind, code, message } = error as { name?: string; code?: string; message?: string }
    say(`ERR ${path} ${kind} ${code} ${String(message).replaceAll('\n', ' ')}`)
  }
}

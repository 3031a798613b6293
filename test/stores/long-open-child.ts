// One process of the two-process SQLite check. `open`: opens the long stored
// session (its whole log validated, as an open without a checkpoint does) and
// says `opening` before and `opened <length>` after. `live`: drives turns of
// another session on the same file, saying `turn <n>` after each, until told
// `stop` on stdin; it then says `done <turns> <halted error or none>`.
import { createAgent } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { scriptedModel, textResponse } from '../../src/testing/index.js'

const [role, path, sessionId, busyTimeoutMs] = process.argv.slice(2)
const say = (line: string) => process.stdout.write(`${line}\n`)
const store = sqliteStore({ path, busyTimeoutMs: Number(busyTimeoutMs) })

if (role === 'open') {
  say('opening')
  const agent = await createAgent({ model: scriptedModel([]), store, sessionId, validate: 'full', logger: { error: () => {} } })
  say(`opened ${agent.session.length}`)
  await agent.dispose()
} else {
  let stop = false
  process.stdin.setEncoding('utf8')
  process.stdin.on('data', (text: string) => {
    if (text.includes('stop')) stop = true
  })
  const faults: string[] = []
  const agent = await createAgent({
    model: scriptedModel(Array.from({ length: 100_000 }, (_, i) => textResponse(`answer ${i}`))),
    store,
    sessionId,
    // a fault that halts the session is what this process watches for
    logger: { error: (message: string, error: unknown) => faults.push(`${message}: ${String(error)}`) },
  })
  let turns = 0
  while (!stop && agent.session.halted === null) {
    agent.followup(`question ${turns}`)
    await agent.whenIdle()
    turns++
    say(`turn ${turns}`)
  }
  say(`done ${turns} ${agent.session.halted === null ? 'none' : String(agent.session.halted)} ${faults.join(' | ') || 'no-faults'}`)
  await agent.dispose()
  process.stdin.destroy()
}
await store.close()

#!/usr/bin/env node
// The `agentchart` executable (package.json "bin"): see src/cli/main.ts for the commands.
import { runCli } from './main.js'

// a reader that goes away (`agentchart demo | head`) silences the output, not the command: it still
// finishes its turn, closes its log and releases its store lease, without an EPIPE stack trace
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error
    stream.write = () => true
  })
}

const code = await runCli(process.argv.slice(2))
process.exitCode = code
// a finished command does not wait on a connection someone else holds open (a browser on the inspector bridge)
setTimeout(() => process.exit(code), 1000).unref()

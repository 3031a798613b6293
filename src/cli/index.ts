#!/usr/bin/env node
// The `agentchart` executable (package.json "bin"): see src/cli/main.ts for the commands.
import { runCli } from './main.js'

process.exitCode = await runCli(process.argv.slice(2))

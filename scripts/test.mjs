// npm test: the type check and lint run beside the test files (vitest runs at
// least two workers, see vitest.config.ts), so their minute is not added in
// front of the tests. The checks' output is printed after the tests; the exit
// code fails if either part failed.
/* global process, console */
import { spawn } from 'node:child_process'

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const vitestArgs = process.argv.slice(2)

const checks = new Promise((resolve) => {
  const child = spawn(npm, ['run', '--silent', 'check'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  child.on('close', (code) => resolve({ code: code ?? 1, output }))
})
const tests = new Promise((resolve) => {
  const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...vitestArgs], { stdio: 'inherit' })
  child.on('close', (code) => resolve(code ?? 1))
})

const [testCode, check] = await Promise.all([tests, checks])
if (check.output.trim()) process.stdout.write(`\n${check.output.trimEnd()}\n`)
console.log(check.code === 0 ? 'typecheck and lint: clean' : 'typecheck or lint FAILED (output above)')
process.exit(testCode !== 0 ? testCode : check.code)

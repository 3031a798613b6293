// The generated blocks of bench/README.md: each measure rewrites the text between its two markers.
import { readFileSync, writeFileSync } from 'node:fs'

const README = new URL('./README.md', import.meta.url)

/** Replace the block between `<!-- bench:NAME:start -->` and `<!-- bench:NAME:end -->`. */
export function writeBlock(name: string, section: string | null): void {
  if (section === null) return
  const start = `<!-- bench:${name}:start -->`
  const end = `<!-- bench:${name}:end -->`
  const text = readFileSync(README, 'utf8')
  const from = text.indexOf(start)
  const to = text.indexOf(end)
  if (from < 0 || to < from) {
    console.log(`bench/README.md has no ${start} … ${end} markers; not updated`)
    return
  }
  writeFileSync(README, `${text.slice(0, from + start.length)}\n${section}\n${text.slice(to)}`)
}

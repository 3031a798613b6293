// After tsc: make the emitted declarations readable by every zod the package
// accepts as its peer. zod 4 declares ZodDiscriminatedUnion<Options, Disc = string>,
// the zod/v4 of zod 3.25 only ZodDiscriminatedUnion<Options>; tsc writes the
// discriminator out, which zod 3.25 users with skipLibCheck off see as an error.
// Dropping that last argument keeps the types the same under zod 4 (its default).
// Usage: node scripts/compat-dts.mjs [dir]   (default dist)
/* global process, console */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const NAME = 'ZodDiscriminatedUnion<'

/** The text with the last type argument of every ZodDiscriminatedUnion<…> removed. */
export function dropDiscriminator(text) {
  let out = ''
  let from = 0
  for (;;) {
    const at = text.indexOf(NAME, from)
    if (at < 0) return out + text.slice(from)
    const open = at + NAME.length
    let depth = 1
    let lastComma = -1
    let k = open
    for (; k < text.length && depth > 0; k++) {
      const c = text[k]
      if (c === '<' || c === '[' || c === '(' || c === '{') depth++
      else if (c === '>' || c === ']' || c === ')' || c === '}') {
        if (c === '>' && text[k - 1] === '=') continue // an arrow in a function type
        depth--
      } else if (c === ',' && depth === 1) lastComma = k
    }
    const close = k - 1
    // keep nested occurrences rewritten too: recurse into the first argument
    const args = lastComma < 0 ? text.slice(open, close) : text.slice(open, lastComma)
    out += text.slice(from, open) + dropDiscriminator(args) + '>'
    from = close + 1
  }
}

function* declarations(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* declarations(path)
    else if (entry.name.endsWith('.d.ts')) yield path
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const dir = process.argv[2] ?? 'dist'
  let changed = 0
  for (const file of declarations(dir)) {
    const text = readFileSync(file, 'utf8')
    if (!text.includes(NAME)) continue
    const next = dropDiscriminator(text)
    if (next !== text) {
      writeFileSync(file, next)
      changed++
    }
  }
  console.log(`compat-dts: ${changed} declaration files made readable by zod 3.25's zod/v4`)
}

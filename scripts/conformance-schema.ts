// Writes docs/conformance/scenario.schema.json from the zod schema of the
// scenario format: `npm run conformance:schema` (test/conformance/reference.test.ts checks it is current).
import { writeFileSync } from 'node:fs'
import { scenarioJsonSchema } from '../src/testing/conformance/format.js'

const path = new URL('../docs/conformance/scenario.schema.json', import.meta.url)
writeFileSync(path, `${JSON.stringify(scenarioJsonSchema(), null, 2)}\n`)
console.log(`wrote ${path.pathname}`)

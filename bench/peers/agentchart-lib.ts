// Which agentchart the bench measures. `npm run bench` builds the package and
// sets BENCH_SOURCE=dist, so the numbers are those of what users install;
// without it (a loop run by hand for an A/B while developing) the sources run
// through tsx, which costs about 5-7% more per turn (bench/README.md).
import type * as Library from '../../src/index.js'
import type * as Assemble from '../../src/adapters/assemble.js'
import type * as Testing from '../../src/testing/index.js'
import type * as Stores from '../../src/service/index.js'

export type BenchSource = 'dist' | 'src'

/** `dist` (the built package) or `src` (the sources through tsx). */
export const SOURCE: BenchSource = process.env.BENCH_SOURCE === 'dist' ? 'dist' : 'src'

const root = new URL(SOURCE === 'dist' ? '../../dist/' : '../../src/', import.meta.url)
const file = (path: string) => new URL(SOURCE === 'dist' ? `${path}.js` : `${path}.ts`, root).href

/** The public API, from the chosen build. */
export const lib = (await import(file('index'))) as typeof Library
/** The stream assembler the in-process chunk floor uses. */
export const assemble = (await import(file('adapters/assemble'))) as typeof Assemble
/** agentchart/testing (response helpers). */
export const testing = (await import(file('testing/index'))) as typeof Testing
/** agentchart/stores (the memory and SQLite stores the growth measure opens sessions on). */
export const stores = (await import(file('service/index'))) as typeof Stores

// npm run test:mutants: the conformance suite against every mutant of the
// independent loop; prints the survivors and `N of M mutants caught`, and
// fails when any survives. `--verbose` also says which scenario caught each;
// further arguments name the mutants to run.
import { readSuite } from '../src/testing/index.js'
import { formatMutationReport, runMutants } from '../test/conformance/mutation.js'
import { sharedSuite } from '../test/conformance/shared-suite.js'

const args = process.argv.slice(2)
const verbose = args.includes('--verbose')
const only = args.filter((a) => !a.startsWith('--'))
const suite = await readSuite(await sharedSuite())
const report = await runMutants(suite.scenarios, only.length > 0 ? { only } : {})
for (const line of formatMutationReport(report, verbose)) console.log(line)
process.exitCode = report.survivors.length > 0 ? 1 : 0

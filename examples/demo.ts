// The demo agent (also `agentchart demo [prompt]`): a scripted model (no network
// needed) asks for a tool, reads its result from the request, and answers in a
// second step of the same turn. The agent itself lives in src/cli/demo.ts.
import { runDemo } from '../src/cli/demo.js'

const tree = await runDemo(process.argv[2], { onStatus: (status) => console.log(`[status] ${status}`) })
console.log(tree)

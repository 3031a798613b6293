// An example conformance driver: agentchart itself. A driver is any module
// whose default export (or `driver`) has `name` and `run(scenario)`: run
// creates an agent from `scenario.setup`, performs `scenario.inputs` in order
// (letting the agent settle after each), and resolves to the whole session
// log. docs/conformance.md specifies every input; the reference driver this
// re-exports is readable in dist/testing/conformance/reference-driver.js, and
// test/conformance/independent/driver.ts drives a loop that is not agentchart.
//
//   npx agentchart conformance run suite/ --driver examples/conformance-driver.mjs
import { createAgentchartDriver } from 'agentchart/testing'

export default createAgentchartDriver()

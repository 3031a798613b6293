// An example conformance driver: agentchart itself. A driver is any module
// whose default export (or `driver`) has `name` and `run(scenario)`, where
// run performs the scenario's inputs in order and resolves to the session
// log the implementation wrote. For an implementation in another language,
// run() would start it (a subprocess, an HTTP call), feed it the inputs,
// and return its log as JSON.
import { createAgentchartDriver } from 'agentchart/testing'

export default createAgentchartDriver()

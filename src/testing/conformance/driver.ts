// The contract between a conformance run and an implementation of the loop.
import type { LoggedEvent } from './compare.js'
import type { Scenario } from './format.js'

/**
 * What a conformance run needs from an implementation (docs/conformance.md, "Drivers").
 * `run` creates an agent from `scenario.setup`, performs `scenario.inputs` in order (letting the agent run until
 * it waits for the next input or rests after each one), and resolves to the whole log of the session it drives
 * last: after an accepted `fork` or a `resume` (format 5) the inputs go to the agent over the fork or the restart.
 * It rejects when an input cannot be performed (e.g. no listener is waiting for a hook decision): that scenario fails.
 */
export interface ConformanceDriver {
  readonly name: string
  run(scenario: Scenario): Promise<ReadonlyArray<LoggedEvent>>
}

// The session invariant checker lives with the session (the core refuses
// seeds with it); agentchart/testing keeps offering it under this path.
export { checkSessionInvariants, seedViolations, SEED_RULES } from '../session/invariants.js'
export type { SessionInvariantViolation, SessionInvariantRule, CheckSessionInvariantsOptions } from '../session/invariants.js'

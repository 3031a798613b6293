// Transition coverage of the generated paths, per machine, with the reason
// for every transition a walk cannot take.
import type { Exploration } from './explore.js'

/** Transitions no walk of that machine can take, and why. Matched by the end of the transition key. */
export const UNREACHABLE: ReadonlyArray<{ machines: readonly string[]; suffix: string; reason: string }> = [
  {
    machines: ['agent'],
    suffix: 'agent.resuming##0',
    reason: 'walks start from a fresh log; repairing a crash-truncated log is exercised by the RS-4..RS-7 behaviour tests',
  },
  {
    machines: ['agent'],
    suffix: 'agent.repairing#sync#0',
    reason: 'walks start from a fresh log; repairing a crash-truncated log is exercised by the RS-4..RS-7 behaviour tests',
  },
  {
    machines: ['agent'],
    suffix: 'agent.repairing#fault#0',
    reason: 'a store failure while repairing can only be armed before the agent exists (walks arm failures after it starts)',
  },
  {
    machines: ['agent', 'turn'],
    suffix: 'turn.proposing#hook.done#0',
    reason: 'ST-4 re-check: agent/pre-step is raced with the turn signal, so after a cancel it settles as hook.aborted first',
  },
  {
    machines: ['agent', 'turn', 'step', 'attempt'],
    suffix: 'requesting.building#request.prepared#0',
    reason: 'cancel re-check: agent/request is raced with the turn signal, so after a cancel it settles as hook.aborted first',
  },
  {
    machines: ['attempt'],
    suffix: 'attempt.building#request.prepared#0',
    reason: 'cancel re-check: agent/request is raced with the turn signal, so after a cancel it settles as hook.aborted first',
  },
  {
    machines: ['agent', 'turn', 'step', 'attempt'],
    suffix: 'recovering#hook.done#0',
    reason: 'RQ-12 re-check: agent/request-error is raced with the turn signal, so after a cancel it settles as hook.aborted first',
  },
  {
    machines: ['agent', 'turn'],
    suffix: 'turn.stopping#hook.done#0',
    reason: 'cancel re-check: agent/turn-stopping is raced with the turn signal, so after a cancel it settles as hook.aborted first',
  },
  {
    machines: ['turn'],
    suffix: 'turn.opening#fault#0',
    reason: 'the standalone turn appends turn/start as it starts, before any input can arm a failure (the agent walk takes it)',
  },
  {
    machines: ['step'],
    suffix: 'step.opening#sync#0',
    reason: 'the standalone step appends step/start as it starts, before any input can arm a cancel (the agent walk takes it)',
  },
  {
    machines: ['step'],
    suffix: 'step.opening#fault#0',
    reason: 'the standalone step appends step/start as it starts, before any input can arm a failure (the agent walk takes it)',
  },
  {
    machines: ['step'],
    suffix: 'step.opening#fault#1',
    reason: 'the standalone step appends its messages as it starts, before any input can arm a failure (the agent walk takes it)',
  },
]

export interface CoverageReport {
  machine: string
  total: number
  covered: number
  /** Transitions not taken, with the listed reason or null when none is listed. */
  missing: Array<{ key: string; reason: string | null }>
}

/** What the walk of one machine covered, and why the rest is not. */
export function coverageOf(exploration: Exploration): CoverageReport {
  const missing = [...exploration.transitions.keys()]
    .filter((key) => !exploration.covered.has(key))
    .map((key) => ({
      key,
      reason: UNREACHABLE.find((u) => u.machines.includes(exploration.machine) && key.endsWith(u.suffix))?.reason ?? null,
    }))
  return { machine: exploration.machine, total: exploration.transitions.size, covered: exploration.transitions.size - missing.length, missing }
}

/** One printable line per machine, then one per missing transition. */
export function formatCoverage(reports: readonly CoverageReport[]): string {
  const lines: string[] = []
  for (const r of reports) {
    const pct = ((100 * r.covered) / r.total).toFixed(1)
    const explained = r.missing.filter((m) => m.reason).length
    lines.push(`${r.machine.padEnd(10)} ${String(r.covered).padStart(4)}/${r.total} transitions (${pct}%)${explained ? `, ${explained} unreachable with a listed reason` : ''}`)
    for (const m of r.missing) lines.push(`  - ${m.key}: ${m.reason ?? 'NOT COVERED and no reason listed'}`)
  }
  return lines.join('\n')
}

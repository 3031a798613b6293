// Transition coverage of the generated paths, per machine, with the reason
// for every transition a walk cannot take.
import type { Exploration } from './explore.js'

const FAILED_ESTIMATE =
  'a token estimate that fails (CP-7) comes from compaction.estimateTokens, which is code, not data a scenario can carry; the walk measures with the default estimate (test/behaviours/compaction.test.ts covers it in all three hosts)'

/**
 * Transitions no walk of that machine can take, and why. Matched by the end of the transition key.
 * Every other transition of every machine is taken by some walk.
 */
export const UNREACHABLE: ReadonlyArray<{ machines: readonly string[]; suffix: string; reason: string }> = [
  {
    machines: ['agent'],
    suffix: 'agent.running.turn.proposing##0',
    reason:
      'an empty claim with nobody to decide at agent/pre-step: in the agent the claim follows the waking send or a non-empty inbox in the same macrostep, so it is never empty (the turn walk covers it over an empty inbox)',
  },
  {
    machines: ['agent', 'turn'],
    suffix: 'turn.proposing#hook.done#0',
    reason:
      'prompt assembly (HK-12) runs only when createAgent is given a systemPrompt or tools function or a system-prompt/assemble listener, whose answers are code, not data a scenario can carry; the walk keeps the fixed prompt and tools (test/behaviours/extension-points.test.ts covers assembly)',
  },
  // CP-7: the failed measure and each host's way out of it
  ...[
    { machines: ['agent', 'turn', 'step', 'attempt'], suffix: 'compacting.measuring#compaction.failed#0' },
    { machines: ['agent', 'turn'], suffix: 'turn.compacting#1' },
    { machines: ['agent', 'turn', 'step', 'attempt'], suffix: 'attempt.compacting#1' },
    { machines: ['agent'], suffix: 'agent.compacting#0' },
  ].map((entry) => ({ ...entry, reason: FAILED_ESTIMATE })),
  {
    machines: ['agent'],
    suffix: 'agent.maintenance#append.failed#0',
    reason:
      'a job that never starts because the store failed before it: the walk models refused appends, not a failed store (test/stores/durability.test.ts covers it)',
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
    lines.push(
      `${r.machine.padEnd(10)} ${String(r.covered).padStart(4)}/${r.total} transitions (${pct}%)${explained ? `, ${explained} unreachable with a listed reason` : ''}`,
    )
    for (const m of r.missing) lines.push(`  - ${m.key}: ${m.reason ?? 'NOT COVERED and no reason listed'}`)
  }
  return lines.join('\n')
}

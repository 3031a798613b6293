// What a compaction summary looks like on the surface: its source and its
// text. Plain values with no imports, shared by the machines (which log it)
// and the planner (which recognizes an earlier summary).

/** The source of a compaction summary message; a range that holds only such a message has nothing left to compact. */
export const SUMMARY_SOURCE = Object.freeze({ kind: 'plugin' as const, plugin: 'compaction' })

/** The text a summary message carries: a marker line, then the summary. */
export function summaryText(summary: string): string {
  return `[Summary of the earlier conversation, compacted to fit the context window]\n\n${summary}`
}

// Searches over sorted number lists, shared by the indexes that keep seqs or positions in rising order.

/** How many items of the rising list `sorted` are below `value` (the index `value` would be inserted at). */
export function countBelow(sorted: readonly number[], value: number): number {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (sorted[mid] < value) low = mid + 1
    else high = mid
  }
  return low
}

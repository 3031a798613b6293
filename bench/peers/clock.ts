// What the benchmark times with. On a shared machine wall time mostly measures
// the neighbours, so turns are timed by the main thread's own time on a CPU
// (Linux schedstat, nanoseconds), which equals wall time for this
// single-threaded, zero-latency work on a quiet machine; wall time is kept
// beside it. Elsewhere, process CPU time stands in (all threads, so V8's
// helper threads count too).
import { closeSync, openSync, readSync } from 'node:fs'
import { performance } from 'node:perf_hooks'

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`
const buffer = Buffer.alloc(128)

function openSchedstat(): number | null {
  try {
    const fd = openSync(SCHEDSTAT, 'r')
    if (readSync(fd, buffer, 0, buffer.length, 0) > 0) return fd
    closeSync(fd)
  } catch {
    // not Linux, or no schedstat: fall back below
  }
  return null
}

const fd = openSchedstat()

/** How `cpuUs` is measured, for the results. */
export const CPU_CLOCK = fd === null ? 'process CPU time (process.cpuUsage, all threads)' : 'main-thread time on a CPU (/proc/self/task/<pid>/schedstat)'

/** Microseconds the main thread has spent on a CPU (or the process, where schedstat is missing). */
export function cpuUs(): number {
  if (fd === null) {
    const usage = process.cpuUsage()
    return usage.user + usage.system
  }
  const n = readSync(fd, buffer, 0, buffer.length, 0)
  const text = buffer.toString('latin1', 0, n)
  return Number(text.slice(0, text.indexOf(' '))) / 1000
}

export function wallUs(): number {
  return performance.now() * 1000
}

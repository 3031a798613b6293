import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    // at least two workers: on a two-core machine the model walk alone is a minute and a half, and the
    // other files fit beside it (vitest's default, one fewer than the cores, would run them after it)
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // worker threads, not child processes: each file still gets its own module graph, for about 15% less CPU
    // (no process to start per worker, a lighter import); nothing here needs a process of its own
    pool: 'threads',
  },
})

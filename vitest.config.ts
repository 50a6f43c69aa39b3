import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Each test file gets its own database cloned from a migrated template, so files run in parallel.
    fileParallelism: true,
    // Most test time is spent waiting on the simulated upstream's budget and on engine processes, not on
    // the CPU: three files at once on two cores take 5 minutes where vitest's default (cores - 1) takes 12.
    // VITEST_MAX_WORKERS overrides it.
    maxWorkers: 3,
  },
})

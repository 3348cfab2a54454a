import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    // Integration tests spawn their own redis-server processes; two cores, so keep the pool small.
    // Stops the run at once, with one message, when redis-server, openssl or Chromium is missing.
    globalSetup: ['./test/support/prerequisites.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
    // Hundreds of workers start in the tests; their start-up info lines would bury the output.
    // Warnings and errors still print.
    env: { DELAYQ_LOG_LEVEL: 'warn' },
  },
});

import { defineConfig } from 'vitest/config';

// Three layers (README "The two commands"): pure unit tests, tests against real OpenSSH servers,
// and end-to-end tests in the lab. The lab layer shares one lab and runs its files one at a time.
// Every layer runs the TypeScript sources: a process the tests start through bin/bootstrap.js inherits this,
// so it never runs the bundle of dist/ (scripts/build.mjs), which test/unit/startup.test.ts checks instead.
const env = { BOOTSTRAP_FROM_SOURCE: '1' };

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          env,
          include: ['test/unit/**/*.test.ts'],
          globalSetup: ['test/support/scratch.ts'],
          // This layer runs at a lower priority beside two labs in CI (scripts/test.mjs): vitest's 5 s default
          // measured the neighbours (a real chart's render, a streamed upload ran out of it there). A test
          // whose speed is its claim states its own budget.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'ssh',
          env,
          include: ['test/ssh/**/*.test.ts'],
          globalSetup: ['test/support/scratch.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'lab',
          env,
          include: ['test/lab/**/*.test.ts'],
          // takes the shared lab down when the lab tests are done, then removes the run's temporary folder
          // (teardowns run in the reverse order)
          globalSetup: ['test/support/scratch.ts', 'test/support/lab.ts'],
          fileParallelism: false,
          testTimeout: 600_000,
          hookTimeout: 900_000,
        },
      },
    ],
  },
});

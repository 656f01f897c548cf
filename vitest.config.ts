import { defineConfig } from 'vitest/config';

// Three layers (README "The two commands"): pure unit tests, tests against real OpenSSH servers,
// and end-to-end tests in the lab. The lab layer shares one lab and runs its files one at a time.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'ssh',
          include: ['test/ssh/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'lab',
          include: ['test/lab/**/*.test.ts'],
          // takes the shared lab down when the lab tests are done
          globalSetup: ['test/support/lab.ts'],
          fileParallelism: false,
          testTimeout: 600_000,
          hookTimeout: 900_000,
        },
      },
    ],
  },
});

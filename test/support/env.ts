// Tests that need root (real sshd with users, the lab) must RUN in CI: there, a missing
// precondition fails the test instead of skipping it. Outside CI they are skipped with the reason.
import { describe } from 'vitest';

const inCI = process.env.CI === 'true' || process.env.CI === '1';
export const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** `describe` for a suite that needs root: runs as root, fails in CI without it, skips elsewhere. */
export function describeAsRoot(name: string, fn: () => void): void {
  if (isRoot) {
    describe(name, fn);
  } else if (inCI) {
    describe(name, () => {
      throw new Error(`${name}: needs root, and CI must run it (run .ci/run as root)`);
    });
  } else {
    describe.skip(`${name} (needs root)`, fn);
  }
}

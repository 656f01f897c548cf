// Debian's headless Chromium for the tests that check what a page draws (scripts/debian-packages.mjs
// installs it). In CI a missing browser fails the suite instead of skipping it, like test/support/env.ts.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'vitest';

const inCI = process.env.CI === 'true' || process.env.CI === '1';
const BINARY = ['chromium', 'chromium-browser'].find((b) => spawnSync(b, ['--version'], { stdio: 'ignore', timeout: 10_000 }).status === 0);

/** `describe` for a suite that needs Chromium: runs with it, fails in CI without it, skips elsewhere. */
export function describeWithChromium(name: string, fn: () => void): void {
  if (BINARY) describe(name, fn);
  else if (inCI)
    describe(name, () => {
      throw new Error(`${name}: needs Debian's chromium, and CI must run it (apt-get install chromium; scripts/debian-packages.mjs)`);
    });
  else describe.skip(`${name} (needs chromium)`, fn);
}

/**
 * Runs headless Chromium once with `args` (e.g. --dump-dom URL) in a profile of its own and returns its
 * stdout. Its whole process group is killed at `timeoutMs`: the browser's helpers must not outlive a test.
 */
export function chromium(args: string[], timeoutMs: number): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'bootstrap-chromium-'));
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  const child = spawn(
    BINARY!,
    ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', `--user-data-dir=${profile}`, ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      reject(new Error(`chromium did not finish within ${timeoutMs} ms: ${err.slice(-2000)}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      rmSync(profile, { recursive: true, force: true });
      if (code === 0) resolve(out);
      else reject(new Error(`chromium exited ${code}: ${err.slice(-2000)}`));
    });
  });
}

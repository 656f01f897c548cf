// One lab per machine (per instance): up, down and wipe take this lock, so test workers (or two
// operators) calling `lab up` at once do not tear down each other's half-built lab. Tests that break
// hosts on purpose hold it while a host is broken, so a concurrent ensureLab() waits for the heal
// instead of seeing an unhealthy lab and rebuilding it.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { paths } from './config.ts';
import { alive } from './processes.ts';
import { sleep } from './run.ts';

const lockDir = () => join(paths.stateDir, 'lock');

function holder(): number {
  try {
    return Number(readFileSync(join(lockDir(), 'pid'), 'utf8'));
  } catch {
    return NaN; // being written or removed
  }
}

/** Takes the lab lock (waiting for it); returns the release function. Already held by this process: a no-op release. */
export async function acquireLabLock(timeoutMs = 15 * 60_000): Promise<() => void> {
  mkdirSync(paths.stateDir, { recursive: true, mode: 0o700 });
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(lockDir());
      writeFileSync(join(lockDir(), 'pid'), String(process.pid));
      return () => rmSync(lockDir(), { recursive: true, force: true });
    } catch {
      const pid = holder();
      // NOTE: nested use in one process (a test holding the lock calls wipe) is allowed, not re-locked.
      if (pid === process.pid) return () => {};
      // A holder that died (killed `lab up`) does not keep the lab locked.
      if (Number.isInteger(pid) && pid > 0 && !alive(pid)) rmSync(lockDir(), { recursive: true, force: true });
      if (Date.now() > end) throw new Error(`the lab is locked by pid ${pid} (${lockDir()})`);
      await sleep(200);
    }
  }
}

export async function withLabLock<T>(fn: () => Promise<T>, timeoutMs?: number): Promise<T> {
  const release = await acquireLabLock(timeoutMs);
  try {
    return await fn();
  } finally {
    release();
  }
}

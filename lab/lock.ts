// One lab per machine: up, down and wipe take this lock, so test workers (or two operators) calling
// `lab up` at once do not tear down each other's half-built lab.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { paths } from './config.ts';
import { sleep } from './run.ts';

const lockDir = () => join(paths.stateDir, 'lock');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function withLabLock<T>(fn: () => Promise<T>, timeoutMs = 15 * 60_000): Promise<T> {
  mkdirSync(paths.stateDir, { recursive: true, mode: 0o700 });
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(lockDir());
      writeFileSync(join(lockDir(), 'pid'), String(process.pid));
      break;
    } catch {
      let holder = NaN;
      try {
        holder = Number(readFileSync(join(lockDir(), 'pid'), 'utf8'));
      } catch {
        /* being written or removed */
      }
      // A holder that died (killed `lab up`) does not keep the lab locked.
      if (Number.isInteger(holder) && holder > 0 && !alive(holder)) rmSync(lockDir(), { recursive: true, force: true });
      if (Date.now() > end) throw new Error(`the lab is locked by pid ${holder} (${lockDir()})`);
      await sleep(200);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lockDir(), { recursive: true, force: true });
  }
}

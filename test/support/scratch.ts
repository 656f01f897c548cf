// vitest globalSetup of every layer: the run's temporary files (state folders, keys, kubeconfigs, inventories
// the tests and the processes they start write under the system's temporary folder) go to one folder of
// the run's own, removed when the run ends, so a run leaves nothing behind, passed or failed. The test
// workers and every process they start inherit TMPDIR, which os.tmpdir() reads on each call.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'bootstrap-tests-'));
  // The system's temporary folder's mode (1777: every user writes, each removes only their own): the OpenSSH tests'
  // users read their authorized_keys below it (test/support/sshd.ts), and a process a test starts as another
  // user writes its own temporary files there (tsx's cache, test/lab/lab-down.test.ts as nobody).
  chmodSync(dir, 0o1777);
  const before = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    rmSync(dir, { recursive: true, force: true });
  };
}

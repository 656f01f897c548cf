// vitest globalSetup of every layer: the run's temporary files (state folders, keys, kubeconfigs, inventories
// the tests and the processes they start write under the system's temporary folder) go to one folder of
// the run's own, removed when the run ends, so a run leaves nothing behind, passed or failed. The test
// workers and every process they start inherit TMPDIR, which os.tmpdir() reads on each call.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'bootstrap-tests-'));
  // Traversable by every user, as the system's temporary folder is: the OpenSSH tests' test users read their
  // authorized_keys in a folder below it (test/support/sshd.ts). Not listable: each test's files keep their own modes.
  chmodSync(dir, 0o711);
  const before = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    rmSync(dir, { recursive: true, force: true });
  };
}

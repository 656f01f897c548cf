// `bootstrap backup` streams the snapshot to disk: backing up a 1 GiB snapshot from a real sshd keeps the
// engine's peak RSS under 200 MB (issue 12; the measurement is test/support/backup-memory.ts, which
// `npm run bench` prints as well). A copy through one string would need over 1 GiB, and crash past V8's
// string limit.
import { expect, it } from 'vitest';
import { measureBackupMemory, RSS_TARGET_MB, SNAPSHOT_BYTES } from '../support/backup-memory.ts';
import { describeAsRoot } from '../support/env.ts';

describeAsRoot('the backup memory bound', () => {
  it(`backs up a 1 GiB snapshot over SSH with a peak RSS under ${RSS_TARGET_MB} MB`, { timeout: 300_000 }, async () => {
    const r = await measureBackupMemory('127.0.0.62');
    expect(r.bytes).toBe(SNAPSHOT_BYTES);
    expect(r.maxRssMB, `peak RSS ${r.maxRssMB.toFixed(0)} MB while copying 1 GiB in ${(r.ms / 1000).toFixed(1)} s`).toBeLessThan(RSS_TARGET_MB);
  });
});

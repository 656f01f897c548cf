// Before a restore touches any host (check mode too): the backup must have its token, its snapshot must
// be the one its manifest names, the inventory's k3s must not be older than the snapshot's, and the
// environment's state folder must not hold another cluster's token.
import { checkBackup } from '../../src/backup/checks.ts';
import { type Backup, fileSha256, readBackupToken } from '../../src/backup/store.ts';
import type { Phase } from '../../src/engine/phase.ts';
import { readToken } from './token.ts';

export function restorePrepare(backup: Backup): NonNullable<Phase['prepare']> {
  return async (ctx) => {
    const token = readBackupToken(backup);
    for (const t of [token?.secret, token?.full]) if (t) ctx.redact(t);
    const stops = checkBackup({
      backup,
      token,
      snapshotSha256: await fileSha256(backup.snapshot),
      inventoryVersion: ctx.inventory.inventory.k3s.version,
      envToken: readToken(ctx.stateDir),
    });
    return { stops };
  };
}

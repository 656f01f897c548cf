// Before a restore touches any host (check mode too): the backup must have its token, its snapshot must
// be the one its manifest names, the inventory's k3s must not be older than the snapshot's, and the
// environment's state folder must not hold another cluster's token.
import { checkBackup } from '../../src/backup/checks.ts';
import { type Backup, fileSha256, readBackupToken } from '../../src/backup/store.ts';
import type { Phase } from '../../src/engine/phase.ts';
import { CauseError } from '../../src/errors.ts';
import { checkTokenForm, readToken } from '../../src/k3s/token.ts';

export function restorePrepare(backup: Backup): NonNullable<Phase['prepare']> {
  return async (ctx) => {
    const token = readBackupToken(backup);
    for (const t of [token?.secret, token?.full]) if (t) ctx.redact(t);
    // A token k3s would refuse (TOKEN_MALFORMED), the backup's or the state folder's, stops here.
    const malformed: CauseError[] = [];
    const formOf = <T>(f: () => T): T | undefined => {
      try {
        return f();
      } catch (e) {
        if (!(e instanceof CauseError)) throw e;
        malformed.push(e);
        return undefined;
      }
    };
    if (token) formOf(() => checkTokenForm(token, `${backup.dir}/cluster-token.json`));
    const envToken = formOf(() => readToken(ctx.stateDir));
    if (malformed.length) return { stops: malformed };
    const stops = checkBackup({
      backup,
      token,
      snapshotSha256: await fileSha256(backup.snapshot),
      inventoryVersion: ctx.inventory.inventory.k3s.version,
      envToken,
    });
    return { stops };
  };
}

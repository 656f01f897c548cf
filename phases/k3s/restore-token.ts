// The token a restored founder's config carries: the backup's (the restored datastore's bootstrap data is
// encrypted with it), and the environment's state folder gets it (restore-prepare.ts refused a state folder
// holding another one): the config step's plan writes it there first (a local change). Check mode writes
// nothing.
import type { Backup } from '../../src/backup/store.ts';
import { readBackupToken } from '../../src/backup/store.ts';
import type { TokenSource } from './install-steps.ts';
import { readToken } from '../../src/k3s/token.ts';

export function backupToken(backup: Backup): TokenSource {
  return (_host, ctx) => {
    const token = readBackupToken(backup)!;
    for (const t of [token.secret, token.full]) if (t) ctx.redact(t);
    return readToken(ctx.stateDir) ? token.secret : { secret: token.secret, save: token };
  };
}

// RESTORE_INCOMPLETE: once the restoring server serves, its API objects must include every object of the
// backup's inventory (kind/namespace/name), except the node-password Secrets the restore deletes. A restore
// that "worked" but lost objects is not a restore.
import { CauseError } from '../../src/errors.ts';
import type { Gate } from '../../src/engine/phase.ts';
import { missingObjects, objectKeys } from '../../src/backup/objects.ts';
import { LISTING_SHOWN, listObjectsThrough } from '../../src/backup/list-through.ts';
import type { Backup } from '../../src/backup/store.ts';
import { poll } from '../../src/engine/poll.ts';
import { isNodePasswordObject } from './restore-passwords.ts';
import { lastLines } from '../../src/util/text.ts';

const SHOWN = 30;
/** The same objects missing in this many listings in a row (3 s apart) is the answer: no need to sit out the budget. */
const STABLE_LISTINGS = 4;

export function restoreComplete(backup: Backup): Gate {
  return {
    id: 'restore-complete',
    title: `every object of backup ${backup.manifest.id} is back (${backup.manifest.objects.length} objects)`,
    budgetMs: 120_000,
    async run(host, ctx, signal) {
      // The node-password Secrets are deleted by the restore on purpose (restore-passwords.ts).
      const expected = backup.manifest.objects.filter((k) => !isNodePasswordObject(k));
      let missing: string[] = expected;
      let failure = '';
      let listed = false;
      let stable = 0;
      // The API may still be registering its types after /readyz: look again, until the same objects are
      // missing in STABLE_LISTINGS listings in a row or the budget ends.
      const seen = await poll(ctx, signal, {
        everyMs: 3_000,
        look: async () => {
          // The gate's own signal: a listing still running at the budget's end is cut, and the cause is named.
          const res = await listObjectsThrough(ctx, host, { signal, timeoutMs: 60_000 }).catch(() => undefined);
          if (res?.code === 0) {
            const now = missingObjects(expected, objectKeys(res.stdout));
            if (!now.length) return 'complete';
            stable = listed && now.join() === missing.join() ? stable + 1 : 1;
            missing = now;
            listed = true;
            if (stable >= STABLE_LISTINGS) return 'settled';
          } else {
            failure = res ? lastLines((res.stderr || res.stdout).trim(), 3) : 'no answer';
          }
          return undefined;
        },
      });
      if (seen === 'complete') return;
      throw new CauseError('RESTORE_INCOMPLETE', {
        host: host.name,
        message: listed
          ? `${missing.length} of the backup's ${backup.manifest.objects.length} objects are missing after the restore`
          : `the API objects could not be listed to compare them with the backup's ${backup.manifest.objects.length}`,
        evidence: {
          command: LISTING_SHOWN,
          seen: `${missing.length} missing: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}`,
          excerpt:
            missing.slice(0, SHOWN).join('\n') +
            (missing.length > SHOWN ? `\n… and ${missing.length - SHOWN} more` : '') +
            (failure ? `\nlast listing error: ${failure}` : ''),
        },
      });
    },
  };
}

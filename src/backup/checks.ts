// What must hold of a backup before a restore touches any host: its token is there, its snapshot is the
// one the manifest names, the inventory's k3s is not older than the snapshot's, and the environment's
// state folder holds no OTHER token (the restored cluster keeps the backup's: decided in dr-restore.md).
// Pure: the caller reads the files and hashes the snapshot.
import { CauseError } from '../errors.ts';
import type { ClusterToken } from '../k3s/cluster-token.ts';
import type { Backup } from './store.ts';
import { compareK3sVersions } from './version.ts';

export interface BackupSeen {
  backup: Backup;
  token: ClusterToken | undefined;
  /** sha256 of the snapshot file, undefined when it is absent. */
  snapshotSha256: string | undefined;
  /** The inventory's k3s.version. */
  inventoryVersion: string;
  /** The token in the environment's state folder, if any. */
  envToken: ClusterToken | undefined;
}

export function checkBackup(seen: BackupSeen): CauseError[] {
  const { backup, token } = seen;
  const stops: CauseError[] = [];
  if (!token) {
    stops.push(new CauseError('BACKUP_TOKEN_MISSING', { evidence: { command: `ls -l ${backup.dir}`, seen: `no cluster token in ${backup.tokenFile}` } }));
  }
  if (seen.snapshotSha256 !== backup.manifest.sha256) {
    stops.push(
      new CauseError('SNAPSHOT_CHECKSUM_MISMATCH', {
        evidence: {
          command: `sha256sum ${backup.snapshot}`,
          seen: seen.snapshotSha256 ? `sha256 ${seen.snapshotSha256}, the manifest records ${backup.manifest.sha256}` : 'the snapshot file is missing',
        },
      }),
    );
  }
  if (compareK3sVersions(backup.manifest.k3sVersion, seen.inventoryVersion) > 0) {
    stops.push(
      new CauseError('SNAPSHOT_VERSION_NEWER', {
        evidence: { seen: `the snapshot was taken with k3s ${backup.manifest.k3sVersion}; the inventory installs ${seen.inventoryVersion}` },
      }),
    );
  }
  if (token && seen.envToken && seen.envToken.secret !== token.secret) {
    stops.push(
      new CauseError('RESTORE_TOKEN_CONFLICT', {
        evidence: { command: `cmp cluster-token.json ${backup.tokenFile}`, seen: "the state folder's cluster token is not the backup's" },
      }),
    );
  }
  return stops;
}

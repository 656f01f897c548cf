import { defineCauses } from './define.ts';

// bootstrap backup and bootstrap <env> --restore (src/backup/*, phases/backup.ts, phases/k3s/restore-*.ts).
export const backupCauses = defineCauses({
  BACKUP_NOT_FOUND: {
    title: 'The backup named for the restore does not exist or has no manifest',
    meaning:
      "The argument of --restore is neither a backup folder holding manifest.json nor the id of a backup in the environment's backup folder. Nothing was touched.",
    remedy: 'List the backups with `bootstrap backup <env> --list` and pass an id from it, or the path of a backup folder.',
  },
  BACKUP_TOKEN_MISSING: {
    title: 'The backup has no cluster token',
    meaning:
      "A snapshot can only be restored with the token of the cluster it was taken from (the token encrypts k3s's bootstrap data). This backup's cluster-token.json is missing or empty. Nothing was touched.",
    remedy:
      "Put the original token beside the snapshot (cluster-token.json from the environment's state folder of the run that built the cluster), or restore another backup.",
  },
  SNAPSHOT_CHECKSUM_MISMATCH: {
    title: "The snapshot's sha256 is not the one its manifest records",
    meaning:
      'The snapshot file was changed or truncated since the backup was taken (or is missing). Restoring it could lose data or fail half-way. Nothing was touched.',
    remedy: 'Restore another backup (bootstrap backup <env> --list); compare with `sha256sum snapshot` against manifest.json by hand.',
  },
  SNAPSHOT_VERSION_NEWER: {
    title: 'The snapshot was taken with a newer k3s than the inventory installs',
    meaning: 'Restoring a datastore written by a newer Kubernetes into an older one is not supported upstream. Nothing was touched.',
    remedy: "Set k3s.version in the inventory (and its artifacts) to at least the backup's version (manifest.json k3sVersion), then restore.",
  },
  RESTORE_TOKEN_CONFLICT: {
    title: "The environment's state folder holds another cluster token than the backup",
    meaning:
      "The restored cluster keeps the backup's token; the state folder's token belongs to another cluster and would be replaced. Refused so that no token is lost silently. Nothing was touched.",
    remedy: "Keep a copy of the state folder's cluster-token.json if it still matters, remove it from the state folder, then restore again.",
  },
  CLUSTER_RESET_FAILED: {
    title: 'k3s did not restore the snapshot (cluster-reset failed)',
    meaning: "`k3s server --cluster-reset --cluster-reset-restore-path` exited with an error on the restoring server. k3s's message is in the evidence.",
    remedy:
      "Read the excerpt; a token message means the backup's token is not the snapshot's cluster's. Fix, then run the restore again (it starts over on that server).",
  },
  BACKUP_FAILED: {
    title: 'The backup could not be taken or copied',
    meaning: '`k3s etcd-snapshot save`, reading the snapshot back or listing the API objects failed on the server. No backup folder was written.',
    remedy:
      'Read the evidence; take the backup on a server that serves (bootstrap backup <env> --server NAME), or make this one healthy (bootstrap verify <env>; disk space under /var/lib/rancher/k3s/server/db/snapshots), then try again.',
  },
  RESTORE_INCOMPLETE: {
    title: "Objects of the backup's inventory are missing after the restore",
    meaning:
      'After the restoring server came up, the API objects were listed and compared with the backup manifest (kind/namespace/name); the missing ones are listed.',
    remedy:
      'Check the restore used the intended backup (manifest.json); list the missing objects by hand (kubectl get <kind> -n <ns> <name>); restore another backup, or recreate them from Git.',
  },
});

// Taking a backup: an etcd snapshot on a server whose API is ready, copied to the environment's backup
// folder on the operator's machine with the cluster token (read from the server, where it is
// authoritative) and a manifest: time, k3s version, servers, sha256 and the object inventory. One action
// change, shared by `bootstrap backup` (phases/backup.ts) and the backup a rolling change takes first.
import { join } from 'node:path';
import type { UploadProgress } from '../engine/apply.ts';
import type { ActionChange, ActionContext } from '../engine/changes.ts';
import { DB_DIR, K3S_BIN, TOKEN_FILE } from '../k3s/paths.ts';
import { secretOf } from '../k3s/token.ts';
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';
import { countsByKind, listObjectsCommand, objectKeys } from './objects.ts';
import { LISTING_SHOWN, listObjectsThrough } from './list-through.ts';
import { backupFailed, pullCommands, pullSnapshot } from './pull.ts';
import { versionFromOutput } from './version.ts';
import { type BackupManifest, backupsDir, MANIFEST_FILE, PendingBackup, SNAPSHOT_FILE, TOKEN_FILE as BACKUP_TOKEN_FILE } from './store.ts';

const SNAPSHOTS_DIR = `${DB_DIR}/snapshots`;
const SNAPSHOT_PREFIX = 'bootstrap-backup';
/** `k3s etcd-snapshot save`'s line naming the snapshot it wrote. */
const SNAPSHOT_SAVED = new RegExp(`Snapshot (${SNAPSHOT_PREFIX}-[\\w.-]+) saved`);

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { SNAPSHOT_SAVED };
const SAVE_BUDGET_MS = 300_000;
const SAVE_COMMAND = `${K3S_BIN} etcd-snapshot save --name ${SNAPSHOT_PREFIX}`;

/** What a backup's manifest knows before the snapshot is taken. */
export type BackupBasis = Omit<BackupManifest, 'snapshotName' | 'sha256' | 'bytes' | 'objects' | 'counts' | 'takenAt'>;

/** The action that takes backup `basis.id` through the step's host (or `on`), every command it runs listed. */
export function backupAction(basis: BackupBasis, stateDir: string, opts: { description?: string; on?: string } = {}): ActionChange {
  const folder = join(backupsDir(stateDir), basis.id);
  return {
    kind: 'action',
    description: opts.description ?? `take an etcd snapshot and copy it, the token and the object inventory to ${folder}`,
    ...(opts.on && { on: opts.on }),
    // Every command takeBackup runs, in order (the snapshot's name is the one k3s reports).
    runs: [
      ...(basis.k3sVersion ? [] : [`${K3S_BIN} --version`]),
      `sudo ${SAVE_COMMAND}`,
      `${LISTING_SHOWN}   (Kubernetes API through the SSH connection to ${opts.on ?? 'the server'}; without the state folder's kubeconfig: sudo ${listObjectsCommand().split('\n').join('; ')} there)`,
      `sudo cat ${TOKEN_FILE}   (secret: never shown)`,
      ...pullCommands(`${SNAPSHOTS_DIR}/${SNAPSHOT_PREFIX}-<name k3s reports>`).map((c) => `sudo ${c}`),
    ],
    writes: [join(folder, SNAPSHOT_FILE), join(folder, BACKUP_TOKEN_FILE), join(folder, MANIFEST_FILE)],
    run: (actx) => takeBackup(basis, actx),
  };
}

async function takeBackup(basis: BackupBasis, ctx: ActionContext): Promise<void> {
  const { host } = ctx;
  const remote = ctx.remote(host);
  const run = (command: string, opts: { secret?: boolean; timeoutMs?: number } = {}) =>
    remote.exec(command, { sudo: true, timeoutMs: opts.timeoutMs ?? 60_000, secret: opts.secret, signal: ctx.signal });
  // A basis without a version (a rolling change's, planned before it knew): the server's own, read now.
  const backup = basis.k3sVersion ? basis : { ...basis, k3sVersion: versionFromOutput((await run(`${K3S_BIN} --version`)).stdout) ?? 'unknown' };

  const save = await run(SAVE_COMMAND, { timeoutMs: SAVE_BUDGET_MS });
  const name = `${save.stdout}\n${save.stderr}`.match(SNAPSHOT_SAVED)?.[1];
  if (save.code !== 0 || !name) throw backupFailed(host.name, 'k3s etcd-snapshot save', save, 'the snapshot was not saved');
  const path = `${SNAPSHOTS_DIR}/${name}`;

  // The object inventory right after the snapshot: what a restore of it must bring back.
  const listing = await listObjectsThrough(ctx, host, { timeoutMs: 120_000 });
  if (listing.code !== 0) throw backupFailed(host.name, LISTING_SHOWN, listing, 'the API objects could not be listed');

  const token = await run(`cat ${TOKEN_FILE}`, { secret: true });
  const full = token.stdout.trim();
  if (token.code !== 0 || !full) throw backupFailed(host.name, `cat ${TOKEN_FILE}`, { ...token, stdout: '' }, 'the cluster token could not be read');
  ctx.redact(full);
  ctx.redact(secretOf(full));

  // The snapshot is streamed into the backup folder as it is read (`sudo cat` on one channel; secret:
  // the run log never records it), hashed on the way and checked against the server's sha256.
  const pending = new PendingBackup(ctx.stateDir, backup.id);
  try {
    const progress = (p: UploadProgress) => ctx.emit({ type: 'transfer', phase: 'backup', step: 'snapshot', host: host.name, ...p });
    const { sha256, bytes } = await pullSnapshot(remote, path, pending.snapshotSink(), { signal: ctx.signal, onProgress: progress });
    const objects = objectKeys(listing.stdout);
    const manifest: BackupManifest = {
      ...backup,
      takenAt: new Date(ctx.clock.now()).toISOString(),
      snapshotName: name,
      sha256,
      bytes,
      objects,
      counts: countsByKind(objects),
    };
    pending.commit(manifest, { secret: secretOf(full), full });
  } catch (err) {
    pending.abandon();
    throw err;
  }
}

// backup (bootstrap backup <env>): an etcd snapshot on a server whose API is ready, copied to the
// environment's backup folder on the operator's machine with the cluster token (read from the server,
// where it is authoritative) and a manifest: time, k3s version, servers, sha256 and the object inventory.
// Not part of the build's DAG: a session of its own (modes/backup.ts).
import { join } from 'node:path';
import type { ActionContext } from '../src/engine/changes.ts';
import { hostFact } from '../src/engine/facts.ts';
import type { Phase, Step } from '../src/engine/phase.ts';
import { countsByKind, listObjectsCommand, objectKeys } from '../src/backup/objects.ts';
import { backupFailed, pullCommands, pullSnapshot } from '../src/backup/pull.ts';
import { type BackupManifest, backupsDir, MANIFEST_FILE, PendingBackup, SNAPSHOT_FILE, TOKEN_FILE as BACKUP_TOKEN_FILE } from '../src/backup/store.ts';
import type { UploadProgress } from '../src/engine/apply.ts';
import { versionFromOutput } from '../src/backup/version.ts';
import { founderRef, serverRefs } from '../src/inventory/hosts.ts';
import { DB_DIR, K3S_BIN, TOKEN_FILE } from '../src/k3s/paths.ts';
import { secretOf } from '../src/k3s/token.ts';
import type { UpstreamPatterns } from '../src/causes/upstream-patterns.ts';

const SNAPSHOTS_DIR = `${DB_DIR}/snapshots`;
const SNAPSHOT_PREFIX = 'bootstrap-backup';
/** `k3s etcd-snapshot save`'s line naming the snapshot it wrote. */
const SNAPSHOT_SAVED = new RegExp(`Snapshot (${SNAPSHOT_PREFIX}-[\\w.-]+) saved`);

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { SNAPSHOT_SAVED };
const SAVE_BUDGET_MS = 300_000;
const SAVE_COMMAND = `${K3S_BIN} etcd-snapshot save --name ${SNAPSHOT_PREFIX}`;
/** The server's k3s version, as the snapshot step's plan read it. */
const k3sVersion = hostFact<string>('k3sVersion');

function snapshotStep(id: string): Step {
  return {
    id: 'snapshot',
    title: 'etcd snapshot, cluster token and object inventory copied to the backup folder',
    probe: () => ({
      version: { command: `${K3S_BIN} --version` },
      ready: { command: `${K3S_BIN} kubectl get --raw=/readyz`, sudo: true },
    }),
    plan: ({ host, probe, ctx }) => {
      const version = versionFromOutput(probe.version.stdout);
      if (probe.ready.code !== 0 || probe.ready.stdout.trim() !== 'ok' || !version) {
        return {
          changes: [],
          stops: [
            backupFailed(
              host.name,
              'k3s kubectl get --raw=/readyz',
              probe.ready,
              `the API on ${host.name} is not ready: take the snapshot on a server that serves (--server NAME)`,
            ),
          ],
        };
      }
      const folder = join(backupsDir(ctx.stateDir), id);
      const backup: Omit<BackupManifest, 'snapshotName' | 'sha256' | 'bytes' | 'objects' | 'counts' | 'takenAt'> = {
        id,
        env: ctx.env,
        k3sVersion: version,
        snapshotServer: host.name,
        servers: serverRefs(ctx.inventory).map((s) => s.name),
      };
      return {
        changes: [
          {
            kind: 'action',
            description: `take an etcd snapshot and copy it, the token and the object inventory to ${folder}`,
            // Every command takeBackup runs, in order (the snapshot's name is the one k3s reports).
            runs: [
              `sudo ${SAVE_COMMAND}`,
              `sudo ${listObjectsCommand().split('\n').join('; ')}`,
              `sudo cat ${TOKEN_FILE}   (secret: never shown)`,
              ...pullCommands(`${SNAPSHOTS_DIR}/${SNAPSHOT_PREFIX}-<name k3s reports>`).map((c) => `sudo ${c}`),
            ],
            writes: [join(folder, SNAPSHOT_FILE), join(folder, BACKUP_TOKEN_FILE), join(folder, MANIFEST_FILE)],
            run: (actx) => takeBackup(backup, actx),
          },
        ],
        facts: [k3sVersion(version)],
      };
    },
  };
}

async function takeBackup(
  backup: Omit<BackupManifest, 'snapshotName' | 'sha256' | 'bytes' | 'objects' | 'counts' | 'takenAt'>,
  ctx: ActionContext,
): Promise<void> {
  const { host } = ctx;
  const remote = ctx.remote(host);
  const run = (command: string, opts: { secret?: boolean; timeoutMs?: number } = {}) =>
    remote.exec(command, { sudo: true, timeoutMs: opts.timeoutMs ?? 60_000, secret: opts.secret, signal: ctx.signal });

  const save = await run(SAVE_COMMAND, { timeoutMs: SAVE_BUDGET_MS });
  const name = `${save.stdout}\n${save.stderr}`.match(SNAPSHOT_SAVED)?.[1];
  if (save.code !== 0 || !name) throw backupFailed(host.name, 'k3s etcd-snapshot save', save, 'the snapshot was not saved');
  const path = `${SNAPSHOTS_DIR}/${name}`;

  // The object inventory right after the snapshot: what a restore of it must bring back.
  const listing = await run(listObjectsCommand(), { timeoutMs: 120_000 });
  if (listing.code !== 0) throw backupFailed(host.name, 'k3s kubectl get <every listable type> -A', listing, 'the API objects could not be listed');

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

/**
 * The backup as a one-phase session. `id` names the folder (the time it was started). It runs on the
 * founder, or on `server`: only that host must answer, so a backup can be taken with the founder down.
 */
export function backupPhase(id: string, server?: string): Phase {
  return {
    id: 'backup',
    title: 'back up the cluster (etcd snapshot, token, object inventory)',
    needs: [],
    hosts: (c) => (server ? serverRefs(c.inventory).filter((h) => h.name === server) : founderRef(c.inventory)),
    concurrency: 'serial',
    steps: [snapshotStep(id)],
  };
}

// backup (bootstrap backup <env>): an etcd snapshot on a server whose API is ready, copied to the
// environment's backup folder on the operator's machine with the cluster token (read from the server,
// where it is authoritative) and a manifest: time, k3s version, servers, sha256 and the object inventory.
// Not part of the build's DAG: a session of its own (cli/backup-command.ts).
import { CauseError } from '../src/errors.ts';
import type { RunContext } from '../src/engine/context.ts';
import { hostFact } from '../src/engine/facts.ts';
import type { HostRef, Phase, Step } from '../src/engine/phase.ts';
import { countsByKind, listObjectsCommand, objectKeys } from '../src/backup/objects.ts';
import { pullSnapshot } from '../src/backup/pull.ts';
import { type BackupManifest, backupsDir, PendingBackup } from '../src/backup/store.ts';
import type { UploadProgress } from '../src/engine/apply.ts';
import { versionFromOutput } from '../src/backup/version.ts';
import { founderRef, serverRefs } from '../src/inventory/hosts.ts';
import { DB_DIR, K3S_BIN, TOKEN_FILE } from '../src/k3s/paths.ts';
import { secretOf } from '../src/k3s/token.ts';
import { lastLines } from '../src/util/text.ts';

const SNAPSHOTS_DIR = `${DB_DIR}/snapshots`;
const SNAPSHOT_PREFIX = 'bootstrap-backup';
/** `k3s etcd-snapshot save`'s line naming the snapshot it wrote. */
export const SNAPSHOT_SAVED = new RegExp(`Snapshot (${SNAPSHOT_PREFIX}-[\\w.-]+) saved`);
const SAVE_BUDGET_MS = 300_000;
/** The server's k3s version, as the snapshot step's plan read it (for the manifest). */
const k3sVersion = hostFact<string>('k3sVersion');

function failed(host: HostRef, command: string, res: { code: number | null; stderr: string; stdout: string }, seen: string): CauseError {
  return new CauseError('BACKUP_FAILED', { host: host.name, evidence: { command, exitCode: res.code, seen, excerpt: lastLines((res.stderr || res.stdout).trim(), 15) } });
}

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
        return { changes: [], stops: [failed(host, 'k3s kubectl get --raw=/readyz', probe.ready, `the API on ${host.name} is not ready: take the snapshot on a server that serves (--server NAME)`)] };
      }
      return {
        changes: [
          {
            kind: 'command',
            description: `take an etcd snapshot and copy it, the token and the object inventory to ${backupsDir(ctx.stateDir)}/${id}`,
            command: `${K3S_BIN} etcd-snapshot save --name ${SNAPSHOT_PREFIX}`,
            sudo: true,
          },
        ],
        facts: [k3sVersion(version)],
      };
    },
    apply: async (_plan, host, ctx) => takeBackup(id, host, ctx),
  };
}

async function takeBackup(id: string, host: HostRef, ctx: RunContext): Promise<void> {
  const remote = ctx.remote(host);
  const run = (command: string, opts: { secret?: boolean; timeoutMs?: number } = {}) => remote.exec(command, { sudo: true, timeoutMs: opts.timeoutMs ?? 60_000, secret: opts.secret, signal: ctx.signal });

  const save = await run(`${K3S_BIN} etcd-snapshot save --name ${SNAPSHOT_PREFIX}`, { timeoutMs: SAVE_BUDGET_MS });
  const name = `${save.stdout}\n${save.stderr}`.match(SNAPSHOT_SAVED)?.[1];
  if (save.code !== 0 || !name) throw failed(host, 'k3s etcd-snapshot save', save, 'the snapshot was not saved');
  const path = `${SNAPSHOTS_DIR}/${name}`;

  // The object inventory right after the snapshot: what a restore of it must bring back.
  const listing = await run(listObjectsCommand(), { timeoutMs: 120_000 });
  if (listing.code !== 0) throw failed(host, 'k3s kubectl get <every listable type> -A', listing, 'the API objects could not be listed');

  const token = await run(`cat ${TOKEN_FILE}`, { secret: true });
  const full = token.stdout.trim();
  if (token.code !== 0 || !full) throw failed(host, `cat ${TOKEN_FILE}`, { ...token, stdout: '' }, 'the cluster token could not be read');
  ctx.redact(full);
  ctx.redact(secretOf(full));

  // The snapshot is streamed into the backup folder as it is read (`sudo cat` on one channel; secret:
  // the run log never records it), hashed on the way and checked against the server's sha256.
  const pending = new PendingBackup(ctx.stateDir, id);
  try {
    const progress = (p: UploadProgress) => ctx.emit({ type: 'transfer', phase: 'backup', step: 'snapshot', host: host.name, ...p });
    const { sha256, bytes } = await pullSnapshot(remote, path, pending.snapshotSink(), { signal: ctx.signal, onProgress: progress });
    const objects = objectKeys(listing.stdout);
    const manifest: BackupManifest = {
      id,
      env: ctx.env,
      takenAt: new Date(ctx.clock.now()).toISOString(),
      k3sVersion: ctx.facts.need(host.name, k3sVersion),
      snapshotServer: host.name,
      servers: serverRefs(ctx.inventory).map((s) => s.name),
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

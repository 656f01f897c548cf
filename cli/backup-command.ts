// `bootstrap backup <env>`: a session of its own that takes an etcd snapshot (modes/backup.ts) into the
// environment's backup folder.
// `bootstrap backup <env> --list`: the backups in that folder, newest last (local, no connection).
import { causesOf } from '../src/errors.ts';
import { listBackups, backupId, backupsDir } from '../src/backup/store.ts';
import { runSession } from '../src/engine/session.ts';
import { ensureStateDir, stateDirFor } from '../src/engine/state-dir.ts';
import { jsonRenderer } from '../src/view/json.ts';
import { plainRenderer } from '../src/view/plain.ts';
import { backupRun } from '../modes/backup.ts';
import { knownSecrets } from './known-secrets.ts';
import { EXIT_INTERRUPTED, onFirstAndSecondInterrupt } from './interrupt.ts';
import type { Io } from './io.ts';
import { defaultRunDeps, loadFor, type RunDeps } from './run-command.ts';

export interface BackupArgs {
  file: string;
  env?: string;
  list: boolean;
  json: boolean;
  /** The server to take the snapshot on (default: the founder), e.g. when the founder is down. */
  server?: string;
}

export async function backupCommand(args: BackupArgs, io: Io, deps: RunDeps = defaultRunDeps()): Promise<number> {
  const loaded = await loadFor(args.file, args.env);
  const env = loaded.inventory.environment;
  const stateDir = ensureStateDir(stateDirFor(env, io.env));
  if (args.list) return listCommand(stateDir, args.json, io);
  const id = backupId(new Date(deps.clock.now()));
  const plan = backupRun(loaded, { id, server: args.server });

  const emit = args.json ? jsonRenderer(io.out) : plainRenderer(io.out);
  const abort = new AbortController();
  const stopListening = deps.onInterrupt(onFirstAndSecondInterrupt(io, abort));
  try {
    const result = await runSession(
      { transport: deps.transport, clock: deps.clock, emit, signal: abort.signal, preflight: deps.preflight },
      {
        env,
        inventory: loaded,
        target: (h) => deps.target(loaded, h),
        stateDir,
        secrets: knownSecrets(stateDir, loaded),
        waivers: loaded.derived.waivers,
        plan,
      },
    );
    if (result.error) {
      if (causesOf(result.error).some((c) => c.causeId === 'INTERRUPTED')) return EXIT_INTERRUPTED;
      if (causesOf(result.error).length) return 1;
      throw result.error;
    }
    if (!args.json) io.out(`backup ${id}: ${backupsDir(stateDir)}/${id} (restore with: bootstrap ${env} --restore ${id})`);
    return 0;
  } finally {
    stopListening();
  }
}

function listCommand(stateDir: string, json: boolean, io: Io): number {
  const backups = listBackups(stateDir);
  if (json) {
    // The manifest without the object list (that can be long); never the token.
    io.out(JSON.stringify(backups.map(({ dir, manifest: { objects, ...m } }) => ({ ...m, objects: objects.length, dir }))));
    return 0;
  }
  if (!backups.length) {
    io.out(`no backups in ${backupsDir(stateDir)}`);
    return 0;
  }
  for (const { manifest: m } of backups) {
    const mb = (m.bytes / 1024 / 1024).toFixed(1);
    io.out(`${m.id}  k3s ${m.k3sVersion}  on ${m.snapshotServer}  ${mb} MiB  ${m.objects.length} objects  sha256 ${m.sha256.slice(0, 12)}…`);
  }
  io.out(`folder: ${backupsDir(stateDir)}`);
  return 0;
}

// `bootstrap backup <env>`: a session of its own (connect, lock, one phase) that takes an etcd snapshot on
// the founder (or the server named by --server: the other hosts may then be down) and copies it, the token and the manifest into the environment's backup folder.
// `bootstrap backup <env> --list`: the backups in that folder, newest last (local, no connection).
import { causesOf, UsageError } from '../errors.ts';
import { listBackups, backupId, backupsDir } from '../backup/store.ts';
import { knownSecrets } from './known-secrets.ts';
import { EXIT_INTERRUPTED, onFirstAndSecondInterrupt } from './interrupt.ts';
import { runSession } from '../engine/session.ts';
import { ensureStateDir, stateDirFor } from '../engine/state-dir.ts';
import { loadInventory } from '../inventory/load.ts';
import { allHostRefs } from '../inventory/hosts.ts';
import { backupPhase } from '../../phases/backup.ts';
import { jsonRenderer } from '../view/json.ts';
import { plainRenderer } from '../view/plain.ts';
import type { Io } from './io.ts';
import { defaultRunDeps, type RunDeps } from './run-command.ts';

export interface BackupArgs {
  file: string;
  env?: string;
  list: boolean;
  json: boolean;
  /** The server to take the snapshot on (default: the founder), e.g. when the founder is down. */
  server?: string;
}

export async function backupCommand(args: BackupArgs, io: Io, deps: RunDeps = defaultRunDeps()): Promise<number> {
  const loaded = await loadInventory(args.file);
  const env = loaded.inventory.environment;
  if (args.env && args.env !== env) throw new UsageError(`${args.file} describes environment ${env}, not ${args.env}`);
  const stateDir = ensureStateDir(stateDirFor(env, io.env));
  if (args.list) return listCommand(stateDir, args.json, io);
  const servers = loaded.derived.servers.map((s) => s.name);
  if (args.server !== undefined && !servers.includes(args.server)) throw new UsageError(`--server ${args.server}: not a server of ${env} (servers: ${servers.join(', ')})`);

  const id = backupId(new Date(deps.clock.now()));
  const emit = args.json ? jsonRenderer(io.out) : plainRenderer(io.out);
  const abort = new AbortController();
  const stopListening = deps.onInterrupt(onFirstAndSecondInterrupt(io, abort));
  try {
    const result = await runSession(
      { transport: deps.transport, clock: deps.clock, emit, signal: abort.signal, preflight: deps.preflight },
      {
        env,
        inventory: loaded,
        phases: [backupPhase(id, args.server)],
        hosts: allHostRefs(loaded),
        target: (h) => deps.target(loaded, h),
        check: false,
        resume: false,
        stateDir,
        secrets: knownSecrets(stateDir, loaded),
        waivers: loaded.derived.waivers,
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

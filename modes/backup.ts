// `bootstrap backup <env>`: a session of its own (connect, lock, one phase) that takes an etcd snapshot on
// the founder (or the server named by --server: the other hosts may then be down) and copies it, the token
// and the manifest into the environment's backup folder as backup `id`.
import { UsageError } from '../src/errors.ts';
import type { RunPlan } from '../src/engine/session.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { backupPhase } from '../phases/backup.ts';
import { topologyOf } from '../src/inventory/hosts.ts';

export function backupRun(loaded: LoadedInventory, opts: { id: string; server?: string }): RunPlan {
  const servers = loaded.derived.servers.map((s) => s.name);
  if (opts.server !== undefined && !servers.includes(opts.server)) {
    throw new UsageError(`--server ${opts.server}: not a server of ${loaded.inventory.environment} (servers: ${servers.join(', ')})`);
  }
  return { phases: [backupPhase(opts.id, opts.server)], topology: topologyOf(loaded), check: false, resume: false };
}

// `bootstrap <env> --reset [--node NAME]`: one phase (phases/k3s/reset-*.ts), the inventory's roles. A reset of one
// server (--node) checks first, read-only and in check mode too, that the other servers hold etcd quorum
// (phases/k3s/replace-quorum.ts checkQuorum: QUORUM_AT_RISK otherwise), unless it is the only server. The
// operator's confirmation is the CLI's (cli/reset-command.ts).
import { UsageError } from '../src/errors.ts';
import type { RunPlan } from '../src/engine/session.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { topologyOf } from '../src/inventory/hosts.ts';
import { checkQuorum } from '../phases/k3s/replace-quorum.ts';
import { resetOrder, resetPhase } from '../phases/k3s/reset-phase.ts';

export function resetRun(loaded: LoadedInventory, opts: { node?: string; check: boolean }): RunPlan {
  const topology = topologyOf(loaded);
  const all = [...topology.servers, ...topology.agents];
  const node = opts.node === undefined ? undefined : all.find((h) => h.name === opts.node);
  if (opts.node !== undefined && !node)
    throw new UsageError(`--node ${opts.node}: not a host of ${loaded.inventory.environment} (hosts: ${all.map((h) => h.name).join(', ')})`);
  const guarded = node?.role === 'server' && topology.servers.length > 1;
  return {
    phases: [resetPhase(topology, opts.node)],
    topology,
    check: opts.check,
    resume: false,
    warnings: loaded.warnings.map((w) => `${w.path}: ${w.message}`),
    ...(guarded && {
      precheck: async (ctx) => {
        await checkQuorum(ctx, node);
      },
    }),
  };
}

/** The hosts a reset takes down, in its order (what the confirmation names). */
export function resetHosts(loaded: LoadedInventory, node?: string): string[] {
  return resetOrder(topologyOf(loaded), node).map((h) => h.name);
}

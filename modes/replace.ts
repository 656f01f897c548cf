// `bootstrap <env> --replace <server>`: the cold-build DAG with the replaced server's topology. The quorum
// of the other servers is checked before anything else (the precheck, check mode too); the replaced
// server is deleted, wiped and joined again within k3s-join: its steps (phases/k3s/replace-steps.ts, which
// read `topology.replacing`) placed before k3s-join's install steps.
import { UsageError } from '../src/errors.ts';
import type { Topology } from '../src/engine/context.ts';
import type { RunPlan } from '../src/engine/session.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { topologyOf } from '../src/inventory/hosts.ts';
import { recoveryPhases, validatedOrder } from '../phases/index.ts';
import { checkQuorum } from '../phases/k3s/replace-quorum.ts';
import { replaceSteps } from '../phases/k3s/replace-steps.ts';
import type { Phase } from '../src/engine/phase.ts';
import { dagRun, insertBefore, type RunSelection } from './compose.ts';

/** A replace runs from the first phase: cli/args.ts refuses --from and --only with it. */
export function replaceRun(loaded: LoadedInventory, name: string, sel: RunSelection): RunPlan {
  const { derived } = loaded;
  if (!derived.servers.some((s) => s.name === name)) {
    const agent = derived.agents.some((a) => a.name === name);
    throw new UsageError(
      agent
        ? `--replace ${name}: an agent holds no etcd member; rerun bootstrap <env> to rejoin it`
        : `--replace ${name}: not a server of the inventory (servers: ${derived.servers.map((s) => s.name).join(', ')})`,
    );
  }
  return dagRun(loaded, {
    ordered: validatedOrder(replacePhases(recoveryPhases())),
    sel,
    topology: replaceTopology(loaded, name),
    recovery: 'replace',
    refuse: (phases) => {
      if (!phases.some((p) => p.id === 'k3s-join'))
        throw new UsageError('--replace deletes, wipes and rejoins the server in k3s-join: select it (--until k3s-join or later)');
    },
    precheck: (ctx) =>
      checkQuorum(
        ctx,
        ctx.topology.servers.find((s) => s.name === name)!,
      ),
  });
}

/** The phases with the replaced server's steps first in k3s-join (by id, as the restore mode places its own). */
export function replacePhases(phases: Phase[]): Phase[] {
  return phases.map((p) => (p.id === 'k3s-join' ? { ...p, steps: insertBefore(p.steps, 'binary', ...replaceSteps) } : p));
}

/**
 * The inventory's roles with `name` being replaced. When it is the founder, the first other server takes
 * the founder role for the k3s phases of THIS run: the replaced one joins it (a rebuilt founder must never
 * run cluster-init: that makes a second cluster), and the joins are judged through it. The acting
 * founder's own config keeps how it joined (phases/k3s/join-mode.ts), so nothing changes on it. Once it
 * has joined, the replaced founder is the founder again for the later phases (kube-vip, Cilium, verify:
 * they read the inventory's founder), as on every later run.
 */
export function replaceTopology(loaded: LoadedInventory, name: string): Topology {
  const roles = topologyOf(loaded);
  const acting = roles.founder.name === name ? roles.servers.find((s) => s.name !== name) : undefined;
  // A single server has no one to join: the quorum check refuses it.
  if (!acting) return { ...roles, replacing: name };
  const servers = roles.servers.map((s) => ({ ...s, founder: s.name === acting.name }));
  return {
    founder: servers.find((s) => s.founder)!,
    joiners: servers.filter((s) => !s.founder),
    servers,
    agents: roles.agents,
    joinTarget: `https://${acting.address}:${loaded.derived.apiEndpoint.port}`,
    replacing: name,
  };
}

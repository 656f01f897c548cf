// `bootstrap <env> --replace <server>` as a run: which server, the inventory as this run sees it, and the
// quorum check that comes before anything else. The DAG runs as usual; the replaced server is deleted,
// wiped and joined again within k3s-join (replace-steps.ts).
import { UsageError } from '../../src/errors.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { FactValue } from '../../src/engine/facts.ts';
import type { Phase } from '../../src/engine/phase.ts';
import type { LoadedInventory } from '../../src/inventory/load.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { withInventory } from './replace-phase.ts';
import { checkQuorum } from './replace-quorum.ts';

export interface ReplaceRun {
  server: string;
  /** The run's phases, with k3s-founder and k3s-join seeing the founder role moved off the replaced server. */
  phases: (phases: Phase[]) => Phase[];
  precheck: (ctx: RunContext) => Promise<FactValue<'run'>[]>;
}

export function replacePlan(loaded: LoadedInventory, name: string): ReplaceRun {
  const { derived } = loaded;
  const server = derived.servers.find((s) => s.name === name);
  if (!server) {
    const agent = derived.agents.some((a) => a.name === name);
    throw new UsageError(
      agent ? `--replace ${name}: an agent holds no etcd member; rerun bootstrap <env> to rejoin it` : `--replace ${name}: not a server of the inventory (servers: ${derived.servers.map((s) => s.name).join(', ')})`,
    );
  }
  const acting = withoutFounder(loaded, name);
  return {
    server: name,
    phases: (phases) => (acting === loaded ? phases : phases.map((p) => (K3S_PHASES.has(p.id) ? withInventory(p, acting) : p))),
    precheck: (ctx) => checkQuorum(ctx, serverRefs(ctx.inventory).find((s) => s.name === name)!),
  };
}

/** The phases that start and join etcd: only they need another founder while the founder is replaced. */
const K3S_PHASES = new Set(['k3s-founder', 'k3s-join']);

/**
 * When the replaced server is the founder, the first other server takes the founder role for the k3s
 * phases of THIS run: the replaced one joins it (a rebuilt founder must never run cluster-init: that makes
 * a second cluster), and the joins are judged through it. The acting founder's own config keeps how it
 * joined (join-mode.ts), so nothing changes on it. Once it has joined, the replaced founder is the founder
 * again for the later phases (kube-vip, Cilium, verify), as on every later run.
 */
export function withoutFounder(loaded: LoadedInventory, name: string): LoadedInventory {
  const { derived } = loaded;
  if (derived.founder.name !== name) return loaded;
  const acting = derived.servers.find((s) => s.name !== name);
  if (!acting) return loaded; // a single server: no one to join; the quorum check refuses
  return {
    ...loaded,
    derived: {
      ...derived,
      founder: acting,
      joiners: derived.servers.filter((s) => s !== acting),
      joinTarget: `https://${acting.address}:${derived.apiEndpoint.port}`,
    },
  };
}

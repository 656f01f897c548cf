// `bootstrap <env> --reset [--node NAME]`: the cluster (or one node) taken down for good, one host at a time:
// the agents first, then the servers, the founder last. On each host: its etcd member removed first while
// quorum allows (member.ts), then everything k3s and Cilium left on it (leftovers.ts: probe → plan → apply,
// so --check lists exactly what would go). After the last host of a whole-cluster reset, the state folder's
// cluster token and kubeconfig are moved aside (local.ts).
import type { HostRef, Phase, ProbeCommand, Step } from '../../src/engine/phase.ts';
import type { Topology } from '../../src/engine/context.ts';
import { roleOf } from '../../src/k3s/paths.ts';
import { iptablesNote, leftoverProbes, readLeftovers, removals } from './reset-leftovers.ts';
import { memberStep } from './reset-member.ts';
import { moveStateAside } from './reset-state.ts';

/** The order hosts are reset in: agents, then the servers that joined (inventory order), the founder last. */
export function resetOrder(t: Pick<Topology, 'agents' | 'servers'>, node?: string): HostRef[] {
  const all = [...t.agents, ...t.servers.filter((s) => !s.founder), ...t.servers.filter((s) => s.founder)];
  return node === undefined ? all : all.filter((h) => h.name === node);
}

export const hostStep: Step = {
  id: 'reset-host',
  title: "k3s stopped, Cilium's datapath and k3s's files removed",
  probe: (_host, ctx): Record<string, ProbeCommand> => leftoverProbes(ctx.inventory.inventory.controlPlane.vip),
  plan: ({ host, probe, ctx }) => {
    const left = readLeftovers(probe);
    const found = removals(left, { vip: ctx.inventory.inventory.controlPlane.vip, unit: roleOf(host).unit });
    const note = iptablesNote(left);
    return {
      changes: found.map((r, i) => ({
        kind: 'command' as const,
        description: i === 0 && note ? `${r.what} (${note})` : r.what,
        command: r.command,
        sudo: true,
        timeoutMs: 120_000,
      })),
    };
  },
};

export function resetPhase(topology: Pick<Topology, 'agents' | 'servers'>, node?: string): Phase {
  const order = resetOrder(topology, node);
  const last = order.at(-1)?.name;
  return {
    id: 'reset',
    title: node === undefined ? 'take the cluster down: agents, then servers, the founder last' : `take ${node} out of the cluster and off k3s`,
    needs: [],
    hosts: () => order,
    concurrency: 'serial',
    steps: [memberStep(order, node), hostStep, ...(node === undefined ? [moveStateAside(last)] : [])],
  };
}

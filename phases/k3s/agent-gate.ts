// An agent has joined when its Node exists and its kubelet is alive now: the node's Lease in
// kube-node-lease renewed within its duration (the kubelet renews it every 10 s for 40 s, kubernetes v1.33
// pkg/kubelet/kubelet.go nodeLeaseRenewIntervalFraction). A Node alone proves nothing on a rebuilt host:
// the Node of the host's previous life stays until someone deletes it, and its Ready condition's heartbeat
// is rewritten only every 5 minutes when nothing changed. Its journal names a failure at once (a rebuilt
// host with the same name, a token of another cluster, the VIP unreachable), as for servers. And a lease
// alone proves nothing either when the host was reinstalled a moment ago: the old kubelet's last renewal
// is still fresh. The Node names the machine its kubelet runs on (nodeInfo.machineID, kubelet's
// /etc/machine-id: kubernetes/kubernetes v1.33.5 pkg/kubelet/nodestatus/setters.go MachineInfo), so a Node
// of another machine-id is not this host's kubelet: it has not registered (yet).
import { CauseError } from '../../src/errors.ts';
import type { Gate } from '../../src/engine/phase.ts';
import { founderRef } from '../../src/inventory/hosts.ts';
import { journalCursor } from './facts.ts';
import { matchJoinFailure } from '../../src/k3s/journal-causes.ts';
import { excerpt, journalSince } from '../../src/k3s/remote.ts';
import { readsThrough } from '../../src/kube/reads-through.ts';
import { runProbes } from '../../src/engine/probes.ts';
import { MACHINE_ID_PROBE } from '../../src/k3s/paths.ts';
import { poll } from '../../src/engine/poll.ts';

export interface NodeLeaseView {
  renewTime?: string;
  leaseDurationSeconds?: number;
}

/** Whether the Node's kubelet runs on this host: the machine-ids agree (unknown on either side: no verdict, true). */
function machineOf(nodeMachineId: string, hostMachineId: string): { same: boolean; seen: string } {
  if (!nodeMachineId || !hostMachineId || nodeMachineId === hostMachineId) return { same: true, seen: '' };
  return {
    same: false,
    seen: `its Node was registered by another machine (machine-id ${nodeMachineId}; this host's is ${hostMachineId}): the host was reinstalled and its kubelet has not registered`,
  };
}

/** How the agent's heartbeat looks at `nowMs`: fresh, or what was seen instead (for the evidence). */
export function leaseFreshness(lease: NodeLeaseView | undefined, nowMs: number): { fresh: boolean; seen: string } {
  if (!lease?.renewTime) return { fresh: false, seen: 'its Node exists, but no Lease in kube-node-lease: its kubelet never reported' };
  const renewed = Date.parse(lease.renewTime);
  const duration = lease.leaseDurationSeconds ?? 40;
  if (!Number.isFinite(renewed)) return { fresh: false, seen: `its Lease has an unreadable renewTime ${lease.renewTime}` };
  const ageS = Math.round((nowMs - renewed) / 1000);
  if (ageS <= duration) return { fresh: true, seen: `its Lease was renewed ${Math.max(ageS, 0)} s ago` };
  return {
    fresh: false,
    seen: `its Node exists, but its Lease was last renewed ${ageS} s ago (${lease.renewTime}; it lasts ${duration} s): no kubelet of this name is running`,
  };
}

export const agentRegistered: Gate = {
  id: 'agent-registered',
  title: 'agent registered its Node through the VIP, its kubelet heartbeating',
  budgetMs: 180_000,
  async run(host, ctx, signal) {
    const founder = founderRef(ctx.inventory)[0];
    const cursor = ctx.facts.get(host.name, journalCursor);
    let seen = 'no Node of this name';
    // node-baseline's probe: a run that read it already (nothing changed since) asks no host again.
    const hostMachineId =
      (await runProbes(host, ctx, [['machineId', MACHINE_ID_PROBE]], { timeoutMs: 10_000 }).catch(() => undefined))?.machineId?.stdout.trim() ?? '';
    const registered = await poll(ctx, signal, {
      everyMs: 2_000,
      look: async () => {
        // Through the founder's API (the run's tunnel): two requests, no kubectl process on the founder per look.
        const api = await readsThrough(ctx, founder).catch(() => undefined);
        const node = await api?.node(host.name).catch(() => undefined);
        const machine = machineOf(node?.status?.nodeInfo?.machineID ?? '', hostMachineId);
        if (node && !machine.same) seen = machine.seen;
        else if (node) {
          const lease = await api?.lease('kube-node-lease', host.name).catch(() => undefined);
          const judged = leaseFreshness(leaseView(lease?.spec), ctx.clock.now());
          if (judged.fresh) return true;
          seen = judged.seen;
        }
        const journal = await journalSince(ctx, host, cursor);
        const known = matchJoinFailure(journal);
        if (known && !known.transient) {
          // An agent dials the VIP, not the founder: "failed to get CA certs" means the VIP did not answer it.
          const id = known.id === 'JOIN_FOUNDER_UNREACHABLE' ? 'VIP_NOT_ANSWERING' : known.id;
          throw new CauseError(id, {
            host: host.name,
            evidence: { command: 'journalctl -u k3s-agent.service', seen: known.line, excerpt: excerpt(journal, 15) },
          });
        }
        return undefined;
      },
    });
    if (registered) return;
    const journal = await journalSince(ctx, host, cursor).catch(() => '');
    throw new CauseError('AGENT_NOT_REGISTERED', {
      host: host.name,
      evidence: { command: `k3s kubectl get node,lease ${host.name}`, seen, excerpt: excerpt(journal) },
    });
  },
};

/**
 * The Lease's spec as leaseFreshness reads it. client-node types renewTime as a Date but passes the API's
 * MicroTime text through (as kubectl prints it); either is taken.
 */
function leaseView(spec: { renewTime?: Date | string; leaseDurationSeconds?: number } | undefined): NodeLeaseView | undefined {
  if (!spec) return undefined;
  const renewTime = spec.renewTime instanceof Date ? spec.renewTime.toISOString() : spec.renewTime;
  return { ...(renewTime !== undefined && { renewTime }), ...(spec.leaseDurationSeconds !== undefined && { leaseDurationSeconds: spec.leaseDurationSeconds }) };
}

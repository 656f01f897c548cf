// verify: proves the cluster highly available, read-only: every node Ready, the API ready through the VIP
// and each server's own address (seen from every server), etcd's voters exactly the servers, the
// kube-vip lease held by a server, every Cilium agent Ready with kube-proxy replacement on and dialling the
// VIP (live, from the running agents), every node reaching every other by Cilium's own health probes, CoreDNS ready. Each check prints a row per host and stops with a
// named cause. With `drill` (bootstrap verify <env> --drill), a failover drill follows: it stops k3s on the
// VIP holder, so it is the one part that changes state: a step after the checks (check mode never runs it).
import type { HostRef, Phase } from '../src/engine/phase.ts';
import type { RunContext } from '../src/engine/context.ts';
import { founderRef } from '../src/inventory/hosts.ts';
import { apiReady, ciliumAgentsLive, ciliumNodeHealth, corednsReady, etcdVoters, nodesReady, vipLeaseHeld } from './verify/checks.ts';
import { failoverDrill } from './verify/drill.ts';
import { startLooks } from './verify/read.ts';

// The API before etcd's voters: a server whose k3s is down refuses its API at once, while its EtcdIsVoter
// condition turns False only at the etcd leader's next tick (k3s-io/k3s v1.33.5+k3s1 pkg/etcd/etcd.go manageLearners, every 15 s), so
// the operator is told the plainer cause whatever the moment verify runs.
const CHECKS = [nodesReady, apiReady, etcdVoters, vipLeaseHeld, ciliumAgentsLive, ciliumNodeHealth, corednsReady];

/**
 * `standalone` (bootstrap verify): the checks run although the session is in check mode (they only read).
 * In a build's DAG they are not read-only gates: `bootstrap <env> --check` reports them as "would wait",
 * since what they would see depends on the changes the earlier phases would make.
 */
export function verifyPhase(opts: { drill?: boolean; standalone?: boolean } = {}): Phase {
  // The first check's turn starts every check's first look (phases/verify/read.ts startLooks); each reports in
  // its own turn, in this order. A turn after a wait (the run's memo forgot what it saw) starts again only the
  // looks of the checks still to come: those before it have reported.
  const checks = CHECKS.map((gate, i) => ({
    ...gate,
    readOnly: opts.standalone === true,
    run: (host: HostRef, ctx: RunContext, signal: AbortSignal) => {
      startLooks(ctx, host, CHECKS.slice(i));
      return gate.run(host, ctx, signal);
    },
  }));
  return {
    id: 'verify',
    title: opts.drill ? 'prove the cluster highly available, with a failover drill' : 'prove the cluster highly available',
    needs: ['cilium'],
    // The checks read every host themselves (from the servers, and the Cilium status on each node); the
    // phase runs once, on the founder's connection.
    hosts: (c) => founderRef(c.inventory),
    concurrency: 'serial',
    steps: [],
    gates: checks,
    // The drill changes the cluster (it stops k3s on a server): a step after the checks, never a gate.
    afterGates: opts.drill ? [failoverDrill] : [],
    // The looks go out with the run's probes: in a converged run nothing changes before the checks' turn,
    // and they find them answered (taken only then: phases/verify/read.ts).
    lookAhead: (ctx) => {
      const [founder] = founderRef(ctx.inventory);
      if (founder) startLooks(ctx, founder, CHECKS);
    },
    // A proof from before an interruption says nothing about the cluster the resumed run leaves.
    rerunsOnResume: true,
  };
}

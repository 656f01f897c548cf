// verify: proves the cluster highly available, read-only: every node Ready, etcd's voters exactly the
// servers, the API ready through the VIP and each server's own address (seen from every server), the
// kube-vip lease held by a server, every Cilium agent Ready with kube-proxy replacement on and dialling the
// VIP (live, from the running agents), every node reaching every other by Cilium's own health probes, CoreDNS ready. Each check prints a row per host and stops with a
// named cause. With `drill` (bootstrap verify <env> --drill), a failover drill follows: it stops k3s on the
// VIP holder, so it is the one part that changes state: a step after the checks (check mode never runs it).
import type { Phase } from '../src/engine/phase.ts';
import { founderRef } from '../src/inventory/hosts.ts';
import { apiReady, ciliumAgentsLive, ciliumNodeHealth, corednsReady, etcdVoters, nodesReady, vipLeaseHeld } from './verify/checks.ts';
import { failoverDrill } from './verify/drill.ts';

const CHECKS = [nodesReady, etcdVoters, apiReady, vipLeaseHeld, ciliumAgentsLive, ciliumNodeHealth, corednsReady];

/**
 * `standalone` (bootstrap verify): the checks run although the session is in check mode (they only read).
 * In a build's DAG they are not read-only gates: `bootstrap <env> --check` reports them as "would wait",
 * since what they would see depends on the changes the earlier phases would make.
 */
export function verifyPhase(opts: { drill?: boolean; standalone?: boolean } = {}): Phase {
  const checks = CHECKS.map((gate) => ({ ...gate, readOnly: opts.standalone === true }));
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
    // A proof from before an interruption says nothing about the cluster the resumed run leaves.
    rerunsOnResume: true,
  };
}

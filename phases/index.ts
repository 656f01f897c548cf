// The DAG of a cold build. Each phase lives in its own file; this list is the only place that names them all.
// Phases marked `pending` are declared (their place and edges are part of the design) but not built yet.
import type { Phase } from '../src/engine/phase.ts';
import { agentRefs, founderRef, serverRefs } from './hosts.ts';
import { nodeBaseline } from './node-baseline/index.ts';
import { k3sFounder } from './k3s-founder.ts';
import { k3sJoin } from './k3s-join.ts';

const declared = (id: string, title: string, needs: string[], hosts: Phase['hosts'], concurrency: Phase['concurrency']): Phase => ({
  id,
  title,
  needs,
  hosts,
  concurrency,
  steps: [],
  pending: 'not implemented yet',
});

export function allPhases(): Phase[] {
  return [
    nodeBaseline,
    k3sFounder,
    k3sJoin,
    declared('kube-vip', 'announce the control-plane VIP and wait until it answers', ['k3s-join'], (c) => serverRefs(c.inventory), 8),
    declared('agents', 'join the agents through the VIP', ['kube-vip'], (c) => agentRefs(c.inventory), 4),
    declared('cilium', 'install Cilium dialling the VIP', ['kube-vip', 'agents'], (c) => founderRef(c.inventory), 'serial'),
    declared('verify', 'prove the cluster highly available', ['cilium'], (c) => founderRef(c.inventory), 'serial'),
    declared('flux', 'hand the cluster over to Flux', ['verify'], (c) => founderRef(c.inventory), 'serial'),
  ];
}

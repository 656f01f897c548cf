// The DAG of a cold build. Each phase lives in its own file; this list is the only place that names them all.
// Phases marked `pending` are declared (their place and edges are part of the design) but not built yet.
import type { Phase } from '../src/engine/phase.ts';
import { founderRef } from './hosts.ts';
import { nodeBaseline } from './node-baseline/index.ts';
import { k3sFounder } from './k3s-founder.ts';
import { k3sJoin } from './k3s-join.ts';
import { kubeVip } from './kube-vip.ts';
import { agents } from './agents.ts';
import { cilium } from './cilium.ts';
import { verifyPhase } from './verify.ts';

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
    kubeVip,
    agents,
    cilium,
    verifyPhase(),
    declared('flux', 'hand the cluster over to Flux', ['verify'], (c) => founderRef(c.inventory), 'serial'),
  ];
}

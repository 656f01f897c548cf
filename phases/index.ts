// The DAG of a cold build. Each phase lives in its own file; this list is the only place that names them all.
// A phase may be marked `pending` (declared in the DAG, not built yet: a run that selects it refuses to start).
import type { Phase } from '../src/engine/phase.ts';
import { nodeBaseline } from './node-baseline/index.ts';
import { k3sFounder } from './k3s-founder.ts';
import { k3sJoin } from './k3s-join.ts';
import { kubeVip } from './kube-vip.ts';
import { agents } from './agents.ts';
import { cilium } from './cilium.ts';
import { verifyPhase } from './verify.ts';
import { flux } from './flux.ts';

export function allPhases(): Phase[] {
  return [
    nodeBaseline,
    k3sFounder,
    k3sJoin,
    kubeVip,
    agents,
    cilium,
    verifyPhase(),
    flux,
  ];
}

// The DAG of a cold build. Each phase lives in its own file; this list is the only place that names them all.
// A phase may be marked `pending` (declared in the DAG, not built yet: a run that selects it refuses to start).
// Orderings that safety depends on are enforced on the DAG's edges (not on list order):
// - joins need the founder (a joiner dials the founder's address);
// - Cilium needs kube-vip: Cilium dials the VIP, so the VIP must answer first — the 2026-09-01
//   deadlock was Cilium installed against an address nothing announced yet.
import { orderPhases, requireEdge } from '../src/engine/dag.ts';
import type { Phase } from '../src/engine/phase.ts';
import { nodeBaseline } from './node-baseline/index.ts';
import { k3sFounder } from './k3s-founder.ts';
import { rollingAgents, rollingServers } from './k3s-rolling.ts';
import { k3sJoin } from './k3s-join.ts';
import { kubeVip } from './kube-vip.ts';
import { agents } from './agents.ts';
import { cilium } from './cilium.ts';
import { verifyPhase } from './verify.ts';
import { flux } from './flux.ts';

export function allPhases(): Phase[] {
  return [nodeBaseline, rollingServers, rollingAgents, k3sFounder, k3sJoin, kubeVip, agents, cilium, verifyPhase(), flux];
}

/** The rolling change's phases: a recovery (restore, replace) rebuilds what is gone and rolls nothing. */
const ROLLING_PHASES = ['rolling-servers', 'rolling-agents'];

/** The DAG of a recovery: every phase but the rolling change's. */
export function recoveryPhases(): Phase[] {
  return allPhases()
    .filter((p) => !ROLLING_PHASES.includes(p.id))
    .map((p) => ({ ...p, needs: p.needs.filter((n) => !ROLLING_PHASES.includes(n)) }));
}

const REQUIRED_EDGES: [before: string, after: string][] = [
  ['node-baseline', 'k3s-founder'],
  // A change on a running cluster rolls through it before the install phases look at it: they find it done.
  ['rolling-agents', 'k3s-founder'],
  ['k3s-founder', 'k3s-join'],
  ['k3s-join', 'kube-vip'],
  ['kube-vip', 'agents'],
  ['kube-vip', 'cilium'],
];

/** The phases in run order; throws DagInvalid when a need is unknown, a cycle exists or a required edge is missing. */
export function validatedOrder(phases: Phase[]): Phase[] {
  const ordered = orderPhases(phases);
  for (const [before, after] of REQUIRED_EDGES) requireEdge(phases, before, after);
  return ordered;
}

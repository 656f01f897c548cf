// Orderings that safety depends on, enforced on the DAG's edges (not on list order):
// - joins need the founder (a joiner dials the founder's address);
// - Cilium needs kube-vip: Cilium dials the VIP, so the VIP must answer first — the 2026-09-01
//   deadlock was Cilium installed against an address nothing announced yet.
import { orderPhases, requireEdge } from './dag.ts';
import type { Phase } from './phase.ts';

export const REQUIRED_EDGES: [before: string, after: string][] = [
  ['node-baseline', 'k3s-founder'],
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

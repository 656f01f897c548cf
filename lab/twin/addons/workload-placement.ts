// Where the twin's Deployment controller puts a new pod: the scheduler's filters it imitates — a cordoned
// node (spec.unschedulable) is out, as upstream's NodeUnschedulable plugin keeps it (kubernetes/kubernetes
// v1.33.5 pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go, unless the pod tolerates
// node.kubernetes.io/unschedulable:NoSchedule); a node that is not Ready is out (its not-ready taint, or the
// twin's Ready condition); nodeSelector, required node affinity and taints against the pod's tolerations
// (./scheduling.ts fitsNode) — then, of the nodes left, the one with the fewest pods of the same Deployment
// (the spreading the default topology spread and selector spread scores give), ties by name.
import { fitsNode, nodeView } from './scheduling.ts';

const UNSCHEDULABLE = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };

const nodeReady = (n: any) => (n.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');

const toleratesCordon = (spec: any) =>
  (spec?.tolerations ?? []).some(
    (t: any) =>
      (!t.effect || t.effect === UNSCHEDULABLE.effect) && (t.operator === 'Exists' ? !t.key || t.key === UNSCHEDULABLE.key : t.key === UNSCHEDULABLE.key),
  );

/** The nodes a pod of this spec may be placed on. */
export function schedulableNodes(nodes: any[], podSpec: any): string[] {
  return nodes
    .filter((n) => (!n.spec?.unschedulable || toleratesCordon(podSpec)) && nodeReady(n) && fitsNode(podSpec, nodeView(n)))
    .map((n) => n.metadata.name)
    .sort();
}

/** The node for the next pod, given the Deployment's pods already placed; undefined when no node fits. */
export function pickNode(candidates: string[], placed: any[]): string | undefined {
  const count = (node: string) => placed.filter((p) => p.spec?.nodeName === node).length;
  return [...candidates].sort((a, b) => count(a) - count(b) || a.localeCompare(b))[0];
}

// kube-controller-manager's disruption controller: every PodDisruptionBudget's status kept current from the
// pods of its namespace (lab/twin/api/disruption-budget.ts budgetStatus), run by the server holding the
// controller manager's Lease (./controller-manager.ts). A budget's controllers are found as upstream's
// finders do, by the pods' controller references: a ReplicaSet (the twin's Deployment pods name one whose
// reference carries the Deployment's uid, so that Deployment's replicas count; a stored ReplicaSet counts
// its own), a StatefulSet. Written only when it changes, with the budget's resourceVersion (an eviction
// that wrote meanwhile wins; the next round, a second later, recomputes).
import { BUILTIN } from '../api/resources.ts';
import { budgetStatus, type ScaleOf } from '../api/disruption-budget.ts';
import type { AddonContext } from './context.ts';

const info = (r: string) => BUILTIN.find((x) => x.resource === r)!;

export async function disruptionRound(ctx: AddonContext, now = new Date()): Promise<void> {
  const budgets = (await ctx.store.list(info('poddisruptionbudgets'))).items;
  if (!budgets.length) return;
  const pods = (await ctx.store.list(info('pods'))).items;
  const workloads = [
    ...(await ctx.store.list(info('deployments'))).items,
    ...(await ctx.store.list(info('replicasets'))).items,
    ...(await ctx.store.list(info('statefulsets'))).items,
  ];
  const scaleOf: ScaleOf = (owner, ns) => {
    const w = workloads.find((x) => x.metadata.uid === owner.uid && x.metadata.namespace === ns);
    return w ? { uid: w.metadata.uid, scale: Number(w.spec?.replicas ?? 1) } : undefined;
  };
  for (const pdb of budgets) {
    const status = budgetStatus(pdb, pods, scaleOf, now);
    if (JSON.stringify(status) === JSON.stringify(pdb.status ?? {})) continue;
    await ctx.store
      .update(
        info('poddisruptionbudgets'),
        pdb.metadata.namespace,
        pdb.metadata.name,
        { status },
        { onlyStatus: true, expectedRV: pdb.metadata.resourceVersion },
      )
      .catch(() => undefined);
  }
}

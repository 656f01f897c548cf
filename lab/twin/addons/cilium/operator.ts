// The cilium-operator Deployment's status without operator pods: its replicas count as available once
// that many Cilium agents are Ready (the operator dials the API server with the same env and runs on the
// host network of those nodes), so `kubectl rollout status deploy/cilium-operator` behaves.
import { BUILTIN } from '../../api/resources.ts';
import type { AddonContext } from '../context.ts';

const info = (r: string) => BUILTIN.find((x) => x.resource === r)!;

export async function updateOperatorStatus(ctx: AddonContext): Promise<void> {
  const deployments = (await ctx.store.list(info('deployments'))).items.filter((d) => d.metadata.name === 'cilium-operator');
  if (!deployments.length) return;
  const pods = (await ctx.store.list(info('pods'))).items;
  for (const d of deployments) {
    const ready = pods.filter(
      (p) =>
        p.metadata.namespace === d.metadata.namespace &&
        p.metadata.labels?.['k8s-app'] === 'cilium' &&
        (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'),
    ).length;
    const want = Number(d.spec?.replicas ?? 1);
    const n = Math.min(want, ready);
    const status = {
      observedGeneration: d.metadata.generation ?? 1,
      replicas: want,
      updatedReplicas: want,
      readyReplicas: n,
      availableReplicas: n,
      unavailableReplicas: want - n,
      conditions: [
        { type: 'Available', status: n >= Math.max(1, want - 1) ? 'True' : 'False', reason: n ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable' },
      ],
    };
    if (JSON.stringify(d.status ?? {}) === JSON.stringify(status)) continue;
    await ctx.store
      .update(info('deployments'), d.metadata.namespace, d.metadata.name, { status }, { onlyStatus: true, expectedRV: d.metadata.resourceVersion })
      .catch(() => undefined);
  }
}

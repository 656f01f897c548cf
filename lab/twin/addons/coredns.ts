// CoreDNS without pods: k3s deploys CoreDNS from its packaged manifest (server/manifests/coredns.yaml) as
// the Deployment kube-system/coredns (label k8s-app=kube-dns). Its pod needs the CNI, so the twin counts
// its replicas ready once any Node is Ready (the CNI hook) and unready while none is.
import { BUILTIN } from '../api/resources.ts';
import type { AddonContext } from './context.ts';

const info = (r: string) => BUILTIN.find((x) => x.resource === r)!;

function coreDnsDeployment() {
  const labels = { 'k8s-app': 'kube-dns' };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'coredns', namespace: 'kube-system', labels: { ...labels, 'kubernetes.io/name': 'CoreDNS', 'objectset.rio.cattle.io/hash': 'twin' } },
    spec: {
      revisionHistoryLimit: 0,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          priorityClassName: 'system-cluster-critical',
          serviceAccountName: 'coredns',
          containers: [{ name: 'coredns', image: 'rancher/mirrored-coredns-coredns:1.12.3', args: ['-conf', '/etc/coredns/Corefile'] }],
        },
      },
    },
  };
}

export async function updateCoreDns(ctx: AddonContext): Promise<void> {
  const deployments = info('deployments');
  let d = await ctx.store.tryGet(deployments, 'kube-system', 'coredns');
  // Every server runs this; the first create wins, the others see a conflict and read it next time.
  if (!d) d = await ctx.store.create(deployments, 'kube-system', coreDnsDeployment()).catch(() => undefined);
  if (!d) return;
  const nodes = (await ctx.store.list(info('nodes'))).items;
  const cni = nodes.some((n) => (n.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'));
  const want = Number(d.spec?.replicas ?? 1);
  const n = cni ? want : 0;
  const status = {
    observedGeneration: d.metadata.generation ?? 1,
    replicas: want,
    updatedReplicas: want,
    readyReplicas: n,
    availableReplicas: n,
    unavailableReplicas: want - n,
    conditions: [{ type: 'Available', status: n >= want ? 'True' : 'False', reason: n >= want ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable' }],
  };
  if (JSON.stringify(d.status ?? {}) === JSON.stringify(status)) return;
  await ctx.store
    .update(deployments, 'kube-system', 'coredns', { status }, { onlyStatus: true, expectedRV: d.metadata.resourceVersion })
    .catch(() => undefined);
}

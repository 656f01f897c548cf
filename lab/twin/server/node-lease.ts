// The kubelet's heartbeat: a Lease named after the node in kube-node-lease, renewed every 10 s with a
// 40 s duration (kubernetes v1.33 pkg/kubelet/kubelet.go: renewInterval = NodeLeaseDurationSeconds ×
// nodeLeaseRenewIntervalFraction 0.25; NodeLeaseDurationSeconds defaults to 40 in
// pkg/kubelet/apis/config/v1beta1/defaults.go; k8s.io/component-helpers apimachinery/lease/controller.go sets
// holderIdentity to the node name, renewTime to now and an owner reference to the Node). With leases the
// kubelet rewrites the Node's status only every 5 minutes when nothing changed (nodeStatusReportFrequency),
// so the Lease, not the Ready condition's lastHeartbeatTime, says whether a node's kubelet is alive now.
import type { ObjectStore } from '../api/store.ts';
import { BUILTIN } from '../api/resources.ts';
import { ApiError } from '../api/status.ts';

const LEASES = BUILTIN.find((x) => x.resource === 'leases')!;
const NODES = BUILTIN.find((x) => x.resource === 'nodes')!;
const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const NODE_LEASE_DURATION_S = 40;

/** RFC 3339 with microseconds, as metav1.MicroTime serialises. */
const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export async function renewNodeLease(store: ObjectStore, node: string, now = new Date()): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const existing = await store.tryGet(LEASES, NODE_LEASE_NAMESPACE, node);
    const owner = await store.tryGet(NODES, undefined, node);
    const ownerReferences = owner ? [{ apiVersion: 'v1', kind: 'Node', name: node, uid: owner.metadata.uid }] : existing?.metadata?.ownerReferences;
    const spec = { holderIdentity: node, leaseDurationSeconds: NODE_LEASE_DURATION_S, renewTime: microTime(now) };
    try {
      if (existing) {
        await store.update(
          LEASES,
          NODE_LEASE_NAMESPACE,
          node,
          { ...existing, metadata: { ...existing.metadata, ownerReferences }, spec: { ...existing.spec, ...spec } },
          { expectedRV: existing.metadata.resourceVersion },
        );
      } else {
        await store.create(LEASES, NODE_LEASE_NAMESPACE, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: node, namespace: NODE_LEASE_NAMESPACE, ownerReferences },
          spec,
        });
      }
      return;
    } catch (e) {
      if (!(e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'AlreadyExists'))) throw e;
    }
  }
}

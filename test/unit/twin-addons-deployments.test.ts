// The twin's Deployment controller for plain workloads (lab/twin/addons/deployments.ts) and where it puts
// pods (lab/twin/addons/workload-placement.ts): a cordoned, NotReady or tainted node gets none, pods spread,
// an evicted pod is replaced on another node, the stand-in kubelet reports pods Ready after a second (or
// ErrImagePull for an image the node lacks), the Deployment's status reads as kube-controller-manager
// writes it; and the disruption controller's round over those pods (lab/twin/addons/disruption.ts).
import { describe, expect, it } from 'vitest';
import { BUILTIN } from '../../lab/twin/api/resources.ts';
import { ObjectStore } from '../../lab/twin/api/store.ts';
import { evict } from '../../lab/twin/api/eviction.ts';
import { deploymentRound, ownedElsewhere } from '../../lab/twin/addons/deployments.ts';
import { disruptionRound } from '../../lab/twin/addons/disruption.ts';
import { pickNode, schedulableNodes } from '../../lab/twin/addons/workload-placement.ts';
import { memoryEtcd } from '../support/memory-etcd.ts';

const info = (r: string) => BUILTIN.find((x) => x.resource === r)!;

const node = (name: string, o: { ready?: boolean; unschedulable?: boolean; taints?: any[] } = {}) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: {} },
  spec: { ...(o.unschedulable ? { unschedulable: true } : {}), taints: o.taints ?? [] },
  status: {
    addresses: [{ type: 'InternalIP', address: `10.0.0.${name.slice(1)}` }],
    conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
  },
});

const web = (replicas = 2, image = 'registry.k8s.io/pause:3.10') => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web' },
  spec: {
    replicas,
    selector: { matchLabels: { app: 'web' } },
    template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image }] } },
  },
});

describe('twin workload placement', () => {
  it('a cordoned, NotReady or NoSchedule-tainted node is not schedulable; a toleration lets a pod onto a tainted or cordoned one', () => {
    const nodes = [
      node('n1', { unschedulable: true }),
      node('n2', { ready: false }),
      node('n3', { taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] }),
      node('n4'),
      node('n5', { taints: [{ key: 'soft', effect: 'PreferNoSchedule' }] }),
    ];
    expect(schedulableNodes(nodes, {})).toEqual(['n4', 'n5']);
    expect(schedulableNodes(nodes, { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' }] })).toEqual(['n3', 'n4', 'n5']);
    expect(schedulableNodes(nodes, { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] })).toEqual([
      'n1',
      'n4',
      'n5',
    ]);
  });

  it('the next pod goes to the node with the fewest pods of its Deployment, ties by name', () => {
    const on = (n: string) => ({ spec: { nodeName: n } });
    expect(pickNode(['a', 'b', 'c'], [])).toBe('a');
    expect(pickNode(['a', 'b', 'c'], [on('a'), on('b')])).toBe('c');
    expect(pickNode(['a', 'b'], [on('a'), on('a'), on('b')])).toBe('b');
    expect(pickNode([], [])).toBeUndefined();
  });

  it('Deployments another twin keeps are left alone', () => {
    expect(ownedElsewhere({ metadata: { namespace: 'flux-system', name: 'source-controller' } })).toBe(true);
    expect(ownedElsewhere({ metadata: { namespace: 'kube-system', name: 'coredns' } })).toBe(true);
    expect(ownedElsewhere({ metadata: { namespace: 'kube-system', name: 'cilium-operator' } })).toBe(true);
    expect(ownedElsewhere({ metadata: { namespace: 'demo', name: 'web' } })).toBe(false);
  });
});

describe('twin Deployment controller for plain workloads', () => {
  async function cluster(images?: { has: (r: string) => boolean; pullError: (r: string) => string }) {
    const store = new ObjectStore(memoryEtcd());
    const ctx = { store, node: 'n2', images } as any;
    await store.create(info('namespaces'), undefined, { metadata: { name: 'demo' } });
    for (const n of [node('n1', { unschedulable: true }), node('n2'), node('n3')]) await store.create(info('nodes'), undefined, n);
    const boundAt = new Map<string, number>();
    let t = Date.now();
    const round = async (advanceMs = 0) => {
      t += advanceMs;
      await deploymentRound(ctx, boundAt, t);
    };
    const pods = async () => (await store.list(info('pods'), 'demo')).items;
    return { store, ctx, round, pods };
  }

  it('keeps the replicas on schedulable nodes, spread, Ready after a second; an evicted pod is replaced elsewhere; the status reads Available', async () => {
    const { store, ctx, round, pods } = await cluster();
    const d = await store.create(info('deployments'), 'demo', web());
    await round();
    let now = await pods();
    expect(now.map((p) => p.spec.nodeName).sort()).toEqual(['n2', 'n3']);
    for (const p of now) {
      expect(p.metadata.name).toMatch(/^web-[a-z0-9]{10}-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      expect(p.metadata.ownerReferences).toEqual([
        expect.objectContaining({
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `web-${p.metadata.labels['pod-template-hash']}`,
          uid: d.metadata.uid,
          controller: true,
        }),
      ]);
      expect(p.status.phase).toBe('Pending');
    }
    await round(1000);
    now = await pods();
    expect(now.map((p) => [p.status.phase, p.status.conditions.find((c: any) => c.type === 'Ready').status])).toEqual([
      ['Running', 'True'],
      ['Running', 'True'],
    ]);
    await round();
    expect((await store.get(info('deployments'), 'demo', 'web')).status).toMatchObject({
      observedGeneration: 1,
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
      conditions: [{ type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' }, expect.objectContaining({ type: 'Progressing' })],
    });
    // A PodDisruptionBudget over them, kept current by the disruption controller; the drain of n3.
    await store.create(info('poddisruptionbudgets'), 'demo', {
      metadata: { name: 'web' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
    });
    await disruptionRound(ctx);
    expect((await store.get(info('poddisruptionbudgets'), 'demo', 'web')).status).toMatchObject({ disruptionsAllowed: 1, currentHealthy: 2, expectedPods: 2 });
    const n3 = await store.get(info('nodes'), undefined, 'n3');
    await store.update(info('nodes'), undefined, 'n3', { ...n3, spec: { ...n3.spec, unschedulable: true } });
    const victim = now.find((p) => p.spec.nodeName === 'n3');
    await evict(store, 'demo', victim.metadata.name, { kind: 'Eviction', metadata: { name: victim.metadata.name } }, () =>
      store.delete(info('pods'), 'demo', victim.metadata.name),
    );
    await round();
    now = await pods();
    expect(now.map((p) => p.spec.nodeName)).toEqual(['n2', 'n2']);
    expect(now.some((p) => p.metadata.name === victim.metadata.name)).toBe(false);
    await disruptionRound(ctx);
    expect((await store.get(info('poddisruptionbudgets'), 'demo', 'web')).status).toMatchObject({ disruptionsAllowed: 0, currentHealthy: 1 });
    await round(1000);
    await disruptionRound(ctx);
    expect((await store.get(info('poddisruptionbudgets'), 'demo', 'web')).status).toMatchObject({ disruptionsAllowed: 1, currentHealthy: 2 });
    expect((await store.get(info('poddisruptionbudgets'), 'demo', 'web')).status.disruptedPods).toBeUndefined();
    // The Deployment deleted: its pods go.
    await store.delete(info('deployments'), 'demo', 'web');
    await round();
    expect(await pods()).toEqual([]);
  });

  it('an image the node neither has nor can pull: the pod stays Pending, ErrImagePull with the pull error, the Deployment unavailable', async () => {
    const images = { has: (r: string) => r !== 'registry.invalid/x:1', pullError: (r: string) => `failed to pull ${r}` };
    const { store, round, pods } = await cluster(images);
    await store.create(info('deployments'), 'demo', web(1, 'registry.invalid/x:1'));
    await round();
    await round(1000);
    const [p] = await pods();
    expect(p.status.phase).toBe('Pending');
    expect(p.status.containerStatuses[0].state).toEqual({ waiting: { reason: 'ErrImagePull', message: 'failed to pull registry.invalid/x:1' } });
    await round();
    expect((await store.get(info('deployments'), 'demo', 'web')).status).toMatchObject({
      readyReplicas: 0,
      availableReplicas: 0,
      conditions: [{ type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable' }, expect.anything()],
    });
  });
});

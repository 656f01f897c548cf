// The twin's API store: finalizers and deletionTimestamp as kube-apiserver keeps them, and the DaemonSet
// strategy's two generations (metadata.generation on any spec change, the template generation only when
// spec.template changes).
import { describe, expect, it } from 'vitest';
import { BUILTIN } from '../../lab/twin/api/resources.ts';
import { ObjectStore } from '../../lab/twin/api/store.ts';
import { applyPatch } from '../../lab/twin/api/patch.ts';
import { TEMPLATE_GENERATION } from '../../lab/twin/api/daemonset-strategy.ts';
import { memoryEtcd } from '../support/memory-etcd.ts';

const CM = BUILTIN.find((r) => r.resource === 'configmaps')!;
const DS = BUILTIN.find((r) => r.resource === 'daemonsets')!;
const HELMCHARTS = { group: 'helm.cattle.io', version: 'v1', resource: 'helmcharts', singular: 'helmchart', kind: 'HelmChart', namespaced: true, status: true };
const FIN = 'wrangler.cattle.io/on-helm-chart-remove';

describe('twin API store: finalizers', () => {
  it('a delete of an object with a finalizer marks it Terminating; removing the finalizer deletes it', async () => {
    const store = new ObjectStore(memoryEtcd());
    await store.create(HELMCHARTS, 'kube-system', { metadata: { name: 'cilium', finalizers: [FIN] }, spec: { chartContent: 'x' } });
    const marked = await store.delete(HELMCHARTS, 'kube-system', 'cilium');
    expect(marked.metadata).toMatchObject({ finalizers: [FIN], deletionGracePeriodSeconds: 0, generation: 2 });
    expect(marked.metadata.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    // Still there, and a second delete moves nothing.
    const again = await store.delete(HELMCHARTS, 'kube-system', 'cilium');
    expect(again.metadata.deletionTimestamp).toBe(marked.metadata.deletionTimestamp);
    expect((await store.get(HELMCHARTS, 'kube-system', 'cilium')).metadata.generation).toBe(2);
    // An update cannot take the mark off, nor add a finalizer.
    const cur = await store.get(HELMCHARTS, 'kube-system', 'cilium');
    await store.update(HELMCHARTS, 'kube-system', 'cilium', { ...cur, metadata: { ...cur.metadata, deletionTimestamp: undefined, annotations: { a: 'b' } } });
    expect((await store.get(HELMCHARTS, 'kube-system', 'cilium')).metadata.deletionTimestamp).toBe(marked.metadata.deletionTimestamp);
    const withMore = await store.get(HELMCHARTS, 'kube-system', 'cilium');
    await expect(
      store.update(HELMCHARTS, 'kube-system', 'cilium', { ...withMore, metadata: { ...withMore.metadata, finalizers: [FIN, 'x/y'] } }),
    ).rejects.toThrow(
      'HelmChart.helm.cattle.io "cilium" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"x/y"}',
    );
    // The JSON patch the engine sends takes the last finalizer off: the object is gone.
    const last = await store.get(HELMCHARTS, 'kube-system', 'cilium');
    const patched = applyPatch('json', last, [
      { op: 'test', path: '/metadata/finalizers/0', value: FIN },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ]);
    await store.update(HELMCHARTS, 'kube-system', 'cilium', patched, { expectedRV: last.metadata.resourceVersion });
    expect(await store.tryGet(HELMCHARTS, 'kube-system', 'cilium')).toBeUndefined();
  });

  it('without finalizers a delete deletes at once; a finalizer taken off before the delete leaves nothing to wait for', async () => {
    const store = new ObjectStore(memoryEtcd());
    await store.create(CM, 'default', { metadata: { name: 'a', finalizers: ['x/y'] }, data: {} });
    const cur = await store.get(CM, 'default', 'a');
    await store.update(CM, 'default', 'a', { ...cur, metadata: { ...cur.metadata, finalizers: [] } });
    expect(await store.tryGet(CM, 'default', 'a')).toBeDefined();
    await store.delete(CM, 'default', 'a');
    expect(await store.tryGet(CM, 'default', 'a')).toBeUndefined();
  });

  it('a created object carries no deletion mark', async () => {
    const store = new ObjectStore(memoryEtcd());
    const o = await store.create(CM, 'default', { metadata: { name: 'b', deletionTimestamp: '2020-01-01T00:00:00Z', deletionGracePeriodSeconds: 0 } });
    expect(o.metadata.deletionTimestamp).toBeUndefined();
    expect(o.metadata.deletionGracePeriodSeconds).toBeUndefined();
  });
});

describe('twin API store: the DaemonSet strategy', () => {
  const ds = (maxUnavailable: number, image: string) => ({
    metadata: { name: 'cilium', labels: { 'k8s-app': 'cilium' } },
    spec: {
      selector: { matchLabels: { 'k8s-app': 'cilium' } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable } },
      template: { metadata: { labels: { 'k8s-app': 'cilium' } }, spec: { containers: [{ name: 'cilium-agent', image }] } },
    },
  });
  const gens = (o: any) => [o.metadata.generation, o.metadata.annotations[TEMPLATE_GENERATION]];

  it('generation moves on any spec change, the template generation only on a template change', async () => {
    const store = new ObjectStore(memoryEtcd());
    expect(gens(await store.create(DS, 'kube-system', ds(1, 'a')))).toEqual([1, '1']);
    // A non-template field (the rollout width): generation 2, template generation still 1.
    expect(gens(await store.update(DS, 'kube-system', 'cilium', ds(2, 'a')))).toEqual([2, '1']);
    // The template: both move. The client's object carried no annotation: the server keeps its own.
    expect(gens(await store.update(DS, 'kube-system', 'cilium', ds(2, 'b')))).toEqual([3, '2']);
    // The same spec with its keys in another order is no change (Semantic.DeepEqual).
    const same = ds(2, 'b');
    same.spec = { template: same.spec.template, updateStrategy: same.spec.updateStrategy, selector: same.spec.selector } as any;
    expect(gens(await store.update(DS, 'kube-system', 'cilium', same))).toEqual([3, '2']);
    // A status write moves neither.
    expect(gens(await store.update(DS, 'kube-system', 'cilium', { status: { observedGeneration: 3 } }, { onlyStatus: true }))).toEqual([3, '2']);
  });
});

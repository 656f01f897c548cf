// The twin's helm-controller and the finalizer wrangler.cattle.io/on-helm-chart-remove, against an
// in-memory datastore: a managed chart gets it and is uninstalled when deleted; an unmanaged chart keeps
// it, so a delete leaves it Terminating with Cilium installed until the finalizer is taken off.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderHelmChart } from '../../src/k3s/helmchart.ts';
import { HelmController, REMOVE_FINALIZER, UNMANAGED } from '../../lab/twin/addons/helm/controller.ts';
import { applyPatch } from '../../lab/twin/api/patch.ts';
import { BUILTIN, ResourceRegistry, fromCRD } from '../../lab/twin/api/resources.ts';
import { ObjectStore } from '../../lab/twin/api/store.ts';
import { baseObjects } from '../../lab/twin/server/base-objects.ts';
import { memoryEtcd } from '../support/memory-etcd.ts';

const CHART = fileURLToPath(new URL('../../../shared/testdata/cilium-1.19.5.tgz', import.meta.url));
const crds = baseObjects('10.43.0.1').filter((o) => o.kind === 'CustomResourceDefinition');
const HELMCHARTS = crds.flatMap(fromCRD).find((r) => r.resource === 'helmcharts')!;
const DS = BUILTIN.find((r) => r.resource === 'daemonsets')!;
const SECRETS = BUILTIN.find((r) => r.resource === 'secrets')!;
const JOBS = BUILTIN.find((r) => r.resource === 'jobs')!;

async function installed() {
  const etcd = memoryEtcd();
  const store = new ObjectStore(etcd);
  const registry = new ResourceRegistry(async () => crds);
  for (const ns of ['kube-system']) await store.create(BUILTIN[0], undefined, { metadata: { name: ns } });
  const hc = parse(
    renderHelmChart({
      releaseName: 'cilium',
      namespace: 'kube-system',
      chartTgz: readFileSync(CHART),
      values: { k8sServiceHost: '10.77.0.9', k8sServicePort: 6443 },
    }),
  );
  await store.create(HELMCHARTS, 'kube-system', hc);
  const controller = new HelmController({ store, registry, etcd } as any);
  await controller.reconcile();
  return { store, controller };
}

const releases = async (store: ObjectStore) => (await store.list(SECRETS, 'kube-system')).items.filter((s) => s.metadata.labels?.owner === 'helm').length;

describe('helm-controller twin: the on-helm-chart-remove finalizer', () => {
  it('a managed chart gets the finalizer; deleting it uninstalls the release, then the chart goes', async () => {
    const { store, controller } = await installed();
    expect((await store.get(HELMCHARTS, 'kube-system', 'cilium')).metadata.finalizers).toEqual([REMOVE_FINALIZER]);
    expect(await store.tryGet(DS, 'kube-system', 'cilium')).toBeDefined();
    await store.delete(HELMCHARTS, 'kube-system', 'cilium');
    expect((await store.get(HELMCHARTS, 'kube-system', 'cilium')).metadata.deletionTimestamp).toBeDefined();
    await controller.reconcile();
    expect(await store.tryGet(HELMCHARTS, 'kube-system', 'cilium')).toBeUndefined();
    expect(await store.tryGet(DS, 'kube-system', 'cilium')).toBeUndefined();
    expect(await releases(store)).toBe(0);
  });

  it('an unmanaged chart keeps its finalizer: a delete leaves it Terminating and Cilium installed, until the finalizer is taken off', async () => {
    const { store, controller } = await installed();
    const cur = await store.get(HELMCHARTS, 'kube-system', 'cilium');
    await store.update(HELMCHARTS, 'kube-system', 'cilium', { ...cur, metadata: { ...cur.metadata, annotations: { [UNMANAGED]: 'true' } } });
    await controller.reconcile();
    // The generating handler returns nothing for an unmanaged chart: its install Job goes.
    expect(await store.tryGet(JOBS, 'kube-system', 'helm-install-cilium')).toBeUndefined();
    await store.delete(HELMCHARTS, 'kube-system', 'cilium');
    for (let i = 0; i < 3; i++) await controller.reconcile();
    const stuck = await store.get(HELMCHARTS, 'kube-system', 'cilium');
    expect(stuck.metadata).toMatchObject({ finalizers: [REMOVE_FINALIZER], annotations: { [UNMANAGED]: 'true' } });
    expect(stuck.metadata.deletionTimestamp).toBeDefined();
    expect(await store.tryGet(DS, 'kube-system', 'cilium')).toBeDefined();
    // What the engine's hand-over sends: the finalizer off by a JSON patch; the chart goes, the release stays.
    const patched = applyPatch('json', stuck, [
      { op: 'test', path: '/metadata/finalizers/0', value: REMOVE_FINALIZER },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ]);
    await store.update(HELMCHARTS, 'kube-system', 'cilium', patched, { expectedRV: stuck.metadata.resourceVersion });
    expect(await store.tryGet(HELMCHARTS, 'kube-system', 'cilium')).toBeUndefined();
    await controller.reconcile();
    expect(await store.tryGet(DS, 'kube-system', 'cilium')).toBeDefined();
    expect(await releases(store)).toBe(1);
  });
});

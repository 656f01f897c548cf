// The hand-over's writes to the bootstrap's HelmChart go through the Kubernetes API over the run's SSH
// connection (phases/flux/handover.ts): the annotation as a JSON merge patch, the finalizer's removal as a JSON
// patch guarded by a `test`, the delete and a wait until the chart is not found (HELMCHART_NOT_GONE naming what
// holds it when it stays). Against a small HTTPS server standing for the founder's API; no command on the host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handoverChanges, type CiliumOwnership } from '../../phases/flux/handover.ts';
import type { ActionChange } from '../../src/engine/changes.ts';
import { REMOVE_FINALIZER, UNMANAGED } from '../../src/k3s/helmchart-object.ts';
import { CauseError } from '../../src/errors.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, bodyOf, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const founder = { name: 'k3s-prod-1', address: '10.0.0.10', role: 'server' as const, founder: true };
const own: CiliumOwnership = {
  helmChart: { name: 'cilium', namespace: 'kube-system' },
  helmRelease: { name: 'cilium', namespace: 'kube-system' },
  values: {},
} as CiliumOwnership;
const HC = '/apis/helm.cattle.io/v1/namespaces/kube-system/helmcharts/cilium';

let api: KubeApiFixture;
/** The chart as the apiserver holds it: its finalizers, whether a DELETE marked it, and every request asked. */
let chart: { finalizers: string[]; annotations: Record<string, string>; deleting: boolean; exists: boolean; goneAfterLooks: number };
const asked: { method?: string; type?: string; body: string }[] = [];

const notFound = statusOf(404, 'NotFound', 'helmcharts.helm.cattle.io "cilium" not found');
const object = () => ({
  kind: 'HelmChart',
  apiVersion: 'helm.cattle.io/v1',
  metadata: {
    name: 'cilium',
    namespace: 'kube-system',
    finalizers: chart.finalizers,
    annotations: chart.annotations,
    ...(chart.deleting && { deletionTimestamp: '2026-12-07T09:00:00Z' }),
  },
});

beforeAll(async () => {
  api = await kubeApiFixture(async (req, res) => {
    const body = await bodyOf(req);
    asked.push({ method: req.method, type: req.headers['content-type'], body });
    if (req.url !== HC || !chart.exists) return answer(res, 404, notFound);
    if (req.method === 'PATCH') {
      const patch = JSON.parse(body);
      if (Array.isArray(patch)) chart.finalizers = chart.finalizers.filter((_, i) => `/metadata/finalizers/${i}` !== patch[1].path);
      else Object.assign(chart.annotations, patch.metadata.annotations);
      return answer(res, 200, object());
    }
    if (req.method === 'DELETE') {
      chart.deleting = true;
      return answer(res, 200, object());
    }
    // A GET: the chart goes once its finalizers are off and the looks the test allows have passed.
    if (chart.deleting && !chart.finalizers.length && --chart.goneAfterLooks <= 0) {
      chart.exists = false;
      return answer(res, 404, notFound);
    }
    answer(res, 200, object());
  });
});
afterAll(() => api.close());

function context() {
  const { ctx } = fixture({ check: false, hosts: [founder] });
  const remote = api.remote(founder.name);
  let now = Date.parse('2026-12-07T09:00:00Z');
  const clock = { now: () => now, sleep: async (ms: number) => void (now += ms) };
  return { remote, ctx: { ...ctx, host: founder, clock, stateDir: api.stateDir(), remote: () => remote } };
}

const actions = (changes: ReturnType<typeof handoverChanges>) => changes.filter((c): c is ActionChange => c.kind === 'action');

describe('the hand-over of the HelmChart through the API', () => {
  it('annotates it unmanaged, takes its finalizer off (guarded by a test), deletes it and waits until it is not found', async () => {
    chart = { finalizers: [REMOVE_FINALIZER], annotations: {}, deleting: false, exists: true, goneAfterLooks: 2 };
    asked.length = 0;
    const { ctx, remote } = context();
    const changes = handoverChanges(own, { helmChart: { unmanaged: false, finalizers: chart.finalizers, deleting: false }, manifest: false }, founder.name);
    for (const a of actions(changes)) await a.run(ctx as any);
    expect(chart.annotations).toEqual({ [UNMANAGED]: 'true' });
    expect(chart.exists).toBe(false);
    expect(asked.map((a) => `${a.method} ${a.type ?? ''}`.trim())).toEqual([
      'PATCH application/merge-patch+json',
      'PATCH application/json-patch+json',
      'DELETE',
      // Still there at the first look after the delete: the wait looks again a second later.
      'GET',
      'GET',
    ]);
    expect(JSON.parse(asked[1].body)).toEqual([
      { op: 'test', path: '/metadata/finalizers/0', value: REMOVE_FINALIZER },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ]);
    expect(remote.commands).toEqual([]);
  });

  it('a chart another finalizer holds past the wait: HELMCHART_NOT_GONE naming the finalizers', async () => {
    chart = { finalizers: ['other/x'], annotations: { [UNMANAGED]: 'true' }, deleting: false, exists: true, goneAfterLooks: 1 };
    const { ctx } = context();
    const [del] = actions(handoverChanges(own, { helmChart: { unmanaged: true, finalizers: ['other/x'], deleting: false }, manifest: false }, founder.name));
    const err = await del.run(ctx as any).catch((e) => e);
    expect(err).toBeInstanceOf(CauseError);
    expect(err.causeId).toBe('HELMCHART_NOT_GONE');
    expect(err.message).toBe('HelmChart kube-system/cilium is still there and Terminating, held by the finalizers [other/x]');
  });
});

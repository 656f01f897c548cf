// The twin's pods/eviction subresource (lab/twin/api/eviction.ts) against its store: the Status bodies
// kube-apiserver sends (429 with the budget's cause, 500 for two budgets, 404, Success 201), the budget
// decremented and the pod recorded in disruptedPods so a second eviction at once is refused, and the
// disruption controller's status for a budget (lab/twin/api/disruption-budget.ts).
import { describe, expect, it } from 'vitest';
import { BUILTIN } from '../../lab/twin/api/resources.ts';
import { ObjectStore } from '../../lab/twin/api/store.ts';
import { ApiError } from '../../lab/twin/api/status.ts';
import { EVICTED, evict } from '../../lab/twin/api/eviction.ts';
import { budgetStatus } from '../../lab/twin/api/disruption-budget.ts';
import { memoryEtcd } from '../support/memory-etcd.ts';

const PODS = BUILTIN.find((r) => r.resource === 'pods')!;
const PDBS = BUILTIN.find((r) => r.resource === 'poddisruptionbudgets')!;
const NOW = new Date('2026-01-01T00:00:00Z');

const pod = (name: string, ready = true, labels: Record<string, string> = { app: 'web' }) => ({
  metadata: { name, labels, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'rs-uid', controller: true }] },
  spec: { nodeName: 'n1', containers: [{ name: 'web', image: 'x' }] },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
const budget = (name: string, spec: object = { minAvailable: 1 }) => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name },
  spec: { selector: { matchLabels: { app: 'web' } }, ...spec },
});
const eviction = (name: string) => ({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: 'demo' } });
const scaleOf = () => ({ uid: 'd-uid', scale: 2 });

/** A store with the pods, the budgets, and each budget's status as the disruption controller writes it. */
async function cluster(pods: any[], budgets: any[]) {
  const store = new ObjectStore(memoryEtcd());
  for (const p of pods) await store.create(PODS, 'demo', p);
  for (const b of budgets) {
    const created = await store.create(PDBS, 'demo', b);
    const all = (await store.list(PODS, 'demo')).items;
    await store.update(PDBS, 'demo', b.metadata.name, { status: budgetStatus(created, all, scaleOf) }, { onlyStatus: true });
  }
  const run = (name: string) => evict(store, 'demo', name, eviction(name), () => store.delete(PODS, 'demo', name));
  const failure = (name: string) =>
    run(name).then(
      () => undefined,
      (e: ApiError) => ({ code: e.code, status: JSON.parse(JSON.stringify(e.toStatus())), headers: e.headers() }),
    );
  return { store, run, failure };
}

describe('twin API: pods/eviction', () => {
  it('evicts while the budget allows it, records the pod in disruptedPods, and refuses the next with 429 and the budget in its cause', async () => {
    const { store, run, failure } = await cluster([pod('web-1'), pod('web-2')], [budget('web')]);
    expect((await store.get(PDBS, 'demo', 'web')).status).toMatchObject({ disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2 });
    expect(await run('web-1')).toEqual(EVICTED);
    expect(JSON.stringify(EVICTED)).toBe('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}');
    expect(await store.tryGet(PODS, 'demo', 'web-1')).toBeUndefined();
    const after = (await store.get(PDBS, 'demo', 'web')).status;
    expect(after.disruptionsAllowed).toBe(0);
    expect(Object.keys(after.disruptedPods)).toEqual(['web-1']);
    expect(after.conditions).toEqual([
      expect.objectContaining({ type: 'DisruptionAllowed', status: 'False', reason: 'InsufficientPods', message: '', observedGeneration: 1 }),
    ]);
    // The second eviction, before the controller has looked again: the budget's status as the first left it.
    const refused = await failure('web-2');
    expect(refused?.code).toBe(429);
    expect(JSON.stringify(refused?.status)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod\'s disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web needs 1 healthy pods and has 2 currently"}]},"code":429}',
    );
    expect(refused?.headers).toEqual({});
    expect(await store.tryGet(PODS, 'demo', 'web-2')).toBeDefined();
    // The controller's next look: web-1 is gone, one pod healthy, none allowed; the cause says so.
    const now = (await store.get(PDBS, 'demo', 'web')) as any;
    await store.update(PDBS, 'demo', 'web', { status: budgetStatus(now, (await store.list(PODS, 'demo')).items, scaleOf) }, { onlyStatus: true });
    expect((await failure('web-2'))?.status.details.causes[0].message).toBe('The disruption budget web needs 1 healthy pods and has 1 currently');
  });

  it('a budget whose status is behind its generation: 429 "still being processed", retry after 10 s', async () => {
    const { store, failure } = await cluster([pod('web-1'), pod('web-2')], [budget('web')]);
    const b = await store.get(PDBS, 'demo', 'web');
    await store.update(PDBS, 'demo', 'web', { ...b, spec: { ...b.spec, minAvailable: 0 } });
    const r = await failure('web-1');
    expect(r).toMatchObject({
      code: 429,
      headers: { 'retry-after': '10' },
      status: {
        details: {
          causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web is still being processed by the server.' }],
          retryAfterSeconds: 10,
        },
      },
    });
  });

  it('two budgets for one pod: 500 without a reason; no budget, a Pending pod: deleted at once', async () => {
    const two = await cluster([pod('web-1'), pod('web-2')], [budget('web'), budget('web-too', { maxUnavailable: 1 })]);
    expect(await two.failure('web-1')).toEqual({
      code: 500,
      headers: {},
      status: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
        code: 500,
      },
    });
    const none = await cluster([pod('other', true, { app: 'other' })], [budget('web')]);
    expect(await none.run('other')).toEqual(EVICTED);
    const pending = await cluster([{ ...pod('web-1'), status: { phase: 'Pending' } }], [budget('web', { minAvailable: 5 })]);
    expect(await pending.run('web-1')).toEqual(EVICTED);
  });

  it('an unready pod: deleted without the budget while the healthy ones suffice, or with AlwaysAllow; refused otherwise', async () => {
    const enough = await cluster([pod('web-1'), pod('web-2'), pod('web-3', false)], [budget('web', { minAvailable: 2 })]);
    expect(await enough.run('web-3')).toEqual(EVICTED);
    expect((await enough.store.get(PDBS, 'demo', 'web')).status.disruptedPods).toBeUndefined();
    const short = await cluster([pod('web-1'), pod('web-2', false)], [budget('web', { minAvailable: 2 })]);
    expect((await short.failure('web-2'))?.code).toBe(429);
    const always = await cluster([pod('web-1'), pod('web-2', false)], [budget('web', { minAvailable: 2, unhealthyPodEvictionPolicy: 'AlwaysAllow' })]);
    expect(await always.run('web-2')).toEqual(EVICTED);
  });

  it('a missing pod: 404 NotFound in the apiserver words; a name that differs from the URL: 400', async () => {
    const { store, failure } = await cluster([], [budget('web')]);
    expect(await failure('gone')).toEqual({
      code: 404,
      headers: {},
      status: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'pods "gone" not found',
        reason: 'NotFound',
        details: { name: 'gone', kind: 'pods' },
        code: 404,
      },
    });
    await expect(evict(store, 'demo', 'a', eviction('b'), async () => undefined)).rejects.toMatchObject({
      code: 400,
      message: 'name in URL does not match name in Eviction object',
    });
  });
});

describe('twin disruption controller: a budget status', () => {
  it('minAvailable, maxUnavailable and percentages; deleting and recently evicted pods are not healthy; SufficientPods', () => {
    const pods = [pod('a'), pod('b'), pod('c', false), { ...pod('d'), metadata: { ...pod('d').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }].map(
      (p) => ({
        ...p,
        metadata: { ...p.metadata, namespace: 'demo' },
      }),
    );
    const b = (spec: object, status?: object) => ({ ...budget('web', spec), metadata: { name: 'web', namespace: 'demo', generation: 3 }, status });
    expect(budgetStatus(b({ minAvailable: 1 }), pods, scaleOf, NOW)).toEqual({
      observedGeneration: 3,
      disruptionsAllowed: 1,
      currentHealthy: 2,
      desiredHealthy: 1,
      expectedPods: 4,
      conditions: [
        { type: 'DisruptionAllowed', status: 'True', observedGeneration: 3, lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'SufficientPods', message: '' },
      ],
    });
    // maxUnavailable 1 of the controller's scale 2: one healthy needed.
    expect(budgetStatus(b({ maxUnavailable: 1 }), pods, scaleOf, NOW)).toMatchObject({ desiredHealthy: 1, expectedPods: 2, disruptionsAllowed: 1 });
    expect(budgetStatus(b({ minAvailable: '100%' }), pods, scaleOf, NOW)).toMatchObject({ desiredHealthy: 2, disruptionsAllowed: 0 });
    // An eviction recorded a minute ago keeps `a` out of currentHealthy; one of three minutes ago is dropped.
    const evicted = budgetStatus(b({ minAvailable: 1 }, { disruptedPods: { a: '2025-12-31T23:59:00Z', b: '2025-12-31T23:57:00Z' } }), pods, scaleOf, NOW);
    expect(evicted).toMatchObject({ disruptedPods: { a: '2025-12-31T23:59:00Z' }, currentHealthy: 1, disruptionsAllowed: 0 });
    expect(evicted.conditions[0]).toMatchObject({ status: 'False', reason: 'InsufficientPods' });
    // No controller for a percentage: the sync fails safe.
    expect(budgetStatus(b({ maxUnavailable: '50%' }), pods, () => undefined, NOW)).toMatchObject({
      disruptionsAllowed: 0,
      conditions: [{ type: 'DisruptionAllowed', status: 'False', reason: 'SyncFailed', message: 'found no controllers for pod "a"' }],
    });
    // A budget whose selector matches no pod allows nothing.
    expect(budgetStatus(b({ minAvailable: 0, selector: { matchLabels: { app: 'none' } } }), pods, scaleOf, NOW)).toMatchObject({
      expectedPods: 0,
      disruptionsAllowed: 0,
    });
  });
});

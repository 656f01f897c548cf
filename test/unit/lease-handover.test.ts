// The VIP's hand-over before a rolling restart writes kube-vip's lease to another server as a compare-and-swap
// (src/k3s/vip-handover.ts writeLease), through the run's SSH connection to a server's API. kube-vip renews the
// lease every second, so a renewal between the read and the write is common: the apiserver refuses that write
// with a 409 Conflict, and it is read and written again. Any other refusal ends it at once. Against a small
// HTTPS server standing for the API, guarding the lease's resourceVersion as the apiserver does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostRef } from '../../src/engine/phase.ts';
import { writeLease } from '../../src/k3s/vip-handover.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, bodyOf, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const via: HostRef = { name: 's1', address: '10.0.0.10', role: 'server', founder: true };
const target: HostRef = { name: 's3', address: '10.0.0.12', role: 'server', founder: false };
const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock';
// The apiserver's words for a stale resourceVersion (kubernetes/apiserver v0.32.3 pkg/registry/generic/registry/store.go OptimisticLockErrorMsg).
const CONFLICT =
  'Operation cannot be fulfilled on leases.coordination.k8s.io "plndr-cp-lock": the object has been modified; please apply your changes to the latest version and try again';
const FORBIDDEN = 'leases.coordination.k8s.io "plndr-cp-lock" is forbidden: User "system:admin" cannot patch resource "leases"';

let api: KubeApiFixture;
/** How the server answers: kube-vip (on s2) renews the lease at each read until the `quietAfter`th, or a write is forbidden. */
let world: { rv: number; reads: number; quietAfter: number; forbidden: boolean; patches: any[] };

beforeAll(async () => {
  api = await kubeApiFixture(async (req, res) => {
    if (req.url !== LEASE) return answer(res, 404, statusOf(404, 'NotFound', 'not found'));
    if (req.method === 'GET') {
      world.reads++;
      const lease = {
        kind: 'Lease',
        apiVersion: 'coordination.k8s.io/v1',
        metadata: { name: 'plndr-cp-lock', namespace: 'kube-system', resourceVersion: String(world.rv) },
      };
      answer(res, 200, { ...lease, spec: { holderIdentity: 's2', leaseTransitions: 4 } });
      // kube-vip's renewal lands between this read and the write that follows it.
      if (world.reads < world.quietAfter) world.rv++;
      return;
    }
    const patch = JSON.parse(await bodyOf(req));
    world.patches.push({ type: req.headers['content-type'], patch });
    if (world.forbidden) return answer(res, 403, statusOf(403, 'Forbidden', FORBIDDEN));
    if (patch.metadata?.resourceVersion !== String(world.rv)) return answer(res, 409, statusOf(409, 'Conflict', CONFLICT));
    world.rv++;
    answer(res, 200, { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', metadata: { name: 'plndr-cp-lock', namespace: 'kube-system' } });
  });
});
afterAll(() => api.close());

function context(o: Partial<typeof world> = {}) {
  world = { rv: 100, reads: 0, quietAfter: 1, forbidden: false, patches: [], ...o };
  const { ctx } = fixture({ check: false, hosts: [via, target] });
  const remote = api.remote('s1');
  return { remote, ctx: { ...ctx, stateDir: api.stateDir(), remote: () => remote } };
}

describe('the lease handed to another server', () => {
  it('is read and written again when kube-vip renewed it in between, on the resourceVersion just read', async () => {
    const { ctx, remote } = context({ quietAfter: 3 });
    const r = await writeLease(ctx, via, target);
    expect(r).toEqual({ ok: true, said: 'lease written to s3 at attempt 3 (kube-vip renewed it between read and write)' });
    expect(world.patches).toHaveLength(3);
    expect(world.patches[2]).toMatchObject({
      type: 'application/merge-patch+json',
      patch: { metadata: { resourceVersion: '102' }, spec: { holderIdentity: 's3', leaseTransitions: 5 } },
    });
    // Through the API over the SSH connection: no k3s process on the server.
    expect(remote.commands).toEqual([]);
  });

  it("stops at the first refusal that is not a conflict, with kubectl's words", async () => {
    const { ctx } = context({ forbidden: true });
    expect(await writeLease(ctx, via, target)).toEqual({
      ok: false,
      said: `the lease could not be written to s3: Error from server (Forbidden): ${FORBIDDEN}`,
    });
    expect(world.patches).toHaveLength(1);
  });

  it('gives up after five conflicts in a row and says so', async () => {
    const { ctx } = context({ quietAfter: 99 });
    const r = await writeLease(ctx, via, target);
    expect(r.ok).toBe(false);
    expect(r.said).toMatch(/^the lease could not be written to s3: 5 writes refused as conflicts \(Error from server \(Conflict\)/);
    expect(world.patches).toHaveLength(5);
  });
});

// How the add-on twins decide they can reach and use the API: RBAC for their ServiceAccount, the
// service CIDR nothing routes, Go's dial error words.
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { renderKubeVip } from '../../phases/kube-vip/render.ts';
import { allowed, forbiddenMessage } from '../../lab/twin/addons/rbac.ts';
import { goDialError, inCidr, reachApi } from '../../lab/twin/addons/reach.ts';
import { matchKubeVipLog } from '../../phases/kube-vip/log-causes.ts';

function fakeStore(objects: any[]) {
  const byKind = (resource: string) => objects.filter((o) => `${o.kind.toLowerCase()}s` === resource);
  return {
    list: async (info: any, ns?: string) => ({ items: byKind(info.resource).filter((o) => !ns || o.metadata.namespace === ns), revision: 1 }),
    tryGet: async (info: any, ns: string | undefined, name: string) =>
      byKind(info.resource).find((o) => o.metadata.name === name && (!ns || o.metadata.namespace === ns)),
  } as any;
}
const sa = { namespace: 'kube-system', name: 'kube-vip' };
const leaseGet = { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-system', name: 'plndr-cp-lock' };
const kubeVipObjects = () => parseAllDocuments(renderKubeVip({ vip: '10.77.0.9', port: 6443, interfaceName: 'eth0' })).map((d) => d.toJSON());

describe('RBAC for the kube-vip ServiceAccount', () => {
  it("the engine's RBAC lets kube-vip get, create and update its lease", async () => {
    const store = fakeStore(kubeVipObjects());
    for (const verb of ['get', 'create', 'update']) expect(await allowed(store, sa, { ...leaseGet, verb })).toBe(true);
  });

  it('a ClusterRole without create on leases: get allowed, create refused with no object named (a create has none)', async () => {
    const objects = kubeVipObjects().map((o) =>
      o.kind === 'ClusterRole'
        ? { ...o, rules: o.rules.map((r: any) => (r.resources.includes('leases') ? { ...r, verbs: r.verbs.filter((v: string) => v !== 'create') } : r)) }
        : o,
    );
    const store = fakeStore(objects);
    expect(await allowed(store, sa, leaseGet)).toBe(true);
    const create = { ...leaseGet, verb: 'create', name: undefined };
    expect(await allowed(store, sa, create)).toBe(false);
    const msg = forbiddenMessage(sa, create);
    expect(msg).toBe(
      'leases.coordination.k8s.io is forbidden: User "system:serviceaccount:kube-system:kube-vip" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
    );
    expect(
      matchKubeVipLog(`E1130 03:00:00.000000       1 leaderelection.go:440] error initially creating leader election record: ${msg}`, '10.43.0.1')?.causeId,
    ).toBe('KUBE_VIP_RBAC_MISSING');
    // A rule restricted to resourceNames cannot allow a create, which names no object (as upstream RBAC).
    const named = fakeStore(
      kubeVipObjects().map((o) =>
        o.kind === 'ClusterRole'
          ? {
              ...o,
              rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'], resourceNames: ['plndr-cp-lock'] }],
            }
          : o,
      ),
    );
    expect(await allowed(named, sa, leaseGet)).toBe(true);
    expect(await allowed(named, sa, create)).toBe(false);
  });

  it('a cluster-scoped refusal says "at the cluster scope"', () => {
    expect(forbiddenMessage(sa, { verb: 'list', group: '', resource: 'nodes' })).toBe(
      'nodes is forbidden: User "system:serviceaccount:kube-system:kube-vip" cannot list resource "nodes" in API group "" at the cluster scope',
    );
  });

  it('without the ClusterRoleBinding: forbidden, in the apiserver words kube-vip logs', async () => {
    const store = fakeStore(kubeVipObjects().filter((o) => o.kind !== 'ClusterRoleBinding'));
    expect(await allowed(store, sa, leaseGet)).toBe(false);
    const msg = forbiddenMessage(sa, leaseGet);
    expect(msg).toBe(
      'leases.coordination.k8s.io "plndr-cp-lock" is forbidden: User "system:serviceaccount:kube-system:kube-vip" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
    );
    expect(
      matchKubeVipLog(`E1130 03:00:00.000000       1 leaderelection.go:436] error retrieving resource lock kube-system/plndr-cp-lock: ${msg}`, '10.43.0.1')
        ?.causeId,
    ).toBe('KUBE_VIP_RBAC_MISSING');
  });
});

describe('reaching the API server', () => {
  it('the service CIDR', () => {
    expect(inCidr('10.43.0.1', '10.43.0.0/16')).toBe(true);
    expect(inCidr('10.77.0.9', '10.43.0.0/16')).toBe(false);
  });

  it("a ClusterIP is not dialled: after the timeout, Go's i/o timeout", async () => {
    const t0 = Date.now();
    const r = await reachApi('10.43.0.1', 443, { caFile: '/nonexistent', serviceCidr: '10.43.0.0/16', timeoutMs: 200 });
    expect(r).toEqual({ ok: false, error: 'dial tcp 10.43.0.1:443: i/o timeout' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
  });

  it("connection errors in Go's words", () => {
    expect(goDialError('127.0.0.1', 1, Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe('dial tcp 127.0.0.1:1: connect: connection refused');
    expect(goDialError('10.77.0.9', 6443, Object.assign(new Error('x'), { code: 'EHOSTUNREACH' }))).toBe('dial tcp 10.77.0.9:6443: connect: no route to host');
  });
});

// verify's and the agents' gate's reads of the cluster (src/kube/get-reads.ts through readsThrough): plain GETs
// through the run's SSH connection to a server, the API's JSON; a missing object is undefined where the reader
// asks for one object; any other answer is KUBE_API_FAILED with the request and the API's words; a forward the
// SSH connection refuses is SSH_FORWARD_FAILED. Against a small HTTPS server standing for a server's API
// (test/unit/verify-reads.test.ts has verify's way through the servers and the fallback to `k3s kubectl`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readsThrough } from '../../src/kube/reads-through.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const server = { name: 'server-1', address: '10.0.0.10', role: 'server' as const, founder: true };
const NODE = { kind: 'Node', apiVersion: 'v1', metadata: { name: 'server-1', creationTimestamp: '2026-12-06T10:00:00Z' } };
const POD = { metadata: { name: 'cilium-abcde', namespace: 'kube-system' }, status: { phase: 'Running' } };
let api: KubeApiFixture;
let broken = false;
const asked: string[] = [];

beforeAll(async () => {
  api = await kubeApiFixture((req, res) => {
    asked.push(req.url ?? '');
    if (broken) return answer(res, 403, statusOf(403, 'Forbidden', 'nodes is forbidden: User "x" cannot list resource "nodes"'));
    if (req.url === '/api/v1/nodes') return answer(res, 200, { kind: 'NodeList', apiVersion: 'v1', items: [NODE] });
    if (req.url === '/api/v1/nodes/server-1') return answer(res, 200, NODE);
    if (req.url === '/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dcilium') return answer(res, 200, { kind: 'PodList', items: [POD] });
    if (req.url === '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock')
      return answer(res, 200, { kind: 'Lease', spec: { holderIdentity: 'server-1', renewTime: '2026-12-06T10:00:01.000000Z' } });
    answer(res, 404, statusOf(404, 'NotFound', `not found: ${req.url}`));
  });
});
afterAll(() => api.close());

function context(o: { kubeconfig?: boolean; refuse?: boolean } = {}) {
  const { ctx } = fixture({ check: false, hosts: [server] });
  const remote = api.remote('server-1', {
    refuse: o.refuse,
    exec: () => ({ code: 0, stdout: JSON.stringify({ kind: 'NodeList', items: [{ metadata: { name: 'from-kubectl' } }] }), stderr: '' }),
  });
  return { remote, ctx: { ...ctx, stateDir: api.stateDir({ kubeconfig: o.kubeconfig }), remote: () => remote } };
}

describe('readsThrough', () => {
  it("reads the API's JSON through the server's connection, times as the API wrote them; no command on the server", async () => {
    broken = false;
    asked.length = 0;
    const { ctx, remote } = context();
    const reads = await readsThrough(ctx, server);
    expect(await reads.nodes()).toEqual([NODE]);
    expect(await reads.node('server-1')).toEqual(NODE);
    expect(await reads.pods('kube-system', 'k8s-app=cilium')).toEqual([POD]);
    expect((await reads.lease('kube-system', 'plndr-cp-lock')).spec?.renewTime).toBe('2026-12-06T10:00:01.000000Z');
    expect(asked).toEqual([
      '/api/v1/nodes',
      '/api/v1/nodes/server-1',
      '/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dcilium',
      '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock',
    ]);
    expect(remote.commands).toEqual([]);
  });

  it('a Node or Deployment that is not there is undefined; a Lease that is not there is KUBE_API_FAILED naming the request', async () => {
    broken = false;
    const reads = await readsThrough(context().ctx, server);
    expect(await reads.node('retired-4')).toBeUndefined();
    expect(await reads.deployment('kube-system', 'coredns')).toBeUndefined();
    await expect(reads.lease('kube-system', 'gone')).rejects.toMatchObject({
      causeId: 'KUBE_API_FAILED',
      evidence: {
        command: 'k3s kubectl get lease -n kube-system gone -o json',
        seen: 'GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gone: HTTP 404 not found: /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gone',
      },
    });
  });

  it("a refusal of the API is KUBE_API_FAILED with its status and the Status's message", async () => {
    broken = true;
    const reads = await readsThrough(context().ctx, server);
    await expect(reads.nodes()).rejects.toMatchObject({
      causeId: 'KUBE_API_FAILED',
      message: 'the Kubernetes API answered HTTP 403 to GET /api/v1/nodes: nodes is forbidden: User "x" cannot list resource "nodes"',
    });
    broken = false;
  });

  it('a forward the SSH connection refuses is SSH_FORWARD_FAILED naming the host', async () => {
    const reads = await readsThrough(context({ refuse: true }).ctx, server);
    await expect(reads.nodes()).rejects.toMatchObject({ causeId: 'SSH_FORWARD_FAILED', host: 'server-1' });
  });
});

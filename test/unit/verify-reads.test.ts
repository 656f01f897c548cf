// verify's reads of the cluster (phases/verify/read.ts readCluster) through the Kubernetes API over the run's
// SSH connection to a server (a small HTTPS server standing for it, test/support/kube-api-fixture.ts): the
// founder asked first, the next server when the founder's connection does not forward, every server's failure
// named when none answers; a missing Deployment as an answer; a state folder without a kubeconfig read through
// `k3s kubectl` on the server instead.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../../src/engine/context.ts';
import { CauseError } from '../../src/errors.ts';
import type { HostRef } from '../../src/engine/host-ref.ts';
import { nodesSeen } from '../../src/k3s/nodes.ts';
import type { Remote } from '../../src/transport/types.ts';
import { readCluster } from '../../phases/verify/read.ts';
import { answer, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const NODE = {
  metadata: { name: 's4', labels: { 'node-role.kubernetes.io/control-plane': 'true' } },
  status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', lastHeartbeatTime: '2026-12-01T09:12:44Z' }] },
};
const LEASE = { metadata: { name: 'plndr-cp-lock', namespace: 'kube-system' }, spec: { holderIdentity: 's2' } };
const seen: string[] = [];
let hang = false;

function route(req: IncomingMessage, res: ServerResponse) {
  const url = req.url ?? '';
  seen.push(`${req.method} ${url}`);
  if (hang) return; // accepts, never answers
  if (url === '/api/v1/nodes') return answer(res, 200, { kind: 'NodeList', apiVersion: 'v1', metadata: {}, items: [NODE] });
  if (url === '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock') return answer(res, 200, LEASE);
  if (url === '/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dcilium')
    return answer(res, 200, {
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: {},
      items: [{ metadata: { name: 'cilium-abcde' }, spec: { nodeName: 's1', containers: [] } }],
    });
  if (url === '/apis/apps/v1/namespaces/kube-system/deployments/coredns')
    return answer(res, 404, statusOf(404, 'NotFound', 'deployments.apps "coredns" not found'));
  answer(res, 500, statusOf(500, 'InternalError', `no route ${req.method} ${url}`));
}

let api: KubeApiFixture;
beforeAll(async () => {
  api = await kubeApiFixture(route);
});
afterAll(() => api.close());

const SERVERS = ['s1', 's2', 's3'];
/** A run's context with three servers (s2 the founder) whose connections are `remotes`. */
function ctxOf(remotes: Record<string, Remote>, stateDir = api.stateDir()): RunContext {
  const servers = SERVERS.map((name, i) => ({ name, address: `10.0.0.1${i}` }));
  return {
    stateDir,
    inventory: { derived: { servers, agents: [], founder: servers[1] } },
    remote: (h: HostRef) => remotes[h.name],
  } as unknown as RunContext;
}
const remotesOf = (o: Partial<Record<string, Parameters<KubeApiFixture['remote']>[1]>> = {}) =>
  Object.fromEntries(SERVERS.map((s) => [s, api.remote(s, o[s])]));

describe('verify reads the cluster through the API', () => {
  it('through the founder first: the Nodes, with a heartbeat as the API writes it', async () => {
    const remotes = remotesOf();
    const read = await readCluster(ctxOf(remotes), (c) => c.nodes());
    expect(read.ok && read.vantage.name).toBe('s2');
    expect(remotes.s2.forwards).toEqual(['127.0.0.1:6443']);
    expect(remotes.s1.forwards).toEqual([]);
    expect(nodesSeen(read.ok ? read.value : [])).toEqual([
      { name: 's4', server: true, ready: { status: 'Unknown', reason: 'NodeStatusUnknown', message: undefined, heartbeat: '2026-12-01T09:12:44Z' } },
    ]);
  });

  it('the lease, the agents by label, and a Deployment the API says is not there', async () => {
    const ctx = ctxOf(remotesOf());
    const lease = await readCluster(ctx, (c) => c.lease('kube-system', 'plndr-cp-lock'));
    expect(lease.ok && lease.value.spec?.holderIdentity).toBe('s2');
    const pods = await readCluster(ctx, (c) => c.pods('kube-system', 'k8s-app=cilium'));
    expect(pods.ok && pods.value.map((p) => [p.metadata?.name, p.spec?.nodeName])).toEqual([['cilium-abcde', 's1']]);
    const coredns = await readCluster(ctx, (c) => c.deployment('kube-system', 'coredns'));
    expect(coredns).toMatchObject({ ok: true, value: undefined });
  });

  it("goes on to the next server when the founder's connection does not forward; names each when none does", async () => {
    const one = await readCluster(ctxOf(remotesOf({ s2: { refuse: true } })), (c) => c.nodes());
    expect(one.ok && one.vantage.name).toBe('s1');
    const none = await readCluster(ctxOf(remotesOf({ s1: { refuse: true }, s2: { refuse: true }, s3: { refuse: true } })), (c) => c.nodes());
    expect(none).toEqual({
      ok: false,
      seen: ['s2', 's1', 's3'].map((s) => `${s}: direct-tcpip to 127.0.0.1:6443 from ${s}: Connection refused`).join('; '),
    });
  });

  it('names an HTTP failure with its request and status', async () => {
    const read = await readCluster(ctxOf(remotesOf()), (c) => c.lease('kube-system', 'other'));
    expect(read.ok).toBe(false);
    expect(!read.ok && read.seen.split('; ')[0]).toBe(
      's2: GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/other: HTTP 500 no route GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/other',
    );
  });

  it('leaves a server whose API accepts but does not answer after 5 s', { timeout: 20_000 }, async () => {
    hang = true;
    try {
      const t0 = Date.now();
      const read = await readCluster(ctxOf(remotesOf({ s1: { refuse: true }, s3: { refuse: true } })), (c) => c.nodes());
      expect(read.ok).toBe(false);
      expect(!read.ok && read.seen.split('; ')[0]).toBe('s2: GET /api/v1/nodes: no answer: none within 5 s');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(4_900);
    } finally {
      hang = false;
    }
  });

  it("stops at once when every server's certificate is of another CA than the kubeconfig's: KUBECONFIG_CA_MISMATCH", async () => {
    const ctx = ctxOf(remotesOf(), api.stateDir({ otherCa: true }));
    const err = await readCluster(ctx, (c) => c.nodes()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CauseError);
    expect(err).toMatchObject({ causeId: 'KUBECONFIG_CA_MISMATCH', host: 's2' });
    expect((err as CauseError).evidence).toEqual({
      command: 'k3s kubectl get nodes -o json',
      seen: ['s2', 's1', 's3'].map((s) => `${s}: GET /api/v1/nodes: unable to verify the first certificate`).join('; '),
    });
  });

  it('a server that does not answer beside others of another CA: no verdict on the kubeconfig, the failures named', async () => {
    const ctx = ctxOf(remotesOf({ s2: { refuse: true } }), api.stateDir({ otherCa: true }));
    const read = await readCluster(ctx, (c) => c.nodes());
    expect(read).toEqual({
      ok: false,
      seen: [
        's2: direct-tcpip to 127.0.0.1:6443 from s2: Connection refused',
        ...['s1', 's3'].map((s) => `${s}: GET /api/v1/nodes: unable to verify the first certificate`),
      ].join('; '),
    });
  });

  it('without a kubeconfig in the state folder, reads with k3s kubectl on the server', async () => {
    const exec = (command: string) =>
      command.startsWith('k3s kubectl get deployment')
        ? { code: 1, stdout: '', stderr: 'Error from server (NotFound): deployments.apps "coredns" not found\n' }
        : { code: 0, stdout: JSON.stringify({ kind: 'NodeList', items: [NODE] }), stderr: '' };
    const remotes = remotesOf({ s2: { exec } });
    const ctx = ctxOf(remotes, api.stateDir({ kubeconfig: false }));
    const nodes = await readCluster(ctx, (c) => c.nodes());
    expect(nodes.ok && nodesSeen(nodes.value).map((n) => n.name)).toEqual(['s4']);
    expect(await readCluster(ctx, (c) => c.deployment('kube-system', 'coredns'))).toMatchObject({ ok: true, value: undefined });
    expect(remotes.s2.commands).toEqual([
      'k3s kubectl get nodes -o json --request-timeout=5s',
      'k3s kubectl get deployment -n kube-system coredns -o json --request-timeout=5s',
    ]);
  });
});

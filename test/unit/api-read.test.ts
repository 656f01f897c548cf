// A gate's read through the run's SSH connection (src/kube/api-read.ts): the API's JSON as `k3s kubectl get
// -o json` would print it, an error in kubectl's words, and `k3s kubectl` on the server while the state
// folder holds no kubeconfig. Against a small HTTPS server standing for a server's API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiDelete, apiPatch, apiRead, apiReadLists, namesOf, readyzFrom } from '../../src/kube/api-read.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const server = { name: 'server-1', address: '10.0.0.10', role: 'server' as const, founder: true };
const DS = { kind: 'DaemonSet', apiVersion: 'apps/v1', metadata: { name: 'cilium', namespace: 'kube-system', generation: 3 } };
const PODS = '/api/v1/namespaces/flux-system/pods';
const DEPLOYMENTS = '/apis/apps/v1/namespaces/flux-system/deployments';
const LISTS = {
  lists: [
    { path: PODS, kind: 'Pod' },
    { path: DEPLOYMENTS, kind: 'Deployment' },
  ],
  kubectl: 'get pods,deployments -n flux-system -o json',
};
const READ = { path: '/apis/apps/v1/namespaces/kube-system/daemonsets/cilium', kubectl: 'get daemonset -n kube-system cilium -o json' };

let api: KubeApiFixture;
let served: 'ds' | 'gone' | 'broken' = 'ds';
const asked: { url?: string; auth?: string; method?: string; accept?: string; type?: string; body?: string }[] = [];
const NODE = '/api/v1/nodes/k3s-prod-2';
const DELETE = { path: NODE, kubectl: 'delete node k3s-prod-2 --ignore-not-found --timeout=90s' };
const SECRETS = '/api/v1/namespaces/kube-system/secrets';
const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock';

beforeAll(async () => {
  api = await kubeApiFixture((req, res) => {
    const entry = {
      url: req.url,
      auth: req.headers.authorization,
      method: req.method,
      accept: req.headers.accept,
      type: req.headers['content-type'],
      body: '',
    };
    asked.push(entry);
    if (req.method === 'PATCH') {
      // The lease as the apiserver guards it: a merge patch carrying a resourceVersion that is no longer current is a Conflict.
      req.setEncoding('utf8');
      req.on('data', (d: string) => (entry.body += d));
      return void req.on('end', () => {
        if (req.url !== LEASE) return answer(res, 404, statusOf(404, 'NotFound', 'helmcharts.helm.cattle.io "cilium" not found'));
        if (JSON.parse(entry.body).metadata?.resourceVersion !== '7')
          return answer(
            res,
            409,
            statusOf(
              409,
              'Conflict',
              'Operation cannot be fulfilled on leases.coordination.k8s.io "plndr-cp-lock": the object has been modified; please apply your changes to the latest version and try again',
            ),
          );
        answer(res, 200, { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', metadata: { name: 'plndr-cp-lock', namespace: 'kube-system' } });
      });
    }
    if (served === 'broken') {
      res.writeHead(502);
      return void res.end('bad gateway\nupstream down');
    }
    if (req.url === READ.path && served === 'ds') return answer(res, 200, DS);
    // A Node held by k3s's etcd finalizer: the apiserver answers a DELETE with the object, marked.
    if (req.method === 'DELETE' && req.url === NODE && served === 'ds')
      return answer(res, 200, { kind: 'Node', apiVersion: 'v1', metadata: { name: 'k3s-prod-2', deletionTimestamp: '2026-12-07T05:00:00Z' } });
    if (req.method === 'DELETE' && req.url === NODE) return answer(res, 404, statusOf(404, 'NotFound', 'nodes "k3s-prod-2" not found'));
    // An object the server deletes at once: a Status naming it.
    if (req.method === 'DELETE' && req.url === `${SECRETS}/k3s-prod-2.node-password.k3s`)
      return answer(res, 200, { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name: 'k3s-prod-2.node-password.k3s', kind: 'secrets' } });
    // Asked as a Table of metadata, the Secrets come without their data.
    if (req.url === `${SECRETS}?includeObject=Metadata` && req.headers.accept?.includes('as=Table'))
      return answer(res, 200, {
        kind: 'Table',
        apiVersion: 'meta.k8s.io/v1',
        rows: ['k3s-prod-2.node-password.k3s', 'k3s-serving'].map((name) => ({ cells: [name], object: { kind: 'PartialObjectMetadata', metadata: { name } } })),
      });
    if (req.url === LEASE) return answer(res, 200, { kind: 'Lease', spec: { holderIdentity: 'k3s-prod-1' } });
    if (req.url === '/readyz' && served === 'ds') {
      res.writeHead(200);
      return void res.end('ok');
    }
    if (req.url === '/readyz') {
      res.writeHead(500);
      return void res.end('[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed');
    }
    // A list of a built-in kind: its items carry no kind of their own, as the API serves them.
    if (req.url === PODS) return answer(res, 200, { kind: 'PodList', apiVersion: 'v1', items: [{ metadata: { name: 'source-controller-1' } }] });
    if (req.url === DEPLOYMENTS && served === 'ds')
      return answer(res, 200, { kind: 'DeploymentList', apiVersion: 'apps/v1', items: [{ metadata: { name: 'source-controller' } }] });
    answer(res, 404, statusOf(404, 'NotFound', 'daemonsets.apps "cilium" not found'));
  });
});
afterAll(() => api.close());

function context(o: { kubeconfig?: boolean; refuse?: boolean } = {}) {
  const { ctx } = fixture({ check: false, hosts: [server] });
  const remote = api.remote('server-1', {
    refuse: o.refuse,
    exec: () => ({ code: 0, stdout: '{"kind":"DaemonSet","from":"kubectl"}', stderr: '' }),
  });
  return { remote, ctx: { ...ctx, stateDir: api.stateDir({ kubeconfig: o.kubeconfig }), remote: () => remote } };
}

describe('apiRead', () => {
  it("answers with the API's JSON through the server's connection, with the kubeconfig's credentials; no command on the server", async () => {
    served = 'ds';
    asked.length = 0;
    const { ctx, remote } = context();
    const r = await apiRead(ctx, server, READ);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(DS);
    expect(asked).toMatchObject([{ url: READ.path, auth: 'Bearer admin-token-not-printed', method: 'GET' }]);
    expect(remote.forwards).toEqual(['127.0.0.1:6443']);
    expect(remote.commands).toEqual([]);
  });

  it("an object that is not there fails as kubectl's does: Error from server (NotFound), the Status's message", async () => {
    served = 'gone';
    const r = await apiRead(context().ctx, server, READ);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'Error from server (NotFound): daemonsets.apps "cilium" not found' });
  });

  it('an answer that is no Status names its HTTP status and first line', async () => {
    served = 'broken';
    const r = await apiRead(context().ctx, server, READ);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'Error from server: an error on the server (HTTP 502): bad gateway' });
  });

  it("no answer (the forward refused: nothing listening, another cluster's certificate) is the server's own kubectl's to give", async () => {
    const { ctx, remote } = context({ refuse: true });
    const r = await apiRead(ctx, server, READ);
    expect(r).toMatchObject({ code: 0, stdout: '{"kind":"DaemonSet","from":"kubectl"}' });
    expect(remote.commands).toEqual([`k3s kubectl ${READ.kubectl}`]);
  });

  it('without a kubeconfig in the state folder: `k3s kubectl` on the server, as root', async () => {
    const { ctx, remote } = context({ kubeconfig: false });
    const r = await apiRead(ctx, server, READ);
    expect(r).toMatchObject({ code: 0, stdout: '{"kind":"DaemonSet","from":"kubectl"}' });
    expect(remote.commands).toEqual([`k3s kubectl ${READ.kubectl}`]);
    expect(remote.forwards).toEqual([]);
  });
});

describe('apiRead of names and of one field', () => {
  it('names asks a Table of metadata (no Secret data leaves the server) and prints the names as jsonpath would', async () => {
    served = 'ds';
    asked.length = 0;
    const r = await apiRead(context().ctx, server, { path: SECRETS, kubectl: 'get secrets -n kube-system -o name', table: true, print: namesOf });
    expect(r).toEqual({ code: 0, stdout: 'k3s-prod-2.node-password.k3s k3s-serving', stderr: '' });
    expect(asked).toMatchObject([
      { url: `${SECRETS}?includeObject=Metadata`, method: 'GET', accept: expect.stringMatching(/^application\/json;as=Table;v=v1;g=meta\.k8s\.io/) },
    ]);
  });

  it('print gives the field of the object, as -o jsonpath prints it', async () => {
    const r = await apiRead(context().ctx, server, {
      path: LEASE,
      kubectl: "get lease -o jsonpath='{.spec.holderIdentity}'",
      print: (l: any) => l.spec.holderIdentity,
    });
    expect(r).toEqual({ code: 0, stdout: 'k3s-prod-1', stderr: '' });
  });
});

describe('readyzFrom', () => {
  it("answers as kubectl get --raw /readyz does: ok, else the apiserver's failed check; no process on the host", async () => {
    served = 'ds';
    const { ctx, remote } = context();
    expect(await readyzFrom(ctx, server, '127.0.0.1', 6443)).toEqual({ code: 0, stdout: 'ok', stderr: '' });
    served = 'gone';
    expect(await readyzFrom(ctx, server, '127.0.0.1', 6443)).toEqual({ code: 1, stdout: '', stderr: 'HTTP 500: readyz check failed' });
    expect(remote.commands).toEqual([]);
  });

  it('no answer is the answer (an API that is down): not asked again through kubectl', async () => {
    const { ctx, remote } = context({ refuse: true });
    const r = await readyzFrom(ctx, server, '127.0.0.1', 6443);
    expect(r.code).toBe(1);
    expect(remote.commands).toEqual([]);
  });

  it('without a kubeconfig: k3s kubectl --server … on the host', async () => {
    const { ctx, remote } = context({ kubeconfig: false });
    await readyzFrom(ctx, server, '10.0.0.9', 6443);
    expect(remote.commands).toEqual(['k3s kubectl --server https://10.0.0.9:6443 get --raw /readyz --request-timeout=5s']);
  });
});

describe('apiDelete', () => {
  it('deletes through the connection and says what kubectl says; an object held by a finalizer is not waited for', async () => {
    served = 'ds';
    asked.length = 0;
    const { ctx, remote } = context();
    expect(await apiDelete(ctx, server, DELETE)).toEqual({ code: 0, stdout: 'node "k3s-prod-2" deleted', stderr: '' });
    expect(asked).toMatchObject([{ url: NODE, method: 'DELETE' }]);
    expect(remote.commands).toEqual([]);
  });

  it("a namespaced object deleted at once (a Status): kubectl's words name its namespace", async () => {
    served = 'ds';
    const r = await apiDelete(context().ctx, server, {
      path: `${SECRETS}/k3s-prod-2.node-password.k3s`,
      kubectl: 'delete secret -n kube-system k3s-prod-2.node-password.k3s',
    });
    expect(r).toEqual({ code: 0, stdout: 'secret "k3s-prod-2.node-password.k3s" deleted from kube-system namespace', stderr: '' });
  });

  it("one already gone is no failure (--ignore-not-found); a refusal is, in kubectl's words", async () => {
    served = 'gone';
    expect(await apiDelete(context().ctx, server, DELETE)).toEqual({ code: 0, stdout: '', stderr: '' });
    served = 'broken';
    expect(await apiDelete(context().ctx, server, DELETE)).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server: an error on the server (HTTP 502): bad gateway',
    });
  });

  it('without a kubeconfig, or without an answer: `k3s kubectl delete` on the server', async () => {
    for (const o of [{ kubeconfig: false }, { refuse: true }]) {
      const { ctx, remote } = context(o);
      await apiDelete(ctx, server, DELETE);
      expect(remote.commands).toEqual([`k3s kubectl ${DELETE.kubectl}`]);
    }
  });
});

describe('apiPatch', () => {
  const write = (resourceVersion: string) => ({
    path: LEASE,
    type: 'merge' as const,
    patch: { metadata: { resourceVersion }, spec: { holderIdentity: 'k3s-prod-2' } },
    verb: 'patched' as const,
    kubectl: `patch lease -n kube-system plndr-cp-lock --type merge -p '{"metadata":{"resourceVersion":"${resourceVersion}"}}'`,
  });

  it('sends the merge patch through the connection and says what kubectl says: <kind>.<group>/<name> patched', async () => {
    served = 'ds';
    asked.length = 0;
    const { ctx, remote } = context();
    expect(await apiPatch(ctx, server, write('7'))).toEqual({ code: 0, stdout: 'lease.coordination.k8s.io/plndr-cp-lock patched', stderr: '' });
    expect(asked).toMatchObject([{ url: LEASE, method: 'PATCH', type: 'application/merge-patch+json' }]);
    expect(JSON.parse(asked[0].body!)).toEqual(write('7').patch);
    expect(remote.commands).toEqual([]);
  });

  it("a refused write is kubectl's exit 1 and words (a stale resourceVersion: Conflict); a JSON patch says so in its type", async () => {
    expect(await apiPatch(context().ctx, server, write('6'))).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Error from server (Conflict): Operation cannot be fulfilled on leases.coordination.k8s.io "plndr-cp-lock": the object has been modified; please apply your changes to the latest version and try again',
    });
    asked.length = 0;
    const chart = '/apis/helm.cattle.io/v1/namespaces/kube-system/helmcharts/cilium';
    const r = await apiPatch(context().ctx, server, {
      path: chart,
      type: 'json',
      patch: [{ op: 'remove', path: '/metadata/finalizers/0' }],
      verb: 'patched',
      kubectl: 'patch …',
    });
    expect(r).toMatchObject({ code: 1, stderr: 'Error from server (NotFound): helmcharts.helm.cattle.io "cilium" not found' });
    expect(asked).toMatchObject([{ url: chart, method: 'PATCH', type: 'application/json-patch+json' }]);
  });

  it('without a kubeconfig, or without an answer: `k3s kubectl patch` on the server', async () => {
    for (const o of [{ kubeconfig: false }, { refuse: true }]) {
      const { ctx, remote } = context(o);
      await apiPatch(ctx, server, write('7'));
      expect(remote.commands).toEqual([`k3s kubectl ${write('7').kubectl}`]);
    }
  });
});

describe('the run log', () => {
  it('records each request through the API as a command would be: the request line and its answer, never a patch', async () => {
    served = 'ds';
    const recorded: { host: string; command: string; code: number | null; stdout: string }[] = [];
    const { ctx } = context();
    const logged = { ...ctx, log: { record: (e: any) => void recorded.push(e) } };
    await apiRead(logged, server, READ);
    await apiPatch(logged, server, {
      path: LEASE,
      type: 'merge',
      patch: { metadata: { resourceVersion: '7' } },
      verb: 'patched',
      kubectl: 'patch lease -n kube-system plndr-cp-lock --type merge -p …',
    });
    expect(recorded.map((e) => [e.host, e.command, e.code])).toEqual([
      ['server-1', `GET ${READ.path}   (through the SSH connection to server-1)`, 0],
      ['server-1', `PATCH ${LEASE} (application/merge-patch+json)   (through the SSH connection to server-1)`, 0],
    ]);
    expect(recorded[1].stdout).toBe('lease.coordination.k8s.io/plndr-cp-lock patched');
    expect(JSON.stringify(recorded)).not.toContain('resourceVersion');
  });
});

describe('apiReadLists', () => {
  it("merges the lists as kubectl's List of both kinds, each item naming its kind", async () => {
    served = 'ds';
    const r = await apiReadLists(context().ctx, server, LISTS);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { kind: 'Pod', metadata: { name: 'source-controller-1' } },
        { kind: 'Deployment', metadata: { name: 'source-controller' } },
      ],
    });
  });

  it("one list refused refuses the read, in kubectl's words", async () => {
    served = 'gone';
    const r = await apiReadLists(context().ctx, server, LISTS);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'Error from server (NotFound): daemonsets.apps "cilium" not found' });
  });

  it("no answer: the whole read is the server's kubectl's, once", async () => {
    const { ctx, remote } = context({ refuse: true });
    const r = await apiReadLists(ctx, server, LISTS);
    expect(r).toMatchObject({ code: 0, stdout: '{"kind":"DaemonSet","from":"kubectl"}' });
    expect(remote.commands).toEqual([`k3s kubectl ${LISTS.kubectl}`]);
  });
});

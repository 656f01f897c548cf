// The backup's object inventory through the Kubernetes API (src/backup/list-through.ts): discovery as kubectl
// api-resources reads it, then each listable resource as a Table of metadata (a Secret's data never leaves the
// server), printed as the command on the host prints it. A group whose discovery fails is left out, as kubectl
// api-resources leaves it out; a resource that fails to list fails the listing. Against a small HTTPS server
// standing for a server's API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listObjectsThrough } from '../../src/backup/list-through.ts';
import { objectKeys } from '../../src/backup/objects.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const server = { name: 'server-1', address: '10.0.0.10', role: 'server' as const, founder: true };
let api: KubeApiFixture;
let world: { refuseList?: string; refuseCore?: boolean; asked: { url?: string; accept?: string }[] };

const table = (rows: { name: string; namespace?: string }[]) => ({
  kind: 'Table',
  apiVersion: 'meta.k8s.io/v1',
  rows: rows.map((m) => ({ cells: [m.name], object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: m } })),
});

beforeAll(async () => {
  api = await kubeApiFixture((req, res) => {
    world.asked.push({ url: req.url, accept: req.headers.accept });
    const url = req.url ?? '';
    if (url === '/api/v1' && world.refuseCore) return answer(res, 401, statusOf(401, 'Unauthorized', 'Unauthorized'));
    if (url === '/api/v1')
      return answer(res, 200, {
        kind: 'APIResourceList',
        groupVersion: 'v1',
        resources: [
          { name: 'namespaces', kind: 'Namespace', namespaced: false, verbs: ['get', 'list'] },
          { name: 'namespaces/status', kind: 'Namespace', namespaced: false, verbs: ['get'] },
          { name: 'secrets', kind: 'Secret', namespaced: true, verbs: ['get', 'list'] },
          { name: 'pods', kind: 'Pod', namespaced: true, verbs: ['get', 'list'] },
          { name: 'bindings', kind: 'Binding', namespaced: true, verbs: ['create'] },
        ],
      });
    if (url === '/apis')
      return answer(res, 200, {
        kind: 'APIGroupList',
        groups: [
          { name: 'apps', preferredVersion: { groupVersion: 'apps/v1' } },
          { name: 'metrics.k8s.io', preferredVersion: { groupVersion: 'metrics.k8s.io/v1beta1' } },
          { name: 'broken.example.com', preferredVersion: { groupVersion: 'broken.example.com/v1' } },
        ],
      });
    if (url === '/apis/apps/v1')
      return answer(res, 200, {
        kind: 'APIResourceList',
        groupVersion: 'apps/v1',
        resources: [{ name: 'deployments', kind: 'Deployment', namespaced: true, verbs: ['list'] }],
      });
    if (url === '/apis/metrics.k8s.io/v1beta1')
      return answer(res, 200, { kind: 'APIResourceList', resources: [{ name: 'nodes', kind: 'NodeMetrics', namespaced: false, verbs: ['list'] }] });
    // An aggregated API that is down: its discovery fails.
    if (url === '/apis/broken.example.com/v1')
      return answer(res, 503, statusOf(503, 'ServiceUnavailable', 'the server is currently unable to handle the request'));
    if (world.refuseList && url.startsWith(world.refuseList)) return answer(res, 403, statusOf(403, 'Forbidden', 'deployments.apps is forbidden'));
    if (url === '/api/v1/namespaces?includeObject=Metadata') return answer(res, 200, table([{ name: 'default' }, { name: 'kube-system' }]));
    if (url === '/api/v1/secrets?includeObject=Metadata') return answer(res, 200, table([{ name: 'k3s-serving', namespace: 'kube-system' }]));
    if (url === '/apis/apps/v1/deployments?includeObject=Metadata') return answer(res, 200, table([{ name: 'coredns', namespace: 'kube-system' }]));
    answer(res, 404, statusOf(404, 'NotFound', `${url} not found`));
  });
});
afterAll(() => api.close());

function context(o: { kubeconfig?: boolean } = {}) {
  const { ctx } = fixture({ check: false, hosts: [server] });
  const remote = api.remote(server.name, { exec: () => ({ code: 0, stdout: 'Namespace  default\n', stderr: '' }) });
  return { remote, ctx: { ...ctx, stateDir: api.stateDir({ kubeconfig: o.kubeconfig }), remote: () => remote } };
}

describe('the object inventory through the API', () => {
  it("lists every listable resource of the preferred versions as Tables of metadata, as the host's command prints them", async () => {
    world = { asked: [] };
    const { ctx, remote } = context();
    const r = await listObjectsThrough(ctx, server);
    expect(r.code).toBe(0);
    expect(objectKeys(r.stdout)).toEqual(['Deployment/kube-system/coredns', 'Namespace//default', 'Namespace//kube-system', 'Secret/kube-system/k3s-serving']);
    const lists = world.asked.filter((a) => a.url?.includes('includeObject=Metadata'));
    // Pods, metrics and the sub-resources left out; every list asked as a Table.
    expect(lists.map((a) => a.url).sort()).toEqual([
      '/api/v1/namespaces?includeObject=Metadata',
      '/api/v1/secrets?includeObject=Metadata',
      '/apis/apps/v1/deployments?includeObject=Metadata',
    ]);
    for (const a of lists) expect(a.accept).toMatch(/as=Table/);
    expect(remote.commands).toEqual([]);
  });

  it('a resource that cannot be listed fails the listing, naming it and the API words', async () => {
    world = { refuseList: '/apis/apps/v1/deployments', asked: [] };
    const r = await listObjectsThrough(context().ctx, server);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'deployments.apps: Error from server (Forbidden): deployments.apps is forbidden' });
  });

  it("the API refusing discovery fails the listing in the API's words, and the run log shows it", async () => {
    world = { refuseCore: true, asked: [] };
    const recorded: any[] = [];
    const { ctx, remote } = context();
    const r = await listObjectsThrough({ ...ctx, log: { record: (e: any) => void recorded.push(e) } } as never, server);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'error: You must be logged in to the server (Unauthorized)' });
    expect(recorded).toMatchObject([{ host: 'server-1', code: 1, stderr: r.stderr, command: expect.stringMatching(/^GET \/api\/v1, \/apis/) }]);
    expect(remote.commands).toEqual([]);
  });

  it('without a kubeconfig in the state folder: the command on the host', async () => {
    world = { asked: [] };
    const { ctx, remote } = context({ kubeconfig: false });
    expect((await listObjectsThrough(ctx, server)).stdout).toBe('Namespace  default\n');
    expect(remote.commands[0]).toMatch(/api-resources --verbs=list -o name/);
  });
});

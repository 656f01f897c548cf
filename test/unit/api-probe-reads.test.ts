// Probes whose command's output is not one raw body, answered through the API (ApiReads, src/kube/api-read.ts
// apiGetOf): the release Secrets' labels and the applied objects' hashes, read as server-side Tables of
// metadata (no Secret's data reaches the engine or the run log), printed as the probe's kubectl prints them on
// the host, so one parser takes either. Against a small HTTPS server standing for a server's API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revisionsProbe, parseRevisions } from '../../phases/cilium/release-wait.ts';
import { APPLIED_HASH, type KubeObject } from '../../phases/flux/manifests.ts';
import { parseLive, probeObjects } from '../../phases/flux/applied-step.ts';
import type { ApiReads } from '../../src/engine/phase.ts';
import { apiGetOf } from '../../src/kube/api-read.ts';
import type { CommandLogEntry } from '../../src/transport/types.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const server = { name: 'server-1', address: '10.0.0.10', role: 'server' as const, founder: true };
const meta = (name: string, more: Record<string, unknown> = {}) => ({
  kind: 'PartialObjectMetadata',
  apiVersion: 'meta.k8s.io/v1',
  metadata: { name, ...more },
});
const table = (objects: unknown[]) => ({
  kind: 'Table',
  apiVersion: 'meta.k8s.io/v1',
  columnDefinitions: [],
  rows: objects.map((object) => ({ cells: [], object })),
});

const SECRETS = '/api/v1/namespaces/kube-system/secrets?labelSelector=owner%3Dhelm%2Cname%3Dcilium&includeObject=Metadata';
const RELEASES = [
  meta('sh.helm.release.v1.cilium.v1', { labels: { owner: 'helm', name: 'cilium', version: '1', status: 'superseded' } }),
  meta('sh.helm.release.v1.cilium.v2', { labels: { owner: 'helm', name: 'cilium', version: '2', status: 'deployed' } }),
];
const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const ROLES = '/apis/rbac.authorization.k8s.io/v1/clusterroles?includeObject=Metadata';

let api: KubeApiFixture;
const asked: { url?: string; accept?: string }[] = [];

beforeAll(async () => {
  api = await kubeApiFixture((req, res) => {
    asked.push({ url: req.url, accept: req.headers.accept });
    const wantsTable = (req.headers.accept ?? '').includes('as=Table');
    if (req.url === SECRETS && wantsTable) return answer(res, 200, table(RELEASES));
    if (req.url === CRD_PATH)
      return answer(res, 200, {
        kind: 'CustomResourceDefinitionList',
        items: [
          {
            metadata: { name: 'kustomizations.kustomize.toolkit.fluxcd.io', annotations: { [APPLIED_HASH]: 'h1' } },
            status: { conditions: [{ type: 'Established', status: 'True' }] },
          },
          { metadata: { name: 'ciliumnodes.cilium.io' }, status: { conditions: [{ type: 'Established', status: 'True' }] } },
        ],
      });
    if (req.url === ROLES && wantsTable)
      return answer(res, 200, table([meta('crd-controller-flux-system', { annotations: { [APPLIED_HASH]: 'h2' } }), meta('admin')]));
    answer(res, 403, statusOf(403, 'Forbidden', 'secrets is forbidden: User "x" cannot list resource "secrets"'));
  });
});
afterAll(() => api.close());

function context() {
  const { ctx } = fixture({ check: false, hosts: [server] });
  const remote = api.remote('server-1', { exec: () => ({ code: 0, stdout: 'from the host', stderr: '' }) });
  const logged: CommandLogEntry[] = [];
  const full = { ...ctx, stateDir: api.stateDir(), remote: () => remote };
  return { remote, logged, get: apiGetOf(full, { record: (e) => logged.push(e) }) };
}

describe('probes that read the API as a Table of metadata', () => {
  it("the Helm release's revisions: labels only, printed as the jsonpath prints them, and the log shows only that", async () => {
    asked.length = 0;
    const { get, logged, remote } = context();
    const probe = revisionsProbe({ name: 'cilium', namespace: 'kube-system' });
    const r = await get(server, probe.api!, { timeoutMs: 5_000, label: 'cilium.0.helmReleaseRevisions' });
    expect(r).toMatchObject({ code: 0, stdout: '1 superseded\n2 deployed\n' });
    expect(parseRevisions(r!.stdout)).toEqual([
      { version: 1, status: 'superseded' },
      { version: 2, status: 'deployed' },
    ]);
    expect(asked).toEqual([{ url: SECRETS, accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' }]);
    expect(logged).toHaveLength(1);
    expect(logged[0].command).toContain('GET /api/v1/namespaces/kube-system/secrets?labelSelector=owner%3Dhelm%2Cname%3Dcilium (as a Table of metadata)');
    expect(logged[0].stdout).toBe('1 superseded\n2 deployed\n');
    expect(remote.commands).toEqual([]);
  });

  it("a refusal is the probe's answer in kubectl's words", async () => {
    const { get } = context();
    const reads: ApiReads = { gets: [{ path: '/api/v1/namespaces/kube-system/secrets', table: true }], print: () => 'never' };
    const r = await get(server, reads, { timeoutMs: 5_000 });
    expect(r).toMatchObject({ code: 1, stdout: '', stderr: 'Error from server (Forbidden): secrets is forbidden: User "x" cannot list resource "secrets"' });
  });

  it("the applied objects' hashes: a list per kind, only the objects named, CRDs whole for Established; parsed as kubectl's columns", async () => {
    asked.length = 0;
    const { get } = context();
    const objects: KubeObject[] = [
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'kustomizations.kustomize.toolkit.fluxcd.io' } },
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'gitrepositories.source.toolkit.fluxcd.io' } },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'crd-controller-flux-system' } },
    ];
    const probes = probeObjects(objects);
    expect(Object.keys(probes)).toEqual(['objects0']);
    const r = await get(server, probes.objects0.api!, { timeoutMs: 5_000 });
    expect(r?.code).toBe(0);
    expect(asked.map((a) => [a.url, (a.accept ?? '').includes('as=Table')])).toEqual(
      expect.arrayContaining([
        [CRD_PATH, false],
        [ROLES, true],
      ]),
    );
    const live = parseLive({ objects0: r! });
    expect([...live]).toEqual([
      ['CustomResourceDefinition kustomizations.kustomize.toolkit.fluxcd.io', { hash: 'h1', established: true }],
      ['ClusterRole crd-controller-flux-system', { hash: 'h2', established: undefined }],
    ]);
  });

  it('a kind without a known list path leaves the namespace to kubectl', () => {
    const probes = probeObjects([
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'a', namespace: 'ns' } },
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'ns' } },
    ]);
    expect(probes.objects0.api).toBeUndefined();
    expect(probes.objects0.command).toContain('k3s kubectl get serviceaccount/a widget.example.com/w -n ns');
  });
});

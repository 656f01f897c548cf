// The install step's plan applied through the Kubernetes API over the run's SSH connection: the manifests as
// server-side applies (one PATCH of type application/apply-patch+yaml per object, in order, with kubectl's
// field manager and force), then the CRD wait; a wait that runs out is FLUX_CRDS_NOT_ESTABLISHED naming the CRDs
// still pending, a refused object is APPLY_FAILED naming it, and nothing waits after it. Without a kubeconfig in
// the state folder, `k3s kubectl apply --server-side` on the host with the objects on stdin. Against a small HTTPS
// server standing for the founder's API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChange } from '../../phases/flux/applied-step.ts';
import { crdWaitChange, establishedIn } from '../../phases/flux/install-wait.ts';
import type { KubeObject } from '../../phases/flux/manifests.ts';
import { applyPlan } from '../../src/engine/apply.ts';
import { causesOf } from '../../src/errors.ts';
import { fixture } from '../support/engine-fixture.ts';
import { answer, bodyOf, kubeApiFixture, statusOf, type KubeApiFixture } from '../support/kube-api-fixture.ts';

const CRD = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gitrepositories.source.toolkit.fluxcd.io';
const crd: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gitrepositories.source.toolkit.fluxcd.io' },
};
const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'flux-system' } };
const host = { name: 'k3s-1', address: '10.0.0.10', role: 'server' as const, founder: true };

let api: KubeApiFixture;
let world: { establishedAfterLooks: number; refuse?: string; asked: { method?: string; url?: string; type?: string; body: string }[] };

beforeAll(async () => {
  api = await kubeApiFixture(async (req, res) => {
    const body = await bodyOf(req);
    world.asked.push({ method: req.method, url: req.url, type: req.headers['content-type'], body });
    if (req.method === 'PATCH') {
      if (world.refuse && req.url!.includes(world.refuse))
        return answer(
          res,
          422,
          statusOf(422, 'Invalid', 'CustomResourceDefinition.apiextensions.k8s.io "gitrepositories.source.toolkit.fluxcd.io" is invalid'),
        );
      return answer(res, 201, JSON.parse(body));
    }
    const established = --world.establishedAfterLooks <= 0 ? 'True' : 'False';
    answer(res, 200, {
      ...crd,
      status: {
        conditions: [
          { type: 'NamesAccepted', status: 'True' },
          { type: 'Established', status: established },
        ],
      },
    });
  });
});
afterAll(() => api.close());

async function applyInstall(o: { kubeconfig?: boolean } = {}) {
  const { ctx } = fixture({ check: false, hosts: [host] });
  const remote = api.remote(host.name, {
    exec: () => ({
      code: 0,
      stdout: 'customresourcedefinition.apiextensions.k8s.io/gitrepositories.source.toolkit.fluxcd.io serverside-applied\n',
      stderr: '',
    }),
  });
  let now = 0;
  const clock = { now: () => now, sleep: async (ms: number) => void (now += ms) };
  const runCtx = { ...ctx, clock, stateDir: api.stateDir({ kubeconfig: o.kubeconfig }), remote: () => remote } as any;
  const d = { create: [ns, crd], update: [] };
  const changes = [...applyChange(d, { via: host.name }), ...crdWaitChange([ns, crd], new Map(), d, host.name)];
  try {
    await applyPlan(changes, host, runCtx, { phase: 'flux', step: 'install' });
    return { remote, causes: [] as [string, string | undefined][] };
  } catch (err) {
    return { remote, causes: causesOf(err).map((c) => [c.causeId, c.evidence.seen] as [string, string | undefined]) };
  }
}

describe('the install step applied through the API', () => {
  it('applies each object in order as a server-side apply, then waits until the CRD says Established; no command on the host', async () => {
    world = { establishedAfterLooks: 3, asked: [] };
    const r = await applyInstall();
    expect(r.causes).toEqual([]);
    expect(world.asked.map((a) => `${a.method} ${a.url}`)).toEqual([
      'PATCH /api/v1/namespaces/flux-system?fieldManager=bootstrap&force=true',
      `PATCH ${CRD}?fieldManager=bootstrap&force=true`,
      `GET ${CRD}`,
      `GET ${CRD}`,
      `GET ${CRD}`,
    ]);
    expect(world.asked[0].type).toBe('application/apply-patch+yaml');
    expect(JSON.parse(world.asked[1].body)).toEqual(crd);
    expect(r.remote.commands).toEqual([]);
  });

  it('a wait that runs out is FLUX_CRDS_NOT_ESTABLISHED naming the CRD still pending', async () => {
    world = { establishedAfterLooks: 999, asked: [] };
    const r = await applyInstall();
    expect(r.causes).toEqual([['FLUX_CRDS_NOT_ESTABLISHED', 'not Established within 60 s: gitrepositories.source.toolkit.fluxcd.io']]);
  });

  it("a refused object is APPLY_FAILED with the API's words, and nothing waits", async () => {
    world = { establishedAfterLooks: 1, refuse: 'customresourcedefinitions', asked: [] };
    const r = await applyInstall();
    expect(r.causes).toEqual([
      ['APPLY_FAILED', 'Error from server (Invalid): CustomResourceDefinition.apiextensions.k8s.io "gitrepositories.source.toolkit.fluxcd.io" is invalid'],
    ]);
    expect(world.asked.filter((a) => a.method === 'GET')).toEqual([]);
  });

  it('without a kubeconfig in the state folder: k3s kubectl apply --server-side on the host, the objects on stdin', async () => {
    world = { establishedAfterLooks: 1, asked: [] };
    const r = await applyInstall({ kubeconfig: false });
    expect(r.remote.commands[0]).toBe('k3s kubectl apply --server-side --force-conflicts --field-manager=bootstrap -f -');
  });

  it('reads Established=True only from a CRD that says so', () => {
    expect(establishedIn({ code: 0, stdout: JSON.stringify({ status: { conditions: [{ type: 'Established', status: 'True' }] } }) })).toBe(true);
    expect(establishedIn({ code: 0, stdout: JSON.stringify({ status: { conditions: [{ type: 'Established', status: 'False' }] } }) })).toBe(false);
    expect(establishedIn({ code: 1, stdout: '' })).toBe(false);
  });
});

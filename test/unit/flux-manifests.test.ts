// The objects the flux phase applies, and how a step plans them from what `kubectl get` printed.
import { describe, expect, it } from 'vitest';
import { describeChange } from '../../src/engine/changes.ts';
import { appliedObjects, appliesThisRun, applyChange, driftOf, parseLive, probeObjects } from '../../phases/flux/applied-step.ts';
import { crdWaitChange } from '../../phases/flux/install-wait.ts';
import {
  APPLIED_HASH,
  deployKeySecret,
  kubectlRef,
  objectHash,
  parseInstall,
  syncObjects,
  withAppliedHash,
  type KubeObject,
} from '../../phases/flux/manifests.ts';
import { publicKeyOf } from '../../phases/flux/deploy-key.ts';
import { fluxInstallYaml } from '../../lab/flux-install.ts';
import { causesOf } from '../../src/errors.ts';

const install = () => parseInstall(fluxInstallYaml(), 'flux-install.yaml').map((o) => withAppliedHash(o));
const ok = (stdout: string) => ({ stdout, stderr: '', code: 0 });

// An unencrypted ed25519 key made for this test only (ssh-keygen -t ed25519 -N '').
const KEY = `-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACA2tlyQT/K27aZQIubeBU4SjGcxdKJImQDeqooHGN3rmAAAAJARHMrlERzK
5QAAAAtzc2gtZWQyNTUxOQAAACA2tlyQT/K27aZQIubeBU4SjGcxdKJImQDeqooHGN3rmA
AAAEBXXHywHdozvOm9xOd/L9th3PTfwmO2TSVtdYkQw9GmDTa2XJBP8rbtplAi5t4FThKM
ZzF0okiZAN6qigcY3euYAAAACHRlc3Qta2V5AQIDBAU=
-----END OPENSSH PRIVATE KEY-----
`;

describe('parseInstall', () => {
  it('reads every object of the install manifest, the sync CRDs among them', () => {
    const objs = install();
    expect(objs.find((o) => o.kind === 'Namespace')?.metadata.name).toBe('flux-system');
    expect(objs.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name)).toContain('gitrepositories.source.toolkit.fluxcd.io');
  });
  it.each([
    ['kind: [', /not valid YAML/],
    ['apiVersion: v1\nkind: Namespace\nmetadata: {}\n', /no apiVersion, kind or metadata.name/],
    [
      'apiVersion: v1\nkind: Namespace\nmetadata: { name: flux-system }\n',
      /defines no CustomResourceDefinition gitrepositories.source.toolkit.fluxcd.io, kustomizations.kustomize.toolkit.fluxcd.io/,
    ],
  ])('%j is FLUX_INSTALL_INVALID', (text, why) => {
    let err: unknown;
    try {
      parseInstall(text, 'f.yaml');
    } catch (e) {
      err = e;
    }
    expect(causesOf(err)[0]?.causeId).toBe('FLUX_INSTALL_INVALID');
    expect(causesOf(err)[0]?.message).toMatch(why);
  });
});

describe('applied hash', () => {
  it('is the hash of the object without it, so applying it twice gives the same annotation', () => {
    const o: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'n' }, data: { a: '1' } };
    const once = withAppliedHash(o);
    expect(once.metadata.annotations?.[APPLIED_HASH]).toBe(objectHash(o));
    expect(withAppliedHash(once)).toEqual(once);
    expect(withAppliedHash({ ...o, data: { a: '2' } }).metadata.annotations?.[APPLIED_HASH]).not.toBe(objectHash(o));
  });
  it('kubectlRef names kind.group/name (core kinds without a group)', () => {
    expect(kubectlRef({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'source-controller' } })).toBe('deployment.apps/source-controller');
    expect(kubectlRef({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'flux-system' } })).toBe('namespace/flux-system');
  });
});

describe('syncObjects', () => {
  it('are what flux bootstrap makes: GitRepository (v1) with the deploy-key Secret, Kustomization (v1) on gitops.path with prune', () => {
    const [repo, ks] = syncObjects({ url: 'ssh://git@10.77.0.1/lab-gitops.git', branch: 'main', path: 'clusters/lab' });
    expect(repo).toMatchObject({
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'GitRepository',
      metadata: { name: 'flux-system', namespace: 'flux-system' },
      spec: { url: 'ssh://git@10.77.0.1/lab-gitops.git', ref: { branch: 'main' }, secretRef: { name: 'flux-system' } },
    });
    expect(ks).toMatchObject({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      spec: { path: './clusters/lab', prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
    });
  });
});

describe('deploy key', () => {
  it('derives identity.pub from the private key; the Secret holds identity, identity.pub and known_hosts', () => {
    const pub = publicKeyOf(KEY);
    expect(pub).toEqual({ pub: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDa2XJBP8rbtplAi5t4FThKMZzF0okiZAN6qigcY3euY\n' });
    const s = deployKeySecret({ identity: KEY, identityPub: (pub as { pub: string }).pub, knownHosts: '10.77.0.1 ssh-ed25519 AAAA\n' }) as any;
    expect(s.metadata).toMatchObject({ name: 'flux-system', namespace: 'flux-system' });
    expect(Object.keys(s.data)).toEqual(['identity', 'identity.pub', 'known_hosts']);
    expect(Buffer.from(s.data.identity, 'base64').toString()).toBe(KEY);
  });
  it('something else than a private key is named, without its content', () => {
    expect(publicKeyOf('not a key')).toEqual({ problem: expect.stringMatching(/not a usable SSH private key/) });
  });
  it("check mode shows the Secret's change as '(secret, not shown)', never its content", () => {
    const secret = deployKeySecret({ identity: KEY, identityPub: 'ssh-ed25519 AAAA\n', knownHosts: 'kh\n' });
    const [change] = applyChange(driftOf([secret], new Map()), { secret: true, via: 'k3s-1' });
    const view = describeChange(change);
    expect(view.summary).toBe('create Secret flux-system/flux-system (secret, not shown)');
    expect(JSON.stringify(view)).not.toContain(Buffer.from(KEY).toString('base64').slice(0, 40));
    expect(JSON.stringify(change)).not.toContain(Buffer.from(KEY).toString('base64').slice(0, 40));
    expect(view.detail).toContain("(the Secret's content not shown)");
  });
});

describe('plan from the probe', () => {
  const objs = install();
  const columns = (os: KubeObject[], established = 'True') =>
    os
      .map(
        (o) =>
          `${o.kind}   ${o.metadata.namespace ?? '<none>'}   ${o.metadata.name}   ${o.metadata.annotations?.[APPLIED_HASH]}   ${o.kind === 'CustomResourceDefinition' ? established : '<none>'}`,
      )
      .join('\n');

  it('probes with one kubectl get per namespace, read-only', () => {
    const p = probeObjects(objs);
    expect(Object.keys(p).length).toBe(2);
    for (const c of Object.values(p)) expect(c.command).toMatch(/^k3s kubectl get .* --ignore-not-found --no-headers -o custom-columns=/);
  });

  it('a cluster without Flux: create everything, then wait for the CRDs', () => {
    const live = parseLive({ objects0: ok(''), objects1: { stdout: '', stderr: 'connection refused', code: 1 } });
    const d = driftOf(objs, live);
    expect(d.create.length).toBe(objs.length);
    const changes = [...applyChange(d, { via: 'k3s-1' }), ...crdWaitChange(objs, live, d, 'k3s-1')];
    // Each a request through the Kubernetes API, kubectl on the host only without a kubeconfig.
    expect(changes.map((c) => c.runs[0].split('   (')[0])).toEqual([
      "PATCH <each object's path>?fieldManager=bootstrap&force=true (a server-side apply, application/apply-patch+yaml), one object after the other",
      'every 1 s, at most 60 s, until each says Established=True: GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/<each CRD>',
    ]);
    expect(changes[0].runs[0]).toContain(
      "without the state folder's kubeconfig: sudo k3s kubectl apply --server-side --force-conflicts --field-manager=bootstrap -f - there",
    );
    expect(describeChange(changes[0]).summary).toBe(
      `create ${objs.length} objects (1 Namespace, 1 ResourceQuota, 1 ClusterRole, 2 ClusterRoleBinding, 9 CustomResourceDefinition, 4 ServiceAccount, 3 Service, 3 NetworkPolicy, 4 Deployment)`,
    );
  });

  it('a converged cluster: nothing to do', () => {
    const cluster = objs.filter((o) => !o.metadata.namespace);
    const namespaced = objs.filter((o) => o.metadata.namespace);
    const live = parseLive({ objects0: ok(columns(cluster)), objects1: ok(columns(namespaced)) });
    const d = driftOf(objs, live);
    expect([...applyChange(d, { via: 'k3s-1' }), ...crdWaitChange(objs, live, d, 'k3s-1')]).toEqual([]);
  });

  it("the step's plan records whether it applies anything this run (the Flux gate proves new objects by a reconcile)", () => {
    const step = appliedObjects({ id: 'install', title: 't', objects: () => objs });
    const cluster = objs.filter((o) => !o.metadata.namespace);
    const namespaced = objs.filter((o) => o.metadata.namespace);
    const factOf = (probe: any) =>
      (step.plan({ probe, ctx: {}, host: { name: 'k3s-1' } } as any) as any).facts.find((f: any) => f.key === appliesThisRun('install').key)?.value;
    expect(factOf({ objects0: ok(columns(cluster)), objects1: ok(columns(namespaced)) })).toBe(false);
    expect(factOf({ objects0: ok(columns(cluster)), objects1: ok('') })).toBe(true);
  });

  it('one object applied with other content: update only it; a CRD not Established yet: wait', () => {
    const changed = objs.map((o) =>
      o.kind === 'Deployment' && o.metadata.name === 'source-controller' ? { ...o, metadata: { ...o.metadata, annotations: { [APPLIED_HASH]: 'old' } } } : o,
    );
    const live = parseLive({ objects0: ok(columns(changed, 'False')) });
    const d = driftOf(objs, live);
    expect(d.update.map((o) => o.metadata.name)).toEqual(['source-controller']);
    expect(crdWaitChange(objs, live, { create: [], update: [] }, 'k3s-1').length).toBe(1);
  });
});

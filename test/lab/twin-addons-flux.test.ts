// The Flux twins against the lab's GitOps git server, on a cluster the engine built through Cilium: the
// install manifest, the deploy-key Secret, the GitRepository and the Kustomization applied with kubectl as
// an operator would, and what Flux then reports — the fetched revision, the applied objects with their
// variables substituted, the HelmRelease adopting the bootstrap's Cilium release (same values: the agents
// do not roll; another value: they do) — and each failure with upstream's reason and message.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { hostExec, hosts } from '../../lab/api.ts';
import { NET, paths } from '../../lab/config.ts';
import { publishGitops, unauthorisedDeployKey } from '../../lab/gitops-inventory.ts';
import { GIT_SERVER_ADDRESS, gitServerPaths, gitopsUrl } from '../../lab/gitops-server.ts';
import { bootstrap, freshStateDir, resetCluster } from '../support/cluster.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab } from '../support/lab.ts';
import { editFile, labInventory } from '../support/lab-inventory.ts';

const HOST = 'k3s-lab-1';
const kubectl = async (args: string, input?: string) => (await hostExec(HOST, `k3s kubectl ${args}`, { input, timeoutMs: 120_000 })).stdout;
// As the flux phase applies: server-side, its own field manager.
const apply = (yaml: string) => kubectl('apply --server-side --force-conflicts --field-manager=bootstrap -f -', yaml);
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    last = await f().catch((e) => e);
    if (last !== undefined && !(last instanceof Error)) return last as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${last instanceof Error ? last.message : String(last)}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * The Ready condition of a Flux object once it is not Unknown (and, when given, has this status). Ready=True
 * counts only for the current generation; a failure as upstream writes it leaves observedGeneration behind,
 * so Ready=False counts once the controller wrote it for an attempt (lastHandledReconcileAt set, or any
 * failure when no request was made).
 */
async function ready(
  kind: string,
  name: string,
  status?: 'True' | 'False',
  ns = 'flux-system',
  timeoutMs = 60_000,
): Promise<{ status: string; reason: string; message: string }> {
  return (await readyObject(kind, name, status, ns, timeoutMs)).condition;
}

async function readyObject(
  kind: string,
  name: string,
  status?: 'True' | 'False',
  ns = 'flux-system',
  timeoutMs = 60_000,
): Promise<{ condition: { status: string; reason: string; message: string }; object: any }> {
  return until(
    `${kind} ${ns}/${name} Ready${status ? `=${status}` : ''}`,
    async () => {
      const o = JSON.parse(await kubectl(`get ${kind} -n ${ns} ${name} -o json`));
      const c = (o.status?.conditions ?? []).find((x: any) => x.type === 'Ready');
      if (!c || c.status === 'Unknown') return undefined;
      if (c.status === 'True' && o.status?.observedGeneration !== o.metadata.generation) return undefined;
      const req = o.metadata.annotations?.['reconcile.fluxcd.io/requestedAt'];
      if (req !== undefined && o.status?.lastHandledReconcileAt !== req) return undefined;
      return !status || c.status === status ? { condition: c, object: o } : undefined;
    },
    timeoutMs,
  );
}

const conditionOf = (o: any, type: string) => (o.status?.conditions ?? []).find((c: any) => c.type === type);

function secret(name: string, identityFile: string, knownHosts: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'flux-system' },
    data: { identity: b64(readFileSync(identityFile, 'utf8')), 'identity.pub': b64(readFileSync(`${identityFile}.pub`, 'utf8')), known_hosts: b64(knownHosts) },
  });
}

const gitRepository = (name: string, secretRef: string, branch = 'main') =>
  JSON.stringify({
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: 'GitRepository',
    metadata: { name, namespace: 'flux-system' },
    spec: { interval: '1m', url: gitopsUrl(), ref: { branch }, secretRef: { name: secretRef } },
  });

const kustomization = (name: string, path: string, spec: Record<string, unknown> = {}) =>
  JSON.stringify({
    apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
    kind: 'Kustomization',
    metadata: { name, namespace: 'flux-system' },
    spec: { interval: '10m', path, prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' }, ...spec },
  });

/** Extra folders beside the fixture's, each with one defect (or none) for one Kustomization. */
function addTestFolders(checkout: string): void {
  const put = (rel: string, text: string) => {
    mkdirSync(join(checkout, rel, '..'), { recursive: true });
    writeFileSync(join(checkout, rel), text);
  };
  put('tests/no-crd/widget.yaml', 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\n');
  put(
    'tests/strict/configmap.yaml',
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strict\n  namespace: default\ndata:\n  a: "${SET_ONE}"\n  b: "${NOT_SET}"\n',
  );
  put(
    'tests/health/deployment.yaml',
    'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: never-available\n  namespace: default\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      containers: [{name: x, image: "registry.invalid/x:1"}]\n',
  );
  put('tests/prune/kustomization.yaml', 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - keep.yaml\n  - goes.yaml\n');
  put('tests/prune/keep.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  namespace: default\ndata:\n  env: "${CLUSTER_ENV}"\n');
  put('tests/prune/goes.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: goes\n  namespace: default\n');
}

const dsTemplate = async () => JSON.parse(await kubectl('get ds -n kube-system cilium -o json'));
const revision = () => `main@sha1:${execFileSync('git', ['--git-dir', gitServerPaths().repo, 'rev-parse', 'main'], { encoding: 'utf8' }).trim()}`;

describeAsRoot('Flux twins against the lab GitOps server', () => {
  let checkout: string;

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    const inventory = labInventory({ gitops: addTestFolders });
    const r = await bootstrap(['--until', 'cilium'], { stateDir: freshStateDir(), inventory });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    checkout = join(inventory, '..', 'gitops');
    await apply(readFileSync(join(paths.artifacts, 'flux-install.yaml'), 'utf8'));
    await kubectl(
      'wait --for=condition=Established --timeout=60s crd/gitrepositories.source.toolkit.fluxcd.io crd/kustomizations.kustomize.toolkit.fluxcd.io crd/helmreleases.helm.toolkit.fluxcd.io',
    );
    const git = gitServerPaths();
    await apply(secret('flux-system', git.deployKey, readFileSync(git.knownHosts, 'utf8')));
  }, 600_000);

  afterAll(async () => {
    await resetCluster();
  });

  it('the controllers Deployments become available', async () => {
    for (const d of ['source-controller', 'kustomize-controller', 'helm-controller', 'notification-controller']) {
      expect(await kubectl(`-n flux-system rollout status deploy/${d} --timeout=60s`)).toMatch(`deployment "${d}" successfully rolled out`);
    }
  });

  it('the GitRepository is Ready with the published revision as its artifact', async () => {
    await apply(gitRepository('flux-system', 'flux-system'));
    const want = revision();
    expect(await ready('gitrepository', 'flux-system', 'True')).toMatchObject({ reason: 'Succeeded', message: `stored artifact for revision '${want}'` });
    const artifact = JSON.parse(await kubectl('get gitrepository -n flux-system flux-system -o jsonpath={.status.artifact}'));
    expect(artifact).toMatchObject({
      revision: want,
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      url: expect.stringContaining(`gitrepository/flux-system/flux-system/`),
    });
  });

  it("a key the server does not accept, a server not in known_hosts, another key for it, a branch that does not exist: GitOperationFailed with go-git's words", async () => {
    const wrong = unauthorisedDeployKey();
    const otherKey = readFileSync(`${wrong}.pub`, 'utf8').split(' ').slice(0, 2).join(' ');
    await apply(secret('wrong-key', wrong, readFileSync(gitServerPaths().knownHosts, 'utf8')));
    await apply(secret('unknown-host', gitServerPaths().deployKey, `${NET.base}3 ${otherKey}\n`));
    await apply(secret('other-host-key', gitServerPaths().deployKey, `${GIT_SERVER_ADDRESS} ${otherKey}\n`));
    await apply(
      [
        gitRepository('wrong-key', 'wrong-key'),
        gitRepository('unknown-host', 'unknown-host'),
        gitRepository('other-host-key', 'other-host-key'),
        gitRepository('no-branch', 'flux-system', 'nope'),
      ].join('\n'),
    );
    const prefix = `failed to checkout and determine revision: unable to clone '${gitopsUrl()}': `;
    expect(await ready('gitrepository', 'wrong-key', 'False')).toMatchObject({
      reason: 'GitOperationFailed',
      message: `${prefix}ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain`,
    });
    expect(await ready('gitrepository', 'unknown-host', 'False')).toMatchObject({
      reason: 'GitOperationFailed',
      message: `${prefix}ssh: handshake failed: knownhosts: key is unknown`,
    });
    expect(await ready('gitrepository', 'other-host-key', 'False')).toMatchObject({
      reason: 'GitOperationFailed',
      message: `${prefix}ssh: handshake failed: knownhosts: key mismatch`,
    });
    expect(await ready('gitrepository', 'no-branch', 'False')).toMatchObject({
      reason: 'GitOperationFailed',
      message: `failed to checkout and determine revision: unable to clone: couldn't find remote ref "refs/heads/nope": git repository: '${gitopsUrl()}'`,
    });
    // source-controller: a failed fetch is retried, so observedGeneration is not written (fluxcd/pkg runtime
    // AddPatchOptions) and Reconciling stays True with ProgressingWithRetry.
    const failed = JSON.parse(await kubectl('get gitrepository -n flux-system wrong-key -o json'));
    expect(failed.status.observedGeneration).toBeUndefined();
    expect(conditionOf(failed, 'Reconciling')).toMatchObject({
      status: 'True',
      reason: 'ProgressingWithRetry',
      message: 'processing object: new generation 0 -> 1',
    });
    await kubectl('delete gitrepository -n flux-system wrong-key unknown-host other-host-key no-branch');
  });

  it('a source that has a revision and then gets a key the server refuses: the remote listing fails, the artifact stays', async () => {
    await apply(secret('rotated', gitServerPaths().deployKey, readFileSync(gitServerPaths().knownHosts, 'utf8')));
    await apply(gitRepository('rotated', 'rotated'));
    expect(await ready('gitrepository', 'rotated', 'True')).toMatchObject({ reason: 'Succeeded' });
    await apply(secret('rotated', unauthorisedDeployKey(), readFileSync(gitServerPaths().knownHosts, 'utf8')));
    await kubectl(`annotate --overwrite gitrepository -n flux-system rotated reconcile.fluxcd.io/requestedAt=${Date.now()}`);
    expect(await ready('gitrepository', 'rotated', 'False')).toMatchObject({
      reason: 'GitOperationFailed',
      message: `failed to checkout and determine revision: unable to list remote for '${gitopsUrl()}': ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain`,
    });
    expect(await kubectl('get gitrepository -n flux-system rotated -o jsonpath={.status.artifact.revision}')).toBe(revision());
    await kubectl('delete gitrepository -n flux-system rotated');
  });

  it('the Kustomization applies the overlay; the platform Kustomization substitutes cluster-vars; the HelmRelease adopts Cilium without a roll', async () => {
    const before = await dsTemplate();
    await apply(kustomization('flux-system', './clusters/lab'));
    const rev = revision();
    expect(await ready('kustomization', 'flux-system', 'True')).toMatchObject({ reason: 'ReconciliationSucceeded', message: `Applied revision: ${rev}` });
    expect(await kubectl('get configmap -n flux-system cluster-vars -o jsonpath={.data.CLUSTER_ENV}')).toBe('lab');
    expect(await ready('kustomization', 'platform', 'True')).toMatchObject({ message: `Applied revision: ${rev}` });
    expect(await kubectl('get helmrelease -n kube-system cilium -o jsonpath={.spec.values.k8sServiceHost}')).toBe(NET.vip);
    expect(await ready('helmrelease', 'cilium', 'True', 'kube-system')).toMatchObject({
      reason: 'UpgradeSucceeded',
      message: expect.stringMatching(/^Helm upgrade succeeded for release kube-system\/cilium\.v2 with chart cilium@1\.19\.5$/),
    });
    const after = await dsTemplate();
    expect(after.spec.template).toEqual(before.spec.template);
    expect(after.metadata.generation).toBe(before.metadata.generation);
    expect(after.metadata.labels).toMatchObject({ 'helm.toolkit.fluxcd.io/name': 'cilium' });
    // A reconcile request to a HelmRelease in sync is answered without a new release.
    await kubectl('annotate --overwrite helmrelease -n kube-system cilium reconcile.fluxcd.io/requestedAt=lab-1');
    await until(
      'the request handled',
      async () => ((await kubectl('get helmrelease -n kube-system cilium -o jsonpath={.status.lastHandledReconcileAt}')) === 'lab-1' ? true : undefined),
      30_000,
    );
    expect(await ready('helmrelease', 'cilium', 'True', 'kube-system')).toMatchObject({ message: expect.stringContaining('cilium.v2 ') });
    // The hand-over: k3s's helm-controller leaves an unmanaged HelmChart alone, and deleting it keeps the release.
    // Its finalizer stays on (the remove handler is out of scope for an unmanaged chart): the chart stays
    // Terminating until it is taken off.
    await kubectl('annotate --overwrite -n kube-system helmchart.helm.cattle.io/cilium helmcharts.helm.cattle.io/unmanaged=true');
    await kubectl('delete -n kube-system helmchart.helm.cattle.io/cilium --wait=false');
    await new Promise((r) => setTimeout(r, 4000)); // a round of both helm-controllers
    expect(await kubectl('get -n kube-system helmchart.helm.cattle.io/cilium -o jsonpath={.metadata.finalizers[*]}')).toBe(
      'wrangler.cattle.io/on-helm-chart-remove',
    );
    expect(await kubectl('get secrets -n kube-system -l owner=helm,name=cilium,status=deployed -o name')).toBe('secret/sh.helm.release.v1.cilium.v2\n');
    await kubectl(`patch -n kube-system helmchart.helm.cattle.io/cilium --type=json -p '[{"op":"remove","path":"/metadata/finalizers/0"}]'`);
    expect(await kubectl('get -n kube-system helmchart.helm.cattle.io --ignore-not-found -o name')).toBe('');
    expect(await kubectl('get secrets -n kube-system -l owner=helm,name=cilium,status=deployed -o name')).toBe('secret/sh.helm.release.v1.cilium.v2\n');
    expect((await dsTemplate()).metadata.generation).toBe(before.metadata.generation);
    expect(await ready('helmrelease', 'cilium', 'True', 'kube-system')).toMatchObject({ reason: 'UpgradeSucceeded' });
    const inv = JSON.parse(await kubectl('get kustomization -n flux-system flux-system -o jsonpath={.status.inventory.entries}'));
    expect(inv.map((e: any) => e.id).sort()).toEqual(['flux-system_cluster-vars__ConfigMap', 'flux-system_platform_kustomize.toolkit.fluxcd.io_Kustomization']);
  });

  it('a kind without its CRD, a variable not set, dependsOn on a failing Kustomization, a missing path, a Deployment that never becomes available, a HelmRelease without its source: upstream reasons, messages and status bookkeeping', async () => {
    await apply(
      [
        kustomization('no-crd', './tests/no-crd'),
        kustomization('strict', './tests/strict', { postBuild: { substitute: { SET_ONE: '1' } } }),
        kustomization('after-no-crd', './tests/prune', { dependsOn: [{ name: 'no-crd' }] }),
        kustomization('no-path', './tests/missing'),
        // timeout 5s: Kustomization.GetTimeout never goes under 30 s.
        kustomization('health', './tests/health', { wait: true, timeout: '5s' }),
      ].join('\n'),
    );
    const rev = revision();
    const t0 = Date.now();
    expect(await ready('kustomization', 'no-crd', 'False')).toMatchObject({
      reason: 'ReconciliationFailed',
      message: 'Widget/default/w dry-run failed: no matches for kind "Widget" in version "example.com/v1"',
    });
    expect(await ready('kustomization', 'strict', 'False')).toMatchObject({
      reason: 'BuildFailed',
      message: expect.stringContaining('variable not set (strict mode): "NOT_SET"'),
    });
    expect(await ready('kustomization', 'after-no-crd', 'False')).toMatchObject({
      reason: 'DependencyNotReady',
      message: "dependency 'flux-system/no-crd' is not ready",
    });
    // Failures leave observedGeneration unwritten (finalizeStatus sets it only on Ready=True); the path
    // check comes before lastAttemptedRevision, dependsOn before both.
    const noPath = await readyObject('kustomization', 'no-path', 'False');
    expect(noPath.condition).toMatchObject({
      reason: 'ArtifactFailed',
      message: 'kustomization path not found: stat ./tests/missing: no such file or directory',
    });
    expect(noPath.object.status.observedGeneration).toBeUndefined();
    expect(noPath.object.status.lastAttemptedRevision).toBeUndefined();
    expect(conditionOf(noPath.object, 'Reconciling')).toMatchObject({
      status: 'True',
      reason: 'ProgressingWithRetry',
      message: `Fetching manifests for revision ${rev} with a timeout of 9m30s`,
    });
    const waiting = JSON.parse(await kubectl('get kustomization -n flux-system after-no-crd -o json'));
    expect(waiting.status.observedGeneration).toBeUndefined();
    expect(waiting.status.lastAttemptedRevision).toBeUndefined();
    const strict = JSON.parse(await kubectl('get kustomization -n flux-system strict -o json'));
    expect(strict.status).toMatchObject({ lastAttemptedRevision: rev });
    expect(strict.status.observedGeneration).toBeUndefined();
    // While the health check runs: Ready Unknown, Reconciling and Healthy name the timeout (30 s, not 5 s).
    const running = `Running health checks for revision ${rev} with a timeout of 30s`;
    const during = await until('the health check running', async () => {
      const o = JSON.parse(await kubectl('get kustomization -n flux-system health -o json'));
      return conditionOf(o, 'Healthy')?.status === 'Unknown' ? o : undefined;
    });
    expect(conditionOf(during, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress' });
    expect(conditionOf(during, 'Reconciling')).toMatchObject({ status: 'True', reason: 'Progressing', message: running });
    expect(during.status.inventory.entries).toEqual([{ id: 'default_never-available_apps_Deployment', v: 'v1' }]);
    const health = await readyObject('kustomization', 'health', 'False', 'flux-system', 90_000);
    expect(health.condition).toMatchObject({
      reason: 'HealthCheckFailed',
      message: expect.stringMatching(
        /^health check failed after (\d+m)?\d+(\.\d+)?s: timeout waiting for: \[Deployment\/default\/never-available status: 'InProgress'\]$/,
      ),
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(30_000);
    expect(conditionOf(health.object, 'Healthy')).toMatchObject({
      status: 'False',
      reason: 'HealthCheckFailed',
      message: "timeout waiting for: [Deployment/default/never-available status: 'InProgress']",
    });
    expect(conditionOf(health.object, 'Reconciling')).toMatchObject({ status: 'True', reason: 'ProgressingWithRetry', message: running });
    expect(health.object.status.observedGeneration).toBeUndefined();
    expect(await kubectl('get configmap -n default strict --ignore-not-found')).toBe('');
    await kubectl('delete kustomization -n flux-system no-crd strict after-no-crd no-path health');
    await apply(
      JSON.stringify({
        apiVersion: 'helm.toolkit.fluxcd.io/v2',
        kind: 'HelmRelease',
        metadata: { name: 'no-source', namespace: 'default' },
        spec: { interval: '10m', chart: { spec: { chart: 'cilium', version: '1.19.5', sourceRef: { kind: 'HelmRepository', name: 'missing' } } }, values: {} },
      }),
    );
    expect(await ready('helmrelease', 'no-source', 'False', 'default')).toMatchObject({
      reason: 'SourceNotReady',
      message: `HelmChart 'default/default-no-source' is not ready: failed to get source: helmrepositories.source.toolkit.fluxcd.io "missing" not found`,
    });
    // errWaitForChart: helm-controller does not write observedGeneration for it.
    expect(JSON.parse(await kubectl('get helmrelease -n default no-source -o json')).status.observedGeneration).toBeUndefined();
    await kubectl('delete helmrelease -n default no-source');
  });

  it('a new revision: the dependency chain applies, a file removed is pruned, a changed Cilium value rolls the agents', async () => {
    await apply(
      kustomization('prune', './tests/prune', {
        dependsOn: [{ name: 'flux-system' }],
        postBuild: { substituteFrom: [{ kind: 'ConfigMap', name: 'cluster-vars' }] },
      }),
    );
    expect(await ready('kustomization', 'prune', 'True')).toMatchObject({ reason: 'ReconciliationSucceeded' });
    expect(await kubectl('get configmap -n default keep -o jsonpath={.data.env}')).toBe('lab');
    expect(await kubectl('get configmap -n default goes -o name')).toBe('configmap/goes\n');
    const before = await dsTemplate();

    editFile(join(checkout, 'tests', 'prune', 'kustomization.yaml'), '  - goes.yaml\n', '');
    editFile(
      join(checkout, 'platform', 'cilium', 'helmrelease.yaml'),
      'kubeProxyReplacement: true\n',
      'kubeProxyReplacement: true\n    extraEnv:\n      - name: LAB_ROLL\n        value: "1"\n',
    );
    const sha = await publishGitops(checkout);
    await kubectl(`annotate --overwrite gitrepository -n flux-system flux-system reconcile.fluxcd.io/requestedAt=${Date.now()}`);
    await until('the new revision applied by prune', async () =>
      (await ready('kustomization', 'prune')).message === `Applied revision: main@sha1:${sha}` ? true : undefined,
    );
    expect(await kubectl('get configmap -n default goes --ignore-not-found -o name')).toBe('');
    expect(await kubectl('get configmap -n default keep -o name')).toBe('configmap/keep\n');
    await until('the Cilium upgrade to v3', async () =>
      (await ready('helmrelease', 'cilium', 'True', 'kube-system')).message.includes('cilium.v3') ? true : undefined,
    );
    const after = await dsTemplate();
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    expect(after.spec.template.spec.containers[0].env).toContainEqual({ name: 'LAB_ROLL', value: '1' });
    await kubectl('-n kube-system rollout status ds/cilium --timeout=180s');
    const envs = await kubectl(
      `get pods -n kube-system -l k8s-app=cilium -o jsonpath='{range .items[*]}{.spec.containers[0].env[?(@.name=="LAB_ROLL")].value}{"\\n"}{end}'`,
    );
    // One agent pod per node of the lab, servers and agents alike, every one rolled.
    expect(envs.trim().split('\n')).toEqual(hosts().map(() => '1'));
    // Deleting a Kustomization with prune deletes what it applied (upstream's finalizer).
    await kubectl('delete kustomization -n flux-system prune');
    await until(
      'keep garbage collected',
      async () => ((await kubectl('get configmap -n default keep --ignore-not-found -o name')) === '' ? true : undefined),
      30_000,
    );
  }, 300_000);
});

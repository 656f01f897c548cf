// The last phase in the lab: a cold build of every phase ends with Flux Ready on the lab's git server and
// Cilium handed from the bootstrap's HelmChart to Flux's HelmRelease without a roll. Then, on the same
// cluster, each Flux failure the lab can produce is published to the git server and named by its ROOT
// cause with `--only flux`; the last case publishes the fixture again, so the file leaves Flux Ready. The
// fault-matrix row flux-controller-crashloop runs here too, on the converged cluster (the matrix's has no Flux).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { unauthorisedDeployKey } from '../../lab/gitops-inventory.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hostExec } from '../support/lab.ts';
import { bootstrap, freshStateDir, resetCluster, stopsOf } from '../support/cluster.ts';
import { editFile, labInventory } from '../support/lab-inventory.ts';
import { FAULT_ROWS } from '../support/fault-matrix.ts';
import { runFaultRow, type Injection } from '../support/fault-run.ts';

const FOUNDER = 'k3s-lab-1';
const kubectl = (args: string) => hostExec(FOUNDER, `k3s kubectl ${args}`, { allowFail: true });
const generation = async () => (await kubectl('get daemonset -n kube-system cilium -o jsonpath={.metadata.generation}')).stdout.trim();
const HELMCHART_GONE = 'Error from server (NotFound): helmcharts.helm.cattle.io "cilium" not found';
/** The DaemonSet's two generations and its agents' pod names (the same names: no pod was replaced). */
async function ciliumDs(): Promise<{ generation: number; templateGeneration: string; pods: string[] }> {
  const ds = JSON.parse((await kubectl('get daemonset -n kube-system cilium -o json')).stdout);
  const pods = JSON.parse((await kubectl('get pods -n kube-system -l k8s-app=cilium -o json')).stdout)
    .items.map((p: any) => p.metadata.name)
    .sort();
  return { generation: ds.metadata.generation, templateGeneration: ds.metadata.annotations['deprecated.daemonset.template.generation'], pods };
}

/** Adds `files` to the checkout and lists them in `dir`'s kustomization.yaml. */
function addResources(checkout: string, dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(checkout, dir, name), text);
  editFile(
    join(checkout, dir, 'kustomization.yaml'),
    /resources:\n/,
    `resources:\n${Object.keys(files)
      .map((f) => `  - ${f}\n`)
      .join('')}`,
  );
}

/** Polls `check` until it returns true, failing after `ms` with `what`. */
async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The run log a run printed the path of (`log: <path>`). */
const runLog = (stdout: string) => readFileSync(stdout.match(/^log: (.+)$/m)![1].trim(), 'utf8');

/** Flux's GitRepository asked to fetch now and waited for until it serves the head of `inv`'s checkout. */
async function sourceServes(inv: string): Promise<void> {
  const checkout: string = parse(readFileSync(inv, 'utf8')).gitops.checkout;
  const sha = execFileSync('git', ['-C', checkout, 'rev-parse', 'refs/heads/main'], { encoding: 'utf8' }).trim();
  expect(
    (await kubectl(`annotate --overwrite gitrepository.source.toolkit.fluxcd.io -n flux-system flux-system reconcile.fluxcd.io/requestedAt=${Date.now()}`))
      .code,
  ).toBe(0);
  await until(
    `the source serves main@sha1:${sha}`,
    60_000,
    async () => (await json('get gitrepository.source.toolkit.fluxcd.io -n flux-system flux-system')).status?.artifact?.revision === `main@sha1:${sha}`,
  );
}

const json = async (args: string) => JSON.parse((await kubectl(`${args} -o json`)).stdout || '{}');
const SOURCE = 'source-controller';
/** A gate of kustomize- and helm-controller v1.9/v1.6 that source-controller v1.9.0 does not support. */
const FOREIGN_GATE = '--feature-gates=CancelHealthCheckOnNewRevision=true';
const sourcePods = async () => (await json(`get pods -n flux-system -l app=${SOURCE}`)).items ?? [];
const availableOf = (d: any) => (d.status?.conditions ?? []).find((c: any) => c.type === 'Available');

/** source-controller crash-looping: the gate added to its Deployment, Recreate replaces its pod, the new one exits at every start. */
const crashLoop: Injection = {
  inject: async () => {
    const patch = JSON.stringify([{ op: 'add', path: '/spec/template/spec/containers/0/args/-', value: FOREIGN_GATE }]);
    expect((await kubectl(`patch deployment -n flux-system ${SOURCE} --type=json -p '${patch}'`)).code).toBe(0);
    // In place once kubelet holds the restarted container back: CrashLoopBackOff after a restart.
    await until('source-controller in CrashLoopBackOff', 60_000, async () =>
      (await sourcePods()).some(
        (p: any) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff' && p.status.containerStatuses[0].restartCount >= 1,
      ),
    );
  },
  heal: async () => {
    const args: string[] = (await json(`get deployment -n flux-system ${SOURCE}`)).spec?.template?.spec?.containers?.[0]?.args ?? [];
    const at = args.indexOf(FOREIGN_GATE);
    if (at >= 0) {
      const patch = JSON.stringify([
        { op: 'test', path: `/spec/template/spec/containers/0/args/${at}`, value: FOREIGN_GATE },
        { op: 'remove', path: `/spec/template/spec/containers/0/args/${at}` },
      ]);
      expect((await kubectl(`patch deployment -n flux-system ${SOURCE} --type=json -p '${patch}'`)).code).toBe(0);
    }
    await until('source-controller Running and its Deployment Available', 60_000, async () => {
      const pods = await sourcePods();
      return (
        pods.length === 1 &&
        pods[0].status?.containerStatuses?.[0]?.ready === true &&
        availableOf(await json(`get deployment -n flux-system ${SOURCE}`))?.status === 'True'
      );
    });
  },
};

const tierKustomization = (name: string, path: string, dependsOn?: string, extra = '') => `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ${name}
  namespace: flux-system
spec:
  interval: 10m
  path: ${path}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
${dependsOn ? `  dependsOn:\n    - name: ${dependsOn}\n` : ''}${extra}`;

describeAsRoot('flux: the cluster handed over to GitOps', () => {
  const stateDir = freshStateDir();
  let inventory: string;
  /** The bootstrap's HelmChart as it was before the hand-over. */
  let chartBefore: Promise<string> | undefined;

  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
    inventory = labInventory();
  });

  afterAll(async () => {
    // Leave Flux reconciling the fixture as it is in the repository (the next file may build on it).
    await bootstrap(['--only', 'flux'], { stateDir, inventory: labInventory() });
  });

  it('builds every phase from cold: verify passes, Flux is Ready, Cilium changes hands without a roll', async () => {
    let before: Promise<string> | undefined;
    let finalizers: Promise<string> | undefined;
    const r = await bootstrap(['--json'], {
      stateDir,
      inventory,
      onEvent: (e) => {
        if (e.type !== 'phase-start' || e.phase !== 'flux') return;
        before = generation();
        chartBefore = kubectl('get helmchart.helm.cattle.io -n kube-system cilium -o json').then((x) => x.stdout);
        finalizers = kubectl('get helmchart.helm.cattle.io -n kube-system cilium -o jsonpath={.metadata.finalizers[*]}').then((x) => x.stdout.trim());
      },
    });
    expect(stopsOf(r), JSON.stringify(stopsOf(r))).toEqual([]);
    expect(r.code).toBe(0);
    const gates = r.events.filter((e) => e.type === 'gate-end').map((e) => `${e.phase}/${e.gate}=${e.status}`);
    expect(gates).toContain('flux/flux-ready=ok');
    expect(gates.filter((g) => g.startsWith('verify/')).every((g) => g.endsWith('=ok'))).toBe(true);
    const handover = r.events.find((e) => e.type === 'step-end' && e.step === 'cilium-handover');
    expect(handover.status).toBe('changed');
    // helm-controller (its twin) had put its finalizer on the managed chart; the hand-over takes it off.
    expect(await finalizers).toBe('wrangler.cattle.io/on-helm-chart-remove');
    // The plan lists the wait for Flux's adoption and the parity proof first (an action), then the four changes.
    expect(handover.changes.map((c: any) => c.summary)).toEqual([
      'wait until Flux is Ready and HelmRelease kube-system/cilium has adopted the release (at most 300 s), then prove parity: the same values, no roll of the cilium agents (a drift stops here, the HelmChart kept)',
      'remove /var/lib/rancher/k3s/server/manifests/cilium.yaml: Flux owns Cilium from now on',
      'annotate HelmChart kube-system/cilium helmcharts.helm.cattle.io/unmanaged (helm-controller leaves the release alone from now on)',
      'take the finalizer wrangler.cattle.io/on-helm-chart-remove off HelmChart kube-system/cilium: helm-controller no longer removes it from an unmanaged chart (the release stays)',
      'delete HelmChart kube-system/cilium and wait until it is gone (at most 60 s): HelmRelease kube-system/cilium owns Cilium',
    ]);
    // Gone, not Terminating.
    expect((await kubectl('get helmchart.helm.cattle.io -n kube-system cilium')).stderr).toContain(HELMCHART_GONE);
    expect((await hostExec(FOUNDER, 'test -f /var/lib/rancher/k3s/server/manifests/cilium.yaml', { allowFail: true })).code).toBe(1);
    const hr = await kubectl(`get helmrelease.helm.toolkit.fluxcd.io -n kube-system cilium -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'`);
    expect(hr.stdout).toBe('True');
    // Flux's adoption did not roll the agents: the DaemonSet's spec is the one the bootstrap installed.
    expect(await generation()).toBe(await before);
    // The deploy key is in the cluster and never in the run log or the output.
    const key = readFileSync(parse(readFileSync(inventory, 'utf8')).flux.deployKeyFile, 'utf8');
    const body = key.split('\n')[2];
    const logs = readdirSync(join(stateDir, 'lab', 'runs')).map((f) => readFileSync(join(stateDir, 'lab', 'runs', f), 'utf8'));
    expect(logs.some((l) => l.includes(body) || l.includes(Buffer.from(key).toString('base64').slice(0, 60)))).toBe(false);
    expect(r.stdout).not.toContain(body);
  });

  it('a second and a third run change nothing, request no reconcile (the source serves the checkout), --check would change nothing, and the HelmChart stays gone', async () => {
    for (const _ of [1, 2]) {
      const again = await bootstrap([], { stateDir, inventory });
      expect(again.code, again.stdout).toBe(0);
      expect(again.stdout).toMatch(/^\d+ ok, 0 changed/m);
      expect(runLog(again.stdout)).not.toContain('reconcile.fluxcd.io/requestedAt=');
      const check = await bootstrap(['--check'], { stateDir, inventory });
      expect(check.code, check.stdout).toBe(0);
      expect(check.stdout).toMatch(/^\d+ ok, 0 would change/m);
      expect((await kubectl('get helmchart.helm.cattle.io -n kube-system cilium')).stderr).toContain(HELMCHART_GONE);
      for (const h of ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'])
        expect((await hostExec(h, 'test -e /var/lib/rancher/k3s/server/manifests/cilium.yaml', { allowFail: true })).code).toBe(1);
    }
  });

  it('fault matrix flux-controller-crashloop: source-controller exiting at every start from just before the wait for Flux Ready → FLUX_CONTROLLER_CRASHLOOP at once; healed, a rerun passes and nothing is lost', async () => {
    const t0 = Date.now();
    const before = {
      ds: await ciliumDs(),
      revision: (await json('get kustomization.kustomize.toolkit.fluxcd.io -n flux-system flux-system')).status?.lastAppliedRevision,
    };
    let duringCrash: { deployment: any; table: string } | undefined;
    const row = FAULT_ROWS.find((r) => r.id === 'flux-controller-crashloop')!;
    const injection: Injection = {
      ...crashLoop,
      inject: async (env) => {
        await crashLoop.inject(env);
        duringCrash = {
          deployment: await json(`get deployment -n flux-system ${SOURCE}`),
          table: (await kubectl(`get pods -n flux-system -l app=${SOURCE}`)).stdout,
        };
      },
    };
    const { stopped, tookMs, healAndRerunMs } = await runFaultRow(row, injection, { stateDir, inventory });
    // What an operator sees: the Deployment unavailable in kube-controller-manager's words, the pod in back-off …
    expect(availableOf(duringCrash!.deployment)).toMatchObject({
      status: 'False',
      reason: 'MinimumReplicasUnavailable',
      message: 'Deployment does not have minimum availability.',
    });
    expect(duringCrash!.table).toMatch(/source-controller-\S+ +0\/1 +CrashLoopBackOff +[1-9]/);
    // … and the stop naming the controller, its exit, the line it logged and what to do.
    const stop = stopsOf(stopped).find((s) => s.cause === 'FLUX_CONTROLLER_CRASHLOOP');
    expect(stop.message).toMatch(
      /^source-controller is crash-looping: pod flux-system\/source-controller-\S+ on k3s-lab-1, container manager exited with code 1 \(Error\) and was restarted \d+ times?; kubelet waits before the next start \(back-off \d+s restarting failed container=manager pod=source-controller-/,
    );
    expect(stop.evidence.excerpt).toContain(`"msg":"unable to load feature gates","error":"feature-gate 'CancelHealthCheckOnNewRevision' not supported"`);
    expect(stop.remedy).toContain('unable to load feature gates');
    // The crash loop alone is named: not the GitRepository it left unanswered.
    expect(stopsOf(stopped).map((s) => s.cause)).toEqual(['FLUX_CONTROLLER_CRASHLOOP']);
    // Nothing lost: one source-controller pod, Running from its first start; Flux Ready at the same revision; Cilium untouched.
    const [pod] = await sourcePods();
    expect(pod.status.containerStatuses[0]).toMatchObject({ ready: true, restartCount: 0 });
    expect(pod.spec.containers[0].args).not.toContain(FOREIGN_GATE);
    for (const k of ['flux-system', 'platform']) {
      const ks = await json(`get kustomization.kustomize.toolkit.fluxcd.io -n flux-system ${k}`);
      expect(
        ks.status.conditions.find((c: any) => c.type === 'Ready'),
        k,
      ).toMatchObject({ status: 'True', reason: 'ReconciliationSucceeded' });
      expect(ks.status.lastAppliedRevision).toBe(before.revision);
    }
    expect(
      (await kubectl(`get helmrelease.helm.toolkit.fluxcd.io -n kube-system cilium -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'`)).stdout,
    ).toBe('True');
    expect(await ciliumDs()).toEqual(before.ds);
    console.info(
      `flux-controller-crashloop: ${((Date.now() - t0) / 1000).toFixed(1)} s (stop ${(tookMs / 1000).toFixed(1)} s after the fault, heal + rerun ${(healAndRerunMs / 1000).toFixed(1)} s)`,
    );
  });

  it('a HelmChart an older bootstrap left Terminating (unmanaged, its finalizer on): the next run takes the finalizer off and it goes', async () => {
    // What the hand-over without its finalizer step left on real clusters: deleted, held by helm-controller's finalizer.
    const { spec } = JSON.parse((await chartBefore) ?? '{}');
    const stuck = {
      apiVersion: 'helm.cattle.io/v1',
      kind: 'HelmChart',
      metadata: {
        name: 'cilium',
        namespace: 'kube-system',
        annotations: { 'helmcharts.helm.cattle.io/unmanaged': 'true' },
        finalizers: ['wrangler.cattle.io/on-helm-chart-remove'],
      },
      spec: { ...spec, chartContent: undefined },
    };
    await hostExec(FOUNDER, 'k3s kubectl create -f -', { input: JSON.stringify(stuck) });
    await kubectl('delete helmchart.helm.cattle.io -n kube-system cilium --wait=false');
    expect((await kubectl('get helmchart.helm.cattle.io -n kube-system cilium -o jsonpath={.metadata.deletionTimestamp}')).stdout).not.toBe('');
    const r = await bootstrap(['--from', 'cilium', '--json'], { stateDir, inventory });
    expect(stopsOf(r), JSON.stringify(stopsOf(r))).toEqual([]);
    // The cilium phase counts the unmanaged chart as handed over (no manifest written back); the hand-over finishes it.
    const changed = r.events.filter((e) => e.type === 'step-end' && e.status === 'changed');
    expect(changed.map((e) => e.step)).toEqual(['cilium-handover']);
    expect(changed[0].changes.map((c: any) => c.summary)).toEqual([
      'wait until Flux is Ready and HelmRelease kube-system/cilium has adopted the release (at most 300 s), then prove parity: the same values, no roll of the cilium agents (a drift stops here, the HelmChart kept)',
      'take the finalizer wrangler.cattle.io/on-helm-chart-remove off HelmChart kube-system/cilium: helm-controller no longer removes it from an unmanaged chart (the release stays)',
      'delete HelmChart kube-system/cilium and wait until it is gone (at most 60 s): HelmRelease kube-system/cilium owns Cilium',
    ]);
    expect((await kubectl('get helmchart.helm.cattle.io -n kube-system cilium')).stderr).toContain(HELMCHART_GONE);
    const again = await bootstrap(['--only', 'flux'], { stateDir, inventory });
    expect(again.stdout).toMatch(/^\d+ ok, 0 changed/m);
  });

  it('a new rollout width through the HelmRelease (not the pod template): generation moves, the agents stay, and a full run converges', async () => {
    // maxSurge 0 beside maxUnavailable 1: a change of spec.updateStrategy, outside spec.template. (The twin's
    // API does not default maxSurge, so adding it is a spec change here; on a real apiserver the same kind of
    // change is a new maxUnavailable.)
    const wider = labInventory({
      gitops: (c) => editFile(join(c, 'platform', 'cilium', 'helmrelease.yaml'), /(\s+)maxUnavailable: 1/, '$1maxUnavailable: 1$1maxSurge: 0'),
    });
    const before = await ciliumDs();
    const flux = await bootstrap(['--only', 'flux'], { stateDir, inventory: wider });
    expect(flux.code, flux.stdout).toBe(0);
    const after = await ciliumDs();
    expect(JSON.parse((await kubectl('get daemonset -n kube-system cilium -o jsonpath={.spec.updateStrategy}')).stdout)).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
    });
    expect(after).toEqual({ generation: before.generation + 1, templateGeneration: before.templateGeneration, pods: before.pods });
    // The cilium gate judges the agents by their revision, not by metadata.generation: current, Ready.
    const r = await bootstrap(['--from', 'cilium', '--json'], { stateDir, inventory: wider });
    expect(stopsOf(r), JSON.stringify(stopsOf(r))).toEqual([]);
    expect(r.events.filter((e) => e.type === 'gate-end' && e.phase === 'cilium').map((e) => `${e.gate}=${e.status}`)).toEqual(['cilium-rolled-out=ok']);
    expect(r.events.filter((e) => e.type === 'step-end' && e.status === 'changed').map((e) => e.step)).toEqual([]);
  });

  // Flux retries every failure but Stalled, so the gate waits its whole budget before it names one:
  // flux.waitSeconds keeps these runs short, and one run carries every Kustomization failure at once.
  it('a deploy key the git server refuses → FLUX_SOURCE_NOT_READY with the source-controller message, at the end of flux.waitSeconds', async () => {
    const wrongKey = labInventory({
      inventory: (inv) => {
        inv.flux.deployKeyFile = unauthorisedDeployKey();
        inv.flux.waitSeconds = 30;
      },
    });
    const r = await bootstrap(['--only', 'flux', '--json'], { stateDir, inventory: wrongKey });
    const [stop, ...more] = stopsOf(r);
    expect(more).toEqual([]);
    expect(stop).toMatchObject({ cause: 'FLUX_SOURCE_NOT_READY' });
    expect(stop.message).toMatch(
      /^GitRepository flux-system\/flux-system: (GitOperationFailed|AuthenticationFailed): .*ssh: handshake failed: ssh: unable to authenticate/,
    );
    expect(r.code).toBe(1);
    // Not Stalled upstream (a generic error, retried): the gate waited out flux.waitSeconds, not its 300 s.
    const gate = r.events.find((e) => e.type === 'gate-end' && e.gate === 'flux-ready');
    expect(gate).toMatchObject({ status: 'failed' });
    expect(gate.durationMs).toBeGreaterThanOrEqual(29_000);
    expect(gate.durationMs).toBeLessThan(60_000);
  });

  it('a custom resource before its CRD, a variable no source defines, a dependsOn chain whose root fails, a workload that never becomes ready: each ROOT named in one run', async () => {
    const broken = labInventory({
      inventory: (inv) => (inv.flux.waitSeconds = 60),
      gitops: (c) => {
        const folder = (dir: string, files: Record<string, string>) => {
          mkdirSync(join(c, 'tiers', dir), { recursive: true });
          for (const [name, text] of Object.entries(files)) writeFileSync(join(c, 'tiers', dir, name), text);
        };
        const kustomization = (...resources: string[]) =>
          `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [${resources.join(', ')}]\n`;
        folder('ok', { 'kustomization.yaml': kustomization() });
        folder('crd', {
          'kustomization.yaml': kustomization('cdi.yaml'),
          'cdi.yaml': 'apiVersion: cdi.kubevirt.io/v1beta1\nkind: CDI\nmetadata:\n  name: cdi\nspec: {}\n',
        });
        folder('vars', {
          'kustomization.yaml': kustomization('backup.yaml'),
          'backup.yaml':
            'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: backup-target\n  namespace: kube-system\ndata:\n  bucket: "${BACKUP_BUCKET}"\n  region: "${REGION}"\n',
        });
        // Nothing in the lab runs this Deployment's pods: it never becomes available.
        folder('web', {
          'deployment.yaml':
            'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 1\n  selector:\n    matchLabels: { app: web }\n  template:\n    metadata:\n      labels: { app: web }\n    spec:\n      containers:\n        - { name: web, image: nginx }\n',
        });
        addResources(c, 'clusters/base', {
          // tier-a's path is not in the repository: it fails for its own reason; b waits on a, c on b.
          'tier-a.yaml': tierKustomization('tier-a', './tiers/missing'),
          'tier-b.yaml': tierKustomization('tier-b', './tiers/ok', 'tier-a'),
          'tier-c.yaml': tierKustomization('tier-c', './tiers/ok', 'tier-b'),
          'tier-crd.yaml': tierKustomization('tier-crd', './tiers/crd'),
          'tier-vars.yaml': tierKustomization('tier-vars', './tiers/vars', undefined, '  postBuild:\n    substitute:\n      REGION: lab\n'),
          'web.yaml': tierKustomization('web', './tiers/web', undefined, '  wait: true\n  timeout: 30s\n'),
        });
      },
    });
    const r = await bootstrap(['--only', 'flux', '--json'], { stateDir, inventory: broken });
    const stops = stopsOf(r);
    const byCause = (cause: string) => stops.filter((s) => s.cause === cause);
    expect(stops.map((s) => s.cause).sort(), JSON.stringify(stops)).toEqual([
      'FLUX_BUILD_FAILED',
      'FLUX_CRD_NOT_INSTALLED',
      'FLUX_DEPENDENCY_NOT_READY',
      'FLUX_HEALTHCHECK_FAILED',
      'FLUX_SUBSTITUTION_FAILED',
    ]);
    expect(byCause('FLUX_CRD_NOT_INSTALLED')[0].message).toMatch(
      /^Kustomization flux-system\/tier-crd: ReconciliationFailed: .*no matches for kind "CDI" in version "cdi.kubevirt.io\/v1beta1"/,
    );
    expect(byCause('FLUX_SUBSTITUTION_FAILED')[0].message).toMatch(
      /^Kustomization flux-system\/tier-vars: BuildFailed: .*variable not set \(strict mode\): "BACKUP_BUCKET"/,
    );
    // The chain: the root named with who waits on it, not the link before it; the root's own failure with it.
    const dep = byCause('FLUX_DEPENDENCY_NOT_READY')[0];
    expect(dep.message).toMatch(/^Kustomization flux-system\/tier-a: /);
    expect(dep.evidence.seen).toContain(
      'Kustomization flux-system/tier-b, Kustomization flux-system/tier-c wait on Kustomization flux-system/tier-a, the root',
    );
    expect(byCause('FLUX_BUILD_FAILED')[0].message).toMatch(/^Kustomization flux-system\/tier-a: ArtifactFailed: kustomization path not found/);
    // Within the budget either the check timed out (spec.timeout 30 s) or it still runs: the Deployment is named.
    expect(byCause('FLUX_HEALTHCHECK_FAILED')[0].message).toMatch(/^Kustomization flux-system\/web: HealthCheck(Failed|Running): .*Deployment\/default\/web/);
    const gate = r.events.find((e) => e.type === 'gate-end' && e.gate === 'flux-ready');
    expect(gate.durationMs).toBeGreaterThanOrEqual(59_000);
  });

  it("a HelmRelease value changed in git but not in the operator's checkout → CILIUM_PARITY_DRIFT with the key", async () => {
    // From a converged Flux (the earlier cases' Kustomizations pruned), then a changed HelmRelease on the
    // git server while the operator's checkout (`inventory`) keeps the fixture as it was.
    const converged = await bootstrap(['--only', 'flux'], { stateDir, inventory: labInventory() });
    expect(converged.code, converged.stdout.slice(-3000)).toBe(0);
    const pushed = labInventory({
      gitops: (c) => editFile(join(c, 'platform', 'cilium', 'helmrelease.yaml'), /ui:\n(\s+)enabled: true/, 'ui:\n$1enabled: false'),
    });
    // Once Flux serves it (within its interval; asked now, as `flux reconcile source git` does), the source's revision is
    // not the checkout's: the run asks Flux to reconcile and compares what Flux applied with the checkout.
    await sourceServes(pushed);
    const r = await bootstrap(['--only', 'flux', '--json'], { stateDir, inventory });
    const stops = stopsOf(r);
    expect(stops.map((s) => s.cause)).toEqual(['CILIUM_PARITY_DRIFT']);
    expect(stops[0].message).toBe(
      'HelmRelease kube-system/cilium spec.values differ from the values the bootstrap renders from gitops.checkout at hubble.ui.enabled',
    );
    expect(stops[0].evidence.excerpt).toBe('hubble.ui.enabled: bootstrap true, Flux false');
  });
});

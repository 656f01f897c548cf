// The Flux wait with a fake API: it requests a reconcile first, waits while statuses are old, pending or
// failed without Stalled, stops at once on Stalled or a crash-looping controller, and ends at its budget with
// what it saw last.
import { describe, expect, it } from 'vitest';
import { LIST, waitFluxReady, waitHelmReleaseReady } from '../../phases/flux/ready-wait.ts';
import { causesOf } from '../../src/errors.ts';

const TOKEN = new Date(0).toISOString();
const repo = (ready: string, reason: string, message: string, handled = TOKEN, extra: object[] = []) => ({
  kind: 'GitRepository',
  metadata: { name: 'flux-system', namespace: 'flux-system', generation: 1, annotations: { 'reconcile.fluxcd.io/requestedAt': TOKEN } },
  status: {
    observedGeneration: 1,
    lastHandledReconcileAt: handled,
    conditions: [{ type: 'Ready', status: ready, reason, message }, ...extra],
    artifact: { revision: 'main@sha1:1' },
  },
});
const ks = {
  kind: 'Kustomization',
  metadata: { name: 'flux-system', namespace: 'flux-system', generation: 1, annotations: { 'reconcile.fluxcd.io/requestedAt': TOKEN } },
  spec: { sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
  status: {
    observedGeneration: 1,
    lastHandledReconcileAt: TOKEN,
    lastAttemptedRevision: 'main@sha1:1',
    conditions: [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: 'Applied revision: main@sha1:1' }],
  },
};

/** `get pods,deployments` answers a List of both kinds. */
const podsAndDeployments = (pods: unknown[], deployments: unknown[] = []) =>
  JSON.stringify({
    kind: 'List',
    items: [...pods.map((p) => ({ kind: 'Pod', ...(p as object) })), ...deployments.map((d) => ({ kind: 'Deployment', ...(d as object) }))],
  });

function fakeCtx(
  lists: unknown[][],
  budgetLooks = 100,
  opts: { pods?: unknown[]; deployments?: unknown[]; imageArchives?: string[]; log?: string; annotate?: { code: number; stdout: string; stderr: string } } = {},
) {
  const commands: string[] = [];
  let looks = 0;
  const controller = new AbortController();
  const ctx: any = {
    inventory: { derived: { paths: { imageArchives: (opts.imageArchives ?? []).map((path) => ({ path })) } } },
    signal: new AbortController().signal,
    // No kubeconfig there: the reads go to `k3s kubectl` on the host, which this fake answers.
    stateDir: '/nonexistent',
    clock: { now: () => 0, sleep: async (_ms: number, signal: AbortSignal) => signal.throwIfAborted() },
    remote: () => ({
      exec: async (cmd: string) => {
        commands.push(cmd);
        if (cmd.includes(' annotate ')) return opts.annotate ?? { code: 0, stdout: '', stderr: '' };
        if (cmd.includes(' get pods,deployments ')) return { code: 0, stdout: podsAndDeployments(opts.pods ?? [], opts.deployments), stderr: '' };
        if (cmd.includes(' logs ')) return { code: 0, stdout: opts.log ?? '', stderr: '' };
        const items = lists[Math.min(looks, lists.length - 1)];
        looks++;
        if (looks >= budgetLooks) controller.abort();
        // A list, or one object (`get <kind> <name> -o json`).
        return { code: 0, stdout: JSON.stringify(Array.isArray(items) ? { items } : items), stderr: '' };
      },
    }),
  };
  return { ctx, commands, signal: controller.signal, looks: () => looks };
}

const run = async (f: ReturnType<typeof fakeCtx>) => {
  try {
    await waitFluxReady(f.ctx, { name: 'k3s-1', address: '', role: 'server', founder: true }, f.signal);
    return [];
  } catch (err) {
    return causesOf(err).map((c) => [c.causeId, c.message]);
  }
};

describe('waitFluxReady', () => {
  it('requests a reconcile of each object listed, then resolves once everything answers it Ready', async () => {
    const f = fakeCtx([
      [repo('True', 'Succeeded', 'stored', 'older'), ks],
      [repo('True', 'Succeeded', 'stored'), ks],
    ]);
    expect(await run(f)).toEqual([]);
    expect(f.commands.filter((c) => c.includes(' annotate '))).toEqual([
      `k3s kubectl annotate --overwrite gitrepositories.source.toolkit.fluxcd.io/flux-system -n flux-system reconcile.fluxcd.io/requestedAt=${TOKEN}`,
      `k3s kubectl annotate --overwrite kustomizations.kustomize.toolkit.fluxcd.io/flux-system -n flux-system reconcile.fluxcd.io/requestedAt=${TOKEN}`,
    ]);
  });

  it('an object pruned between the list and its request is not a failure (NotFound): the others were asked, the wait goes on', async () => {
    const gone = 'Error from server (NotFound): kustomizations.kustomize.toolkit.fluxcd.io "tier-b" not found\n';
    const f = fakeCtx(
      [
        [repo('True', 'Succeeded', 'stored', 'older'), ks],
        [repo('True', 'Succeeded', 'stored'), ks],
      ],
      100,
      { annotate: { code: 1, stdout: 'kustomization.kustomize.toolkit.fluxcd.io/flux-system annotated\n', stderr: gone } },
    );
    expect(await run(f)).toEqual([]);
  });

  it('any other refusal of the reconcile request stops with the command and what kubectl said', async () => {
    const f = fakeCtx([[repo('True', 'Succeeded', 'stored', 'older'), ks]], 100, {
      annotate: { code: 1, stdout: '', stderr: 'Error from server (Forbidden): gitrepositories.source.toolkit.fluxcd.io "flux-system" is forbidden\n' },
    });
    const err = await waitFluxReady(f.ctx, { name: 'k3s-1', address: '', role: 'server', founder: true }, f.signal).catch((e) => e);
    // The evidence of any change that failed on a host (src/engine/apply.ts applyFailed).
    expect(causesOf(err).map((c) => [c.causeId, c.host, c.evidence])).toEqual([
      [
        'APPLY_FAILED',
        'k3s-1',
        {
          command: `kubectl annotate --overwrite gitrepositories.source.toolkit.fluxcd.io/flux-system -n flux-system reconcile.fluxcd.io/requestedAt=${TOKEN}`,
          exitCode: 1,
          excerpt: 'Error from server (Forbidden): gitrepositories.source.toolkit.fluxcd.io "flux-system" is forbidden',
          seen: 'exit 1',
        },
      ],
    ]);
  });

  it('a failure the controller reported for this request, not Stalled, is waited on: it may clear before the budget', async () => {
    // source-controller after a failed clone: observedGeneration not written, Reconciling ProgressingWithRetry.
    const failed = {
      ...repo('False', 'GitOperationFailed', 'ssh: unable to authenticate', TOKEN, [
        { type: 'Reconciling', status: 'True', reason: 'ProgressingWithRetry', message: 'reconciliation in progress' },
      ]),
    };
    const f = fakeCtx([
      [failed, ks],
      [failed, ks],
      [failed, ks],
      [repo('True', 'Succeeded', 'stored'), ks],
    ]);
    expect(await run(f)).toEqual([]);
    expect(f.looks()).toBe(4);
  });

  it('the same failure until the budget ends: named with its last reason and message', async () => {
    const failed = repo('False', 'GitOperationFailed', 'ssh: unable to authenticate');
    const f = fakeCtx([[failed, ks]], 6);
    expect(await run(f)).toEqual([['FLUX_SOURCE_NOT_READY', 'GitRepository flux-system/flux-system: GitOperationFailed: ssh: unable to authenticate']]);
    expect(f.looks()).toBe(6);
  });

  it('Stalled for this generation and request stops at once, saying why', async () => {
    const msg = 'failed to parse url \'ssh//x\': parse "ssh//x": invalid URI for request';
    const stalled = repo('False', 'URLInvalid', msg, TOKEN, [{ type: 'Stalled', status: 'True', reason: 'URLInvalid', message: msg }]);
    // The first list is the reconcile request's; the first look of the wait already stops.
    const f = fakeCtx([
      [stalled, ks],
      [stalled, ks],
      [repo('True', 'Succeeded', 'never reached'), ks],
    ]);
    expect(await run(f)).toEqual([
      [
        'FLUX_SOURCE_NOT_READY',
        `GitRepository flux-system/flux-system: URLInvalid: ${msg} (Stalled: URLInvalid: ${msg}; the controller will not retry this generation)`,
      ],
    ]);
    expect(f.looks()).toBe(2);
  });

  it('a failure from before the request is not judged: it waits, and at the budget names what it saw', async () => {
    const stale = repo('False', 'GitOperationFailed', 'old failure', 'older');
    const f = fakeCtx([[stale, ks]], 4);
    expect(await run(f)).toEqual([
      [
        'FLUX_SOURCE_NOT_READY',
        "GitRepository flux-system/flux-system: GitOperationFailed: old failure (written before this run's reconcile request, which the controller has not answered yet)",
      ],
    ]);
  });
});

/** A converged cluster as an earlier run left it: everything Ready for its generation, its request answered. */
const EARLIER = '2026-01-01T00:00:00.000Z';
const answeredBy = (o: any, handled: string, requested = handled) => ({
  ...o,
  metadata: { ...o.metadata, annotations: { 'reconcile.fluxcd.io/requestedAt': requested } },
  status: { ...o.status, lastHandledReconcileAt: handled },
});
const repoAt = (revision: string, handled: string, requested = handled) =>
  answeredBy(
    { ...repo('True', 'Succeeded', `stored artifact for revision '${revision}'`), status: { ...repo('True', 'Succeeded', '').status, artifact: { revision } } },
    handled,
    requested,
  );
const ksApplied = (revision: string, handled = EARLIER, extra: { generation?: number } = {}) =>
  answeredBy(
    {
      ...ks,
      metadata: { ...ks.metadata, generation: extra.generation ?? 1 },
      status: {
        ...ks.status,
        lastAttemptedRevision: revision,
        lastAppliedRevision: revision,
        conditions: [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: `Applied revision: ${revision}` }],
      },
    },
    handled,
  );
const annotated = (f: ReturnType<typeof fakeCtx>) => f.commands.filter((c) => c.includes(' annotate ')).map((c) => c.split(' ')[4].split('/')[0]);

describe('waitFluxReady on a converged cluster (issue 17: no needless wait)', () => {
  it('everything current: only the sources fetch, and once they answer with the same revision it passes without asking the Kustomizations', async () => {
    const f = fakeCtx([
      [repoAt('main@sha1:1', EARLIER), ksApplied('main@sha1:1')],
      // source-controller has not answered the fetch yet (the annotation is this run's, the status the last one's)
      [repoAt('main@sha1:1', EARLIER, TOKEN), ksApplied('main@sha1:1')],
      [repoAt('main@sha1:1', TOKEN), ksApplied('main@sha1:1')],
    ]);
    expect(await run(f)).toEqual([]);
    expect(annotated(f)).toEqual(['gitrepositories.source.toolkit.fluxcd.io']);
    expect(f.looks()).toBe(3);
  });

  it('the fetch brings a new revision: the Kustomizations are asked then, and the wait goes on until they applied it', async () => {
    const f = fakeCtx([
      [repoAt('main@sha1:1', EARLIER), ksApplied('main@sha1:1')],
      [repoAt('main@sha1:2', TOKEN), ksApplied('main@sha1:1')],
      [repoAt('main@sha1:2', TOKEN), answeredBy(ksApplied('main@sha1:1'), EARLIER, TOKEN)],
      [repoAt('main@sha1:2', TOKEN), answeredBy({ ...ksApplied('main@sha1:2') }, TOKEN)],
    ]);
    expect(await run(f)).toEqual([]);
    expect(annotated(f)).toEqual(['gitrepositories.source.toolkit.fluxcd.io', 'kustomizations.kustomize.toolkit.fluxcd.io']);
    expect(f.looks()).toBe(4);
  });

  it.each([
    ['a Kustomization of a newer generation', ksApplied('main@sha1:1', EARLIER, { generation: 2 })],
    ['a Kustomization that has not applied the revision its source serves', ksApplied('main@sha1:0')],
    [
      'a Kustomization not Ready',
      {
        ...ksApplied('main@sha1:1'),
        status: { ...ksApplied('main@sha1:1').status, conditions: [{ type: 'Ready', status: 'False', reason: 'BuildFailed', message: 'x' }] },
      },
    ],
    ['a reconcile request of an earlier run not answered yet', answeredBy(ksApplied('main@sha1:1'), EARLIER, '2026-01-01T00:00:05.000Z')],
  ])('%s: every source and Kustomization is asked at once, as before', async (_what, stale) => {
    const f = fakeCtx([
      [repoAt('main@sha1:1', EARLIER), stale],
      [repoAt('main@sha1:1', TOKEN), answeredBy(ksApplied('main@sha1:1'), TOKEN)],
    ]);
    expect(await run(f)).toEqual([]);
    expect(annotated(f)).toEqual(['gitrepositories.source.toolkit.fluxcd.io', 'kustomizations.kustomize.toolkit.fluxcd.io']);
  });

  it('a source that never answers its fetch is named when the budget ends, as before; quick looks only at first', async () => {
    const f = fakeCtx(
      [
        [repoAt('main@sha1:1', EARLIER), ksApplied('main@sha1:1')],
        [repoAt('main@sha1:1', EARLIER, TOKEN), ksApplied('main@sha1:1')],
      ],
      13,
    );
    const pauses: number[] = [];
    f.ctx.clock.sleep = async (ms: number, signal: AbortSignal) => {
      pauses.push(ms);
      signal.throwIfAborted();
    };
    const causes = await run(f);
    expect(causes.map(([id]) => id)).toEqual(['FLUX_SOURCE_NOT_READY']);
    expect(causes[0][1]).toContain("written before this run's reconcile request");
    expect(annotated(f)).toEqual(['gitrepositories.source.toolkit.fluxcd.io']);
    expect(pauses).toEqual([250, 250, 250, 250, 250, 250, 250, 250, 1_000, 1_000, 3_000]);
  });
});

describe("waitFluxReady when the source already serves the operator's checkout (issue 17: a gate that proves without waiting)", () => {
  const checkout = { source: { name: 'flux-system', namespace: 'flux-system' }, revision: 'main@sha1:1' };
  const runWith = async (f: ReturnType<typeof fakeCtx>) =>
    waitFluxReady(f.ctx, { name: 'k3s-1', address: '', role: 'server', founder: true }, f.signal, checkout).then(
      () => [],
      (err) => causesOf(err).map((c) => [c.causeId, c.message]),
    );

  it('everything current at that revision: passes at the first look, nothing requested, no pause', async () => {
    const f = fakeCtx([[repoAt('main@sha1:1', EARLIER), ksApplied('main@sha1:1')]]);
    f.ctx.clock.sleep = async () => {
      throw new Error('no pause expected');
    };
    expect(await runWith(f)).toEqual([]);
    expect(f.commands.sort()).toEqual([`k3s kubectl ${LIST}`, 'k3s kubectl get pods,deployments -n flux-system -o json']);
  });

  it('the source serves another revision than the checkout: it is asked to fetch, as before', async () => {
    const f = fakeCtx([
      [repoAt('main@sha1:0', EARLIER), ksApplied('main@sha1:0')],
      [repoAt('main@sha1:1', TOKEN), ksApplied('main@sha1:0')],
      [repoAt('main@sha1:1', TOKEN), answeredBy(ksApplied('main@sha1:1'), TOKEN)],
    ]);
    expect(await runWith(f)).toEqual([]);
    expect(annotated(f)).toEqual(['gitrepositories.source.toolkit.fluxcd.io', 'kustomizations.kustomize.toolkit.fluxcd.io']);
  });

  it('that revision, but a Kustomization not current: every source and Kustomization is asked, as before', async () => {
    const f = fakeCtx([
      [repoAt('main@sha1:1', EARLIER), ksApplied('main@sha1:1', EARLIER, { generation: 2 })],
      [repoAt('main@sha1:1', TOKEN), answeredBy(ksApplied('main@sha1:1'), TOKEN)],
    ]);
    expect(await runWith(f)).toEqual([]);
    expect(annotated(f)).toEqual(['gitrepositories.source.toolkit.fluxcd.io', 'kustomizations.kustomize.toolkit.fluxcd.io']);
  });

  it('a crash-looping controller is still named, though everything reports Ready at that revision', async () => {
    const backOff = 'back-off 10s restarting failed container=manager pod=x';
    const f = fakeCtx([[repoAt('main@sha1:1', EARLIER), ksApplied('main@sha1:1')]], 100, { pods: [controllerPod('source-controller', 1, backOff)] });
    expect((await runWith(f)).map(([id]) => id)).toEqual(['FLUX_CONTROLLER_CRASHLOOP']);
  });
});

/** A Flux controller's pod as kubelet reports it: running, or waiting CrashLoopBackOff after its last exit. */
const controllerPod = (app: string, restartCount: number, waiting?: string) => ({
  metadata: { name: `${app}-5d8b9c7f4b-x2k4p`, namespace: 'flux-system', labels: { app, 'pod-template-hash': '5d8b9c7f4b' }, uid: 'u1' },
  spec: { nodeName: 'k3s-1', containers: [{ name: 'manager', image: `ghcr.io/fluxcd/${app}:v1.9.0` }] },
  status: {
    phase: 'Running',
    containerStatuses: [
      {
        name: 'manager',
        ready: !waiting,
        restartCount,
        state: waiting ? { waiting: { reason: 'CrashLoopBackOff', message: waiting } } : { running: { startedAt: '2026-01-01T00:00:10Z' } },
        lastState: restartCount ? { terminated: { exitCode: 1, reason: 'Error', startedAt: '2026-01-01T00:00:01Z', finishedAt: '2026-01-01T00:00:01Z' } } : {},
      },
    ],
  },
});
const GATE_LINE = `{"level":"error","ts":"2026-01-01T00:00:01.000Z","logger":"setup","msg":"unable to load feature gates","error":"feature-gate 'CancelHealthCheckOnNewRevision' not supported"}`;

describe('a crash-looping Flux controller', () => {
  const backOff = 'back-off 10s restarting failed container=manager pod=source-controller-5d8b9c7f4b-x2k4p_flux-system(u1)';

  it('is named at the first look, before any reconcile request: controller, pod, node, exit code, back-off, its last log line', async () => {
    const f = fakeCtx([[repo('True', 'Succeeded', 'stored'), ks]], 100, { pods: [controllerPod('source-controller', 1, backOff)], log: `${GATE_LINE}\n` });
    const h = { name: 'k3s-1', address: '', role: 'server' as const, founder: true };
    const err = await waitFluxReady(f.ctx, h, f.signal).then(
      () => undefined,
      (e) => e,
    );
    const [cause] = causesOf(err);
    expect(cause.causeId).toBe('FLUX_CONTROLLER_CRASHLOOP');
    expect(cause.host).toBe('k3s-1');
    expect(cause.message).toBe(
      `source-controller is crash-looping: pod flux-system/source-controller-5d8b9c7f4b-x2k4p on k3s-1, container manager exited with code 1 (Error) and was restarted 1 time; kubelet waits before the next start (${backOff}); its last log line: ${GATE_LINE}`,
    );
    expect(cause.evidence).toEqual({
      command: 'kubectl logs -n flux-system source-controller-5d8b9c7f4b-x2k4p -c manager --tail=20',
      seen: 'container manager of pod flux-system/source-controller-5d8b9c7f4b-x2k4p waiting CrashLoopBackOff after 1 time, exited with code 1 (Error) at 2026-01-01T00:00:01Z',
      excerpt: GATE_LINE,
    });
    expect(f.commands.filter((c) => c.includes(' annotate '))).toEqual([]);
    // The list is read beside the controllers (one round trip), and not judged.
    expect(f.looks()).toBe(1);
  });

  it('appearing during the wait is named at the next look, not when the budget ends', async () => {
    let n = 0;
    const pods = () => (n++ < 2 ? [controllerPod('kustomize-controller', 0)] : [controllerPod('kustomize-controller', 2, backOff.replace('10s', '20s'))]);
    const f = fakeCtx([[repo('True', 'Succeeded', 'stored'), { ...ks, status: { ...ks.status, lastHandledReconcileAt: 'older' } }]], 100);
    const exec = f.ctx.remote().exec;
    f.ctx.remote = () => ({
      exec: async (cmd: string) => (cmd.includes(' get pods,deployments ') ? { code: 0, stdout: podsAndDeployments(pods()), stderr: '' } : exec(cmd)),
    });
    expect((await run(f)).map(([id]) => id)).toEqual(['FLUX_CONTROLLER_CRASHLOOP']);
    expect(f.looks()).toBe(3);
  });

  it('a pod of an older template (the Deployment just fixed, the pod on its way out) is not named', async () => {
    const pod = controllerPod('source-controller', 2, backOff);
    pod.spec.containers[0] = { ...pod.spec.containers[0], args: ['--feature-gates=CancelHealthCheckOnNewRevision=true'] } as any;
    const fixed = {
      metadata: { name: 'source-controller', namespace: 'flux-system' },
      spec: { template: { spec: { containers: [{ name: 'manager', image: 'ghcr.io/fluxcd/source-controller:v1.9.0' }] } } },
    };
    const f = fakeCtx([[repo('True', 'Succeeded', 'stored'), ks]], 100, { pods: [pod], deployments: [fixed] });
    expect(await run(f)).toEqual([]);
    // Still the template: named.
    const same = fakeCtx([[repo('True', 'Succeeded', 'stored'), ks]], 100, { pods: [controllerPod('source-controller', 2, backOff)], deployments: [fixed] });
    expect((await run(same)).map(([id]) => id)).toEqual(['FLUX_CONTROLLER_CRASHLOOP']);
  });

  it('a container restarted once at once after its first exit, or running again, is no crash loop: the wait goes on to Ready', async () => {
    const f = fakeCtx([[repo('True', 'Succeeded', 'stored'), ks]], 100, { pods: [controllerPod('source-controller', 1), controllerPod('helm-controller', 3)] });
    expect(await run(f)).toEqual([]);
  });
});

describe('waitHelmReleaseReady', () => {
  const hr = (generation: number, observed: number | undefined, conditions: object[]) => ({
    kind: 'HelmRelease',
    metadata: { name: 'cilium', namespace: 'kube-system', generation },
    spec: { values: {} },
    status: { ...(observed === undefined ? {} : { observedGeneration: observed }), conditions },
  });
  const runHr = async (f: ReturnType<typeof fakeCtx>) => {
    try {
      await waitHelmReleaseReady(f.ctx, { name: 'k3s-1', address: '', role: 'server', founder: true }, { name: 'cilium', namespace: 'kube-system' }, f.signal);
      return [];
    } catch (err) {
      return causesOf(err).map((c) => [c.causeId, c.message]);
    }
  };
  const failed = 'Helm upgrade failed for release kube-system/cilium with chart cilium@1.19.5: context deadline exceeded';

  it('an upgrade that failed with no remediation retries left (Stalled RetriesExceeded, helm-controller v1.6.0 atomic_release.go) stops at once', async () => {
    const stalled = hr(2, 2, [
      { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: failed },
      { type: 'Released', status: 'False', reason: 'UpgradeFailed', message: failed },
      { type: 'Stalled', status: 'True', reason: 'RetriesExceeded', message: 'Failed to upgrade after 1 attempt(s)' },
    ]);
    const f = fakeCtx([stalled as any], 50);
    expect(await runHr(f)).toEqual([
      [
        'FLUX_HELMRELEASE_NOT_READY',
        `HelmRelease kube-system/cilium is not Ready: UpgradeFailed: ${failed} (Stalled: RetriesExceeded: Failed to upgrade after 1 attempt(s); the helm-controller will not retry this generation)`,
      ],
    ]);
    expect(f.looks()).toBe(1);
  });

  it('a release Ready for its generation: one read, the controllers not read', async () => {
    const f = fakeCtx([hr(2, 2, [{ type: 'Ready', status: 'True', reason: 'UpgradeSucceeded', message: 'ok' }]) as any]);
    expect(await runHr(f)).toEqual([]);
    expect(f.commands).toEqual(['k3s kubectl get helmreleases.helm.toolkit.fluxcd.io -n kube-system cilium -o json']);
  });

  it('helm-controller crash-looping is named at once', async () => {
    const pending = hr(2, 1, [{ type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Fulfilling prerequisites' }]);
    const backOff = 'back-off 40s restarting failed container=manager pod=helm-controller-5d8b9c7f4b-x2k4p_flux-system(u1)';
    const f = fakeCtx([pending as any], 50, { pods: [controllerPod('helm-controller', 3, backOff)], log: 'a\n\nb\n' });
    const [[id, message]] = await runHr(f);
    expect(id).toBe('FLUX_CONTROLLER_CRASHLOOP');
    expect(message).toContain(
      'helm-controller is crash-looping: pod flux-system/helm-controller-5d8b9c7f4b-x2k4p on k3s-1, container manager exited with code 1 (Error) and was restarted 3 times',
    );
    expect(message).toMatch(/; its last log line: b$/);
    // The release is read first (a Ready one needs no controller to prove it); this one is not: the controllers then, in the same look.
    expect(f.looks()).toBe(1);
  });

  it('SourceNotReady (errWaitForChart: observedGeneration not written) is waited on to the budget and named', async () => {
    const msg = `HelmChart 'kube-system/kube-system-cilium' is not ready: failed to get source: helmrepositories.source.toolkit.fluxcd.io "cilium" not found`;
    const f = fakeCtx([hr(1, undefined, [{ type: 'Ready', status: 'False', reason: 'SourceNotReady', message: msg }]) as any], 5);
    expect(await runHr(f)).toEqual([['FLUX_HELMRELEASE_NOT_READY', `HelmRelease kube-system/cilium is not Ready: SourceNotReady: ${msg}`]]);
    expect(f.looks()).toBe(5);
  });

  it('a controller whose image is on no node: IMAGE_NOT_AVAILABLE at once on an air-gapped site, naming image and node', async () => {
    const image = 'ghcr.io/fluxcd/source-controller:v1.9.0';
    const pod = {
      metadata: { name: 'source-controller-6c9f8b7d5-x2x4q', namespace: 'flux-system' },
      spec: { nodeName: 'k3s-2', containers: [{ name: 'manager', image }] },
      status: {
        phase: 'Pending',
        containerStatuses: [
          { name: 'manager', image, ready: false, state: { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` } } },
        ],
      },
    };
    const airGapped = fakeCtx([[]], 100, { pods: [pod], imageArchives: ['/a/flux.tar'] });
    const [cause] = await run(airGapped);
    expect(cause).toEqual(['IMAGE_NOT_AVAILABLE', `${image} is not on k3s-2 and cannot be pulled: add an archive holding it to k3s.imageArchives`]);
    expect(airGapped.commands.filter((c) => c.includes(' get pods,deployments '))).toHaveLength(1);
    // With registries (no archives named) it may recover: named only when the budget ends.
    const online = fakeCtx([[]], 3, { pods: [pod] });
    expect((await run(online))[0][0]).toBe('IMAGE_NOT_AVAILABLE');
    expect(online.commands.filter((c) => c.includes(' get pods,deployments ')).length).toBeGreaterThan(1);
  });
});

// A Kustomization whose health checks are still running when the budget ends: which objects they wait for
// (spec.healthChecks, or the inventory with spec.wait) and why each is not ready, from the objects as the
// API returns them; and the wait naming them at its budget.
import { describe, expect, it } from 'vitest';
import { healthTargets, notReadyText, targetReads } from '../../phases/flux/health-targets.ts';
import { waitFluxReady } from '../../phases/flux/ready-wait.ts';
import { causesOf } from '../../src/errors.ts';

const TOKEN = new Date(0).toISOString();
const REV = 'main@sha1:1';
const running = `Running health checks for revision ${REV} with a timeout of 9m30s`;
const web = {
  kind: 'Kustomization',
  metadata: { name: 'web', namespace: 'flux-system', generation: 1, annotations: { 'reconcile.fluxcd.io/requestedAt': TOKEN } },
  spec: { wait: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
  status: {
    lastHandledReconcileAt: TOKEN,
    lastAttemptedRevision: REV,
    inventory: {
      entries: [
        { id: 'default_web_apps_Deployment', v: 'v1' },
        { id: 'default_web__Service', v: 'v1' },
        { id: '_default__Namespace', v: 'v1' },
      ],
    },
    conditions: [
      { type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress' },
      { type: 'Reconciling', status: 'True', reason: 'Progressing', message: running },
      { type: 'Healthy', status: 'Unknown', reason: 'Progressing', message: running },
    ],
  },
};
const deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'default', generation: 1 },
  spec: { replicas: 2 },
  status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1 },
};

describe('health targets', () => {
  it('with wait: the inventory objects of the kinds judged by replicas or Ready; with healthChecks: those', () => {
    expect(healthTargets(web as any)).toEqual([{ kind: 'Deployment', namespace: 'default', name: 'web' }]);
    const hc = {
      ...web,
      spec: {
        healthChecks: [
          { apiVersion: 'helm.toolkit.fluxcd.io/v2', kind: 'HelmRelease', name: 'cilium', namespace: 'kube-system' },
          { kind: 'ConfigMap', name: 'x' },
        ],
      },
    };
    expect(healthTargets(hc as any)).toEqual([{ kind: 'HelmRelease', namespace: 'kube-system', name: 'cilium' }]);
    expect(
      targetReads([
        { kind: 'Deployment', namespace: 'default', name: 'web' },
        { kind: 'DaemonSet', namespace: 'default', name: 'agent' },
        { kind: 'Deployment', namespace: 'default', name: 'web' },
      ]),
    ).toEqual([
      { path: '/apis/apps/v1/namespaces/default/deployments/web', kubectl: 'get deployment.apps/web -n default -o json' },
      { path: '/apis/apps/v1/namespaces/default/daemonsets/agent', kubectl: 'get daemonset.apps/agent -n default -o json' },
    ]);
  });

  it('names what is short (kstatus: updated and available replicas, a generation not observed, Ready of a Flux object) and what is missing', () => {
    const t = [
      { kind: 'Deployment', namespace: 'default', name: 'web' },
      { kind: 'DaemonSet', namespace: 'default', name: 'gone' },
      { kind: 'HelmRelease', namespace: 'kube-system', name: 'cilium' },
    ];
    const hr = {
      kind: 'HelmRelease',
      metadata: { name: 'cilium', namespace: 'kube-system', generation: 1 },
      status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True' }] },
    };
    expect(notReadyText(t, [deployment, hr])).toEqual(['Deployment/default/web (1/2 available, 2 updated)', 'DaemonSet/default/gone (NotFound)']);
    expect(notReadyText(t.slice(0, 1), [{ ...deployment, metadata: { ...deployment.metadata, generation: 2 } }])).toEqual([
      'Deployment/default/web (its controller has not observed the latest generation)',
    ]);
    expect(notReadyText(t.slice(0, 1), [{ ...deployment, status: { ...deployment.status, availableReplicas: 2 } }])).toEqual([]);
  });
});

describe('the wait at its budget with health checks still running', () => {
  it('FLUX_HEALTHCHECK_FAILED naming the running check and the Deployment not ready', async () => {
    const source = {
      kind: 'GitRepository',
      metadata: { name: 'flux-system', namespace: 'flux-system', generation: 1, annotations: { 'reconcile.fluxcd.io/requestedAt': TOKEN } },
      status: {
        observedGeneration: 1,
        lastHandledReconcileAt: TOKEN,
        artifact: { revision: REV },
        conditions: [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: `stored artifact for revision '${REV}'` }],
      },
    };
    const controller = new AbortController();
    let looks = 0;
    const ctx: any = {
      signal: new AbortController().signal,
      // No kubeconfig there: the reads go to `k3s kubectl` on the host, which this fake answers.
      stateDir: '/nonexistent',
      clock: { now: () => 0, sleep: async (_ms: number, signal: AbortSignal) => signal.throwIfAborted() },
      remote: () => ({
        exec: async (cmd: string) => {
          if (cmd.includes(' annotate ')) return { code: 0, stdout: '', stderr: '' };
          if (cmd.includes('deployment.apps/web')) return { code: 0, stdout: JSON.stringify(deployment), stderr: '' };
          if (++looks >= 3) controller.abort();
          return { code: 0, stdout: JSON.stringify({ items: [source, web] }), stderr: '' };
        },
      }),
    };
    const err = await waitFluxReady(ctx, { name: 'k3s-1', address: '', role: 'server', founder: true }, controller.signal).catch((e) => e);
    expect(causesOf(err).map((c) => [c.causeId, c.message])).toEqual([
      [
        'FLUX_HEALTHCHECK_FAILED',
        `Kustomization flux-system/web: HealthCheckRunning: the health checks had not ended when the budget ran out (${running}); not ready: Deployment/default/web (1/2 available, 2 updated)`,
      ],
    ]);
  });
});

// Flux's root cause from its objects alone: the source first, then the first Kustomization down a
// dependsOn chain that fails for its own reason, classified by its Ready condition.
import { describe, expect, it } from 'vitest';
import { classifyKustomization, fluxState, literalVariables, rootOf, type FluxObject } from '../../phases/flux/root-cause.ts';

const cond = (status: string, reason: string, message: string) => [{ type: 'Ready', status, reason, message }];
const ks = (name: string, ready: [string, string, string] | undefined, dependsOn: string[] = [], gen = { generation: 1, observed: 1 }): FluxObject => ({
  kind: 'Kustomization',
  metadata: { name, namespace: 'flux-system', generation: gen.generation },
  spec: { dependsOn: dependsOn.map((n) => ({ name: n })), sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
  status: { observedGeneration: gen.observed, conditions: ready ? cond(...ready) : [] },
});
const src = (ready: [string, string, string] | undefined): FluxObject => ({
  kind: 'GitRepository',
  metadata: { name: 'flux-system', namespace: 'flux-system', generation: 1 },
  status: { observedGeneration: 1, conditions: ready ? cond(...ready) : [] },
});
const OK: [string, string, string] = ['True', 'ReconciliationSucceeded', 'Applied revision: main@sha1:abc'];
const SRC_OK: [string, string, string] = ['True', 'Succeeded', "stored artifact for revision 'main@sha1:abc'"];
const WAITING = (dep: string): [string, string, string] => ['False', 'DependencyNotReady', `dependency 'flux-system/${dep}' is not ready`];

describe('fluxState', () => {
  it('is ready when the source and every Kustomization are Ready for their generation', () => {
    expect(fluxState([src(SRC_OK)], [ks('flux-system', OK), ks('platform', OK)])).toEqual({ ready: true });
  });

  it('a Ready of an older generation is not Ready (the new spec is not reconciled yet)', () => {
    const s = fluxState([src(SRC_OK)], [ks('platform', OK, [], { generation: 2, observed: 1 })]);
    expect(s).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_RECONCILIATION_FAILED', object: 'Kustomization flux-system/platform', final: false }] });
  });

  it('a source that cannot authenticate is FLUX_SOURCE_NOT_READY with its message, and explains its Kustomizations', () => {
    const msg = 'failed to checkout and determine revision: unable to clone: ssh: handshake failed: ssh: unable to authenticate';
    const s = fluxState([src(['False', 'AuthenticationFailed', msg])], [ks('flux-system', ['False', 'ArtifactFailed', 'Source artifact not found'])]);
    expect(s).toEqual({
      ready: false,
      verdicts: [{ causeId: 'FLUX_SOURCE_NOT_READY', object: 'GitRepository flux-system/flux-system', reason: 'AuthenticationFailed', message: msg, final: true }],
    });
  });

  it('a source not reconciled yet is pending, not final', () => {
    const s = fluxState([src(undefined)], []);
    expect(s).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_SOURCE_NOT_READY', reason: 'NoReadyCondition', final: false }] });
  });

  it('names the ROOT of a dependsOn chain, not the link before it, and who waits on it', () => {
    const s = fluxState(
      [src(SRC_OK)],
      [
        ks('flux-system', OK),
        ks('platform', ['False', 'BuildFailed', 'kustomize build failed: accumulating resources: missing.yaml: no such file or directory']),
        ks('platform-config', WAITING('platform'), ['platform']),
        ks('apps-wave-0', WAITING('platform-config'), ['platform-config']),
      ],
    );
    expect(s.ready).toBe(false);
    const verdicts = s.ready ? [] : s.verdicts;
    expect(verdicts.map((v) => [v.causeId, v.object])).toEqual([
      ['FLUX_BUILD_FAILED', 'Kustomization flux-system/platform'],
      ['FLUX_DEPENDENCY_NOT_READY', 'Kustomization flux-system/platform'],
    ]);
    expect(verdicts[1].waiting).toEqual(['Kustomization flux-system/platform-config', 'Kustomization flux-system/apps-wave-0']);
    expect(verdicts[1].message).toContain('Kustomization flux-system/platform, the root');
    expect(verdicts[1].message).not.toContain('waits on Kustomization flux-system/platform-config');
    expect(verdicts[1].final).toBe(true);
  });

  it('skips Ready dependencies to find the failing one among several', () => {
    const byKey = new Map(
      [ks('a', OK), ks('b', ['False', 'HealthCheckFailed', 'timeout waiting for: [Deployment/x/y status: InProgress]']), ks('c', WAITING('b'), ['a', 'b'])].map((k) => [`flux-system/${k.metadata.name}`, k]),
    );
    expect((rootOf(byKey.get('flux-system/c')!, byKey) as FluxObject).metadata.name).toBe('b');
  });

  it('a dependency that does not exist is the root, named as such', () => {
    const s = fluxState([src(SRC_OK)], [ks('apps', WAITING('platform-config'), ['platform-config'])]);
    expect(s).toMatchObject({
      ready: false,
      verdicts: [{ causeId: 'FLUX_DEPENDENCY_NOT_READY', object: 'Kustomization flux-system/platform-config', reason: 'DependencyNotFound', waiting: ['Kustomization flux-system/apps'] }],
    });
  });

  it('a dependsOn cycle ends instead of looping', () => {
    const s = fluxState([src(SRC_OK)], [ks('a', WAITING('b'), ['b']), ks('b', WAITING('a'), ['a'])]);
    expect(s.ready).toBe(false);
  });

  it('waiting on a dependency that is Ready by now is pending (the controller has not retried yet)', () => {
    const s = fluxState([src(SRC_OK)], [ks('a', OK), ks('b', WAITING('a'), ['a'])]);
    expect(s).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_RECONCILIATION_FAILED', object: 'Kustomization flux-system/b', final: false }] });
  });
});

describe('a status from before this run is not an answer', () => {
  const requested = (o: FluxObject, req: string, handled?: string): FluxObject => ({
    ...o,
    metadata: { ...o.metadata, annotations: { 'reconcile.fluxcd.io/requestedAt': req } },
    status: { ...o.status, ...(handled ? { lastHandledReconcileAt: handled } : {}) },
  });

  it('a reconcile request not handled yet: pending, even if the old status says Ready or failed', () => {
    expect(fluxState([requested(src(SRC_OK), 't2', 't1')], [])).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_SOURCE_NOT_READY', final: false }] });
    expect(fluxState([requested(src(['False', 'AuthenticationFailed', 'x']), 't2', 't1')], [])).toMatchObject({ ready: false, verdicts: [{ final: false }] });
    expect(fluxState([requested(src(SRC_OK), 't2', 't2')], [])).toEqual({ ready: true });
  });

  it("a Kustomization that has not attempted its source's current revision: pending", () => {
    const source = { ...src(SRC_OK), status: { ...src(SRC_OK).status, artifact: { revision: 'main@sha1:new' } } };
    const old = { ...ks('flux-system', OK), status: { ...ks('flux-system', OK).status, lastAttemptedRevision: 'main@sha1:old' } };
    expect(fluxState([source], [old])).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_RECONCILIATION_FAILED', final: false }] });
    const failedOld = { ...ks('p', ['False', 'BuildFailed', 'x']), status: { ...ks('p', ['False', 'BuildFailed', 'x']).status, lastAttemptedRevision: 'main@sha1:old' } };
    expect(fluxState([source], [failedOld])).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_BUILD_FAILED', final: false }] });
    const now = { ...old, status: { ...old.status, lastAttemptedRevision: 'main@sha1:new' } };
    expect(fluxState([source], [now])).toEqual({ ready: true });
  });
});

describe('classifyKustomization', () => {
  const c = (reason: string, message: string, status = 'False') => classifyKustomization(ks('k', [status, reason, message]));
  it.each([
    ['BuildFailed', 'kustomize build failed: variable not set (strict mode): "CLUSTER_DOMAIN"', 'FLUX_SUBSTITUTION_FAILED'],
    ['ReconciliationFailed', 'CDI/cdi dry-run failed: no matches for kind "CDI" in version "cdi.kubevirt.io/v1beta1"', 'FLUX_CRD_NOT_INSTALLED'],
    ['HealthCheckFailed', 'health check failed after 30s: timeout waiting for: [Deployment/apps/web status: InProgress]', 'FLUX_HEALTHCHECK_FAILED'],
    ['BuildFailed', 'kustomize build failed: map[string]interface {}(nil): yaml: unmarshal errors', 'FLUX_BUILD_FAILED'],
    ['ArtifactFailed', 'kustomization path not found: stat ./tiers/missing: no such file or directory', 'FLUX_BUILD_FAILED'],
    ['ReconciliationFailed', 'Namespace/x apply failed: admission webhook denied the request', 'FLUX_RECONCILIATION_FAILED'],
  ])('%s "%s" → %s (final)', (reason, message, cause) => {
    expect(c(reason, message)).toMatchObject({ causeId: cause, reason, message, final: true, object: 'Kustomization flux-system/k' });
  });

  it('Progressing is not final; no condition at all is not final; a source artifact not there yet is not final', () => {
    expect(c('ArtifactFailed', 'Source artifact not found, retrying in 30s')).toMatchObject({ causeId: 'FLUX_RECONCILIATION_FAILED', final: false });
    expect(c('Progressing', 'Reconciliation in progress', 'Unknown')).toMatchObject({ causeId: 'FLUX_RECONCILIATION_FAILED', final: false });
    expect(classifyKustomization(ks('k', undefined))).toMatchObject({ reason: 'NoReadyCondition', final: false });
  });

  it('a failure reported for an older generation is not final (the new spec may fix it)', () => {
    const k = ks('k', ['False', 'BuildFailed', 'x'], [], { generation: 3, observed: 2 });
    expect(classifyKustomization(k)).toMatchObject({ causeId: 'FLUX_BUILD_FAILED', final: false });
  });
});

describe('literalVariables', () => {
  it('finds ${VAR} left in values as dotted paths, and nothing in substituted ones', () => {
    expect(literalVariables({ k8sServiceHost: '${K3S_API_HOST}', k8sServicePort: 6443, ipam: { list: ['10.42.0.0/16', 'x-${POD_CIDR}'] }, plain: 'a$b' })).toEqual([
      { path: 'k8sServiceHost', text: '${K3S_API_HOST}' },
      { path: 'ipam.list[1]', text: 'x-${POD_CIDR}' },
    ]);
    expect(literalVariables({ k8sServiceHost: '10.77.0.9' })).toEqual([]);
  });
});

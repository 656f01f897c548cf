// Flux's root cause from its objects alone: the source first, then the first Kustomization down a
// dependsOn chain that fails for its own reason, classified by its Ready condition. Stalled (for the
// current generation) is the only verdict that stops a wait early.
import { describe, expect, it } from 'vitest';
import {
  awaitingApplier,
  classifyKustomization,
  fluxState,
  literalVariables,
  rootOf,
  servesRevision,
  upToDate,
  type Condition,
  type FluxObject,
} from '../../phases/flux/root-cause.ts';

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
    expect(s).toMatchObject({
      ready: false,
      verdicts: [{ causeId: 'FLUX_RECONCILIATION_FAILED', object: 'Kustomization flux-system/platform', stalled: false }],
    });
  });

  it('a source that cannot authenticate is FLUX_SOURCE_NOT_READY with its message, and explains its Kustomizations', () => {
    const msg = 'failed to checkout and determine revision: unable to clone: ssh: handshake failed: ssh: unable to authenticate';
    const s = fluxState([src(['False', 'AuthenticationFailed', msg])], [ks('flux-system', ['False', 'ArtifactFailed', 'Source artifact not found'])]);
    expect(s).toEqual({
      ready: false,
      verdicts: [
        { causeId: 'FLUX_SOURCE_NOT_READY', object: 'GitRepository flux-system/flux-system', reason: 'AuthenticationFailed', message: msg, stalled: false },
      ],
    });
  });

  it('a source not reconciled yet is pending, not stalled', () => {
    const s = fluxState([src(undefined)], []);
    expect(s).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_SOURCE_NOT_READY', reason: 'NoReadyCondition', stalled: false }] });
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
    expect(verdicts[1].stalled).toBe(false);
  });

  it('skips Ready dependencies to find the failing one among several', () => {
    const byKey = new Map(
      [ks('a', OK), ks('b', ['False', 'HealthCheckFailed', 'timeout waiting for: [Deployment/x/y status: InProgress]']), ks('c', WAITING('b'), ['a', 'b'])].map(
        (k) => [`flux-system/${k.metadata.name}`, k],
      ),
    );
    expect((rootOf(byKey.get('flux-system/c')!, byKey) as FluxObject).metadata.name).toBe('b');
  });

  it('a dependency that does not exist is the root, named as such', () => {
    const s = fluxState([src(SRC_OK)], [ks('apps', WAITING('platform-config'), ['platform-config'])]);
    expect(s).toMatchObject({
      ready: false,
      verdicts: [
        {
          causeId: 'FLUX_DEPENDENCY_NOT_READY',
          object: 'Kustomization flux-system/platform-config',
          reason: 'DependencyNotFound',
          waiting: ['Kustomization flux-system/apps'],
        },
      ],
    });
  });

  it('a dependsOn cycle ends instead of looping', () => {
    const s = fluxState([src(SRC_OK)], [ks('a', WAITING('b'), ['b']), ks('b', WAITING('a'), ['a'])]);
    expect(s.ready).toBe(false);
  });

  it('waiting on a dependency that is Ready by now is pending (the controller has not retried yet)', () => {
    const s = fluxState([src(SRC_OK)], [ks('a', OK), ks('b', WAITING('a'), ['a'])]);
    expect(s).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_RECONCILIATION_FAILED', object: 'Kustomization flux-system/b', stalled: false }] });
  });
});

describe('a status from before this run is not an answer', () => {
  const requested = (o: FluxObject, req: string, handled?: string): FluxObject => ({
    ...o,
    metadata: { ...o.metadata, annotations: { 'reconcile.fluxcd.io/requestedAt': req } },
    status: { ...o.status, ...(handled ? { lastHandledReconcileAt: handled } : {}) },
  });

  it('a reconcile request not handled yet: pending, even if the old status says Ready or failed', () => {
    expect(fluxState([requested(src(SRC_OK), 't2', 't1')], [])).toMatchObject({
      ready: false,
      verdicts: [{ causeId: 'FLUX_SOURCE_NOT_READY', stalled: false }],
    });
    expect(fluxState([requested(src(['False', 'AuthenticationFailed', 'x']), 't2', 't1')], [])).toMatchObject({
      ready: false,
      verdicts: [{ stalled: false, message: "x (written before this run's reconcile request, which the controller has not answered yet)" }],
    });
    expect(fluxState([requested(src(SRC_OK), 't2', 't2')], [])).toEqual({ ready: true });
  });

  it("a Kustomization that has not attempted its source's current revision: pending", () => {
    const source = { ...src(SRC_OK), status: { ...src(SRC_OK).status, artifact: { revision: 'main@sha1:new' } } };
    const old = { ...ks('flux-system', OK), status: { ...ks('flux-system', OK).status, lastAttemptedRevision: 'main@sha1:old' } };
    expect(fluxState([source], [old])).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_RECONCILIATION_FAILED', stalled: false }] });
    const failedOld = {
      ...ks('p', ['False', 'BuildFailed', 'x']),
      status: { ...ks('p', ['False', 'BuildFailed', 'x']).status, lastAttemptedRevision: 'main@sha1:old' },
    };
    expect(fluxState([source], [failedOld])).toMatchObject({ ready: false, verdicts: [{ causeId: 'FLUX_BUILD_FAILED', stalled: false }] });
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
  ])('%s "%s" → %s (waited on: not stalled)', (reason, message, cause) => {
    expect(c(reason, message)).toMatchObject({ causeId: cause, reason, message, stalled: false, object: 'Kustomization flux-system/k' });
  });

  it('Progressing, no condition at all, a source artifact not there yet: named, not stalled', () => {
    expect(c('ArtifactFailed', 'Source artifact not found, retrying in 30s')).toMatchObject({ causeId: 'FLUX_RECONCILIATION_FAILED', stalled: false });
    expect(c('Progressing', 'Reconciliation in progress', 'Unknown')).toMatchObject({ causeId: 'FLUX_RECONCILIATION_FAILED', stalled: false });
    expect(classifyKustomization(ks('k', undefined))).toMatchObject({ reason: 'NoReadyCondition', stalled: false });
  });
});

// Status objects as the controllers write them (conditions, reasons and messages verbatim):
// fluxcd/kustomize-controller v1.9.0 internal/controller/kustomization_controller.go (Reconcile, reconcile,
// checkDependencies, checkHealth, finalizeStatus), fluxcd/source-controller v1.9.0
// internal/controller/gitrepository_controller.go with fluxcd/pkg runtime/v0.110.0 runtime/reconcile
// (ProgressiveStatus, AddPatchOptions), fluxcd/helm-controller v1.6.0 internal/reconcile/atomic_release.go.
describe('upstream-shaped status: observedGeneration only when Ready or Stalled', () => {
  const REQ = '2026-12-01T23:00:00Z';
  const T = '2026-12-01T23:00:05Z';
  const c = (type: string, status: string, reason: string, message: string): Condition & { lastTransitionTime: string } => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: T,
  });
  const at = (kind: string, name: string, generation: number, status: NonNullable<FluxObject['status']>, spec: any = {}): FluxObject => ({
    kind,
    metadata: { name, namespace: 'flux-system', generation, annotations: { 'reconcile.fluxcd.io/requestedAt': REQ } },
    spec: { sourceRef: { kind: 'GitRepository', name: 'flux-system' }, ...spec },
    status: { lastHandledReconcileAt: REQ, ...status },
  });
  const REV = 'main@sha1:5b1d6e7a0c0f1e2d3c4b5a69788796a5b4c3d2e1';
  const source = at('GitRepository', 'flux-system', 1, {
    observedGeneration: 1,
    artifact: { revision: REV },
    conditions: [
      c('Ready', 'True', 'Succeeded', `stored artifact for revision '${REV}'`),
      c('ArtifactInStorage', 'True', 'Succeeded', `stored artifact for revision '${REV}'`),
    ],
  });

  it('a new GitRepository whose clone fails: no observedGeneration, Reconciling ProgressingWithRetry — named, not stalled', () => {
    const msg =
      "failed to checkout and determine revision: unable to clone 'ssh://git@10.77.0.2/lab-gitops.git': ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain";
    const repo = at('GitRepository', 'flux-system', 1, {
      conditions: [
        c('Ready', 'False', 'GitOperationFailed', msg),
        c('FetchFailed', 'True', 'GitOperationFailed', msg),
        c('Reconciling', 'True', 'ProgressingWithRetry', 'processing object: new generation 0 -> 1'),
      ],
    });
    expect(fluxState([repo], [])).toEqual({
      ready: false,
      verdicts: [
        { causeId: 'FLUX_SOURCE_NOT_READY', object: 'GitRepository flux-system/flux-system', reason: 'GitOperationFailed', message: msg, stalled: false },
      ],
    });
  });

  it('a new Kustomization generation whose path is missing keeps the old observedGeneration and lastAttemptedRevision: still named FLUX_BUILD_FAILED', () => {
    const msg = 'kustomization path not found: stat /tmp/kustomization-1234567890/tiers/missing: no such file or directory';
    const k = at('Kustomization', 'tier-a', 2, {
      observedGeneration: 1,
      lastAttemptedRevision: 'main@sha1:0000000000000000000000000000000000000000',
      conditions: [
        c('Ready', 'False', 'ArtifactFailed', msg),
        c('Reconciling', 'True', 'ProgressingWithRetry', `Fetching manifests for revision ${REV} with a timeout of 9m30s`),
      ],
    });
    expect(fluxState([source], [k])).toEqual({
      ready: false,
      verdicts: [{ causeId: 'FLUX_BUILD_FAILED', object: 'Kustomization flux-system/tier-a', reason: 'ArtifactFailed', message: msg, stalled: false }],
    });
  });

  it('a dependent of a failing root (DependencyNotReady, no Reconciling): the root is named with who waits', () => {
    const root = at('Kustomization', 'tier-a', 1, {
      conditions: [c('Ready', 'False', 'BuildFailed', 'kustomize build failed: accumulating resources: no such file')],
    });
    const dep = at(
      'Kustomization',
      'tier-b',
      1,
      { conditions: [c('Ready', 'False', 'DependencyNotReady', "dependency 'flux-system/tier-a' is not ready")] },
      { dependsOn: [{ name: 'tier-a' }] },
    );
    const s = fluxState([source], [root, dep]);
    expect(s.ready ? [] : s.verdicts.map((v) => [v.causeId, v.object, v.stalled])).toEqual([
      ['FLUX_BUILD_FAILED', 'Kustomization flux-system/tier-a', false],
      ['FLUX_DEPENDENCY_NOT_READY', 'Kustomization flux-system/tier-a', false],
    ]);
  });

  it('health checks still running (Ready Unknown, Healthy Unknown): FLUX_HEALTHCHECK_FAILED naming the running check', () => {
    const running = `Running health checks for revision ${REV} with a timeout of 9m30s`;
    const k = at('Kustomization', 'web', 1, {
      lastAttemptedRevision: REV,
      conditions: [
        c('Ready', 'Unknown', 'Progressing', 'Reconciliation in progress'),
        c('Reconciling', 'True', 'Progressing', running),
        c('Healthy', 'Unknown', 'Progressing', running),
      ],
    });
    expect(fluxState([source], [k])).toMatchObject({
      ready: false,
      verdicts: [
        {
          causeId: 'FLUX_HEALTHCHECK_FAILED',
          reason: 'HealthCheckRunning',
          message: `the health checks had not ended when the budget ran out (${running})`,
          stalled: false,
        },
      ],
    });
  });

  it('a health check that timed out: HealthCheckFailed, Healthy False, Reconciling ProgressingWithRetry, old observedGeneration', () => {
    const wait = "timeout waiting for: [Deployment/default/web status: 'InProgress']";
    const k = at('Kustomization', 'web', 1, {
      lastAttemptedRevision: REV,
      conditions: [
        c('Ready', 'False', 'HealthCheckFailed', `health check failed after 30.004512s: ${wait}`),
        c('Reconciling', 'True', 'ProgressingWithRetry', `Running health checks for revision ${REV} with a timeout of 30s`),
        c('Healthy', 'False', 'HealthCheckFailed', wait),
      ],
    });
    expect(fluxState([source], [k])).toMatchObject({
      ready: false,
      verdicts: [{ causeId: 'FLUX_HEALTHCHECK_FAILED', reason: 'HealthCheckFailed', stalled: false }],
    });
  });

  it('Stalled for the current generation (observedGeneration written with it) is terminal, and the message says why', () => {
    // Reconcile: `"%s: %v", TerminalErrorMessage, err`, err controller-runtime's TerminalError ("terminal error: …") of evalReadyExpr.
    const msg = 'Reconciliation failed terminally due to configuration error: terminal error: failed to evaluate dependency tier-a: failed to parse expression';
    const k = at('Kustomization', 'tier-b', 2, {
      observedGeneration: 2,
      conditions: [c('Ready', 'False', 'InvalidCELExpression', msg), c('Stalled', 'True', 'InvalidCELExpression', msg)],
    });
    const s = fluxState([source], [k]);
    expect(s).toMatchObject({
      ready: false,
      verdicts: [
        {
          causeId: 'FLUX_RECONCILIATION_FAILED',
          stalled: true,
          message: `${msg} (Stalled: InvalidCELExpression: ${msg}; the controller will not retry this generation)`,
        },
      ],
    });
  });

  it('a Stalled of an older generation, or while Reconciling is True, is not terminal', () => {
    const stalled = [c('Ready', 'False', 'AccessDenied', 'x'), c('Stalled', 'True', 'AccessDenied', 'x')];
    const older = at('Kustomization', 'k', 3, { observedGeneration: 2, conditions: stalled });
    const reconciling = at('Kustomization', 'k', 2, {
      observedGeneration: 2,
      conditions: [...stalled, c('Reconciling', 'True', 'Progressing', 'Reconciliation in progress')],
    });
    expect(fluxState([source], [older])).toMatchObject({ verdicts: [{ stalled: false }] });
    expect(fluxState([source], [reconciling])).toMatchObject({ verdicts: [{ stalled: false }] });
  });
});

describe('upToDate: nothing left for Flux to do for what its sources hold (kustomize-controller checkDependencies)', () => {
  const REV = 'main@sha1:abc';
  const source = (o: Partial<FluxObject['status']> = {}, generation = 1): FluxObject => ({
    ...src(SRC_OK),
    metadata: { name: 'flux-system', namespace: 'flux-system', generation },
    status: { ...src(SRC_OK).status, artifact: { revision: REV }, ...o },
  });
  const applied = (name: string, o: Partial<FluxObject['status']> = {}, sourceKind = 'GitRepository'): FluxObject => {
    const k = ks(name, OK);
    return { ...k, spec: { ...k.spec, sourceRef: { kind: sourceKind, name: 'flux-system' } }, status: { ...k.status, lastAppliedRevision: REV, ...o } };
  };

  it('holds when every object is Ready for its generation and every Kustomization applied its source revision', () => {
    expect(upToDate([source()], [applied('flux-system'), applied('platform')])).toBe(true);
  });

  it.each([
    ['no Kustomization', [source()], []],
    ['no source', [], [applied('flux-system')]],
    ['a source of an older generation', [source({}, 2)], [applied('flux-system')]],
    ['a source without an artifact', [source({ artifact: undefined })], [applied('flux-system')]],
    ['a Kustomization that applied another revision', [source()], [applied('flux-system'), applied('platform', { lastAppliedRevision: 'main@sha1:old' })]],
    ['a Kustomization whose observedGeneration is behind', [source()], [applied('flux-system', { observedGeneration: 0 })]],
    ['a Kustomization of a source this wait does not read (OCIRepository)', [source()], [applied('flux-system', {}, 'OCIRepository')]],
  ])('not with %s', (_what, sources, kustomizations) => {
    expect(upToDate(sources as FluxObject[], kustomizations as FluxObject[])).toBe(false);
  });
});

describe("servesRevision: the flux phase's GitRepository serves the checkout's revision and nothing is left to do", () => {
  const REV = 'main@sha1:abc';
  const SYNC = { name: 'flux-system', namespace: 'flux-system' };
  const source = (name = 'flux-system', o: Partial<FluxObject['status']> = {}, generation = 1): FluxObject => ({
    ...src(SRC_OK),
    metadata: { name, namespace: 'flux-system', generation },
    status: { ...src(SRC_OK).status, artifact: { revision: REV }, ...o },
  });
  const applied = (name: string, o: Partial<FluxObject['status']> = {}, sourceName = 'flux-system'): FluxObject => {
    const k = ks(name, OK);
    return { ...k, spec: { ...k.spec, sourceRef: { kind: 'GitRepository', name: sourceName } }, status: { ...k.status, lastAppliedRevision: REV, ...o } };
  };

  it('holds for the revision the source serves, with everything upToDate (another source too)', () => {
    expect(servesRevision([source(), source('apps')], [applied('flux-system'), applied('apps', {}, 'apps')], SYNC, REV)).toBe(true);
  });

  it.each([
    [
      'the source serves another revision (the checkout moved)',
      [source('flux-system', { artifact: { revision: 'main@sha1:old' } })],
      [applied('flux-system', { lastAppliedRevision: 'main@sha1:old' })],
      REV,
    ],
    ['the checkout is of another branch', [source()], [applied('flux-system')], 'other@sha1:abc'],
    ['the source is of an older generation (its spec changed)', [source('flux-system', {}, 2)], [applied('flux-system')], REV],
    [
      'the source is not Ready',
      [{ ...source(), status: { ...source().status, conditions: cond('False', 'GitOperationFailed', 'x') } }],
      [applied('flux-system')],
      REV,
    ],
    ['a Kustomization has not applied it yet', [source()], [applied('flux-system', { lastAppliedRevision: 'main@sha1:old' })], REV],
    ['another source is not current', [source(), source('apps', {}, 2)], [applied('flux-system'), applied('apps', {}, 'apps')], REV],
    ['the source is not there', [source('apps')], [applied('apps', {}, 'apps')], REV],
  ])('not when %s', (_what, sources, kustomizations, revision) => {
    expect(servesRevision(sources as FluxObject[], kustomizations as FluxObject[], SYNC, revision as string)).toBe(false);
  });
});

describe('literalVariables', () => {
  it('finds ${VAR} left in values as dotted paths, and nothing in substituted ones', () => {
    expect(
      literalVariables({ k8sServiceHost: '${K3S_API_HOST}', k8sServicePort: 6443, ipam: { list: ['10.42.0.0/16', 'x-${POD_CIDR}'] }, plain: 'a$b' }),
    ).toEqual([
      { path: 'k8sServiceHost', text: '${K3S_API_HOST}' },
      { path: 'ipam.list[1]', text: 'x-${POD_CIDR}' },
    ]);
    expect(literalVariables({ k8sServiceHost: '10.77.0.9' })).toEqual([]);
  });
});

describe('awaitingApplier: a Stalled Kustomization its applier may yet prune', () => {
  const at = (o: FluxObject, status: Record<string, unknown>, labels?: Record<string, string>): FluxObject => ({
    ...o,
    metadata: { ...o.metadata, annotations: { 'reconcile.fluxcd.io/requestedAt': 't2' }, ...(labels && { labels }) },
    status: { ...o.status, ...status },
  });
  const appliedBy = { 'kustomize.toolkit.fluxcd.io/name': 'flux-system', 'kustomize.toolkit.fluxcd.io/namespace': 'flux-system' };
  const source = (handled: string, revision: string) => at(src(SRC_OK), { lastHandledReconcileAt: handled, artifact: { revision } });
  const stalled = at(ks('tier-a', ['False', 'ArtifactFailed', 'kustomization path not found']), { lastHandledReconcileAt: 't2' }, appliedBy);

  it("names the child while its applier has not answered this run's request at the source's revision", () => {
    const applier = at(ks('flux-system', OK), { lastHandledReconcileAt: 't1', lastAttemptedRevision: 'main@sha1:old' });
    expect([...awaitingApplier([source('t2', 'main@sha1:new')], [applier, stalled])]).toEqual(['Kustomization flux-system/tier-a']);
    // The source has not fetched yet either: still waiting.
    expect([...awaitingApplier([source('t1', 'main@sha1:old')], [applier, stalled])]).toEqual(['Kustomization flux-system/tier-a']);
  });

  it('lets the Stalled child stop the wait once the applier has attempted the current revision, and ignores objects without an applier', () => {
    const applier = at(ks('flux-system', OK), { lastHandledReconcileAt: 't2', lastAttemptedRevision: 'main@sha1:new' });
    expect(awaitingApplier([source('t2', 'main@sha1:new')], [applier, stalled]).size).toBe(0);
    expect(awaitingApplier([source('t2', 'main@sha1:new')], [at(ks('lone', OK), {})]).size).toBe(0);
  });
});

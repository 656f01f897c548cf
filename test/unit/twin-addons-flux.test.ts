// The pure parts of the Flux twins: postBuild substitution in Flux 2.9's strict mode, the words go-git
// uses for a failed clone, the status messages and inventory ids kustomize-controller writes, kstatus, and
// when an object is due for a reconcile.
import { describe, expect, it } from 'vitest';
import { DEPENDENCY_REQUEUE_MS, REQUESTED_AT, due, durationMs, goDuration, intervalRequeue, withConditions } from '../../lab/twin/addons/flux/common.ts';
import { deletesObjects } from '../../lab/twin/addons/flux/garbage.ts';
import { SubstitutionError, mergeVars, substitute, substitutionDisabled } from '../../lab/twin/addons/flux/envsubst.ts';
import { branchNotFoundMessage, fetchFailedMessage, goGitError, sshAddress } from '../../lab/twin/addons/flux/git-errors.ts';
import { kstatus } from '../../lab/twin/addons/flux/health.ts';
import { configDigest, releaseMessage, releaseNameOf } from '../../lab/twin/addons/flux/helmrelease.ts';
import {
  appliedRevision,
  dependencyNotReady,
  dryRunNoMatch,
  fromInventoryEntry,
  inventoryEntry,
  kustomizationTimeoutMs,
  postBuildFailed,
} from '../../lab/twin/addons/flux/kustomization.ts';

describe('postBuild substitution (strict, Flux 2.9)', () => {
  const vars = { HOST: '10.77.0.9', EMPTY: '' };

  it('replaces ${VAR}, uses defaults when unset or empty, keeps $VAR and unescapes $$', () => {
    expect(substitute('host: ${HOST}', vars)).toBe('host: 10.77.0.9');
    expect(substitute('a: ${MISSING:=2} b: ${EMPTY:-x} c: ${HOST:=y} d: ${MISSING=${HOST}}', vars)).toBe('a: 2 b: x c: 10.77.0.9 d: 10.77.0.9');
    expect(substitute('plain $HOST, escaped $${HOST}', vars)).toBe('plain $HOST, escaped ${HOST}');
    expect(substitute('empty: "${EMPTY}"', vars)).toBe('empty: ""');
    expect(substitute('${MISSING:+x}${MISSING?y}', vars)).toBe('xy');
    // A default's own variables are evaluated even when the variable is set (upstream evaluates arguments first).
    expect(() => substitute('${HOST:=${NOPE}}', vars)).toThrow(/variable not set \(strict mode\): "NOPE"/);
  });

  it("a variable that is not set fails with upstream's message; without strict mode it becomes empty", () => {
    expect(() => substitute('k8sServiceHost: ${K3S_API_HOST}', vars)).toThrow(
      new SubstitutionError('variable substitution failed: variable not set (strict mode): "K3S_API_HOST"'),
    );
    expect(substitute('k8sServiceHost: "${K3S_API_HOST}"', vars, false)).toBe('k8sServiceHost: ""');
  });

  it('string functions are refused by name, not guessed', () => {
    expect(() => substitute('${HOST^^}', vars)).toThrow(/unsupported expression \$\{HOST\^\^\}/);
  });

  it('substituteFrom in order, then substitute; newlines removed; the disable annotation is honoured', () => {
    expect(mergeVars([{ A: '1', B: 'x\ny' }, { A: '2' }], { C: '3' })).toEqual({ A: '2', B: 'xy', C: '3' });
    expect(substitutionDisabled({ metadata: { annotations: { 'kustomize.toolkit.fluxcd.io/substitute': 'disabled' } } })).toBe(true);
    expect(substitutionDisabled({ metadata: {} })).toBe(false);
  });
});

describe("a failed clone in go-git's words", () => {
  it.each([
    [
      'git@10.77.0.2: Permission denied (publickey).\nfatal: Could not read from remote repository.',
      'ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain',
    ],
    [
      'No ED25519 host key is known for 10.77.0.2 and you have requested strict checking.\nHost key verification failed.',
      'ssh: handshake failed: knownhosts: key is unknown',
    ],
    ['@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification failed.', 'ssh: handshake failed: knownhosts: key mismatch'],
    ['ssh: connect to host 10.77.0.2 port 22: Connection refused', 'dial tcp 10.77.0.2:22: connect: connection refused'],
  ])('%s', (stderr, cause) => {
    expect(goGitError(stderr, '10.77.0.2:22')).toBe(cause);
  });

  it("the Ready message names the URL: clone without a revision, list with one, a missing branch as go-git's repository-not-found", () => {
    const url = 'ssh://git@10.77.0.2/lab-gitops.git';
    expect(fetchFailedMessage('clone', url, 'x')).toBe(`failed to checkout and determine revision: unable to clone '${url}': x`);
    expect(fetchFailedMessage('list', url, 'x')).toBe(`failed to checkout and determine revision: unable to list remote for '${url}': x`);
    expect(branchNotFoundMessage(url, 'nope')).toBe(
      `failed to checkout and determine revision: unable to clone: couldn't find remote ref "refs/heads/nope": git repository: '${url}'`,
    );
    expect(sshAddress('ssh://git@10.77.0.2/lab-gitops.git')).toBe('10.77.0.2:22');
    expect(sshAddress('ssh://git@host:2222/r.git')).toBe('host:2222');
  });
});

describe('kustomize-controller status words', () => {
  it('messages as upstream writes them', () => {
    expect(appliedRevision('main@sha1:abc')).toBe('Applied revision: main@sha1:abc');
    expect(dependencyNotReady('flux-system', 'infra')).toBe("dependency 'flux-system/infra' is not ready");
    expect(dryRunNoMatch({ apiVersion: 'helm.toolkit.fluxcd.io/v2', kind: 'HelmRelease', metadata: { name: 'cilium', namespace: 'kube-system' } })).toBe(
      'HelmRelease/kube-system/cilium dry-run failed: no matches for kind "HelmRelease" in version "helm.toolkit.fluxcd.io/v2"',
    );
    expect(dryRunNoMatch({ apiVersion: 'example.com/v1', kind: 'Cluster', metadata: { name: 'c' } })).toBe(
      'Cluster/c dry-run failed: no matches for kind "Cluster" in version "example.com/v1"',
    );
    expect(postBuildFailed({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'backup-target' } }, 'envsubst error: x')).toBe(
      "post build failed for 'ConfigMap.v1.[noGrp]/backup-target': envsubst error: x",
    );
    expect(postBuildFailed({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'nfs-csi' } }, 'y')).toBe(
      "post build failed for 'StorageClass.v1.storage.k8s.io/nfs-csi': y",
    );
  });

  it('inventory entries are namespace_name_group_kind with the version, and read back', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cluster-vars', namespace: 'flux-system' } };
    expect(inventoryEntry(cm)).toEqual({ id: 'flux-system_cluster-vars__ConfigMap', v: 'v1' });
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps' } };
    expect(inventoryEntry(ns)).toEqual({ id: '_apps__Namespace', v: 'v1' });
    expect(fromInventoryEntry({ id: 'kube-system_cilium_helm.toolkit.fluxcd.io_HelmRelease', v: 'v2' })).toEqual({
      apiVersion: 'helm.toolkit.fluxcd.io/v2',
      kind: 'HelmRelease',
      namespace: 'kube-system',
      name: 'cilium',
    });
  });
});

describe('helm-controller words', () => {
  it('release name defaults, config digest, success message', () => {
    expect(releaseNameOf({ metadata: { name: 'cilium' }, spec: {} })).toBe('cilium');
    expect(releaseNameOf({ metadata: { name: 'cilium' }, spec: { targetNamespace: 'kube-system' } })).toBe('kube-system-cilium');
    expect(releaseNameOf({ metadata: { name: 'x' }, spec: { releaseName: 'cilium', targetNamespace: 'kube-system' } })).toBe('cilium');
    expect(configDigest({ a: 1 })).toBe(configDigest({ a: 1 }));
    expect(configDigest({ a: 1 })).not.toBe(configDigest({ a: 2 }));
    expect(releaseMessage('upgrade', 'kube-system', 'cilium', 2, 'cilium', '1.19.5')).toBe(
      'Helm upgrade succeeded for release kube-system/cilium.v2 with chart cilium@1.19.5',
    );
  });
});

describe('kstatus and scheduling', () => {
  it('a Deployment is Current only with every replica updated and available for its generation', () => {
    const d = (status: any) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { generation: 2 }, spec: { replicas: 2 }, status });
    expect(kstatus(d({ observedGeneration: 2, updatedReplicas: 2, availableReplicas: 2 }))).toBe('Current');
    expect(kstatus(d({ observedGeneration: 1, updatedReplicas: 2, availableReplicas: 2 }))).toBe('InProgress');
    expect(kstatus(d({ observedGeneration: 2, updatedReplicas: 2, availableReplicas: 1 }))).toBe('InProgress');
  });

  it('a Flux object is Current when Ready for its generation, Failed when not Ready', () => {
    const k = (status: string, observedGeneration: number) => ({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { generation: 1 },
      status: { observedGeneration, conditions: [{ type: 'Ready', status }] },
    });
    expect(kstatus(k('True', 1))).toBe('Current');
    expect(kstatus(k('False', 1))).toBe('Failed');
    expect(kstatus(k('True', 0))).toBe('InProgress');
  });

  it('due: a new generation, a new requestedAt, or the requeue of the last attempt — not observedGeneration, which a failure leaves behind', () => {
    const obj = (extra: any = {}) => ({
      metadata: { generation: extra.gen ?? 1, annotations: extra.ann },
      spec: { interval: '1m' },
      status: { observedGeneration: 0, lastHandledReconcileAt: extra.handled },
    });
    const last = { at: 1000, generation: 1, retryMs: 10_000 };
    expect(due(obj(), undefined, 2000)).toBe(true);
    // A failed first generation (observedGeneration 0) is not retried every round, only at its requeue.
    expect(due(obj(), last, 2000)).toBe(false);
    expect(due(obj(), last, 11_000)).toBe(true);
    expect(due(obj(), { ...last, retryMs: DEPENDENCY_REQUEUE_MS }, 21_000)).toBe(false);
    expect(due(obj(), { ...last, retryMs: DEPENDENCY_REQUEUE_MS }, 31_000)).toBe(true);
    expect(due(obj({ gen: 2 }), last, 2000)).toBe(true);
    expect(due(obj({ ann: { [REQUESTED_AT]: 't1' }, handled: 't0' }), last, 2000)).toBe(true);
    expect(due(obj({ ann: { [REQUESTED_AT]: 't1' }, handled: 't1' }), last, 2000)).toBe(false);
    expect(intervalRequeue('1m')).toBe(10_000);
    expect(intervalRequeue('5s')).toBe(5_000);
    expect(durationMs('1h30m', 0)).toBe(5_400_000);
    expect(durationMs('nonsense', 7)).toBe(7);
  });

  it("health-check timeout as Kustomization.GetTimeout (kustomize-controller v1.9.0 api/v1): spec.timeout, else interval − 30 s, at least 30 s; printed as Go's Duration", () => {
    expect(kustomizationTimeoutMs({ spec: { interval: '10m' } })).toBe(570_000);
    expect(kustomizationTimeoutMs({ spec: { interval: '10m', timeout: '2m' } })).toBe(120_000);
    expect(kustomizationTimeoutMs({ spec: { interval: '10m', timeout: '5s' } })).toBe(30_000);
    expect(kustomizationTimeoutMs({ spec: { interval: '45s' } })).toBe(30_000);
    expect([570_000, 30_000, 3_600_000, 30_004, 90_500, 250].map(goDuration)).toEqual(['9m30s', '30s', '1h0m0s', '30.004s', '1m30.5s', '250ms']);
  });

  it('a condition keeps its transition time while its status does not change, and Ready comes first', () => {
    const old = [
      { type: 'ArtifactInStorage', status: 'True' as const, reason: 'Succeeded', message: 'a', lastTransitionTime: 't0' },
      { type: 'Ready', status: 'True' as const, reason: 'Succeeded', message: 'a', lastTransitionTime: 't0' },
    ];
    const next = withConditions(old, [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'b' }]);
    expect(next.map((c) => [c.type, c.lastTransitionTime])).toEqual([
      ['Ready', 't0'],
      ['ArtifactInStorage', 't0'],
    ]);
    const failed = withConditions(old, [{ type: 'Ready', status: 'False', reason: 'GitOperationFailed', message: 'x' }]);
    expect(failed[0].lastTransitionTime).not.toBe('t0');
  });
});

describe('deleting a Kustomization', () => {
  it('deletes its objects with prune (MirrorPrune) or deletionPolicy Delete, keeps them with Orphan', () => {
    expect(deletesObjects({ prune: true, entries: [] })).toBe(true);
    expect(deletesObjects({ prune: false, entries: [] })).toBe(false);
    expect(deletesObjects({ prune: false, deletionPolicy: 'Delete', entries: [] })).toBe(true);
    expect(deletesObjects({ prune: true, deletionPolicy: 'Orphan', entries: [] })).toBe(false);
  });
});

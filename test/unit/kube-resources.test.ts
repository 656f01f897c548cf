// Where the engine's objects live in the API (src/kube/resources.ts): a list path per kind and namespace, and one
// object's path for a server-side apply; nothing for a kind it does not know or a namespaced object without a
// namespace (those are left to kubectl, which asks discovery and the kubeconfig).
import { describe, expect, it } from 'vitest';
import { listPath, objectPath } from '../../src/kube/resources.ts';

describe('API paths of the kinds the engine applies', () => {
  it('lists a kind cluster-wide or in a namespace, core kinds under /api', () => {
    expect(listPath('v1', 'Secret', 'flux-system')).toBe('/api/v1/namespaces/flux-system/secrets');
    expect(listPath('apps/v1', 'Deployment')).toBe('/apis/apps/v1/deployments');
    expect(listPath('example.com/v1', 'Widget', 'x')).toBeUndefined();
  });

  it("names one object's path: cluster-scoped kinds outside any namespace, namespaced ones in theirs", () => {
    expect(objectPath({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'flux-system' } })).toBe('/api/v1/namespaces/flux-system');
    expect(objectPath({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'crd-controller-flux-system' } })).toBe(
      '/apis/rbac.authorization.k8s.io/v1/clusterroles/crd-controller-flux-system',
    );
    expect(objectPath({ apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'GitRepository', metadata: { name: 'flux-system', namespace: 'flux-system' } })).toBe(
      '/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/flux-system',
    );
    // kubectl would put it in the kubeconfig's namespace: not guessed here.
    expect(objectPath({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } })).toBeUndefined();
  });
});

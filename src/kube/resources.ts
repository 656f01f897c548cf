// Where objects of the kinds the engine applies live in the API: the resource (the plural a list path names)
// of each. The API server says this through discovery; these kinds' names are fixed upstream (Kubernetes'
// built-in kinds, and the plurals of Flux's and k3s's CRDs in their CustomResourceDefinitions), so a read of
// them need not ask discovery first. A kind not listed here has no path: its read stays with kubectl, which
// asks discovery. objectsOf reads the objects out of an answer, whichever shape it came in.
const RESOURCES: Record<string, string> = {
  Namespace: 'namespaces',
  ResourceQuota: 'resourcequotas',
  ServiceAccount: 'serviceaccounts',
  Secret: 'secrets',
  ConfigMap: 'configmaps',
  Service: 'services',
  Deployment: 'deployments',
  DaemonSet: 'daemonsets',
  StatefulSet: 'statefulsets',
  NetworkPolicy: 'networkpolicies',
  Role: 'roles',
  RoleBinding: 'rolebindings',
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
  CustomResourceDefinition: 'customresourcedefinitions',
  GitRepository: 'gitrepositories',
  OCIRepository: 'ocirepositories',
  HelmRepository: 'helmrepositories',
  HelmRelease: 'helmreleases',
  Kustomization: 'kustomizations',
};

/**
 * The list path of `kind` objects of `apiVersion` in `namespace` (cluster-wide when none: a cluster-scoped
 * kind's objects name none); undefined for a kind not listed above.
 */
export function listPath(apiVersion: string, kind: string, namespace?: string): string | undefined {
  const resource = RESOURCES[kind];
  if (!resource) return undefined;
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${resource}`;
}

/** The kinds above whose objects live outside any namespace. */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition']);

/**
 * The path of one object (listPath and its name); undefined for a kind not listed above, and for a namespaced
 * kind's object that names no namespace (kubectl would put it in the kubeconfig's namespace).
 */
export function objectPath(o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string | undefined {
  if (!CLUSTER_SCOPED.has(o.kind) && !o.metadata.namespace) return undefined;
  const list = listPath(o.apiVersion, o.kind, CLUSTER_SCOPED.has(o.kind) ? undefined : o.metadata.namespace);
  return list && `${list}/${encodeURIComponent(o.metadata.name)}`;
}

/**
 * The objects of an answer: a Table's rows' objects (PartialObjectMetadata: metadata only), a List's items, or
 * the one object.
 */
export function objectsOf(body: any): any[] {
  if (body?.kind === 'Table') return (body.rows ?? []).map((r: any) => r.object).filter(Boolean);
  if (Array.isArray(body?.items)) return body.items;
  return body ? [body] : [];
}

// The Kubernetes resources the twin serves: a fixed table of built-in kinds the engine and its add-ons
// (kube-vip, Cilium, Flux manifests) create, plus every custom resource whose CRD is stored.
export interface ResourceInfo {
  group: string; // '' for the core group
  version: string;
  resource: string; // plural
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  status: boolean; // has a status subresource
}

const r = (group: string, version: string, resource: string, kind: string, namespaced: boolean, shortNames?: string[], status = false): ResourceInfo => ({
  group,
  version,
  resource,
  singular: kind.toLowerCase(),
  kind,
  namespaced,
  shortNames,
  status,
});

export const BUILTIN: ResourceInfo[] = [
  r('', 'v1', 'namespaces', 'Namespace', false, ['ns'], true),
  r('', 'v1', 'nodes', 'Node', false, ['no'], true),
  r('', 'v1', 'pods', 'Pod', true, ['po'], true),
  r('', 'v1', 'services', 'Service', true, ['svc'], true),
  r('', 'v1', 'endpoints', 'Endpoints', true, ['ep']),
  r('', 'v1', 'configmaps', 'ConfigMap', true, ['cm']),
  r('', 'v1', 'secrets', 'Secret', true),
  r('', 'v1', 'serviceaccounts', 'ServiceAccount', true, ['sa']),
  r('', 'v1', 'events', 'Event', true, ['ev']),
  r('', 'v1', 'resourcequotas', 'ResourceQuota', true, ['quota'], true),
  r('', 'v1', 'limitranges', 'LimitRange', true, ['limits']),
  r('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', true, ['pvc'], true),
  r('', 'v1', 'persistentvolumes', 'PersistentVolume', false, ['pv'], true),
  r('apps', 'v1', 'deployments', 'Deployment', true, ['deploy'], true),
  r('apps', 'v1', 'daemonsets', 'DaemonSet', true, ['ds'], true),
  r('apps', 'v1', 'statefulsets', 'StatefulSet', true, ['sts'], true),
  r('apps', 'v1', 'replicasets', 'ReplicaSet', true, ['rs'], true),
  r('apps', 'v1', 'controllerrevisions', 'ControllerRevision', true),
  r('batch', 'v1', 'jobs', 'Job', true, [], true),
  r('batch', 'v1', 'cronjobs', 'CronJob', true, ['cj'], true),
  r('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
  r('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', true),
  r('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', true),
  r('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  r('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  r('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false, ['crd', 'crds'], true),
  r('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', true, ['netpol']),
  r('networking.k8s.io', 'v1', 'ingresses', 'Ingress', true, ['ing'], true),
  r('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', true, ['pdb'], true),
  r('discovery.k8s.io', 'v1', 'endpointslices', 'EndpointSlice', true),
  r('scheduling.k8s.io', 'v1', 'priorityclasses', 'PriorityClass', false, ['pc']),
  r('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false, ['sc']),
  r('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', false),
  r('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', false),
  r('events.k8s.io', 'v1', 'events', 'Event', true, ['ev']),
];

/** ResourceInfos served by a stored CRD object (one per served version). */
export function fromCRD(crd: any): ResourceInfo[] {
  const spec = crd?.spec ?? {};
  const names = spec.names ?? {};
  return (spec.versions ?? [])
    .filter((v: any) => v.served !== false)
    .map((v: any) => ({
      group: spec.group,
      version: v.name,
      resource: names.plural,
      singular: names.singular ?? String(names.kind ?? '').toLowerCase(),
      kind: names.kind,
      namespaced: spec.scope !== 'Cluster',
      shortNames: names.shortNames,
      status: Boolean(v.subresources?.status),
    }));
}

export function apiVersionOf(info: ResourceInfo): string {
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/** etcd key prefix of a resource; all versions of one group/resource share it. */
export function keyPrefix(info: { group: string; resource: string }): string {
  return `/registry/${info.group || 'core'}/${info.resource}/`;
}

export function objectKey(info: ResourceInfo, namespace: string | undefined, name: string): string {
  return info.namespaced ? `${keyPrefix(info)}${namespace}/${name}` : `${keyPrefix(info)}${name}`;
}

/** Looks resources up by group/version/plural, with CRDs read through `crds()`. */
export class ResourceRegistry {
  private cache: { at: number; list: ResourceInfo[] } = { at: 0, list: [] };
  constructor(private crds: () => Promise<any[]>) {}

  async all(): Promise<ResourceInfo[]> {
    if (Date.now() - this.cache.at > 1000) {
      let custom: ResourceInfo[];
      try {
        custom = (await this.crds()).flatMap(fromCRD);
      } catch {
        custom = this.cache.list.filter((x) => !BUILTIN.includes(x));
      }
      this.cache = { at: Date.now(), list: [...BUILTIN, ...custom] };
    }
    return this.cache.list;
  }

  invalidate(): void {
    this.cache.at = 0;
  }

  async find(group: string, version: string, resource: string): Promise<ResourceInfo | undefined> {
    return (await this.all()).find((x) => x.group === group && x.version === version && x.resource === resource);
  }

  async findKind(apiVersion: string, kind: string): Promise<ResourceInfo | undefined> {
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
    return (await this.all()).find((x) => x.group === group && x.version === version && x.kind === kind);
  }
}

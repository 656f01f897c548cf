// Objects every k3s cluster has from the start: the four system namespaces, the `kubernetes` Service,
// and the CRDs k3s registers itself (AddOn for auto-deployed manifests, HelmChart/HelmChartConfig of the
// embedded helm-controller).
function crd(group: string, kind: string, plural: string, scope = 'Namespaced') {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope,
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          subresources: { status: {} },
        },
      ],
    },
    status: {
      acceptedNames: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      storedVersions: ['v1'],
      conditions: [
        { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' },
        { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
      ],
    },
  };
}

/** `kubernetesIP`: the first address of the service range (kube-apiserver gives it to Service `kubernetes`). */
export function baseObjects(kubernetesIP: string): any[] {
  const ns = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } });
  return [
    ns('default'),
    ns('kube-system'),
    ns('kube-public'),
    ns('kube-node-lease'),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
      spec: {
        clusterIP: kubernetesIP,
        clusterIPs: [kubernetesIP],
        ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }],
        type: 'ClusterIP',
      },
    },
    crd('k3s.cattle.io', 'Addon', 'addons'),
    crd('helm.cattle.io', 'HelmChart', 'helmcharts'),
    crd('helm.cattle.io', 'HelmChartConfig', 'helmchartconfigs'),
  ];
}

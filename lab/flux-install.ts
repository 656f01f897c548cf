// The lab's Flux install manifest, shaped like `flux install --export` of Flux v2.9 (fluxcd/flux2
// manifests/install + manifests/bases/*): the flux-system Namespace, the CRDs of the GitOps toolkit's
// source, kustomize and helm APIs, a ServiceAccount per controller, the crd-controller ClusterRole and its
// bindings (cluster-reconciler is cluster-admin), Services and NetworkPolicies, and one Deployment per
// controller with the real image names and labels. The CRDs carry no OpenAPI schema (the twin does not
// validate); the Deployments' pods are imitated by the Flux twins in the k3s twin (lab/twin/addons/flux).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

const FLUX_VERSION = 'v2.9.0';
const FLUX_NAMESPACE = 'flux-system';
/** Controller image tags of the lab's Flux release (the twin runs no image; the names are what an operator sees). */
export const FLUX_CONTROLLERS: Record<string, string> = {
  'source-controller': 'v1.9.0',
  'kustomize-controller': 'v1.9.0',
  'helm-controller': 'v1.6.0',
  'notification-controller': 'v1.9.0',
};

const partOf = (component?: string) => ({
  'app.kubernetes.io/instance': FLUX_NAMESPACE,
  'app.kubernetes.io/part-of': 'flux',
  'app.kubernetes.io/version': FLUX_VERSION,
  ...(component ? { 'app.kubernetes.io/component': component } : {}),
});

interface CrdSpec {
  group: string;
  kind: string;
  plural: string;
  shortNames: string[];
  versions: string[];
  component: string;
}

const FLUX_CRDS: CrdSpec[] = [
  {
    group: 'source.toolkit.fluxcd.io',
    kind: 'GitRepository',
    plural: 'gitrepositories',
    shortNames: ['gitrepo'],
    versions: ['v1', 'v1beta2'],
    component: 'source-controller',
  },
  {
    group: 'source.toolkit.fluxcd.io',
    kind: 'HelmRepository',
    plural: 'helmrepositories',
    shortNames: ['helmrepo'],
    versions: ['v1', 'v1beta2'],
    component: 'source-controller',
  },
  {
    group: 'source.toolkit.fluxcd.io',
    kind: 'OCIRepository',
    plural: 'ocirepositories',
    shortNames: ['ocirepo'],
    versions: ['v1', 'v1beta2'],
    component: 'source-controller',
  },
  { group: 'source.toolkit.fluxcd.io', kind: 'Bucket', plural: 'buckets', shortNames: [], versions: ['v1', 'v1beta2'], component: 'source-controller' },
  {
    group: 'kustomize.toolkit.fluxcd.io',
    kind: 'Kustomization',
    plural: 'kustomizations',
    shortNames: ['ks'],
    versions: ['v1'],
    component: 'kustomize-controller',
  },
  { group: 'helm.toolkit.fluxcd.io', kind: 'HelmRelease', plural: 'helmreleases', shortNames: ['hr'], versions: ['v2'], component: 'helm-controller' },
  { group: 'notification.toolkit.fluxcd.io', kind: 'Alert', plural: 'alerts', shortNames: [], versions: ['v1beta3'], component: 'notification-controller' },
  {
    group: 'notification.toolkit.fluxcd.io',
    kind: 'Provider',
    plural: 'providers',
    shortNames: [],
    versions: ['v1beta3'],
    component: 'notification-controller',
  },
  { group: 'notification.toolkit.fluxcd.io', kind: 'Receiver', plural: 'receivers', shortNames: [], versions: ['v1'], component: 'notification-controller' },
  // NOTE: source.toolkit.fluxcd.io HelmChart is left out: its kind would share the short name `helmchart`
  // with k3s's helm.cattle.io HelmChart, which the engine and the lab address by that name.
];

function crd(c: CrdSpec): any {
  const columns = [
    { jsonPath: '.metadata.creationTimestamp', name: 'Age', type: 'date' },
    { jsonPath: '.status.conditions[?(@.type=="Ready")].status', name: 'Ready', type: 'string' },
    { jsonPath: '.status.conditions[?(@.type=="Ready")].message', name: 'Status', type: 'string' },
  ];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${c.plural}.${c.group}`, labels: partOf(c.component), annotations: { 'controller-gen.kubebuilder.io/version': 'v0.19.0' } },
    spec: {
      group: c.group,
      names: { kind: c.kind, listKind: `${c.kind}List`, plural: c.plural, singular: c.kind.toLowerCase(), shortNames: c.shortNames },
      scope: 'Namespaced',
      versions: c.versions.map((v, i) => ({
        name: v,
        served: true,
        storage: i === 0,
        ...(i === 0 ? {} : { deprecated: true }),
        additionalPrinterColumns: columns,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        subresources: { status: {} },
      })),
    },
  };
}

function deployment(name: string, tag: string): any {
  const http =
    name === 'notification-controller'
      ? [
          { containerPort: 9090, name: 'http', protocol: 'TCP' },
          { containerPort: 9292, name: 'http-webhook', protocol: 'TCP' },
        ]
      : name === 'source-controller'
        ? [{ containerPort: 9090, name: 'http', protocol: 'TCP' }]
        : [];
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: FLUX_NAMESPACE, labels: { ...partOf(name), 'control-plane': 'controller' } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      ...(name === 'source-controller' ? { strategy: { type: 'Recreate' } } : {}),
      template: {
        metadata: { annotations: { 'prometheus.io/port': '8080', 'prometheus.io/scrape': 'true' }, labels: { app: name, ...partOf(name) } },
        spec: {
          containers: [
            {
              name: 'manager',
              image: `ghcr.io/fluxcd/${name}:${tag}`,
              imagePullPolicy: 'IfNotPresent',
              args: [
                '--events-addr=http://notification-controller.flux-system.svc.cluster.local./',
                '--watch-all-namespaces=true',
                '--log-level=info',
                '--log-encoding=json',
                '--enable-leader-election',
              ],
              env: [{ name: 'RUNTIME_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
              ports: [...http, { containerPort: 8080, name: 'http-prom', protocol: 'TCP' }, { containerPort: 9440, name: 'healthz', protocol: 'TCP' }],
              livenessProbe: { httpGet: { path: '/healthz', port: 'healthz' } },
              readinessProbe: { httpGet: { path: '/readyz', port: 'healthz' } },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { drop: ['ALL'] },
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                seccompProfile: { type: 'RuntimeDefault' },
              },
            },
          ],
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          priorityClassName: 'system-cluster-critical',
          securityContext: { fsGroup: 1337 },
          serviceAccountName: name,
          terminationGracePeriodSeconds: 10,
        },
      },
    },
  };
}

function service(name: string, port: string): any {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: FLUX_NAMESPACE, labels: { ...partOf(name), 'control-plane': 'controller' } },
    spec: {
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: port }],
      selector: { app: name.replace('webhook-receiver', 'notification-controller') },
      type: 'ClusterIP',
    },
  };
}

function fluxInstallObjects(): any[] {
  const ns = (o: any) => ({ ...o, metadata: { ...o.metadata, namespace: FLUX_NAMESPACE } });
  const controllers = Object.keys(FLUX_CONTROLLERS);
  return [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: FLUX_NAMESPACE,
        labels: { ...partOf(), 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/warn-version': 'latest' },
      },
    },
    ns({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'critical-pods-flux-system', labels: partOf() },
      spec: {
        hard: { pods: '1000' },
        scopeSelector: { matchExpressions: [{ operator: 'In', scopeName: 'PriorityClass', values: ['system-node-critical', 'system-cluster-critical'] }] },
      },
    }),
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'crd-controller-flux-system', labels: partOf() },
      rules: [
        {
          apiGroups: ['source.toolkit.fluxcd.io', 'kustomize.toolkit.fluxcd.io', 'helm.toolkit.fluxcd.io', 'notification.toolkit.fluxcd.io'],
          resources: ['*'],
          verbs: ['*'],
        },
        { apiGroups: [''], resources: ['namespaces', 'secrets', 'configmaps', 'serviceaccounts'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['*'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'cluster-reconciler-flux-system', labels: partOf() },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [
        { kind: 'ServiceAccount', name: 'kustomize-controller', namespace: FLUX_NAMESPACE },
        { kind: 'ServiceAccount', name: 'helm-controller', namespace: FLUX_NAMESPACE },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'crd-controller-flux-system', labels: partOf() },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'crd-controller-flux-system' },
      subjects: controllers.map((name) => ({ kind: 'ServiceAccount', name, namespace: FLUX_NAMESPACE })),
    },
    ...FLUX_CRDS.map(crd),
    ...controllers.map((name) => ns({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, labels: partOf(name) } })),
    service('source-controller', 'http'),
    service('notification-controller', 'http'),
    service('webhook-receiver', 'http-webhook'),
    ...['allow-egress', 'allow-scraping', 'allow-webhooks'].map((name) =>
      ns({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name, labels: partOf() },
        spec:
          name === 'allow-egress'
            ? { egress: [{}], ingress: [{ from: [{ podSelector: {} }] }], podSelector: {}, policyTypes: ['Ingress', 'Egress'] }
            : name === 'allow-scraping'
              ? { ingress: [{ from: [{ namespaceSelector: {} }], ports: [{ port: 8080, protocol: 'TCP' }] }], podSelector: {}, policyTypes: ['Ingress'] }
              : {
                  ingress: [{ from: [{ namespaceSelector: {} }] }],
                  podSelector: { matchLabels: { app: 'notification-controller' } },
                  policyTypes: ['Ingress'],
                },
      }),
    ),
    ...controllers.map((name) => deployment(name, FLUX_CONTROLLERS[name])),
  ];
}

export function fluxInstallYaml(): string {
  return `---\n# Flux version: ${FLUX_VERSION} (the lab's imitation of flux install --export)\n${fluxInstallObjects()
    .map((o) => stringify(o))
    .join('---\n')}`;
}

/** Writes `<artifacts>/flux-install.yaml` and returns its path. */
export function writeFluxInstall(artifactsDir: string): string {
  mkdirSync(artifactsDir, { recursive: true, mode: 0o700 });
  const file = join(artifactsDir, 'flux-install.yaml');
  writeFileSync(file, fluxInstallYaml());
  return file;
}

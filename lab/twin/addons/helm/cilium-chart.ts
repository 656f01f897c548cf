// The part of the Cilium chart (1.16–1.19) the engine and the Cilium twin look at, rendered by hand from
// the coalesced values — the twin has no Go template engine. Each piece follows the chart's own template:
//   templates/cilium-agent/daemonset.yaml: DaemonSet {{ .Values.name }}; `updateStrategy` = toYaml of
//     .Values.updateStrategy; agent container `cilium-agent` and init container `config` get
//     KUBERNETES_SERVICE_HOST/PORT ONLY `if .Values.k8sServiceHost` (empty string → not emitted), the
//     init containers in the chart's order, each under the chart's own condition (ciliumInitContainers),
//     the pod annotation kubectl.kubernetes.io/default-container: cilium-agent; the
//     values `k8sServiceHost | quote` and `k8sServicePort | quote` (an empty port renders as "");
//     k8sServiceHostRef (a ConfigMap key) emits them through valueFrom; tolerations, nodeSelector,
//     affinity from values; hostNetwork.
//   templates/cilium-operator/deployment.yaml: Deployment cilium-operator, replicas = operator.replicas,
//     strategy maxUnavailable 100% when replicas is 1 and the strategy is RollingUpdate.
//   templates/cilium-configmap.yaml: ConfigMap cilium-config with kube-proxy-replacement
//     (coalesce kubeProxyReplacement "false"), ipam, cluster-pool-ipv4-cidr (the list joined by spaces),
//     connectivity-probe-frequency-ratio only when the value is a number (`has (kindOf …) (list "int64"
//     "float64")`, quoted).
//   templates/_helpers.tpl cilium.namespace (namespaceOverride or the release namespace), cilium.image.
// `k8sServiceHost: auto` (a lookup of kube-public/cluster-info) is not imitated: the render fails.
export interface Rendered {
  objects: any[];
  /** The manifest text Helm keeps in the release. */
  manifest: string;
}

function ciliumImage(img: any): string {
  if (img?.override) return String(img.override);
  const tag = img?.tag ? `:${img.tag}` : '';
  const digest = img?.useDigest ? `@${img.digest}` : '';
  return `${img?.repository ?? ''}${tag}${digest}`;
}

/** The KUBERNETES_SERVICE_* entries the agent template emits for these values (possibly none). */
function serviceEnv(v: any): any[] {
  const out: any[] = [];
  const port = { name: 'KUBERNETES_SERVICE_PORT', value: v.k8sServicePort === undefined || v.k8sServicePort === null ? '' : String(v.k8sServicePort) };
  if (v.k8sServiceHostRef?.name && v.k8sServiceHostRef?.key) {
    out.push({ name: 'KUBERNETES_SERVICE_HOST', valueFrom: { configMapKeyRef: { name: v.k8sServiceHostRef.name, key: v.k8sServiceHostRef.key } } }, port);
  }
  if (v.k8sServiceHost) {
    if (v.k8sServiceHost === 'auto') throw new Error('k8sServiceHost: auto needs a lookup of kube-public/cluster-info, which the twin does not imitate');
    out.push({ name: 'KUBERNETES_SERVICE_HOST', value: String(v.k8sServiceHost) }, port);
  }
  return out;
}

/**
 * The agent pod's init containers (templates/cilium-agent/daemonset.yaml, 1.19.5), in the chart's order and
 * under its conditions; only name, command, the env the twin reads and terminationMessagePolicy are kept.
 */
function ciliumInitContainers(v: any, image: string, configEnv: any[]): any[] {
  const fallback = { terminationMessagePolicy: 'FallbackToLogsOnError' };
  const sources = v.daemon?.configSources;
  const buildDaemonConfig = sources === undefined || sources === null || !/^config-map:[^,]+$/.test(String(sources));
  const kpr = String(v.kubeProxyReplacement ?? '');
  const out: any[] = [];
  if (buildDaemonConfig) out.push({ name: 'config', image, command: ['cilium-dbg', 'build-config'], env: configEnv, ...fallback });
  if (v.cgroup?.autoMount?.enabled)
    out.push({
      name: 'mount-cgroup',
      image,
      command: ['bash', '-ec'],
      env: [
        { name: 'CGROUP_ROOT', value: String(v.cgroup?.hostRoot ?? '') },
        { name: 'BIN_PATH', value: String(v.cni?.binPath ?? '') },
      ],
      ...fallback,
    });
  if (v.sysctlfix?.enabled) out.push({ name: 'apply-sysctl-overwrites', image, command: ['bash', '-ec'], ...fallback });
  if (v.bpf?.autoMount?.enabled && !v.securityContext?.privileged) out.push({ name: 'mount-bpf-fs', image, command: ['/bin/bash', '-c', '--'], ...fallback });
  if (v.nodeinit?.enabled && v.nodeinit?.bootstrapFile) out.push({ name: 'wait-for-node-init', image, command: ['bash', '-c'], ...fallback });
  out.push({ name: 'clean-cilium-state', image, command: ['/init-container.sh'], ...fallback });
  if (v.waitForKubeProxy && kpr !== 'strict' && kpr !== 'true') out.push({ name: 'wait-for-kube-proxy', image, command: ['bash', '-c'], ...fallback });
  if (v.cni?.install) out.push({ name: 'install-cni-binaries', image, command: ['/install-plugin.sh'], ...fallback });
  return out;
}

export function renderCilium(v: any, releaseNamespace: string, release: string): Rendered {
  const ns = v.namespaceOverride || releaseNamespace;
  const image = ciliumImage(v.image);
  const helmLabels = { 'app.kubernetes.io/managed-by': 'Helm' };
  const helmAnn = { 'meta.helm.sh/release-name': release, 'meta.helm.sh/release-namespace': releaseNamespace };
  const meta = (name: string, labels: Record<string, string> = {}) => ({ name, namespace: ns, labels: { ...labels, ...helmLabels }, annotations: helmAnn });
  const k8sEnv = serviceEnv(v);
  const kpr = String(v.kubeProxyReplacement || 'false');
  const fieldEnv = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } });
  const objects: any[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(v.serviceAccounts?.cilium?.name ?? 'cilium') },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(v.serviceAccounts?.operator?.name ?? 'cilium-operator') },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta('cilium-config'),
      data: {
        'kube-proxy-replacement': kpr,
        ipam: String(v.ipam?.mode ?? 'cluster-pool'),
        'cluster-pool-ipv4-cidr': (v.ipam?.operator?.clusterPoolIPv4PodCIDRList ?? []).join(' '),
        'cluster-pool-ipv4-mask-size': String(v.ipam?.operator?.clusterPoolIPv4MaskSize ?? ''),
        'write-cni-conf-when-ready': v.cni?.exclusive === false ? '' : '/host/etc/cni/net.d/05-cilium.conflist',
        ...(typeof v.connectivityProbeFrequencyRatio === 'number' && { 'connectivity-probe-frequency-ratio': String(v.connectivityProbeFrequencyRatio) }),
      },
    },
  ];
  if (v.agent !== false) {
    const labels = { 'k8s-app': 'cilium', 'app.kubernetes.io/part-of': 'cilium', 'app.kubernetes.io/name': 'cilium-agent' };
    objects.push({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: meta(v.name ?? 'cilium', labels),
      spec: {
        selector: { matchLabels: { 'k8s-app': 'cilium' } },
        ...(v.updateStrategy ? { updateStrategy: v.updateStrategy } : {}),
        template: {
          metadata: { labels, annotations: { 'kubectl.kubernetes.io/default-container': 'cilium-agent' } },
          spec: {
            containers: [
              {
                name: 'cilium-agent',
                image,
                imagePullPolicy: v.image?.pullPolicy,
                command: ['cilium-agent'],
                args: ['--config-dir=/tmp/cilium/config-map'],
                env: [
                  fieldEnv('K8S_NODE_NAME', 'spec.nodeName'),
                  fieldEnv('CILIUM_K8S_NAMESPACE', 'metadata.namespace'),
                  { name: 'CILIUM_CLUSTERMESH_CONFIG', value: '/var/lib/cilium/clustermesh/' },
                  ...k8sEnv,
                  ...(v.extraEnv ?? []),
                ],
              },
            ],
            initContainers: ciliumInitContainers(v, image, [
              fieldEnv('K8S_NODE_NAME', 'spec.nodeName'),
              fieldEnv('CILIUM_K8S_NAMESPACE', 'metadata.namespace'),
              ...k8sEnv,
            ]),
            hostNetwork: true,
            serviceAccountName: v.serviceAccounts?.cilium?.name ?? 'cilium',
            ...(v.nodeSelector ? { nodeSelector: v.nodeSelector } : {}),
            ...(v.affinity ? { affinity: v.affinity } : {}),
            tolerations: v.tolerations ?? [],
            priorityClassName: 'system-node-critical',
          },
        },
      },
    });
  }
  if (v.operator?.enabled !== false) {
    const replicas = Number(v.operator?.replicas ?? 2);
    const labels = { 'io.cilium/app': 'operator', name: 'cilium-operator', 'app.kubernetes.io/part-of': 'cilium', 'app.kubernetes.io/name': 'cilium-operator' };
    const us = v.operator?.updateStrategy;
    const strategy =
      replicas === 1 && us?.type === 'RollingUpdate'
        ? { rollingUpdate: { maxSurge: us.rollingUpdate?.maxSurge, maxUnavailable: '100%' }, type: 'RollingUpdate' }
        : us;
    objects.push({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta('cilium-operator', labels),
      spec: {
        replicas,
        selector: { matchLabels: { 'io.cilium/app': 'operator', name: 'cilium-operator' } },
        ...(strategy ? { strategy } : {}),
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: 'cilium-operator',
                image: ciliumImage({
                  ...(v.operator?.image ?? {}),
                  repository: `${v.operator?.image?.repository ?? 'quay.io/cilium/operator'}-generic`,
                  useDigest: false,
                }),
                command: ['cilium-operator-generic'],
                env: [fieldEnv('K8S_NODE_NAME', 'spec.nodeName'), fieldEnv('CILIUM_K8S_NAMESPACE', 'metadata.namespace'), ...k8sEnv],
              },
            ],
            hostNetwork: true,
            serviceAccountName: v.serviceAccounts?.operator?.name ?? 'cilium-operator',
            tolerations: v.operator?.tolerations ?? [],
          },
        },
      },
    });
  }
  const manifest = objects
    .map((o) => `---\n# Source: cilium/templates/${o.kind.toLowerCase()}-${o.metadata.name}.yaml\n${JSON.stringify(o, null, 2)}\n`)
    .join('');
  return { objects, manifest };
}

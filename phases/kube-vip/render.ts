// The kube-vip manifest bootstrap places in k3s's auto-deploy folder on every server: RBAC plus the
// DaemonSet, shaped as kube-vip's own generator makes them (`kube-vip manifest daemonset --controlplane
// --arp --leaderElection --inCluster --taint`). Pure and deterministic: the same input gives the same bytes,
// so a second run finds nothing to change.
import { stringify } from 'yaml';
import { MANIFESTS_DIR } from '../../src/k3s/paths.ts';
import { KUBE_VIP_IMAGE } from '../../src/images/pins.ts';
import { KUBE_VIP_DAEMONSET, KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE, LEASE_TIMING } from '../../src/addons/kube-vip.ts';

export const KUBE_VIP_MANIFEST = `${MANIFESTS_DIR}/kube-vip.yaml`;
/** The port the local k3s API server listens on, whatever port the VIP is dialled on. */
const LOCAL_API_PORT = 6443;

export interface KubeVipInput {
  vip: string;
  /** controlPlane.port: the port the VIP is dialled on. */
  port: number;
  /** One NIC name for every server (see nic.ts: chooseVipInterface). */
  interfaceName: string;
  /** Prefix length of the VIP as kube-vip adds it; the generator's default is 32 (a host address). */
  subnet?: string;
  image?: string;
}

const LABELS = { 'app.kubernetes.io/name': KUBE_VIP_DAEMONSET };

function kubeVipEnv(i: KubeVipInput): { name: string; value?: string; valueFrom?: unknown }[] {
  const v = (name: string, value: string | number | boolean) => ({ name, value: String(value) });
  return [
    v('vip_arp', true),
    v('port', i.port),
    { name: 'vip_nodename', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    v('vip_interface', i.interfaceName),
    v('vip_subnet', i.subnet ?? '32'),
    v('cp_enable', true),
    v('cp_namespace', KUBE_VIP_NAMESPACE),
    // NOTE: svc_enable=true on k3s makes kube-vip take node addresses for Services (kube-vip #836).
    v('svc_enable', false),
    v('vip_leaderelection', true),
    v('vip_leasename', KUBE_VIP_LEASE),
    v('vip_leaseduration', LEASE_TIMING.duration),
    v('vip_renewdeadline', LEASE_TIMING.renewDeadline),
    v('vip_retryperiod', LEASE_TIMING.retryPeriod),
    v('address', i.vip),
    // Both, or kube-vip dials the `kubernetes` Service's ClusterIP (the first address of k3s.serviceCidr)
    // that nothing routes before Cilium (the deadlock):
    // the host-network pod reaches the API server of its own node instead.
    v('KUBERNETES_SERVICE_HOST', '127.0.0.1'),
    v('KUBERNETES_SERVICE_PORT', LOCAL_API_PORT),
  ];
}

function rbac(): object[] {
  const core = (resources: string[], verbs: string[]) => ({ apiGroups: [''], resources, verbs });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'kube-vip', namespace: KUBE_VIP_NAMESPACE } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:kube-vip-role', annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' } },
      rules: [
        core(['services/status'], ['update']),
        core(['services', 'endpoints'], ['list', 'get', 'watch', 'update']),
        core(['nodes'], ['list', 'get', 'watch', 'update', 'patch']),
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'get', 'watch', 'update', 'create'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'get', 'watch', 'update'] },
        core(['pods'], ['list']),
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:kube-vip-binding' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:kube-vip-role' },
      subjects: [{ kind: 'ServiceAccount', name: 'kube-vip', namespace: KUBE_VIP_NAMESPACE }],
    },
  ];
}

function daemonSet(i: KubeVipInput): object {
  const onControlPlane = (key: string) => ({ matchExpressions: [{ key, operator: 'Exists' }] });
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: KUBE_VIP_DAEMONSET, namespace: KUBE_VIP_NAMESPACE, labels: LABELS },
    spec: {
      selector: { matchLabels: LABELS },
      template: {
        metadata: { labels: LABELS },
        spec: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                // Either label: older k3s servers carry only node-role.kubernetes.io/master.
                nodeSelectorTerms: [onControlPlane('node-role.kubernetes.io/master'), onControlPlane('node-role.kubernetes.io/control-plane')],
              },
            },
          },
          containers: [
            {
              name: 'kube-vip',
              image: i.image ?? KUBE_VIP_IMAGE,
              imagePullPolicy: 'IfNotPresent',
              args: ['manager'],
              env: kubeVipEnv(i),
              securityContext: { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } },
            },
          ],
          hostNetwork: true,
          serviceAccountName: 'kube-vip',
          // Servers are NotReady (no CNI yet) and may be tainted: kube-vip must run there anyway.
          tolerations: [
            { effect: 'NoSchedule', operator: 'Exists' },
            { effect: 'NoExecute', operator: 'Exists' },
          ],
        },
      },
    },
  };
}

/** The whole auto-deploy file: ServiceAccount, ClusterRole, ClusterRoleBinding, DaemonSet. */
export function renderKubeVip(i: KubeVipInput): string {
  const docs = [...rbac(), daemonSet(i)].map((d) => stringify(d, { lineWidth: 0 }));
  return `# Written by bootstrap (kube-vip for the control-plane VIP ${i.vip}); edits are replaced on the next run.\n---\n${docs.join('---\n')}`;
}

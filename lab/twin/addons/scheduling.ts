// Pure parts of the DaemonSet controller and the kubelet the twin plays for its own node: does a
// DaemonSet's pod belong on this node (nodeSelector, required node affinity, taints vs tolerations plus the
// tolerations the DaemonSet controller adds itself), the pod made from the template, and the env a
// container sees (explicit values and fieldRefs; kubelet's own KUBERNETES_SERVICE_* only when not given).
import { createHash } from 'node:crypto';
import { templateGeneration } from '../api/daemonset-strategy.ts';

export interface NodeView {
  name: string;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
}

export function nodeView(node: any): NodeView {
  return { name: node.metadata.name, labels: node.metadata.labels ?? {}, taints: node.spec?.taints ?? [] };
}

function exprMatches(e: any, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, e.key);
  switch (e.operator) {
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'In':
      return has && (e.values ?? []).includes(labels[e.key]);
    case 'NotIn':
      return !has || !(e.values ?? []).includes(labels[e.key]);
    default:
      return false;
  }
}

/** kube-controller-manager's daemon/util AddOrUpdateDaemonPodTolerations. */
function daemonTolerations(spec: any): any[] {
  const auto = [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
  ];
  if (spec?.hostNetwork) auto.push({ key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' });
  return [...(spec?.tolerations ?? []), ...auto];
}

function tolerates(tols: any[], taint: { key: string; value?: string; effect: string }): boolean {
  return tols.some((t) => {
    if (t.effect && t.effect !== taint.effect) return false;
    if (t.operator === 'Exists') return !t.key || t.key === taint.key;
    return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
  });
}

/** Would the DaemonSet controller place a pod of this template on the node? */
export function podFitsNode(spec: any, node: NodeView): boolean {
  return fitsNode(spec, node, daemonTolerations(spec));
}

/** The scheduler's filters the twin reads: nodeSelector, required node affinity, NoSchedule/NoExecute taints against `tolerations`. */
export function fitsNode(spec: any, node: NodeView, tolerations: any[] = spec?.tolerations ?? []): boolean {
  for (const [k, v] of Object.entries(spec?.nodeSelector ?? {})) if (node.labels[k] !== v) return false;
  const terms = spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (Array.isArray(terms) && terms.length && !terms.some((t: any) => (t.matchExpressions ?? []).every((e: any) => exprMatches(e, node.labels)))) return false;
  return node.taints.filter((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute').every((t) => tolerates(tolerations, t));
}

const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789'; // apimachinery's utilrand alphanums

/** `<ds>-<5 chars>`, stable for one DaemonSet (uid), node and template: a restarted twin finds its pod. */
export function podNameFor(ds: string, uid: string, node: string, hash: string): string {
  const h = createHash('sha256').update(`${uid}/${node}/${hash}`).digest();
  return `${ds}-${[...h.subarray(0, 5)].map((b) => ALPHABET[b % ALPHABET.length]).join('')}`;
}

export function templateHash(template: any): string {
  return createHash('sha256')
    .update(JSON.stringify(template ?? {}))
    .digest('hex')
    .slice(0, 10);
}

/** The pod the controller creates: labelled with the template's hash and template generation (daemon/util CreatePodTemplate), not metadata.generation. */
export function podFromTemplate(ds: any, node: string, hash: string): any {
  const t = ds.spec?.template ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podNameFor(ds.metadata.name, ds.metadata.uid, node, hash),
      namespace: ds.metadata.namespace,
      labels: { ...(t.metadata?.labels ?? {}), 'controller-revision-hash': hash, 'pod-template-generation': String(templateGeneration(ds) ?? 1) },
      annotations: t.metadata?.annotations ?? {},
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: ds.metadata.name, uid: ds.metadata.uid, controller: true, blockOwnerDeletion: true }],
    },
    spec: { ...(t.spec ?? {}), nodeName: node, tolerations: daemonTolerations(t.spec) },
    status: { phase: 'Pending' },
  };
}

/**
 * The env a container process sees: explicit `value`s, fieldRefs resolved, other valueFrom left out; then,
 * only for names not given, kubelet's KUBERNETES_SERVICE_HOST/PORT of the `kubernetes` Service (its ClusterIP,
 * the first address of the node's service range, and port 443).
 */
export function containerEnv(container: any, pod: any, kubernetesService: { host: string; port: string }): Record<string, string> {
  const out: Record<string, string> = { KUBERNETES_SERVICE_HOST: kubernetesService.host, KUBERNETES_SERVICE_PORT: kubernetesService.port };
  for (const e of container?.env ?? []) {
    if (e.value !== undefined) out[e.name] = String(e.value);
    else if (e.valueFrom?.fieldRef) {
      const path = e.valueFrom.fieldRef.fieldPath;
      const v =
        path === 'spec.nodeName'
          ? pod.spec?.nodeName
          : path === 'metadata.namespace'
            ? pod.metadata?.namespace
            : path === 'metadata.name'
              ? pod.metadata?.name
              : path === 'status.hostIP' || path === 'status.podIP'
                ? pod.status?.hostIP
                : undefined;
      if (v !== undefined) out[e.name] = String(v);
    } else if (e.valueFrom === undefined) out[e.name] = '';
  }
  return out;
}

/** updateStrategy.rollingUpdate.maxUnavailable as a number of pods (default 1; percentages round down, min 1). */
export function maxUnavailable(ds: any, desired: number): number {
  const v = ds.spec?.updateStrategy?.rollingUpdate?.maxUnavailable ?? 1;
  if (typeof v === 'string' && v.endsWith('%')) return Math.max(1, Math.floor((desired * Number(v.slice(0, -1))) / 100));
  return Math.max(1, Number(v));
}

// Gates on the substituted Cilium values, before anything is installed. Pure: values in, named causes out,
// each with the values path and what was seen. Chart defaults are the ones that bite when a key is unset
// (cilium values.yaml 1.16–1.19): k8sServiceHost "", k8sServicePort "", kubeProxyReplacement "false",
// ipam.mode cluster-pool with clusterPoolIPv4PodCIDRList [10.0.0.0/8], maxUnavailable 2.
import { CauseError } from '../../src/errors.ts';
import type { LoadedInventory } from '../../src/inventory/load.ts';
import type { CauseId } from '../../src/causes/catalogue.ts';

export interface ValuesExpectations {
  vip: string;
  port: number;
  clusterCidr: string;
  /** The `kubernetes` Service's ClusterIP, what agents dial without k8sServiceHost. */
  kubernetesIp: string;
  /** Every node (servers and agents), to say so when k8sServiceHost is one of their addresses. */
  nodes: { name: string; address: string }[];
}

export function expectationsFrom(inv: LoadedInventory): ValuesExpectations {
  return {
    vip: inv.derived.apiEndpoint.host,
    port: inv.derived.apiEndpoint.port,
    clusterCidr: inv.inventory.k3s.clusterCidr,
    kubernetesIp: inv.derived.serviceAddresses.kubernetes,
    nodes: [...inv.derived.servers, ...inv.derived.agents].map((n) => ({ name: n.name, address: n.address })),
  };
}

type Values = Record<string, unknown>;

/** The value at a dotted path, or undefined. */
export function valueAt(values: Values, path: string): unknown {
  let cur: unknown = values;
  for (const key of path.split('.')) {
    if (!cur || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

const shown = (v: unknown) => (v === undefined ? 'unset' : JSON.stringify(v));

function stop(id: CauseId, path: string, value: unknown, seen: string): CauseError {
  return new CauseError(id, { message: `Cilium values: ${seen}`, evidence: { seen, excerpt: `spec.values.${path}: ${shown(value)}` } });
}

function checkServiceHost(values: Values, exp: ValuesExpectations): CauseError[] {
  const v = valueAt(values, 'k8sServiceHost');
  if (v === exp.vip) return [];
  const node = exp.nodes.find((n) => n.address === v);
  const seen =
    v === undefined || v === null || v === ''
      ? `k8sServiceHost is ${v === '' ? 'empty' : 'unset'}: agents would dial the ClusterIP ${exp.kubernetesIp}, which nothing routes without kube-proxy; it must be the VIP ${exp.vip}`
      : node
        ? `k8sServiceHost is ${node.name}'s own address ${String(v)}, not the VIP ${exp.vip}: the CNI would depend on one node`
        : `k8sServiceHost is ${shown(v)}, not the VIP ${exp.vip}`;
  return [stop('SERVICE_HOST_NOT_VIP', 'k8sServiceHost', v, seen)];
}

function checkServicePort(values: Values, exp: ValuesExpectations): CauseError[] {
  const v = valueAt(values, 'k8sServicePort');
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined;
  if (n === exp.port) return [];
  return [stop('SERVICE_PORT_MISMATCH', 'k8sServicePort', v, `k8sServicePort is ${shown(v)}, the control plane listens on ${exp.port}`)];
}

function checkKubeProxyReplacement(values: Values): CauseError[] {
  const v = valueAt(values, 'kubeProxyReplacement');
  if (v === true || v === 'true') return [];
  const seen = `kubeProxyReplacement is ${v === undefined ? 'unset (the chart default "false")' : shown(v)}; k3s runs without kube-proxy, so it must be true`;
  return [stop('KPR_MISMATCH', 'kubeProxyReplacement', v, seen)];
}

/**
 * Decision: in cluster-pool mode (the chart default) the list must be exactly [k3s clusterCidr], unset
 * meaning the chart's 10.0.0.0/8. `kubernetes` mode takes each node's podCIDR, which k3s allocates from its
 * cluster-cidr, so it passes. Any other mode (multi-pool, cloud IPAM) cannot be checked here: a stop.
 */
function checkPodCidr(values: Values, exp: ValuesExpectations): CauseError[] {
  const mode = valueAt(values, 'ipam.mode') ?? 'cluster-pool';
  if (mode === 'kubernetes') return [];
  if (mode !== 'cluster-pool') {
    return [
      stop(
        'POD_CIDR_MISMATCH',
        'ipam.mode',
        mode,
        `ipam.mode is ${shown(mode)}: bootstrap can only check cluster-pool (or kubernetes) against k3s's cluster-cidr ${exp.clusterCidr}`,
      ),
    ];
  }
  const path = 'ipam.operator.clusterPoolIPv4PodCIDRList';
  const list = valueAt(values, path);
  // The chart joins the list with spaces (`join " "`), so a string is accepted as the same list.
  const cidrs = typeof list === 'string' ? list.trim().split(/\s+/) : list;
  if (Array.isArray(cidrs) && cidrs.length === 1 && cidrs[0] === exp.clusterCidr) return [];
  const seenList = list === undefined ? 'unset (the chart default ["10.0.0.0/8"])' : shown(list);
  return [stop('POD_CIDR_MISMATCH', path, list, `${path} is ${seenList}; it must be ["${exp.clusterCidr}"], k3s's cluster-cidr`)];
}

function checkRolloutWidth(values: Values): CauseError[] {
  const path = 'updateStrategy.rollingUpdate.maxUnavailable';
  const v = valueAt(values, path);
  if (v === 1) return [];
  const seen = `${path} is ${v === undefined ? 'unset (the chart default 2)' : shown(v)}; it must be 1, so one bad render costs one node, not the cluster`;
  return [stop('ROLLOUT_TOO_WIDE', path, v, seen)];
}

/** Every values gate but the schema and the cgroup probe (those need the chart and the nodes). */
export function checkCiliumValues(values: Values, exp: ValuesExpectations): CauseError[] {
  return [
    ...checkServiceHost(values, exp),
    ...checkServicePort(values, exp),
    ...checkKubeProxyReplacement(values),
    ...checkPodCidr(values, exp),
    ...checkRolloutWidth(values),
  ];
}

// The Node object a k3s node keeps up to date (kubelet registration + status, k3s role labels and
// etcd annotations/conditions from pkg/etcd/etcd.go and pkg/node). Without a CNI the Ready condition stays
// False with the container runtime's "cni plugin not initialized" message.
//
// Ready hook for a CNI twin: the node is Ready once any *.conf/*.conflist/*.json exists in one of the CNI
// config directories (/etc/cni/net.d or <data-dir>/agent/etc/cni/net.d) — the same signal containerd uses.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { K3S_VERSION } from '../version.ts';
import { canonical } from '../api/daemonset-strategy.ts';

export const NOT_READY_MESSAGE =
  'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';

export interface NodeFacts {
  name: string;
  ip: string;
  server: boolean;
  etcdMember?: string; // member name, for servers
  cniReady: boolean;
  labels?: Record<string, string>;
  taints?: any[];
  /** The machine the kubelet runs on: /etc/machine-id and this boot's id (empty when unknown). */
  machineID?: string;
  bootID?: string;
}

/**
 * What kubelet reports of its machine in nodeInfo (kubernetes/kubernetes v1.33.5
 * pkg/kubelet/nodestatus/setters.go MachineInfo: MachineID, SystemUUID and BootID from cadvisor's MachineInfo,
 * which reads /etc/machine-id and /proc/sys/kernel/random/boot_id).
 */
export function machineIdentity(root = ''): { machineID: string; bootID: string } {
  const read = (f: string) => {
    try {
      return readFileSync(`${root}${f}`, 'utf8').trim();
    } catch {
      return '';
    }
  };
  return { machineID: read('/etc/machine-id'), bootID: read('/proc/sys/kernel/random/boot_id') };
}

export function cniReady(dirs: string[]): boolean {
  return dirs.some((d) => existsSync(d) && readdirSync(d).some((f) => /\.(conf|conflist|json)$/.test(f)));
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

function condition(type: string, status: boolean, reason: string, message: string, prev: any[] | undefined): any {
  const old = prev?.find((c) => c.type === type);
  const s = status ? 'True' : 'False';
  return {
    type,
    status: s,
    reason,
    message,
    lastHeartbeatTime: now(),
    lastTransitionTime: old && old.status === s ? old.lastTransitionTime : now(),
  };
}

function nodeLabels(f: NodeFacts): Record<string, string> {
  const labels: Record<string, string> = {
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': f.name,
    'kubernetes.io/os': 'linux',
    'node.kubernetes.io/instance-type': 'k3s',
    ...(f.labels ?? {}),
  };
  if (f.server) {
    labels['node-role.kubernetes.io/control-plane'] = 'true';
    labels['node-role.kubernetes.io/master'] = 'true';
    labels['node-role.kubernetes.io/etcd'] = 'true';
  }
  return labels;
}

/**
 * The kubelet writes its Node's status only when something in it changed (the conditions' lastHeartbeatTime
 * aside) or when nodeStatusReportFrequency (5 min by default) passed since its last report; the Lease is
 * what says every 10 s that it is alive (kubernetes/kubernetes @c579a327 pkg/kubelet/kubelet_node_status.go
 * tryUpdateNodeStatus, nodeStatusHasChanged; pkg/kubelet/apis/config/v1beta1/defaults.go
 * NodeStatusReportFrequency 5m). The twin takes the last report's time from the Ready condition's
 * lastHeartbeatTime, which every report sets.
 */
export const NODE_STATUS_REPORT_MS = 5 * 60_000;

export function nodeReportDue(existing: any, desired: any, nowMs: number): boolean {
  if (!existing || heartbeatDue(conditionOf(existing, 'Ready'), nowMs)) return true;
  return withoutHeartbeats(existing) !== withoutHeartbeats(desired);
}

/** A condition's last heartbeat is 5 minutes old (or unreadable): its next report is due. */
function heartbeatDue(c: any, nowMs: number): boolean {
  const beat = Date.parse(c?.lastHeartbeatTime ?? '');
  return !Number.isFinite(beat) || nowMs - beat >= NODE_STATUS_REPORT_MS;
}

const conditionOf = (node: any, type: string) => (node?.status?.conditions ?? []).find((c: any) => c.type === type);

/** The Node compared as the kubelet compares it (key order aside, the conditions' lastHeartbeatTime left out). */
function withoutHeartbeats(node: any): string {
  const conditions = (node.status?.conditions ?? []).map(({ lastHeartbeatTime: _, ...c }: any) => c);
  return canonical({ ...node, status: { ...node.status, conditions } });
}

/** The Node as it should be now, built over what is stored (labels and annotations others set survive). */
export function desiredNode(f: NodeFacts, existing?: any): any {
  const prevConds = existing?.status?.conditions;
  const conditions = [
    condition('MemoryPressure', false, 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available', prevConds),
    condition('DiskPressure', false, 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure', prevConds),
    condition('PIDPressure', false, 'KubeletHasSufficientPID', 'kubelet has sufficient PID available', prevConds),
    f.cniReady
      ? condition('Ready', true, 'KubeletReady', 'kubelet is posting ready status', prevConds)
      : condition('Ready', false, 'KubeletNotReady', NOT_READY_MESSAGE, prevConds),
  ];
  // EtcdIsVoter is the etcd leader's to set (etcdStatusCondition below), not this node's: it is kept as is.
  const voter = prevConds?.find((c: any) => c.type === 'EtcdIsVoter');
  if (f.server && voter) conditions.push(voter);
  const meta = existing?.metadata ?? {};
  const annotations = { ...(meta.annotations ?? {}), 'k3s.io/node-args': '[]', 'flannel.alpha.coreos.com/public-ip': f.ip };
  if (f.server && f.etcdMember) {
    annotations['etcd.k3s.cattle.io/node-name'] = f.etcdMember;
    annotations['etcd.k3s.cattle.io/node-address'] = f.ip;
  }
  const taints = f.cniReady ? [] : [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }];
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { ...meta, name: f.name, labels: { ...(meta.labels ?? {}), ...nodeLabels(f) }, annotations },
    spec: {
      ...(existing?.spec ?? {}),
      podCIDR: existing?.spec?.podCIDR,
      taints: [...(existing?.spec?.taints ?? []).filter((t: any) => t.key !== 'node.kubernetes.io/not-ready'), ...taints, ...(f.taints ?? [])],
    },
    status: {
      ...(existing?.status ?? {}),
      addresses: [
        { type: 'InternalIP', address: f.ip },
        { type: 'Hostname', address: f.name },
      ],
      capacity: { cpu: '2', memory: '4026532Ki', pods: '110', 'ephemeral-storage': '20511312Ki' },
      allocatable: { cpu: '2', memory: '4026532Ki', pods: '110', 'ephemeral-storage': '19953239109' },
      conditions,
      nodeInfo: {
        architecture: 'amd64',
        operatingSystem: 'linux',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        kernelVersion: '',
        containerRuntimeVersion: 'containerd://1.7.27-k3s1',
        kubeletVersion: K3S_VERSION,
        kubeProxyVersion: K3S_VERSION,
        machineID: f.machineID ?? existing?.status?.nodeInfo?.machineID ?? '',
        systemUUID: '',
        bootID: f.bootID ?? existing?.status?.nodeInfo?.bootID ?? '',
      },
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    },
  };
}

/**
 * The EtcdIsVoter condition the etcd leader's member controller sets on each server's Node every 15 s
 * (k3s-io/k3s v1.33.5+k3s1 pkg/etcd/etcd.go manageLearners, setEtcdStatusCondition): a learner is
 * False/MemberIsLearner, a voter True/MemberNotLearner, a member whose status cannot be read
 * False/Unhealthy with the error as message, a server Node without a member False/NotAMember.
 */
export type MemberStatus = 'voter' | 'learner' | 'unhealthy' | 'unjoined';

/**
 * k3s writes EtcdIsVoter again only when its status, reason or message changes, or to refresh a heartbeat older
 * than 5 minutes (k3s-io/k3s @2614da01 pkg/etcd/etcd.go setEtcdStatusCondition, heartbeatInterval).
 */
export function voterConditionDue(existing: any, next: any, nowMs: number): boolean {
  const old = conditionOf(existing, 'EtcdIsVoter');
  if (!old || old.status !== next.status || old.reason !== next.reason || old.message !== next.message) return true;
  return heartbeatDue(old, nowMs);
}

export function etcdStatusCondition(status: MemberStatus, message: string, existing?: any): any {
  const [st, reason, msg] =
    status === 'learner'
      ? [false, 'MemberIsLearner', 'Node has not been promoted to voting member of the etcd cluster']
      : status === 'voter'
        ? [true, 'MemberNotLearner', 'Node is a voting member of the etcd cluster']
        : status === 'unhealthy'
          ? [false, 'Unhealthy', 'Node is unhealthy']
          : [false, 'NotAMember', 'Node is not a member of the etcd cluster'];
  const c = condition('EtcdIsVoter', st as boolean, reason as string, message || (msg as string), existing?.status?.conditions);
  const old = existing?.status?.conditions?.find((x: any) => x.type === 'EtcdIsVoter');
  if (old && (old.reason !== c.reason || old.message !== c.message)) c.lastTransitionTime = c.lastHeartbeatTime;
  return c;
}

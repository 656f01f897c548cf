// Stopping everything k3s started on a host and the paths its state lives in: what --replace wipes before a
// server joins again, and what a removal or a reset takes away for good.
import { DATA_DIR } from './paths.ts';

/** What the host keeps of its membership: the datastore, certificates, token, agent state, node password. */
const OLD_STATE = [DATA_DIR, '/etc/rancher/node'];
/** What k3s's containers leave: kubelet's pod folders, containerd's tmpfs state, the CNI's allocations. */
const RUNTIME_STATE = ['/var/lib/kubelet', '/run/k3s', '/var/lib/cni'];
/** Everything a server or agent keeps of k3s on the host, membership and runtime. */
export const K3S_STATE = [...OLD_STATE, ...RUNTIME_STATE];

/**
 * Everything k3s started, stopped as k3s-killall.sh does it (k3s-io/k3s install.sh create_killall, at commit
 * 0136cf2): the k3s unit stops with KillMode=process, so its containers — their containerd-shims and every
 * process below them, in the kubepods cgroups — go on running: kill each shim's process tree; unmount what
 * the containers mounted under /run/k3s, /var/lib/kubelet/pods|plugins and /run/netns/cni-; delete the CNI
 * namespaces. The killall script's links are flannel's (cni0, flannel.1…); with Cilium they are cilium_host,
 * cilium_net, cilium_vxlan and the pods' lxc* veths (the next Cilium agent makes them again). The killall's
 * iptables filter is left out: its rules are KUBE-/CNI-/flannel ones this cluster (Cilium, no kube-proxy)
 * does not write, and a Cilium agent re-installs its own CILIUM_ chains when it starts. A kube-vip killed with
 * SIGKILL leaves the VIP on the NIC, which no one would then remove: delete it.
 */
export function killallCommand(unit: string, vip: string): string {
  const shim = `${DATA_DIR}/data/[^/]*/bin/containerd-shim`.replace(/\//g, '\\/');
  return [
    `systemctl stop ${unit}`,
    `systemctl kill --signal=KILL ${unit} 2>/dev/null`,
    `pstree() { for p in "$@"; do echo "$p"; pstree $(ps -e -o ppid= -o pid= | awk -v p="$p" '$1 == p { print $2 }'); done; }`,
    `kill -9 $(pstree $(ps -e -o pid= -o args= | awk '/${shim}/ { print $1 }')) 2>/dev/null`,
    `for m in $(awk '$2 ~ "^(/run/k3s|/var/lib/kubelet/pods|/var/lib/kubelet/plugins|/run/netns/cni-)" { print $2 }' /proc/self/mounts | sort -r); do umount -f "$m"; done`,
    `ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ { print $1 }' | xargs -r -n 1 ip netns delete`,
    `for l in cilium_host cilium_net cilium_vxlan $(ip -o link show | awk -F': ' '$2 ~ /^lxc/ { sub(/@.*/, "", $2); print $2 }'); do ip link delete "$l" 2>/dev/null; done`,
    `ip -o -4 addr show | awk '$4 == "${vip}/32" { print $2 }' | xargs -r -I{} ip addr del ${vip}/32 dev {}`,
  ].join('; ');
}

/** The processes of k3s's containers still running on a host: its containerd-shims, as the killall finds them. */
export const SHIMS_PROBE = `ps -e -o pid= -o args= | awk '/${`${DATA_DIR}/data/[^/]*/bin/containerd-shim`.replace(/\//g, '\\/')}/ { print $1 }' | wc -l`;

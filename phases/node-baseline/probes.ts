// The read-only commands node-baseline runs on every host (batched into one execution per host).
import type { ProbeCommand } from '../../src/engine/phase.ts';
import { toolsProbe } from './tools.ts';

const K3S_PORTS = [6443, 2379, 2380, 10250] as const;

export const baselineProbes: Record<string, ProbeCommand> = {
  // every program the engine runs on a host (tools.ts), so a missing one is named before it is needed
  tools: toolsProbe,
  arch: { command: 'uname -m' },
  kernel: { command: 'uname -r' },
  cgroupfs: { command: 'stat -fc %T /sys/fs/cgroup' },
  bpf: { command: 'grep -qw bpf /proc/filesystems && echo supported' },
  // "present" = the feature is there (built in or loaded); else whether modprobe could load it.
  br_netfilter: {
    command:
      '[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] && echo present || { modprobe -n -q br_netfilter 2>/dev/null && echo loadable || echo absent; }',
  },
  overlay: { command: 'grep -qw overlay /proc/filesystems && echo present || { modprobe -n -q overlay 2>/dev/null && echo loadable || echo absent; }' },
  clock: { command: 'date +%s.%N' },
  route: { command: 'ip -4 route show default' },
  addrs: { command: 'ip -o -4 addr show' },
  links: { command: 'ip -o link show' },
  // Listeners on k3s's ports, each with the systemd unit of the owning process (ours: k3s.service or k3s-agent.service).
  ports: {
    command: `ss -Hltnp '( ${K3S_PORTS.map((p) => `sport = :${p}`).join(' or ')} )' | while read -r _ _ _ local _ users; do pid=$(printf '%s' "$users" | sed -n 's/.*pid=\\([0-9]*\\).*/\\1/p' | head -n1); unit=$(grep -o '[^/]*\\.service' /proc/$pid/cgroup 2>/dev/null | head -n1); echo "$local $users \${unit:-none}"; done`,
    sudo: true,
  },
  disk: { command: 'd=/var/lib/rancher; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; df -P -B1 "$d" | tail -n1' },
  hostname: { command: 'hostname' },
  etcHostname: { command: 'cat /etc/hostname' },
  sysctls: {
    command:
      'for k in net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.ipv4.conf.all.rp_filter; do printf "%s=%s\\n" "$k" "$(sysctl -n $k 2>/dev/null)"; done',
  },
  modulesLoaded: { command: 'cat /proc/modules' },
};

/** Identity, compared across hosts before anything changes (cloned machines). */
export const identityProbes: Record<string, ProbeCommand> = {
  machineId: { command: 'cat /etc/machine-id' },
  productUuid: { command: 'cat /sys/class/dmi/id/product_uuid', sudo: true },
};

// The read-only commands node-baseline runs on every host (batched into one execution per host).
import type { ProbeCommand } from '../../src/engine/phase.ts';
import { toolsProbe } from './tools.ts';
import { MACHINE_ID_PROBE } from '../../src/k3s/paths.ts';

const K3S_PORTS = [6443, 2379, 2380, 10250] as const;

/**
 * Whether /proc/filesystems lists `fs` (a line `nodev<TAB>bpf` or `<TAB>ext4`), read by the shell's own `read`:
 * what `grep -qw` told, without a process.
 */
function fsListed(fs: string): string {
  return `{ f=; while read -r a b; do [ "$a" = ${fs} ] || [ "$b" = ${fs} ] && f=1; done < /proc/filesystems; [ -n "$f" ]; }`;
}

/**
 * One `sysctl` for all the keys: `<key> = <value>` a line, a key the kernel does not have (br_netfilter not
 * loaded) left out; where a process and a subshell per key ran `sysctl -n`. (The shell's `read` cannot stand in:
 * dash reads a byte at a time, and an integer sysctl file answers a read past its start with nothing.)
 */
export function sysctlsCommand(keys: string[]): string {
  return `sysctl ${keys.join(' ')} 2>/dev/null`;
}

/** `sysctlsCommand`'s answer by key. */
export function sysctlValues(stdout: string): Record<string, string> {
  return Object.fromEntries([...stdout.matchAll(/^(\S+) = (.*)$/gm)].map((m) => [m[1], m[2]]));
}

/**
 * `ss`'s listeners on k3s's ports, one line each: `<local address> <users> <unit>`, the unit being the first
 * `<name>.service` in the cgroup file of the last pid `users` names (`none` without one). Everything past `ss`
 * is the shell's own (parameter expansion, `read`, `case`): no process per listener, where a sed, a grep and
 * two heads each took a fork and exec. `proc` is /proc (tests point it elsewhere).
 */
export function portsCommand(proc = '/proc'): string {
  const filter = K3S_PORTS.map((p) => `sport = :${p}`).join(' or ');
  return [
    `ss -Hltnp '( ${filter} )' | while read -r _ _ _ local _ users; do`,
    'p=${users##*pid=}; p=${p%%[!0-9]*}; unit=;',
    `if [ -n "$p" ] && [ -r ${proc}/$p/cgroup ]; then while IFS= read -r l; do case $l in *.service*) l=\${l%%.service*}; unit=\${l##*/}.service; break ;; esac; done < ${proc}/$p/cgroup; fi;`,
    'echo "$local $users ${unit:-none}"; done',
  ].join(' ');
}

export const baselineProbes: Record<string, ProbeCommand> = {
  // every program the engine runs on a host (tools.ts), so a missing one is named before it is needed
  tools: toolsProbe,
  arch: { command: 'uname -m' },
  kernel: { command: 'uname -r' },
  cgroupfs: { command: 'stat -fc %T /sys/fs/cgroup' },
  bpf: { command: `${fsListed('bpf')} && echo supported` },
  // "present" = the feature is there (built in or loaded); else whether modprobe could load it.
  br_netfilter: {
    command:
      '[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] && echo present || { modprobe -n -q br_netfilter 2>/dev/null && echo loadable || echo absent; }',
  },
  overlay: { command: `${fsListed('overlay')} && echo present || { modprobe -n -q overlay 2>/dev/null && echo loadable || echo absent; }` },
  clock: { command: 'date +%s.%N' },
  route: { command: 'ip -4 route show default' },
  addrs: { command: 'ip -o -4 addr show' },
  links: { command: 'ip -o link show' },
  // Listeners on k3s's ports, each with the systemd unit of the owning process (ours: k3s.service or k3s-agent.service).
  ports: { command: portsCommand(), sudo: true },
  disk: { command: 'd=/var/lib/rancher; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; df -P -B1 "$d" | tail -n1' },
  hostname: { command: 'hostname' },
  etcHostname: { command: 'cat /etc/hostname' },
  sysctls: { command: sysctlsCommand(['net.ipv4.ip_forward', 'net.bridge.bridge-nf-call-iptables', 'net.ipv4.conf.all.rp_filter']) },
  modulesLoaded: { command: 'cat /proc/modules' },
};

/** Identity, compared across hosts before anything changes (cloned machines). */
export const identityProbes: Record<string, ProbeCommand> = {
  machineId: MACHINE_ID_PROBE,
  productUuid: { command: 'cat /sys/class/dmi/id/product_uuid', sudo: true },
};

// node-baseline's probe results of a healthy server (k3s-prod-1 of the operator inventories), for the unit
// tests of its checks: a test replaces the results it is about.
import type { ProbeResults } from '../../src/engine/phase.ts';

export const ok = (stdout: string) => ({ stdout, stderr: '', code: 0 });
/** The operator's clock at the probe (the host's is 0.4 s ahead: no skew). */
export const PROBE_NOW = 1_800_000_000;

export function healthyBaselineProbe(): ProbeResults {
  return {
    tools: ok('checked\n'),
    arch: ok('x86_64\n'),
    kernel: ok('6.1.0-18-amd64\n'),
    cgroupfs: ok('cgroup2fs\n'),
    bpf: ok('supported\n'),
    br_netfilter: ok('present\n'),
    overlay: ok('loadable\n'),
    clock: ok(`${PROBE_NOW + 0.4}\n`),
    route: ok('default via 192.168.2.1 dev eth0\n'),
    addrs: ok('1: lo    inet 127.0.0.1/8 scope host lo\n2: eth0    inet 192.168.2.10/24 brd 192.168.2.255 scope global eth0\n'),
    links: ok('1: lo: <LOOPBACK,UP> mtu 65536\n2: eth0@if7: <BROADCAST,UP> mtu 1500\n'),
    ports: ok('0.0.0.0:6443 users:(("k3s-server",pid=812,fd=9)) k3s.service\n'),
    disk: ok('/dev/sda1 100000000000 1000 90000000000 1% /\n'),
  };
}

import { describe, expect, it } from 'vitest';
import type { HostRef, ProbeResults } from '../../src/engine/phase.ts';
import { baselineStops, compareVersions, duplicateIdentities, nicOfAddress } from '../../phases/node-baseline/checks.ts';
import { archOfHeader } from '../../src/util/elf-arch.ts';
import { HOST_TOOLS, toolsProbe } from '../../phases/node-baseline/tools.ts';
import { hostsWithOwnName } from '../../phases/node-baseline/index.ts';
import { healthyBaselineProbe, ok, PROBE_NOW } from '../support/baseline-probe.ts';

const host: HostRef = { name: 'k3s-prod-1', address: '192.168.2.10', role: 'server', founder: true };
const now = PROBE_NOW;
const healthy = healthyBaselineProbe;

const stops = (probe: ProbeResults, extra: Partial<Parameters<typeof baselineStops>[0]> = {}) =>
  baselineStops({ host, probe, binaryArch: 'x86_64', operatorNow: now, vipInterface: 'auto', ...extra }).map((c) => [c.causeId, c.host, c.evidence.seen]);

describe('node-baseline gates', () => {
  it('passes a healthy host', () => {
    expect(stops(healthy())).toEqual([]);
  });

  it("judges the clock against the batch's whole span: a slow batch is not skew, a clock outside the span is", () => {
    // A 6 s batch (a bastion hop, a loaded host): the host read its clock somewhere inside it.
    const window = { sentMs: (now - 6) * 1000, answeredMs: now * 1000 };
    const at = (hostNow: number) => ({ ...healthy(), clock: { ...ok(`${hostNow}\n`), window } });
    expect(stops(at(now - 5))).toEqual([]);
    expect(stops(at(now + 1.5))).toEqual([]);
    expect(stops(at(now - 9))).toEqual([['CLOCK_SKEW', 'k3s-prod-1', "the host's clock is behind the operator's by 3.0 s (limit 2 s)"]]);
    expect(stops(at(now + 4))).toEqual([['CLOCK_SKEW', 'k3s-prod-1', "the host's clock is ahead of the operator's by 4.0 s (limit 2 s)"]]);
  });

  it.each([
    ['ARCH_UNSUPPORTED', { arch: ok('aarch64\n') }, /host is aarch64, the k3s binary is built for x86_64/],
    ['KERNEL_TOO_OLD', { kernel: ok('5.4.0-150-generic\n') }, /5\.4\.0-150-generic is older than 5\.10/],
    ['CGROUP_V2_MISSING', { cgroupfs: ok('tmpfs\n') }, /is tmpfs, not cgroup2fs/],
    ['BPFFS_MISSING', { bpf: { stdout: '', stderr: '', code: 1 } }, /no bpf filesystem/],
    ['MODULE_MISSING', { br_netfilter: ok('absent\n') }, /br_netfilter is not built in/],
    ['CLOCK_SKEW', { clock: ok(`${now + 30}\n`) }, /ahead of the operator's by 30\.0 s/],
    ['CLOCK_SKEW', { clock: ok(`${now - 5}\n`) }, /behind the operator's by 5\.0 s/],
    ['NO_DEFAULT_ROUTE', { route: ok('') }, /no IPv4 default route/],
    ['NIC_NOT_FOUND', { addrs: ok('1: lo    inet 127.0.0.1/8 scope host lo\n') }, /no interface holds 192\.168\.2\.10/],
    [
      'PORT_IN_USE',
      { ports: ok('0.0.0.0:2379 users:(("etcd",pid=99,fd=3)) etcd.service\n') },
      /0\.0\.0\.0:2379 is held by etcd, not by this host's k3s\.service/,
    ],
    // a server's ports belong to k3s.service: an agent unit on a server is not ours
    [
      'PORT_IN_USE',
      { ports: ok('*:10250 users:(("k3s-agent",pid=9,fd=3)) k3s-agent.service\n') },
      /\*:10250 is held by k3s-agent, not by this host's k3s\.service/,
    ],
    ['TOOL_MISSING', { tools: ok('missing ss\nchecked\n') }, /^ss is not installed \(Debian package iproute2: apt-get install iproute2\)$/],
    ['DISK_LOW', { disk: ok('/dev/loop0 104857600 104857600 0 100% /var/lib/rancher\n') }, /0 MiB free on \/var\/lib\/rancher/],
  ] as const)('names %s from what the probe saw', (id, patch, seen) => {
    const found = stops({ ...healthy(), ...patch });
    expect(found).toHaveLength(1);
    expect(found[0][0]).toBe(id);
    expect(found[0][1]).toBe('k3s-prod-1');
    expect(found[0][2]).toMatch(seen);
  });

  it('names a controlPlane.interface that does not exist', () => {
    expect(stops(healthy(), { vipInterface: 'enp3s0' })).toEqual([
      ['NIC_NOT_FOUND', 'k3s-prod-1', expect.stringMatching(/enp3s0 does not exist \(interfaces: lo, eth0\)/)],
    ]);
    expect(stops(healthy(), { vipInterface: 'eth0' })).toEqual([]);
  });

  it('judges an agent by its own unit and never by controlPlane.interface', () => {
    const agent: HostRef = { name: 'k3s-prod-4', address: '192.168.2.10', role: 'agent', founder: false };
    const kubelet = { ports: ok('*:10250 users:(("k3s-agent",pid=812,fd=9)) k3s-agent.service\n') };
    const onAgent = (probe: ProbeResults, vipInterface = 'auto') =>
      baselineStops({ host: agent, probe, binaryArch: 'x86_64', operatorNow: now, vipInterface }).map((c) => [c.causeId, c.evidence.seen]);
    // a rerun on a built agent: its kubelet holds 10250 under k3s-agent.service
    expect(onAgent({ ...healthy(), ...kubelet })).toEqual([]);
    // a server's unit on an agent is someone else's
    expect(onAgent(healthy())).toEqual([['PORT_IN_USE', "0.0.0.0:6443 is held by k3s-server, not by this host's k3s-agent.service"]]);
    // kube-vip runs on servers only: an agent's NIC may be named otherwise
    expect(onAgent({ ...healthy(), ...kubelet }, 'enp3s0')).toEqual([]);
    expect(stops({ ...healthy(), ...kubelet }).map((s) => s[0])).toEqual(['PORT_IN_USE']);
  });

  it('names every missing tool with its package, and judges nothing else until they are there', () => {
    // no `ip`: the route probe printed nothing, which must not read as NO_DEFAULT_ROUTE
    const found = stops({ ...healthy(), route: ok(''), tools: ok('missing ip\nmissing modprobe\nchecked\n') });
    expect(found).toEqual([
      ['TOOL_MISSING', 'k3s-prod-1', 'ip is not installed (Debian package iproute2: apt-get install iproute2)'],
      ['TOOL_MISSING', 'k3s-prod-1', 'modprobe is not installed (Debian package kmod: apt-get install kmod)'],
    ]);
    // a batch that could not frame its output (no base64) is no "nothing missing"
    expect(stops({ ...healthy(), tools: ok('') })).toEqual([['TOOL_MISSING', 'k3s-prod-1', expect.stringMatching(/did not run .*sh or mktemp/)]]);
  });

  it('checks every tool in one probe that changes nothing', () => {
    expect(toolsProbe.sudo).toBeFalsy();
    expect(toolsProbe.command).toMatch(
      /^for t in sh sudo cat .* systemctl journalctl awk sort wc xargs kill umount; do command -v "\$t" >\/dev\/null 2>&1 \|\| echo "missing \$t"; done; echo checked$/,
    );
    for (const t of ['ss', 'stat', 'ip', 'modprobe', 'sysctl', 'systemctl', 'journalctl', 'sha256sum', 'mktemp']) expect(HOST_TOOLS[t], t).toBeTruthy();
    // what a stock Debian 12 server lacks is never demanded (k3s brings kubectl; the engine calls neither curl nor etcdctl)
    for (const t of ['curl', 'wget', 'etcdctl', 'kubectl']) expect(HOST_TOOLS[t], t).toBeUndefined();
  });

  it('reports every failing gate of a host at once', () => {
    const ids = stops({ ...healthy(), kernel: ok('4.19.0\n'), route: ok(''), cgroupfs: ok('tmpfs\n') }).map((s) => s[0]);
    expect(ids).toEqual(['KERNEL_TOO_OLD', 'CGROUP_V2_MISSING', 'NO_DEFAULT_ROUTE']);
  });

  it('accepts a script as the k3s binary for any architecture', () => {
    expect(stops({ ...healthy(), arch: ok('aarch64\n') }, { binaryArch: 'any' })).toEqual([]);
  });
});

describe('helpers', () => {
  it('compares kernel versions numerically', () => {
    expect(compareVersions('5.10.0-28-amd64', '5.10')).toBe(0);
    expect(compareVersions('5.9.16', '5.10')).toBe(-1);
    expect(compareVersions('6.18.44-fc', '5.10')).toBe(1);
  });

  it('finds the NIC holding an address', () => {
    expect(nicOfAddress('2: eth0@if12    inet 10.77.0.10/24 brd 10.77.0.255 scope global eth0', '10.77.0.10')).toBe('eth0');
    expect(nicOfAddress('2: eth0    inet 10.77.0.100/24', '10.77.0.10')).toBeUndefined();
  });

  it('reads the architecture from an ELF header', () => {
    const elf = Buffer.alloc(20);
    elf.writeUInt32BE(0x7f454c46, 0);
    elf.writeUInt16LE(0xb7, 18);
    expect(archOfHeader(elf)).toBe('aarch64');
    expect(archOfHeader(Buffer.from('#!/usr/bin/env node\n'))).toBe('any');
  });

  it('finds cloned machines across hosts, naming both', () => {
    const h2 = { ...host, name: 'k3s-prod-2' };
    const h3 = { ...host, name: 'k3s-prod-3' };
    const seen = new Map<HostRef, ProbeResults>([
      [host, { machineId: ok('aaa\n'), productUuid: ok('u1\n') }],
      [h2, { machineId: ok('aaa\n'), productUuid: ok('u2\n') }],
      [h3, { machineId: ok('ccc\n'), productUuid: { stdout: '', stderr: 'No such file', code: 1 } }],
    ]);
    const found = duplicateIdentities(seen);
    expect(found.map((c) => [c.causeId, c.host])).toEqual([['DUPLICATE_HOST_IDENTITY', 'k3s-prod-1, k3s-prod-2']]);
    expect(found[0].evidence.seen).toContain('/etc/machine-id aaa');
  });
});

describe("/etc/hosts keeps the host's own name resolvable", () => {
  const debian =
    '127.0.0.1\tlocalhost\n127.0.1.1\tdebian.example.org\tdebian\n\n# The following lines are desirable for IPv6 capable hosts\n::1     localhost ip6-localhost ip6-loopback\n';

  it("replaces the installer's 127.0.1.1 line of the old name, and changes nothing on a rerun", () => {
    const once = hostsWithOwnName(debian, 'k3s-prod-1');
    expect(once).toBe(
      '127.0.0.1\tlocalhost\n127.0.1.1\tk3s-prod-1\n\n# The following lines are desirable for IPv6 capable hosts\n::1     localhost ip6-localhost ip6-loopback\n',
    );
    expect(hostsWithOwnName(once, 'k3s-prod-1')).toBe(once);
  });

  it('leaves a file that already names the host, and adds the line after localhost when there is none', () => {
    const listed = '127.0.0.1\tlocalhost\n10.0.0.5\tk3s-prod-1\n';
    expect(hostsWithOwnName(listed, 'k3s-prod-1')).toBe(listed);
    // a name in a comment does not resolve
    expect(hostsWithOwnName('127.0.0.1 localhost\n# k3s-prod-1\n', 'k3s-prod-1')).toBe('127.0.0.1 localhost\n127.0.1.1\tk3s-prod-1\n# k3s-prod-1\n');
    expect(hostsWithOwnName(null, 'k3s-prod-1')).toBe('127.0.0.1\tlocalhost\n127.0.1.1\tk3s-prod-1\n');
  });
});

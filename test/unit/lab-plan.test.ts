// The lab's pure parts: host names and addresses, the inventory it writes, the mirror it picks, the
// scripts a host boots with. No root needed, no lab: a unit test (of lab instance 0, the default).
import { describe, expect, it } from 'vitest';
import { bootScript, outerScript } from '../../lab/boot-script.ts';
import { isValidNicName, labConfig, planBastion, planHosts, paths } from '../../lab/config.ts';
import { faketimeOffset } from '../../lab/faults.ts';
import { privateMounts } from '../../lab/host.ts';
import { renderInventory } from '../../lab/inventory.ts';
import { findMirror } from '../../lab/mirror.ts';
import { mountsUnder } from '../../lab/mounts.ts';
import { knownHostsText } from '../../lab/operator.ts';
import { validateInventory } from '../../src/inventory/validate.ts';
import { parse } from 'yaml';

describe('lab plan', () => {
  it('names servers k3s-lab-N from .10 and agents after them, never the VIP .9', () => {
    const hosts = planHosts({ servers: 3, agents: 2 });
    expect(hosts.map((h) => `${h.name} ${h.address} ${h.role}`)).toEqual([
      'k3s-lab-1 10.77.0.10 server',
      'k3s-lab-2 10.77.0.11 server',
      'k3s-lab-3 10.77.0.12 server',
      'k3s-lab-agent-1 10.77.0.13 agent',
      'k3s-lab-agent-2 10.77.0.14 agent',
    ]);
    expect(hosts.every((h) => h.veth.length <= 15)).toBe(true);
    expect(() => planHosts({ servers: 0, agents: 0 })).toThrow(/servers/);
  });

  it('writes the inventory for `bootstrap lab` with the lab key, known_hosts and a cgroup waiver', () => {
    const text = renderInventory(planHosts({ servers: 3, agents: 1 }), paths, 'hybrid');
    expect(text).toContain('environment: lab');
    expect(text).toContain(`ssh: { user: ops, identityFile: ${paths.key}, knownHostsFile: ${paths.knownHosts} }`);
    expect(text).toContain('controlPlane: { vip: 10.77.0.9, interface: auto }');
    // Not k3s's default networks: every lab build shows an address taken from the defaults.
    expect(text).toContain(`k3s:\n  version: v1.33.5+k3s1\n  artifacts: ${paths.artifacts}\n  clusterCidr: 10.44.0.0/16\n  serviceCidr: 10.45.0.0/16\n`);
    expect(text).toContain('  - { name: k3s-lab-1, address: 10.77.0.10, founder: true }');
    expect(text).toContain('  - { name: k3s-lab-2, address: 10.77.0.11 }\n');
    expect(text).toContain('agents:\n  - { name: k3s-lab-agent-1, address: 10.77.0.13 }');
    expect(text).toMatch(/waivers:\n {2}- \{ cause: CGROUP_V2_MISSING, reason: ".*hybrid.*" \}/);
    expect(renderInventory(planHosts({ servers: 1, agents: 0 }), paths, 'unified')).not.toContain('waivers');
    // Every phase's sections: `npm run lab -- up && npx bootstrap lab` builds to flux with no other file.
    const inv = parse(text);
    expect(inv.gitops).toEqual({ checkout: paths.gitopsCheckout, url: 'ssh://git@10.77.0.2/lab-gitops.git', branch: 'main', path: 'clusters/lab' });
    expect(inv.cilium).toEqual({ chart: `${paths.artifacts}/cilium-1.19.5.tgz`, helmRelease: 'platform/cilium/helmrelease.yaml' });
    expect(inv.flux).toEqual({
      install: `${paths.artifacts}/flux-install.yaml`,
      deployKeyFile: `${paths.stateDir}/gitops-server/deploy_key`,
      knownHostsFile: `${paths.stateDir}/gitops-server/known_hosts`,
    });
    const result = validateInventory(text, 'lab');
    expect(result.ok, JSON.stringify(result)).toBe(true);
  });

  it("the bastion shape: the inventory names the bastion at its operator-side address; its segment is no instance's hosts' segment", () => {
    const b = planBastion();
    expect(b).toMatchObject({ name: 'lab-bastion', role: 'bastion', address: '10.77.100.2', netns: 'blab-bastion', veth: 'blab-bc' });
    const text = renderInventory(planHosts({ servers: 3, agents: 1 }), paths, 'unified', b);
    expect(text).toContain(`ssh: { user: ops, identityFile: ${paths.key}, knownHostsFile: ${paths.knownHosts}, bastion: ops@10.77.100.2:22 }`);
    expect(text).not.toContain('10.77.100.2\n');
    expect(renderInventory(planHosts({ servers: 3, agents: 1 }), paths, 'unified')).not.toContain('bastion');
    const seven = labConfig(7);
    expect(seven.outside).toEqual({ subnet: '10.77.107.0/24', operator: '10.77.107.1', bastion: '10.77.107.2', link: 'bl7-out' });
    for (const n of [0, 1, 99]) expect(labConfig(n).outside.subnet).not.toBe(labConfig(n).net.subnet);
    expect(labConfig(99).outside.link.length).toBeLessThanOrEqual(15);
  });

  it('takes the Debian mirror from the machine apt sources (deb822 and one-line)', () => {
    const deb822 =
      'Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://sec.example/debian-security\nSuites: bookworm-security\n';
    expect(findMirror([deb822], 'bookworm')).toBe('http://mirror.example/debian');
    expect(findMirror(['deb [arch=amd64] http://one.example/debian bookworm main\n'], 'bookworm')).toBe('http://one.example/debian');
    expect(findMirror(['Types: deb\nURIs: http://x.example\nSuites: bookworm-security\n'], 'bookworm')).toBeUndefined();
  });

  it('boots a host in its own network, PID, mount, UTS, IPC and cgroup namespaces with systemd as PID 1', () => {
    const [h] = planHosts({ servers: 1, agents: 0 });
    const files = {
      hostDir: '/lab/h',
      rootfs: '/cache/r',
      cgroupProcs: ['/sys/fs/cgroup/pids/bootstrap-lab/k3s-lab-1/cgroup.procs'],
      layout: 'hybrid' as const,
      opsUid: 1000,
      opsGid: 1000,
      mounts: privateMounts('/usr/bin/node', () => true),
    };
    expect(outerScript(h!, files)).toContain("exec ip netns exec 'blab-s1' unshare --pid --fork --mount --uts --ipc --cgroup --kill-child");
    const boot = bootScript(h!, files);
    expect(boot).toContain("lowerdir='/cache/r'");
    // the twins' programs go off every PATH, into their own folder
    expect(boot).toContain(`mount --bind -o ro '/usr/bin/node' "$R"'/opt/bootstrap-lab/bin/node'`);
    expect(boot).toContain(`mount --bind -o ro '/usr/bin/etcdctl' "$R"'/opt/bootstrap-lab/bin/etcdctl'`);
    expect(boot).not.toMatch(/"\$R"'\/usr\/(local\/)?s?bin/);
    expect(boot).toMatch(/exec chroot "\$R" .*\/lib\/systemd\/systemd --system systemd\.unified_cgroup_hierarchy=0\n$/);
  });

  it("names the Debian packages of the twins' programs the machine lacks", () => {
    expect(() => privateMounts('/usr/bin/node', (p) => !p.includes('etcd'))).toThrow(
      "the lab hosts' twins need /usr/bin/etcd, /usr/bin/etcdctl from this machine (apt-get install etcd-server etcd-client)",
    );
  });

  it('writes one known_hosts line per host address with its own key', () => {
    expect(
      knownHostsText([
        { address: '10.77.0.10', publicKey: 'ssh-ed25519 AAAA1' },
        { address: '10.77.0.11', publicKey: 'ssh-ed25519 AAAA2' },
      ]),
    ).toBe('10.77.0.10 ssh-ed25519 AAAA1\n10.77.0.11 ssh-ed25519 AAAA2\n');
  });

  it('checks fault arguments before touching a host', () => {
    expect(faketimeOffset('300')).toBe('+300');
    expect(faketimeOffset('-90')).toBe('-90');
    expect(() => faketimeOffset('soon')).toThrow(/whole seconds/);
    expect(isValidNicName('ens5')).toBe(true);
    expect(isValidNicName('a-name-far-too-long')).toBe(false);
    expect(isValidNicName('eth/0')).toBe(false);
  });

  it('finds leftover mounts under a folder, deepest first', () => {
    const info = [
      '1 0 8:0 / / rw - ext4 /dev/vda rw',
      '2 1 0:5 / /var/lib/bootstrap-lab/hosts/a/root rw - overlay overlay rw',
      '3 2 0:6 / /var/lib/bootstrap-lab/hosts/a/root/proc rw - proc proc rw',
      '4 1 0:7 / /var/lib/bootstrap-lab-other rw - tmpfs tmpfs rw',
    ].join('\n');
    expect(mountsUnder('/var/lib/bootstrap-lab/hosts', info)).toEqual(['/var/lib/bootstrap-lab/hosts/a/root/proc', '/var/lib/bootstrap-lab/hosts/a/root']);
  });
});

// Lab hosts behave like real machines over SSH: strict host keys against the lab known_hosts, the
// operator key, passwordless sudo, systemd up, an identity of their own.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hosts, paths, ssh } from '../support/lab.ts';
import { LAB_TOOLS_DIR } from '../../lab/twin/tools.ts';
import { NET } from '../../lab/config.ts';
import { plannedNic } from '../../lab/network.ts';

function sshWith(knownHosts: string, address: string, cmd: string) {
  return spawnSync(
    'ssh',
    [
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      `UserKnownHostsFile=${knownHosts}`,
      '-o',
      'GlobalKnownHostsFile=/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      'ConnectTimeout=5',
      '-i',
      paths.key,
      `ops@${address}`,
      cmd,
    ],
    { encoding: 'utf8' },
  );
}

describeAsRoot('lab hosts over SSH', () => {
  beforeAll(async () => {
    await ensureLab();
  });

  it('answers `sudo -n systemctl is-system-running` with strict host key checking (the README command)', () => {
    for (const h of hosts()) {
      const res = sshWith(paths.knownHosts, h.address, 'sudo -n systemctl is-system-running');
      expect(res.stderr).toBe('');
      expect(['running', 'degraded']).toContain(res.stdout.trim());
      expect(res.status === 0 || res.stdout.trim() === 'degraded').toBe(true);
    }
  });

  it('refuses a host whose key is not the one in known_hosts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lab-kh-'));
    const [a, b] = hosts();
    // a's address with b's key: exactly what a reinstalled or impostor machine looks like
    const bKey = readFileSync(paths.knownHosts, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${b!.address} `))!
      .split(' ')
      .slice(1)
      .join(' ');
    writeFileSync(join(dir, 'known_hosts'), `${a!.address} ${bKey}\n`);
    const res = sshWith(join(dir, 'known_hosts'), a!.address, 'true');
    expect(res.status).toBe(255);
    expect(res.stderr).toMatch(/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
    const empty = sshWith(join(dir, 'none'), a!.address, 'true');
    expect(empty.status).toBe(255);
    expect(empty.stderr).toMatch(/Host key verification failed/);
  });

  it('gives each host its own name, machine-id, address and NIC (eth0 on servers, enp1s0 on agents) with a default route via the operator', async () => {
    const seen = new Set<string>();
    for (const h of hosts()) {
      const nic = plannedNic(h);
      expect(nic).toBe(h.role === 'agent' ? 'enp1s0' : 'eth0');
      const out = (await ssh(h.name, `hostname; cat /etc/machine-id; ip -4 -o addr show ${nic}; ip route show default`)).stdout;
      const [name, machineId] = out.split('\n');
      expect(name).toBe(h.name);
      expect(machineId).toMatch(/^[0-9a-f]{32}$/);
      seen.add(machineId!);
      expect(out).toContain(`inet ${h.address}/24`);
      expect(out).toContain(`default via ${NET.operator} dev ${nic}`);
    }
    expect(seen.size).toBe(hosts().length);
  });

  it('runs sshd, journald and logind as systemd units, node from the machine, and reports its cgroups as they are', async () => {
    const out = (
      await ssh(
        'k3s-lab-1',
        `systemctl is-active ssh systemd-journald systemd-logind dbus; ${LAB_TOOLS_DIR}/node -e "console.log(process.version)"; stat -fc %T /sys/fs/cgroup; sudo -n journalctl -u ssh -n 1 --no-pager -q | wc -l`,
      )
    ).stdout.split('\n');
    expect(out.slice(0, 4)).toEqual(['active', 'active', 'active', 'active']);
    expect(out[4]).toBe(process.version);
    const machineFs = spawnSync('stat', ['-fc', '%T', '/sys/fs/cgroup'], { encoding: 'utf8' }).stdout.trim();
    expect(out[5]).toBe(machineFs); // tmpfs on a hybrid machine, cgroup2fs on a unified one: never faked
    expect(Number(out[6])).toBe(1);
  });

  it('reaches every peer on the segment (one L2 network, real ARP)', async () => {
    const peers = hosts()
      .slice(1)
      .map((h) => h.address);
    const out = await ssh('k3s-lab-1', peers.map((a) => `${LAB_TOOLS_DIR}/arping -c 1 -w 3 ${a} >/dev/null && echo ${a} ok`).join('; '));
    expect(out.stdout.trim().split('\n')).toEqual(peers.map((a) => `${a} ok`));
  });
});

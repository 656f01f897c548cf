// node-baseline's probes that the shell answers by itself, run by a real sh. The listener probe: `ss` (a
// stand-in on the PATH printing what ss -Hltnp prints) and cgroup files under a folder standing in for /proc;
// each listener comes back as `<local> <users> <unit>`, the unit the first `<name>.service` in the cgroup file
// of the last pid named. The sysctls in one `sysctl`; the filesystems: what `grep -qw` told.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { baselineProbes, portsCommand, sysctlsCommand, sysctlValues } from '../../phases/node-baseline/probes.ts';

const dir = mkdtempSync(join(tmpdir(), 'ports-probe-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cgroup(pid: number, text: string) {
  mkdirSync(join(dir, 'proc', String(pid)), { recursive: true });
  writeFileSync(join(dir, 'proc', String(pid), 'cgroup'), text);
}

it('names the unit of each listener without a process per listener', () => {
  // A cgroup v1/v2 hybrid (the unit on the name=systemd line), a v2-only host, a user's service.
  cgroup(301, '9:name=systemd:/system.slice/k3s.service\n4:memory:/system.slice/k3s.service\n0::/system.slice/k3s.service\n');
  cgroup(302, '0::/system.slice/k3s-agent.service\n');
  cgroup(303, '0::/user.slice/user-1000.slice/user@1000.service/app.slice/etcd.service\n');
  cgroup(304, '0::/init.scope\n');
  const ss = [
    'LISTEN 0 4096 127.0.0.1:6443 0.0.0.0:* users:(("k3s-server",pid=301,fd=7))',
    'LISTEN 0 4096 *:10250 *:* users:(("k3s-agent",pid=302,fd=9))',
    'LISTEN 0 4096 0.0.0.0:2379 0.0.0.0:* users:(("etcd",pid=304,fd=3),("etcd",pid=303,fd=5))',
    'LISTEN 0 4096 0.0.0.0:2380 0.0.0.0:* users:(("gone",pid=999,fd=3))',
    'LISTEN 0 4096 [::]:2380 [::]:*',
  ];
  writeFileSync(join(dir, 'ss'), `#!/bin/sh\nprintf '%s\\n' ${ss.map((l) => `'${l}'`).join(' ')}\n`);
  chmodSync(join(dir, 'ss'), 0o755);
  // Only sh's builtins and the stand-in ss: no sed, grep or head on this PATH.
  const r = spawnSync('/bin/sh', ['-c', portsCommand(join(dir, 'proc'))], { env: { PATH: dir }, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.stdout).toBe(
    [
      '127.0.0.1:6443 users:(("k3s-server",pid=301,fd=7)) k3s.service',
      '*:10250 users:(("k3s-agent",pid=302,fd=9)) k3s-agent.service',
      '0.0.0.0:2379 users:(("etcd",pid=304,fd=3),("etcd",pid=303,fd=5)) user@1000.service',
      '0.0.0.0:2380 users:(("gone",pid=999,fd=3)) none',
      '[::]:2380  none',
      '',
    ].join('\n'),
  );
});

it('reads every sysctl in one sysctl, a key the kernel lacks left out (br_netfilter not loaded)', () => {
  const keys = ['net.ipv4.ip_forward', 'net.bridge.nosuchkey', 'kernel.pid_max'];
  // sysctl lives in sbin, which a non-root user's PATH lacks (the probe batch adds it).
  const env = { PATH: '/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin' };
  const r = spawnSync('/bin/sh', ['-c', sysctlsCommand(keys)], { env, encoding: 'utf8' });
  const one = (k: string) => spawnSync('sysctl', ['-n', k], { env, encoding: 'utf8' }).stdout.trim();
  // Multi-digit values whole (pid_max: an integer file answers a byte-wise read with its first digit only).
  expect(sysctlValues(r.stdout)).toEqual({ 'net.ipv4.ip_forward': one('net.ipv4.ip_forward'), 'kernel.pid_max': one('kernel.pid_max') });
  expect(one('kernel.pid_max').length).toBeGreaterThan(1);
});

it('tells from /proc/filesystems whether bpf and overlay are listed, as grep -qw did', () => {
  const listed = (fs: string) => spawnSync('/bin/sh', ['-c', `grep -qw ${fs} /proc/filesystems && echo yes`], { encoding: 'utf8' }).stdout === 'yes\n';
  const bpf = spawnSync('/bin/sh', ['-c', baselineProbes.bpf.command], { env: { PATH: dir }, encoding: 'utf8' });
  expect(bpf.stdout).toBe(listed('bpf') ? 'supported\n' : '');
  // No process: PATH holds only the ss stand-in, and modprobe is reached only when overlay is not listed.
  const overlay = spawnSync('/bin/sh', ['-c', baselineProbes.overlay.command], { env: { PATH: dir }, encoding: 'utf8' });
  if (listed('overlay')) expect(overlay.stdout).toBe('present\n');
  const none = spawnSync('/bin/sh', ['-c', baselineProbes.bpf.command.replace(/bpf/g, 'nosuchfs')], { env: { PATH: dir }, encoding: 'utf8' });
  expect(none).toMatchObject({ stdout: '', stderr: '' });
});

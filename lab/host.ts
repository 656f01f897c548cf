// One lab host: its folder (disk, identity seed, boot scripts), power on, power off, and running a
// command inside it without SSH.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bootScript, outerScript, type BootFiles, type PrivateMount } from './boot-script.ts';
import { cgroupLayout, prepareHostCgroups, removeHostCgroups } from './cgroups.ts';
import { OPS_USER, RANCHER_DISK_MB, paths, type HostPlan } from './config.ts';
import { LabUnavailable, LabUsage } from './errors.ts';
import { nicDown, nicUp } from './network.ts';
import { hostInitPid, killNetns } from './processes.ts';
import { FAKETIME_SHARED, GIT_DIRS } from './rootfs-customize.ts';
import { LAB_TOOLS_DIR } from './twin/tools.ts';
import { run, type RunOptions, type RunResult } from './run.ts';

const hostDir = (host: HostPlan) => join(paths.hostsDir, host.name);

/** A fresh disk and identity: empty overlay upper dir, new host key and machine-id, empty /var/lib/rancher. */
export async function freshDisk(host: HostPlan, all: HostPlan[], operatorPub: string): Promise<void> {
  const dir = hostDir(host);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const d of ['work', 'root', 'seed']) mkdirSync(join(dir, d), { mode: 0o700 });
  // The upper dir's own mode becomes the host's "/": it must be 0755 like a real root.
  mkdirSync(join(dir, 'upper'), { mode: 0o755 });
  chmodSync(join(dir, 'upper'), 0o755);
  const seed = join(dir, 'seed');
  writeFileSync(join(seed, 'hostname'), `${host.name}\n`);
  writeFileSync(join(seed, 'machine-id'), `${randomBytes(16).toString('hex')}\n`);
  writeFileSync(join(seed, 'hosts'), hostsFile(all));
  writeFileSync(join(seed, 'authorized_keys'), operatorPub, { mode: 0o600 });
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `root@${host.name}`, '-f', join(seed, 'ssh_host_ed25519_key')]);
  await run('truncate', ['-s', `${RANCHER_DISK_MB}M`, join(dir, 'rancher.img')]);
  await run('mkfs.ext4', ['-q', '-F', '-m', '0', '-L', 'rancher', join(dir, 'rancher.img')]);
}

function hostsFile(all: HostPlan[]): string {
  return ['127.0.0.1\tlocalhost', '::1\tlocalhost ip6-localhost ip6-loopback', ...all.map((h) => `${h.address}\t${h.name}`), ''].join('\n');
}

/** The host's public host key as written to known_hosts ("ssh-ed25519 AAAA..."). */
export function hostPublicKey(host: HostPlan): string {
  return readFileSync(join(hostDir(host), 'seed', 'ssh_host_ed25519_key.pub'), 'utf8')
    .trim()
    .split(/\s+/)
    .slice(0, 2)
    .join(' ');
}

function opsIds(rootfs: string): { uid: number; gid: number } {
  const line = readFileSync(join(rootfs, 'etc', 'passwd'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${OPS_USER}:`));
  const [, , uid, gid] = line?.split(':') ?? [];
  return { uid: Number(uid ?? 1000), gid: Number(gid ?? 1000) };
}

/**
 * The machine's programs the twins run on a host, mounted read-only into the twins' own folder (off every
 * PATH, lab/twin/tools.ts): Node.js (the k3s twin is a Node program; the same `node` the machine runs),
 * Debian's etcd and etcdctl (the k3s twin's embedded datastore and its snapshots), and git with its
 * helpers and templates (the Flux source-controller twin clones over ssh). arping, openssl and kubectl
 * come from the root filesystem instead (rootfs-customize.ts moves them there).
 */
export function privateMounts(execPath = process.execPath, exists: (p: string) => boolean = existsSync): PrivateMount[] {
  const tool = (name: string) => join(LAB_TOOLS_DIR, name);
  const wanted: (PrivateMount & { pkg: string })[] = [
    { source: execPath, target: tool('node'), pkg: 'nodejs' },
    { source: '/usr/bin/etcd', target: tool('etcd'), pkg: 'etcd-server' },
    { source: '/usr/bin/etcdctl', target: tool('etcdctl'), pkg: 'etcd-client' },
    { source: '/usr/bin/git', target: tool('git'), pkg: 'git' },
    ...GIT_DIRS.map((d) => ({ source: d, target: d, pkg: 'git' })),
  ];
  const missing = wanted.filter((m) => !exists(m.source));
  if (missing.length) {
    const pkgs = [...new Set(missing.map((m) => m.pkg))];
    throw new LabUnavailable(`the lab hosts' twins need ${missing.map((m) => m.source).join(', ')} from this machine (apt-get install ${pkgs.join(' ')})`);
  }
  return wanted.map(({ source, target }) => ({ source, target }));
}

export function isRunning(host: HostPlan): boolean {
  return hostInitPid(host.netns) !== undefined;
}

/** Power on: boots systemd as PID 1 in the host's namespaces. Returns once systemd runs (not once sshd answers). */
export async function powerOn(host: HostPlan, rootfs: string): Promise<void> {
  if (isRunning(host)) return;
  const dir = hostDir(host);
  const ids = opsIds(rootfs);
  const files: BootFiles = {
    hostDir: dir,
    rootfs,
    cgroupProcs: prepareHostCgroups(host.name),
    layout: cgroupLayout(),
    opsUid: ids.uid,
    opsGid: ids.gid,
    mounts: privateMounts(),
  };
  writeFileSync(join(dir, 'outer.sh'), outerScript(host, files), { mode: 0o700 });
  writeFileSync(join(dir, 'boot.sh'), bootScript(host, files), { mode: 0o700 });
  await nicUp(host);
  const log = openSync(join(dir, 'console.log'), 'a');
  const child = spawn('/bin/sh', [join(dir, 'outer.sh')], { detached: true, stdio: ['ignore', log, log] });
  child.unref();
  closeSync(log);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const end = Date.now() + 15_000;
  while (!isRunning(host)) {
    const early = await Promise.race([exited, new Promise((r) => setTimeout(() => r('wait'), 50))]);
    if (early !== 'wait' || Date.now() > end) {
      const tail = readFileSync(join(dir, 'console.log'), 'utf8').trim().split('\n').slice(-5).join(' | ');
      throw new Error(`${host.name}: did not boot (${tail || 'no output'})`);
    }
  }
}

/** Power off: every process of the host killed at once, NIC without carrier; the disk stays. */
export async function powerOff(host: HostPlan): Promise<void> {
  await killNetns(host.netns);
  await removeHostCgroups(host.name);
  if (existsSync(`/run/netns/${host.netns}`)) await nicDown(host);
}

/**
 * Runs `cmd` with /bin/sh as root inside the host (all its namespaces, its root), without SSH.
 * For tests, faults and the k3s twin's installer.
 */
export async function hostExec(host: HostPlan, cmd: string, opts: RunOptions = {}): Promise<RunResult> {
  const pid = hostInitPid(host.netns);
  if (pid === undefined) throw new LabUsage(`${host.name} is not running`);
  // The command travels in the environment, not on the command line, so a `pkill -f <pattern>` in it
  // cannot match (and kill) the very shell that runs it.
  const env = [
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'HOME=/root',
    'LANG=C.UTF-8',
    // what every process in a host has (see rootfs-customize.ts), so a skewed clock behaves the same here
    'FAKETIME_DONT_FAKE_MONOTONIC=1',
    'NO_FAKE_STAT=1',
    `FAKETIME_SHARED=${FAKETIME_SHARED}`,
    `LAB_EXEC=${cmd}`,
  ];
  const shell = 'c=$LAB_EXEC; unset LAB_EXEC; eval "$c"';
  return run('nsenter', ['-t', String(pid), '-a', '-r', '-w', '/usr/bin/env', '-i', ...env, '/bin/sh', '-c', shell], opts);
}

// The Debian bookworm root filesystem every host's overlay sits on. Built once with debootstrap into a
// temporary folder and renamed into place, so a killed build never leaves a half cache; reused by every
// later `lab up` (the folder name is a hash of everything that goes into it).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CACHE_DIR } from './config.ts';
import { LabUnavailable } from './errors.ts';
import { unmountUnder } from './mounts.ts';
import { alive, killPids, processesUsing } from './processes.ts';
import { machineMirror } from './mirror.ts';
import { customizeScript } from './rootfs-customize.ts';
import { run } from './run.ts';

const SUITE = 'bookworm';
/** Bump when the way the root is made changes in a way the script text does not show. */
const ROOTFS_VERSION = '2';

/**
 * Added to debootstrap's default variant, which is Debian's required and important packages (what a stock
 * Debian 12 server has, with systemd, iproute2, nftables, procps, kmod, iputils-ping; apt brings libstdc++6,
 * which the machine's Node.js links).
 */
const ROOTFS_PACKAGES = [
  // A server reached over SSH, as the installer's "SSH server" task makes it; libpam-systemd (and the dbus
  // it depends on) is openssh-server's Recommends, which the installer and apt install.
  'openssh-server',
  'libpam-systemd',
  'dbus',
  'sudo',
  // For the twins and faults only, nothing on the PATH: libfaketime is a library (clock-skew); arping,
  // openssl and kubectl are moved off the PATH into the twins' folder (rootfs-customize.ts MOVED_OFF_PATH).
  // kubectl is Debian's 1.20, whatever kubectl the machine has: the k3s twin's API is shaped for it.
  'libfaketime',
  'iputils-arping',
  'openssl',
  'kubernetes-client',
];

function rootfsHash(): string {
  return createHash('sha256')
    .update([ROOTFS_VERSION, SUITE, ROOTFS_PACKAGES.join(','), customizeScript()].join('\n'))
    .digest('hex')
    .slice(0, 16);
}

export const rootfsDir = (cacheDir = CACHE_DIR) => join(cacheDir, `rootfs-${rootfsHash()}`);

/** Returns the cached root, building it first if needed. */
export async function ensureRootfs(log: (line: string) => void, cacheDir = CACHE_DIR): Promise<string> {
  const dir = rootfsDir(cacheDir);
  if (existsSync(join(dir, '.complete'))) return dir;
  mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
  // Two lab instances coming up at once (the test suite runs two) build it once: the second waits for the
  // first, then finds it complete. Without this the second's rename replaced a root the first lab runs on.
  const release = await buildLock(`${dir}.lock`, log);
  try {
    if (existsSync(join(dir, '.complete'))) return dir;
    return await build(dir, cacheDir, log);
  } finally {
    release();
  }
}

/** A lock folder holding its builder's pid; one left by a builder that died is taken over. */
async function buildLock(lock: string, log: (line: string) => void): Promise<() => void> {
  let said = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return () => rmSync(lock, { recursive: true, force: true });
    } catch {
      let pid = NaN;
      try {
        pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
      } catch {
        // being written or removed: look again
      }
      if (Number.isInteger(pid) && pid > 0 && !alive(pid)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (!said) log('another lab instance is building the root filesystem: waiting for it');
      said = true;
      await new Promise((res) => setTimeout(res, 1000));
    }
  }
}

async function build(dir: string, cacheDir: string, log: (line: string) => void): Promise<string> {
  await removeStaleBuilds(cacheDir);
  const mirror = machineMirror(SUITE);
  if (!mirror) throw new LabUnavailable(`no apt source for Debian ${SUITE} on this machine (set BOOTSTRAP_LAB_MIRROR)`);
  if (!existsSync('/usr/sbin/debootstrap')) throw new LabUnavailable('debootstrap is not installed (apt-get install debootstrap)');
  const tmp = `${dir}.build-${process.pid}`;
  log(`building the ${SUITE} root filesystem (once; cached in ${dir})`);
  await run('debootstrap', [`--include=${ROOTFS_PACKAGES.join(',')}`, SUITE, tmp, mirror]);
  await run('chroot', [tmp, '/bin/sh', '-c', customizeScript()]);
  writeFileSync(join(tmp, '.complete'), `${new Date().toISOString()}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/** Half builds of a killed `lab up` (debootstrap may have left proc/sys mounted in them). */
export async function removeStaleBuilds(cacheDir = CACHE_DIR): Promise<void> {
  let entries: string[];
  try {
    entries = readdirSync(cacheDir);
  } catch {
    return;
  }
  // A build whose builder still runs belongs to another lab instance building right now: leave it.
  const builderAlive = (e: string) => {
    const pid = Number(e.match(/\.build-(\d+)$/)?.[1]);
    return pid > 0 && alive(pid);
  };
  for (const e of entries.filter((e) => e.includes('.build-') && !builderAlive(e))) {
    const p = join(cacheDir, e);
    killPids(processesUsing(p));
    await unmountUnder(p);
    rmSync(p, { recursive: true, force: true });
  }
}

// Each host gets its own cgroup in every hierarchy of the machine and boots in a cgroup namespace
// rooted there, so its systemd sees "/" and manages its own tree without touching the machine's.
// Nothing is faked: a host sees the same cgroup layout the machine has (here a v1/v2 hybrid).
import { type Dirent, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CGROUP_DIR } from './config.ts';
import { killPids } from './processes.ts';
import { sleep } from './run.ts';

export type CgroupLayout = 'unified' | 'hybrid' | 'legacy';

/** Mount points of the machine's cgroup hierarchies (v1 and v2). */
export function cgroupMounts(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): { point: string; type: string }[] {
  const out: { point: string; type: string }[] = [];
  for (const line of mountinfo.split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post) continue;
    const type = post.split(' ')[0];
    if (type === 'cgroup' || type === 'cgroup2') out.push({ point: pre.split(' ')[4]!, type });
  }
  return out;
}

export function cgroupLayout(mounts = cgroupMounts()): CgroupLayout {
  if (mounts.some((m) => m.type === 'cgroup2' && m.point === '/sys/fs/cgroup')) return 'unified';
  return mounts.some((m) => m.type === 'cgroup2') ? 'hybrid' : 'legacy';
}

const hostDirs = (host: string) => cgroupMounts().map((m) => join(m.point, CGROUP_DIR, host));

/** Creates the host's cgroups; returns the cgroup.procs files the boot script joins. */
export function prepareHostCgroups(host: string): string[] {
  const procs: string[] = [];
  for (const m of cgroupMounts()) {
    const parent = join(m.point, CGROUP_DIR);
    const dir = join(parent, host);
    mkdirSync(dir, { recursive: true });
    // cpuset v1: a new cgroup has no CPUs until told which; give it its parent's.
    for (const d of [parent, dir]) {
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        const file = join(d, f);
        if (existsSync(file) && readFileSync(file, 'utf8').trim() === '') {
          writeFileSync(file, readFileSync(join(d, '..', f), 'utf8'));
        }
      }
    }
    if (m.type === 'cgroup2' && m.point === '/sys/fs/cgroup') delegateControllers(parent);
    procs.push(join(dir, 'cgroup.procs'));
  }
  return procs;
}

/** Unified machine: the host's systemd needs the controllers enabled below the lab folder. */
function delegateControllers(parent: string): void {
  try {
    const ctrls = readFileSync(join(parent, 'cgroup.controllers'), 'utf8').trim().split(/\s+/).filter(Boolean);
    if (ctrls.length) writeFileSync(join(parent, 'cgroup.subtree_control'), ctrls.map((c) => `+${c}`).join(' '));
  } catch {
    /* best effort: the host then runs without resource control */
  }
}

function subdirsDeepestFirst(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) walk(join(d, e.name));
    out.push(d);
  };
  walk(dir);
  return out;
}

function procsIn(dir: string): number[] {
  const pids: number[] = [];
  for (const d of subdirsDeepestFirst(dir)) {
    try {
      pids.push(...readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number));
    } catch {
      /* gone */
    }
  }
  return pids;
}

/** Kills whatever is still in a host's cgroups and removes them (deepest first). */
export async function removeHostCgroups(host?: string): Promise<void> {
  const roots = host ? hostDirs(host) : cgroupMounts().map((m) => join(m.point, CGROUP_DIR));
  for (let attempt = 0; attempt < 40; attempt++) {
    let left = 0;
    for (const root of roots) {
      if (!existsSync(root)) continue;
      killPids(procsIn(root));
      for (const d of subdirsDeepestFirst(root)) {
        try {
          rmdirSync(d);
        } catch {
          left++;
        }
      }
    }
    if (left === 0) return;
    await sleep(50);
  }
}

/** The value of `key` in a cgroup stat file (`<key> <value>` lines), or undefined when unreadable or absent. */
function statValue(file: string, key: string): number | undefined {
  try {
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${key} `));
    return line ? Number(line.split(' ')[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The mount of cgroup v1's `controller` hierarchy (its folder name lists the controllers it holds). */
const v1Mount = (mounts: { point: string; type: string }[], controller: string) =>
  mounts.find((m) => m.type === 'cgroup' && m.point.split('/').pop()!.split(',').includes(controller));

/**
 * The anonymous memory (process heaps and stacks, not the page cache of the host's files) of everything in a
 * host's cgroup, in bytes: `total_rss` of cgroup v1's memory controller, or `anon` of v2's when the machine
 * mounts the controller there. Undefined when neither is readable (the host is down).
 */
export function hostMemoryBytes(host: string, mounts = cgroupMounts()): number | undefined {
  const v1 = v1Mount(mounts, 'memory');
  if (v1) return statValue(join(v1.point, CGROUP_DIR, host, 'memory.stat'), 'total_rss');
  const v2 = mounts.find((m) => m.type === 'cgroup2');
  return v2 ? statValue(join(v2.point, CGROUP_DIR, host, 'memory.stat'), 'anon') : undefined;
}

/**
 * The CPU time everything in a host's cgroup has used since the host booted, in milliseconds (its processes
 * and their children, the ones that ended too): `cpuacct.usage` of cgroup v1's cpuacct controller, or
 * `usage_usec` in v2's `cpu.stat`. Undefined when unreadable (the host is down).
 */
export function hostCpuMs(host: string, mounts = cgroupMounts()): number | undefined {
  const v1 = v1Mount(mounts, 'cpuacct');
  if (v1) {
    try {
      return Number(readFileSync(join(v1.point, CGROUP_DIR, host, 'cpuacct.usage'), 'utf8')) / 1e6;
    } catch {
      return undefined;
    }
  }
  const v2 = mounts.find((m) => m.type === 'cgroup2');
  const usec = v2 ? statValue(join(v2.point, CGROUP_DIR, host, 'cpu.stat'), 'usage_usec') : undefined;
  return usec === undefined ? undefined : usec / 1000;
}

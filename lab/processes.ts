// Finding and killing a host's processes. Every process of a host lives in its network namespace, so
// the namespace is the handle: this works also for the leftovers of a killed `lab up`.
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { sleep } from './run.ts';

function nsInode(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

/** PIDs (machine view) of every process in network namespace `netns`. */
/** A process of this machine with that pid runs (signal 0 tests it without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function netnsPids(netns: string): number[] {
  const ino = nsInode(`/run/netns/${netns}`);
  if (ino === undefined) return [];
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    if (nsInode(`/proc/${e}/ns/net`) === ino) pids.push(Number(e));
  }
  return pids;
}

function nsPidChain(pid: number): number[] | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^NSpid:\s+(.+)$/m)?.[1];
    return line?.trim().split(/\s+/).map(Number);
  } catch {
    return undefined;
  }
}

function parentPid(pid: number): number | undefined {
  try {
    return Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^PPid:\s+(\d+)$/m)?.[1]);
  } catch {
    return undefined;
  }
}

/** The host's systemd (PID 1 in its PID namespace, whose parent is outside it), if the host runs. */
export function hostInitPid(netns: string): number | undefined {
  for (const pid of netnsPids(netns)) {
    const chain = nsPidChain(pid);
    if (!chain || chain.length !== 2 || chain[1] !== 1) continue;
    const ppid = parentPid(pid);
    const parentChain = ppid ? nsPidChain(ppid) : undefined;
    if (parentChain && parentChain.length === 1) return pid;
  }
  return undefined;
}

/** SIGKILL every process in the namespace and wait until they are gone (power off). */
export async function killNetns(netns: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const pids = netnsPids(netns);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    if (Date.now() > end) throw new Error(`${netns}: processes ${pids.join(' ')} survive SIGKILL`);
    await sleep(50);
  }
}

export function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

/** Processes chrooted into `dir` or naming it on their command line (a killed build's debootstrap, dpkg). */
export function processesUsing(dir: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const root = readlinkSync(`/proc/${e}/root`);
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      if (root === dir || root.startsWith(`${dir}/`) || cmd.includes(dir)) pids.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return pids;
}

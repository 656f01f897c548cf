// The lab as a TypeScript API, for tests, the demo and the k3s twin. The CLI (cli.ts) is a thin layer
// over the same functions.
import { platform } from 'node:os';
import { paths, type HostPlan } from './config.ts';
import { LabUnavailable } from './errors.ts';
import { withLabLock } from './lock.ts';
import { fault as injectFault } from './faults.ts';
import { hostExec as execInHost } from './host.ts';
import { down as labDown, status as labStatus, up as labUp, wipe as labWipe, type UpOptions, type UpResult } from './lifecycle.ts';
import { proxyThroughBastion, sshArgs, sshRun } from './operator.ts';
import type { RunOptions, RunResult } from './run.ts';
import { twinRelease } from './twin/releases.ts';
import { findHost, labBastion, labHosts } from './state.ts';
import { releaseArtifacts } from './twin/build.ts';

export { paths, proxyThroughBastion, sshArgs };
export type { HostPlan, RunResult, UpOptions, UpResult };
export { gitServerStatus } from './gitops-server.ts';
export { DEFAULT_TWIN_RELEASE } from './twin/releases.ts';

/**
 * The artifacts folder (its `k3s` claims `version`) `lab up` built for a twin release, for an inventory's
 * k3s.artifacts: the lab's own folder for the default release, `releases/<version>` in it for the others.
 * Throws for a version the twin has no release of.
 */
export function twinReleaseArtifacts(version: string): string {
  twinRelease(version);
  return releaseArtifacts(paths.artifacts, version);
}

/** Throws LabUnavailable (one line) unless this is Linux and we are root. */
export function requireLab(): void {
  if (platform() !== 'linux') throw new LabUnavailable(`the lab needs Linux (this is ${platform()})`);
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) throw new LabUnavailable('the lab needs root (run it with sudo)');
}

export async function up(opts: UpOptions = {}): Promise<UpResult> {
  requireLab();
  return withLabLock(() => labUp(opts));
}

export async function down(): Promise<void> {
  requireLab();
  return withLabLock(() => labDown());
}

export async function status() {
  requireLab();
  return labStatus();
}

/** The cluster's hosts (servers, agents), not the bastion. */
export function hosts(): HostPlan[] {
  return labHosts();
}

/** The jump host of a lab brought up with `bastion: true` (`lab up --bastion`), else undefined. */
export function bastion(): HostPlan | undefined {
  return labBastion();
}

export function host(name: string): HostPlan {
  return findHost(name);
}

export async function fault(hostName: string, kind: string, arg?: string): Promise<void> {
  requireLab();
  const h = findHost(hostName);
  return kind === 'wipe' ? withLabLock(() => injectFault(h, kind, arg)) : injectFault(h, kind, arg);
}

/** Boots the host from a fresh disk: a reinstalled machine (new host key in known_hosts, same address). */
export async function wipe(hostName: string): Promise<void> {
  requireLab();
  return withLabLock(() => labWipe(findHost(hostName)));
}

/** Runs a shell command as root inside a host's namespaces, without SSH. */
export async function hostExec(hostName: string, cmd: string, opts: RunOptions = {}): Promise<RunResult> {
  requireLab();
  return execInHost(findHost(hostName), cmd, opts);
}

/** Runs a command on a host over SSH as ops (strict host keys, the lab key). */
export async function ssh(hostName: string, cmd: string, opts: RunOptions = {}): Promise<RunResult> {
  return sshRun(findHost(hostName), cmd, opts);
}

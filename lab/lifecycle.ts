// lab up / down / status, and powering single hosts on and off (with or without a fresh disk).
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { cgroupLayout, removeHostCgroups } from './cgroups.ts';
import { paths, planBastion, planHosts, type HostPlan, type LabShape } from './config.ts';
import { freshDisk, hostExec, hostPublicKey, isRunning, powerOff, powerOn } from './host.ts';
import { renderInventory } from './inventory.ts';
import { unmountUnder } from './mounts.ts';
import { cableConnected, ensureBridge, hostNic, labLinks, labNetnses, netnsExists, plannedNic, plugBastion, plugHost } from './network.ts';
import { ensureOperatorKey, waitForSsh, writeKnownHosts } from './operator.ts';
import { writeFluxInstall } from './flux-install.ts';
import { writeImageArchives } from './image-archives.ts';
import { removeServedRepo, startGitServer } from './gitops-server.ts';
import { chartMissing, placeChart } from './cilium-chart.ts';
import { prepareGitopsCheckout } from './gitops-inventory.ts';
import { installTwin } from './twin/build.ts';
import { killNetns } from './processes.ts';
import { ensureKernelLimits } from './kernel-limits.ts';
import { ensureRootfs, removeStaleBuilds, rootfsDir } from './rootfs.ts';
import { run } from './run.ts';
import { clearState, readState, writeState, type LabState } from './state.ts';

export type Log = (line: string) => void;

export interface UpOptions extends Partial<LabShape> {
  /** Where to write the inventory (default inventory/lab.yaml in the repository). */
  inventory?: string;
  log?: Log;
}

export interface UpResult {
  inventory: string;
  hosts: HostPlan[];
  /** True when a running lab of the same shape was reused. */
  reused: boolean;
}

/** Every host the lab boots: the cluster's, then the bastion in the bastion shape. */
function allHosts(state: LabShape): HostPlan[] {
  return [...planHosts(state), ...(state.bastion ? [planBastion()] : [])];
}

function refreshKnownHosts(hosts: HostPlan[]): void {
  writeKnownHosts(hosts.filter((h) => existsSync(`${paths.hostsDir}/${h.name}/seed`)).map((h) => ({ address: h.address, publicKey: hostPublicKey(h) })));
}

function writeInventory(file: string, hosts: HostPlan[], bastion: HostPlan | undefined): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, renderInventory(hosts, paths, cgroupLayout(), bastion));
}

/** Brings the lab up. A lab of the same shape that is fully up is reused (quick); anything else is taken down first. */
export async function up(opts: UpOptions = {}): Promise<UpResult> {
  const log = opts.log ?? (() => {});
  const shape = { servers: opts.servers ?? 3, agents: opts.agents ?? 0, bastion: opts.bastion ?? false };
  const hosts = planHosts(shape);
  const bastion = shape.bastion ? planBastion() : undefined;
  const inventory = opts.inventory ?? paths.inventory;
  const current = readState();
  // Hosts booted from an older root filesystem (its package list changed since) are not reused: they lack
  // what the lab now installs (git for the Flux source-controller twin, for example).
  if (current && sameShape(current, shape) && current.rootfs === rootfsDir() && (await healthy(allHosts(shape)))) {
    writeInventory(inventory, hosts, bastion);
    writeState({ ...current, inventory });
    await provision(log);
    return { inventory, hosts, reused: true };
  }
  await down({ log, keepInventory: true });
  const rootfs = await ensureRootfs(log);
  const operatorPub = await ensureOperatorKey();
  // The bastion shape: the machine keeps no address on the hosts' segment; the bastion's leg there is .1.
  await ensureBridge({ operatorAddress: !bastion });
  writeState({ ...shape, rootfs, inventory });
  const booted = allHosts(shape);
  log(`booting ${booted.map((h) => h.name).join(', ')}`);
  await Promise.all(
    booted.map(async (h) => {
      await (h.role === 'bastion' ? plugBastion(h) : plugHost(h));
      await freshDisk(h, hosts, operatorPub);
    }),
  );
  refreshKnownHosts(booted);
  ensureKernelLimits(booted.length);
  await Promise.all(booted.map((h) => powerOn(h, rootfs)));
  // Every host boots at once on the machine's cores: 30 hosts took about 50 s to answer here, 4 a few seconds.
  const sshBudgetMs = 60_000 + 2_000 * booted.length;
  await Promise.all(
    booted.map(async (h) => {
      if (!(await waitForSsh(h, sshBudgetMs))) throw new Error(`${h.name}: sshd did not answer on ${h.address}:22 within ${sshBudgetMs / 1000} s`);
      await bootFinished(h);
    }),
  );
  writeInventory(inventory, hosts, bastion);
  await provision(log);
  return { inventory, hosts, reused: false };
}

/**
 * Everything the inventory names besides the hosts, so `bootstrap lab` builds every phase: the k3s twin,
 * the Cilium chart, the Flux install, the image archives (after the chart: they hold its images) and the
 * GitOps repository published on the lab's git server.
 */
async function provision(log: Log): Promise<void> {
  await installTwin(paths.artifacts); // the k3s twin as the artifacts folder's `k3s`, rebuilt from source
  if (!placeChart(paths)) log(`not ready for the cilium phase: ${chartMissing(paths)}\nthen run lab up again (its image archive names the chart's images).`);
  writeFluxInstall(paths.artifacts);
  writeImageArchives(paths.artifacts);
  await startGitServer(); // no-op when it answers
  prepareGitopsCheckout(paths.gitopsCheckout);
}

function sameShape(a: LabState, b: Required<LabShape>): boolean {
  return a.servers === b.servers && a.agents === b.agents && (a.bastion ?? false) === b.bastion;
}

async function healthy(hosts: HostPlan[]): Promise<boolean> {
  for (const h of hosts) {
    if (!isRunning(h) || !(await cableConnected(h))) return false;
    if ((await hostNic(h).catch(() => '')) !== plannedNic(h)) return false;
  }
  return (await Promise.all(hosts.map((h) => waitForSsh(h, 5000)))).every(Boolean);
}

/** Takes everything down: processes, namespaces, links, mounts, cgroups, host disks. Works after a killed `lab up`. */
export async function down(opts: { log?: Log; keepInventory?: boolean } = {}): Promise<void> {
  const state = readState();
  const netnses = labNetnses();
  await Promise.all(netnses.map((ns) => killNetns(ns)));
  await removeHostCgroups();
  for (const ns of netnses) await run('ip', ['netns', 'del', ns], { allowFail: true });
  for (const link of await labLinks()) await run('ip', ['link', 'del', link], { allowFail: true });
  await unmountUnder(paths.hostsDir);
  await removeStaleBuilds();
  await detachLoops(paths.hostsDir);
  rmSync(paths.hostsDir, { recursive: true, force: true });
  rmSync(paths.knownHosts, { force: true });
  // The git server's processes and NIC went with the lab's namespaces and links above.
  removeServedRepo();
  rmSync(paths.gitopsCheckout, { recursive: true, force: true });
  clearState();
  if (!opts.keepInventory) {
    rmSync(paths.inventory, { force: true });
    if (state?.inventory && state.inventory !== paths.inventory) rmSync(state.inventory, { force: true });
  }
}

/** Loop devices still backed by a file of a host (normally auto-cleared when the host's mount namespace ends). */
async function detachLoops(under: string): Promise<void> {
  const out = (await run('losetup', ['-n', '-O', 'NAME,BACK-FILE', '-l'], { allowFail: true })).stdout;
  for (const line of out.split('\n')) {
    const [dev, file] = line.trim().split(/\s+/);
    if (dev && file?.startsWith(`${under}/`)) await run('losetup', ['-d', dev], { allowFail: true });
  }
}

export interface HostStatus {
  name: string;
  role: string;
  address: string;
  running: boolean;
  /** `systemctl is-system-running` inside the host, or "-" when it is off. */
  systemd: string;
  nic: string;
  cable: 'connected' | 'partitioned';
}

export async function status(): Promise<HostStatus[]> {
  const state = readState();
  if (!state) return [];
  return Promise.all(
    allHosts(state).map(async (h) => {
      const running = isRunning(h);
      const systemd = running ? (await hostExec(h, 'systemctl is-system-running', { allowFail: true })).stdout.trim() || 'unknown' : '-';
      const nic = netnsExists(h.netns) ? await hostNic(h).catch(() => '?') : '?';
      const cable = (await cableConnected(h)) ? ('connected' as const) : ('partitioned' as const);
      return { name: h.name, role: h.role, address: h.address, running, systemd, nic, cable };
    }),
  );
}

/** Power on a host that is off (same disk); waits for sshd. */
export async function start(host: HostPlan): Promise<void> {
  const state = readState();
  if (!state) throw new Error('the lab is not up');
  await powerOn(host, state.rootfs);
  if (!(await waitForSsh(host))) throw new Error(`${host.name}: sshd did not answer within 60 s`);
  await bootFinished(host);
}

/** Waits until systemd has finished booting (running or degraded), so callers see a settled host. */
async function bootFinished(host: HostPlan): Promise<void> {
  await hostExec(host, 'systemctl is-system-running --wait', { allowFail: true, timeoutMs: 60_000 });
}

export async function stop(host: HostPlan): Promise<void> {
  await powerOff(host);
}

/** A reinstalled machine: power off, fresh disk (new host key in known_hosts, new machine-id), same address, power on. */
export async function wipe(host: HostPlan): Promise<void> {
  const state = readState();
  if (!state) throw new Error('the lab is not up');
  const hosts = planHosts(state);
  await powerOff(host);
  await freshDisk(host, hosts, await ensureOperatorKey());
  refreshKnownHosts(allHosts(state));
  await start(host);
}

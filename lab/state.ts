// lab.json: the shape of the lab that is up (which hosts, which root filesystem).
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { paths, planBastion, planHosts, type HostPlan, type LabShape } from './config.ts';
import { LabUsage } from './errors.ts';

export interface LabState extends LabShape {
  rootfs: string;
  inventory: string;
}

export function readState(): LabState | undefined {
  if (!existsSync(paths.labFile)) return undefined;
  return JSON.parse(readFileSync(paths.labFile, 'utf8')) as LabState;
}

export function writeState(state: LabState): void {
  writeFileSync(paths.labFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

export function clearState(): void {
  rmSync(paths.labFile, { force: true });
}

/** The cluster's hosts (servers, agents): what the inventory lists. */
export function labHosts(): HostPlan[] {
  const s = readState();
  return s ? planHosts(s) : [];
}

/** The bastion of a lab brought up with `--bastion`, else undefined. */
export function labBastion(s = readState()): HostPlan | undefined {
  return s?.bastion ? planBastion() : undefined;
}

/** A cluster host or the bastion, by name or address. */
export function findHost(name: string): HostPlan {
  const s = readState();
  if (!s) throw new LabUsage('the lab is not up (npm run lab -- up)');
  const bastion = labBastion(s);
  const hosts = [...planHosts(s), ...(bastion ? [bastion] : [])];
  const h = hosts.find((x) => x.name === name || x.address === name);
  if (!h) throw new LabUsage(`no lab host ${name} (hosts: ${hosts.map((x) => x.name).join(', ')})`);
  return h;
}

// What the lab is made of: where it keeps its state, its network, and the names and addresses of its
// hosts. Pure data and pure functions; nothing here touches the machine.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Root-only state (overlays, keys, known_hosts, artifacts). Outside the repository on purpose. */
export const STATE_DIR = process.env.BOOTSTRAP_LAB_STATE ?? '/var/lib/bootstrap-lab';
/** The debootstrap root filesystem cache, shared by every `lab up` on this machine. */
export const CACHE_DIR = process.env.BOOTSTRAP_LAB_CACHE ?? '/var/cache/bootstrap-lab';
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface LabPaths {
  stateDir: string;
  cacheDir: string;
  /** Operator private key (ed25519, no passphrase), mode 0600. */
  key: string;
  knownHosts: string;
  /** Where the operator keeps the k3s artifacts the engine uploads. */
  artifacts: string;
  hostsDir: string;
  /** The shape of the running lab (hosts, addresses). */
  labFile: string;
  /** Default inventory written by `lab up`. */
  inventory: string;
}

export const paths: LabPaths = {
  stateDir: STATE_DIR,
  cacheDir: CACHE_DIR,
  key: join(STATE_DIR, 'id_ed25519'),
  knownHosts: join(STATE_DIR, 'known_hosts'),
  artifacts: join(STATE_DIR, 'artifacts'),
  hostsDir: join(STATE_DIR, 'hosts'),
  labFile: join(STATE_DIR, 'lab.json'),
  inventory: join(REPO_ROOT, 'inventory', 'lab.yaml'),
};

export const NET = {
  subnet: '10.77.0.0/24',
  prefix: 24,
  base: '10.77.0.',
  operator: '10.77.0.1',
  /** Reserved for the control-plane VIP: never given to a host. */
  vip: '10.77.0.9',
  firstHost: 10,
  bridge: 'blab0',
} as const;

/** Every namespace and link the lab makes starts with this, so `lab down` can find leftovers. */
export const LINK_PREFIX = 'blab-';
/** Per-host cgroup folder in each of the machine's hierarchies. */
export const CGROUP_DIR = 'bootstrap-lab';
export const OPS_USER = 'ops';
/** Size of the filesystem mounted at /var/lib/rancher in every host (sparse file, so cheap). */
export const RANCHER_DISK_MB = 2048;

export type Role = 'server' | 'agent';

export interface HostPlan {
  name: string;
  role: Role;
  address: string;
  /** Network namespace name (ip netns). */
  netns: string;
  /** Machine-side end of the host's veth, enslaved to the bridge. */
  veth: string;
}

export interface LabShape {
  servers: number;
  agents: number;
}

/** Names and addresses: servers k3s-lab-1..N from .10, agents k3s-lab-agent-1..M after them. */
export function planHosts({ servers, agents }: LabShape): HostPlan[] {
  if (!Number.isInteger(servers) || servers < 1) throw new RangeError('servers must be a whole number ≥ 1');
  if (!Number.isInteger(agents) || agents < 0) throw new RangeError('agents must be a whole number ≥ 0');
  if (NET.firstHost + servers + agents > 255) throw new RangeError('too many hosts for a /24');
  const hosts: HostPlan[] = [];
  for (let i = 0; i < servers + agents; i++) {
    const role: Role = i < servers ? 'server' : 'agent';
    const n = role === 'server' ? i + 1 : i - servers + 1;
    const name = role === 'server' ? `k3s-lab-${n}` : `k3s-lab-agent-${n}`;
    const short = role === 'server' ? `s${n}` : `a${n}`;
    hosts.push({ name, role, address: `${NET.base}${NET.firstHost + i}`, netns: `${LINK_PREFIX}${short}`, veth: `${LINK_PREFIX}${short}` });
  }
  return hosts;
}

/** A NIC name Linux accepts (IFNAMSIZ 16 with the NUL; no slash, no blank). */
export function isValidNicName(name: string): boolean {
  return /^[A-Za-z0-9_.-]{1,15}$/.test(name) && name !== '.' && name !== '..';
}

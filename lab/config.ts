// What the lab is made of: where it keeps its state, its network, and the names and addresses of its
// hosts. Pure data and pure functions; nothing here touches the machine.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Which lab on this machine. The default lab (0) is the one operators and the shared test lab use; a
 * number 1..99 in BOOTSTRAP_LAB_INSTANCE gives a second, separate lab (own state folder, subnet
 * 10.77.<n>.0/24, bridge, namespaces and cgroups), so a test can take a lab up and down without
 * disturbing the shared one. The root filesystem cache is shared.
 */
export function labInstance(env = process.env.BOOTSTRAP_LAB_INSTANCE): number {
  const n = env === undefined || env === '' ? 0 : Number(env);
  if (!Number.isInteger(n) || n < 0 || n > 99) throw new RangeError(`BOOTSTRAP_LAB_INSTANCE is 0..99, not ${env}`);
  return n;
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

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
  /** The lab inventory's GitOps checkout (`gitops.checkout`): the fixture repository as `lab up` published it. */
  gitopsCheckout: string;
}

export interface LabConfig {
  instance: number;
  paths: LabPaths;
  /**
   * The hosts' segment. `operator` is .1, the hosts' default gateway: the operator's machine in the plain
   * shape, the bastion's leg on this segment in the bastion shape (where the machine has no address here).
   */
  net: { subnet: string; prefix: number; base: string; operator: string; vip: string; firstHost: number; bridge: string };
  /**
   * The bastion shape's operator segment: the machine at .1, the bastion at .2, on one veth pair (the
   * machine's end is `link`). 10.77.(100+n): no instance's hosts' segment (n is at most 99) can be it.
   */
  outside: { subnet: string; operator: string; bastion: string; link: string };
  /** Every namespace and machine-side link of the lab starts with this, so `lab down` can find leftovers. */
  linkPrefix: string;
  /** Per-host cgroup folder in each of the machine's hierarchies. */
  cgroupDir: string;
}

export function labConfig(instance = labInstance()): LabConfig {
  const suffix = instance === 0 ? '' : `-${instance}`;
  const stateDir = process.env.BOOTSTRAP_LAB_STATE ?? `/var/lib/bootstrap-lab${suffix}`;
  const cacheDir = process.env.BOOTSTRAP_LAB_CACHE ?? '/var/cache/bootstrap-lab';
  const base = `10.77.${instance}.`;
  return {
    instance,
    paths: {
      stateDir,
      cacheDir,
      key: join(stateDir, 'id_ed25519'),
      knownHosts: join(stateDir, 'known_hosts'),
      artifacts: join(stateDir, 'artifacts'),
      hostsDir: join(stateDir, 'hosts'),
      labFile: join(stateDir, 'lab.json'),
      inventory: instance === 0 ? join(REPO_ROOT, 'inventory', 'lab.yaml') : join(stateDir, 'lab.yaml'),
      gitopsCheckout: join(stateDir, 'gitops'),
    },
    net: {
      subnet: `${base}0/24`,
      prefix: 24,
      base,
      operator: `${base}1`,
      // Reserved for the control-plane VIP: never given to a host.
      vip: `${base}9`,
      firstHost: 10,
      bridge: instance === 0 ? 'blab0' : `bl${instance}br`,
    },
    outside: {
      subnet: `10.77.${100 + instance}.0/24`,
      operator: `10.77.${100 + instance}.1`,
      bastion: `10.77.${100 + instance}.2`,
      link: `${instance === 0 ? 'blab-' : `bl${instance}-`}out`,
    },
    linkPrefix: instance === 0 ? 'blab-' : `bl${instance}-`,
    cgroupDir: `bootstrap-lab${suffix}`,
  };
}

const config = labConfig();
/** The debootstrap root filesystem cache, shared by every `lab up` on this machine. */
export const CACHE_DIR = config.paths.cacheDir;
export const paths: LabPaths = config.paths;
export const NET = config.net;
export const OUTSIDE = config.outside;
export const LINK_PREFIX = config.linkPrefix;
export const CGROUP_DIR = config.cgroupDir;
export const OPS_USER = 'ops';
/** Size of the filesystem mounted at /var/lib/rancher in every host (sparse file, so cheap). */
export const RANCHER_DISK_MB = 8192;

/** A cluster node (server, agent), or the bastion shape's jump host (never in the inventory's node lists). */
type Role = 'server' | 'agent' | 'bastion';

export interface HostPlan {
  name: string;
  role: Role;
  address: string;
  /** Network namespace name (ip netns). */
  netns: string;
  /** Machine-side end of the host's veth, enslaved to the bridge (the bastion: of its leg on the hosts' segment). */
  veth: string;
}

export interface LabShape {
  servers: number;
  agents: number;
  /**
   * The hosts on a segment the machine has no address or route on, reached only through one bastion host
   * with a leg on each segment (and no IP forwarding): `lab up --bastion`.
   */
  bastion?: boolean;
}

const BASTION_NAME = 'lab-bastion';

/** The bastion: its address is its operator-side one (what the operator dials); its other leg is NET.operator. */
export function planBastion(): HostPlan {
  return { name: BASTION_NAME, role: 'bastion', address: OUTSIDE.bastion, netns: `${LINK_PREFIX}bastion`, veth: `${LINK_PREFIX}bc` };
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

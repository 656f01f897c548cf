// The lab's wire: one bridge with the operator's address, one network namespace and veth pair per
// host. The host's end is its NIC inside its namespace (servers eth0, agents enp1s0: machines of another
// make, so nothing may assume every node's NIC has the servers' name); the machine's end is enslaved to
// the bridge.
import { existsSync, readdirSync } from 'node:fs';
import { LINK_PREFIX, NET, OUTSIDE, type HostPlan } from './config.ts';
import { run } from './run.ts';

const ip = (...args: string[]) => run('ip', args);
const ipMaybe = (...args: string[]) => run('ip', args, { allowFail: true });

/**
 * The hosts' segment. With `operatorAddress` (the plain shape) the machine is on it at .1; without (the
 * bastion shape) the bridge carries no address of the machine's, IPv4 or IPv6 link-local, so the machine
 * has no route onto the segment and only the bastion's leg there reaches the hosts.
 */
export async function ensureBridge({ operatorAddress = true } = {}): Promise<void> {
  if ((await ipMaybe('link', 'show', NET.bridge)).code !== 0) {
    await ip('link', 'add', NET.bridge, 'type', 'bridge');
  }
  if (operatorAddress) {
    await ipMaybe('addr', 'add', `${NET.operator}/${NET.prefix}`, 'dev', NET.bridge);
  } else {
    await run('sysctl', ['-q', '-w', `net.ipv6.conf.${NET.bridge}.disable_ipv6=1`], { allowFail: true });
    await ip('addr', 'flush', 'dev', NET.bridge);
  }
  await ip('link', 'set', NET.bridge, 'up');
}

const SERVER_NIC = 'eth0';
const AGENT_NIC = 'enp1s0';
/** The bastion's two legs: toward the operator's machine, and on the hosts' segment. */
const BASTION_OUTSIDE_NIC = 'eth0';
const BASTION_INSIDE_NIC = 'eth1';

/** The NIC name a host is made with (and healed back to after rename-nic); the bastion's operator-side leg. */
export function plannedNic(host: Pick<HostPlan, 'role'>): string {
  return host.role === 'agent' ? AGENT_NIC : host.role === 'bastion' ? BASTION_OUTSIDE_NIC : SERVER_NIC;
}

/**
 * The bastion's namespace and its two legs: one veth pair to the machine (the operator's segment, no
 * bridge: nobody else is on it) and one onto the hosts' bridge at .1, the hosts' gateway. IP forwarding is
 * off in its namespace, so a packet from either side reaches the other only as an SSH channel.
 */
export async function plugBastion(b: HostPlan): Promise<void> {
  const prefix = String(NET.prefix);
  await ip('netns', 'add', b.netns);
  await ip('link', 'add', OUTSIDE.link, 'type', 'veth', 'peer', 'name', BASTION_OUTSIDE_NIC, 'netns', b.netns);
  await ip('addr', 'add', `${OUTSIDE.operator}/${prefix}`, 'dev', OUTSIDE.link);
  await ip('link', 'set', OUTSIDE.link, 'up');
  await ip('link', 'add', b.veth, 'type', 'veth', 'peer', 'name', BASTION_INSIDE_NIC, 'netns', b.netns);
  await ip('link', 'set', b.veth, 'master', NET.bridge, 'up');
  await ip('-n', b.netns, 'link', 'set', 'lo', 'up');
  await ip('-n', b.netns, 'addr', 'add', `${OUTSIDE.bastion}/${prefix}`, 'dev', BASTION_OUTSIDE_NIC);
  await ip('-n', b.netns, 'addr', 'add', `${NET.operator}/${prefix}`, 'dev', BASTION_INSIDE_NIC);
  // A new namespace may inherit the machine's forwarding setting (net.core.devconf_inherit_init_net).
  await run('ip', ['netns', 'exec', b.netns, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=0']);
  await run('ip', ['netns', 'exec', b.netns, 'sysctl', '-q', '-w', 'net.ipv6.conf.all.forwarding=0'], { allowFail: true });
  await nicUp(b);
}

/** Creates the host's namespace and NIC (plannedNic) with its address and a default route via the operator. */
export async function plugHost(host: HostPlan): Promise<void> {
  const nic = plannedNic(host);
  await ip('netns', 'add', host.netns);
  await ip('link', 'add', host.veth, 'type', 'veth', 'peer', 'name', nic, 'netns', host.netns);
  await ip('link', 'set', host.veth, 'master', NET.bridge, 'up');
  await ip('-n', host.netns, 'link', 'set', 'lo', 'up');
  await ip('-n', host.netns, 'addr', 'add', `${host.address}/${NET.prefix}`, 'dev', nic);
  await nicUp(host);
}

/** The host's NIC name as it is now (rename-nic changes it). */
export async function hostNic(host: HostPlan): Promise<string> {
  const out = (await ip('-n', host.netns, '-o', 'link', 'show')).stdout;
  for (const line of out.split('\n')) {
    const name = line.match(/^\d+:\s+([^:@\s]+)/)?.[1];
    if (name && name !== 'lo') return name;
  }
  throw new Error(`${host.name}: no NIC in namespace ${host.netns}`);
}

/** Every NIC in the bastion's namespace (it has two). */
async function hostNics(host: HostPlan): Promise<string[]> {
  const out = (await ip('-n', host.netns, '-o', 'link', 'show')).stdout;
  return out
    .split('\n')
    .map((line) => line.match(/^\d+:\s+([^:@\s]+)/)?.[1])
    .filter((n): n is string => !!n && n !== 'lo');
}

/** Link up and default route back (a link going down drops its routes). */
export async function nicUp(host: HostPlan): Promise<void> {
  if (host.role === 'bastion') {
    for (const nic of [BASTION_OUTSIDE_NIC, BASTION_INSIDE_NIC]) await ip('-n', host.netns, 'link', 'set', nic, 'up');
    // Its way out is the operator's segment, as a real jump host's uplink.
    await ip('-n', host.netns, 'route', 'replace', 'default', 'via', OUTSIDE.operator, 'dev', BASTION_OUTSIDE_NIC);
    return;
  }
  const nic = await hostNic(host);
  await ip('-n', host.netns, 'link', 'set', nic, 'up');
  await ip('-n', host.netns, 'route', 'replace', 'default', 'via', NET.operator, 'dev', nic);
}

/** Powered off: the NIC has no carrier, so nothing answers ARP for the host's address. */
export async function nicDown(host: HostPlan): Promise<void> {
  const nics = host.role === 'bastion' ? await hostNics(host) : [await hostNic(host)];
  for (const nic of nics) await ip('-n', host.netns, 'link', 'set', nic, 'down');
}

export async function renameNic(host: HostPlan, name: string): Promise<void> {
  const nic = await hostNic(host);
  if (nic === name) return;
  await ip('-n', host.netns, 'link', 'set', nic, 'down');
  await ip('-n', host.netns, 'link', 'set', nic, 'name', name);
  await nicUp(host);
}

/** Partition: the cable is pulled on the bridge side; the host sees no carrier. */
export async function setCable(host: HostPlan, connected: boolean): Promise<void> {
  await ip('link', 'set', host.veth, connected ? 'up' : 'down');
}

export async function cableConnected(host: HostPlan): Promise<boolean> {
  const out = await ipMaybe('-o', 'link', 'show', host.veth);
  return out.code === 0 && /[<,]UP[,>]/.test(out.stdout);
}

export function netnsExists(netns: string): boolean {
  return existsSync(`/run/netns/${netns}`);
}

/** Every namespace the lab made (also those of a killed `lab up` whose lab.json never got written). */
export function labNetnses(): string[] {
  try {
    return readdirSync('/run/netns').filter((n) => n.startsWith(LINK_PREFIX));
  } catch {
    return [];
  }
}

/** Links on the machine the lab made: the bridge and the machine-side veth ends (the bastion's operator leg too). */
export async function labLinks(): Promise<string[]> {
  const out = (await ipMaybe('-o', 'link', 'show')).stdout;
  return out
    .split('\n')
    .map((l) => l.match(/^\d+:\s+([^:@\s]+)/)?.[1])
    .filter((n): n is string => !!n && (n.startsWith(LINK_PREFIX) || n === NET.bridge));
}

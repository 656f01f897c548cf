// Contracts on single fields the schema cannot say well: values that would be pasted into commands the
// operator copies (the SSH user), paths handed to the file system, the GitOps source Flux will fetch,
// and addresses that are legal IPv4 but wrong on a LAN (a network's own or broadcast address, a
// LoadBalancer pool that hands out node addresses).
import type { Violation } from '../errors.ts';
import { cidrContains, parseCidr, parseIPv4 } from './ipv4.ts';
import { placeholderReason } from './placeholders.ts';
import type { Inventory } from './types.ts';

type Add = (id: Violation['id'], path: string, message: string) => void;

/** A portable POSIX user name (useradd's default NAME_REGEX): safe in any command line unquoted. */
const POSIX_USER = /^[a-z_][a-z0-9_-]{0,31}$/;
/** A host name or ~/.ssh/config alias. */
const HOST = /^[A-Za-z0-9_]([A-Za-z0-9._-]{0,252})$/;
/** The URL kinds Flux's GitRepository accepts (source-controller api/v1 GitRepositorySpec.URL pattern). */
const FLUX_URL = /^(https?|ssh):\/\/[^\s]+$/;

export function checkFields(inv: Inventory, add: Add, nodes: { name: string; address: string; path: string }[]): void {
  checkSsh(inv, add);
  checkPaths(inv, add);
  checkGitops(inv, add);
  checkLan(inv, add, nodes);
}

function checkSsh(inv: Inventory, add: Add): void {
  const user = inv.ssh.user;
  if (!placeholderReason(user)) {
    if (user === 'root') add('INVENTORY_SCHEMA', 'ssh.user', 'ssh.user is root; log in as an ordinary user with sudo: commands that need root go through `sudo -n`');
    else if (!POSIX_USER.test(user)) add('INVENTORY_SCHEMA', 'ssh.user', `ssh.user ${JSON.stringify(user.slice(0, 64))} is not a POSIX user name (lower-case letters, digits, "_" and "-", at most 32 characters, not starting with a digit or "-")`);
  }
  const bastion = inv.ssh.bastion;
  if (bastion !== undefined && !placeholderReason(bastion)) {
    const m = /^(?:([^@]+)@)?([^@:]+)(?::(\d+))?$/.exec(bastion);
    const port = m?.[3] === undefined ? 22 : Number(m[3]);
    if (!m || !HOST.test(m[2]) || (m[1] !== undefined && !POSIX_USER.test(m[1])) || port < 1 || port > 65535) {
      add('INVENTORY_SCHEMA', 'ssh.bastion', `ssh.bastion ${JSON.stringify(bastion.slice(0, 64))} is not [user@]host[:port] with a POSIX user, a host name or ~/.ssh/config alias, and a port 1-65535`);
    }
  }
  const nic = inv.controlPlane.interface;
  if (nic !== 'auto' && (nic.startsWith('-') || nic === '.' || nic === '..')) {
    add('INVENTORY_SCHEMA', 'controlPlane.interface', `controlPlane.interface "${nic}" is not a NIC name`);
  }
}

function checkPaths(inv: Inventory, add: Add): void {
  const paths: [string, string | undefined][] = [
    ['ssh.identityFile', inv.ssh.identityFile],
    ['ssh.knownHostsFile', inv.ssh.knownHostsFile],
    ['k3s.artifacts', inv.k3s.artifacts],
    ['gitops.checkout', inv.gitops?.checkout],
    ['cilium.chart', inv.cilium?.chart],
    ['cilium.helmRelease', inv.cilium?.helmRelease],
    ['flux.install', inv.flux?.install],
    ['flux.deployKeyFile', inv.flux?.deployKeyFile],
    ['flux.knownHostsFile', inv.flux?.knownHostsFile],
  ];
  for (const [path, value] of paths) {
    if (value !== undefined && /[\0\n\r]/.test(value)) add('INVENTORY_SCHEMA', path, `${path} holds a NUL byte or a line break; a path is one line of text`);
  }
}

function checkGitops(inv: Inventory, add: Add): void {
  const g = inv.gitops;
  if (!g) return;
  if (!placeholderReason(g.url)) {
    if (!FLUX_URL.test(g.url)) add('INVENTORY_SCHEMA', 'gitops.url', `gitops.url ${JSON.stringify(g.url.slice(0, 80))} is not an ssh://, https:// or http:// URL, the kinds Flux's GitRepository accepts`);
    else if (/^[a-z]+:\/\/[^/@]*:[^/@]*@/.test(g.url)) add('INVENTORY_SCHEMA', 'gitops.url', 'gitops.url carries a password; Flux authenticates with the deploy key (flux.deployKeyFile), and a URL is stored in the cluster in clear');
  }
  if (!placeholderReason(g.branch) && (g.branch.startsWith('-') || /[\s~^:?*[\\]|\.\.|@\{|\/\/|\/$|\.lock$/.test(g.branch))) {
    add('INVENTORY_SCHEMA', 'gitops.branch', `gitops.branch ${JSON.stringify(g.branch.slice(0, 64))} is not a valid git branch name`);
  }
  if (!placeholderReason(g.path) && g.path.split('/').includes('..')) {
    add('INVENTORY_SCHEMA', 'gitops.path', `gitops.path ${g.path} leaves the repository ("..")`);
  }
}

function checkLan(inv: Inventory, add: Add, nodes: { name: string; address: string; path: string }[]): void {
  const net = parseCidr(inv.network.nodeCidr);
  if (!net || net.prefix >= 31) return; // /31 and /32 have no network or broadcast address
  const reserved = (text: string | undefined) => {
    const ip = text === undefined ? null : parseIPv4(text);
    if (ip === null || !cidrContains(net, ip)) return undefined;
    if (ip === net.base) return 'the network address';
    if (ip === net.base + net.size - 1) return 'the broadcast address';
    return undefined;
  };
  const addresses: [string, string, string | undefined][] = [
    ['controlPlane.vip', 'controlPlane.vip', inv.controlPlane.vip],
    ['network.gatewayVip', 'network.gatewayVip', inv.network.gatewayVip],
    ...nodes.map((n) => [`${n.path}.address`, `${n.name}'s address`, n.address] as [string, string, string]),
  ];
  for (const [path, what, text] of addresses) {
    const why = reserved(text);
    if (why) add('ADDRESS_RESERVED', path, `${what} ${text} is ${why} of network.nodeCidr ${inv.network.nodeCidr}`);
  }
  const pool = inv.network.lbPool;
  const start = pool ? parseIPv4(pool.start) : null;
  const stop = pool ? parseIPv4(pool.stop) : null;
  if (!pool || start === null || stop === null || start > stop) return;
  for (const [edge, ip] of [['start', start], ['stop', stop]] as const) {
    if (!cidrContains(net, ip)) add('LB_POOL_INVALID', `network.lbPool.${edge}`, `network.lbPool.${edge} ${pool[edge]} is outside network.nodeCidr ${inv.network.nodeCidr}: its addresses are announced on the nodes' LAN`);
  }
  if (reserved(pool.start) || reserved(pool.stop)) add('LB_POOL_INVALID', 'network.lbPool', `network.lbPool ${pool.start}-${pool.stop} includes the network or broadcast address of ${inv.network.nodeCidr}`);
  for (const n of nodes) {
    const ip = parseIPv4(n.address);
    if (ip !== null && ip >= start && ip <= stop) add('LB_POOL_INVALID', 'network.lbPool', `network.lbPool ${pool.start}-${pool.stop} includes ${n.name}'s address ${n.address}: a LoadBalancer Service would be given a node's address`);
  }
}

// Fault injection: what can go wrong with real hardware, on demand, and how each one heals.
import { NET, isValidNicName, type HostPlan } from './config.ts';
import { LabUsage } from './errors.ts';
import { hostExec } from './host.ts';
import { start, stop, wipe } from './lifecycle.ts';
import { renameNic, setCable } from './network.ts';
import { FAKETIME_RUN, FAKETIME_SEM, FAKETIME_SHM } from './rootfs-customize.ts';
import { run } from './run.ts';
import { labHosts } from './state.ts';

const FAULT_KINDS = [
  'stop',
  'start',
  'partition',
  'heal',
  'block-port',
  'unblock-port',
  'cut-peers',
  'heal-peers',
  'block-egress',
  'unblock-egress',
  'clock-skew',
  'fill-disk',
  'free-disk',
  'rename-nic',
  'wipe',
] as const;
type FaultKind = (typeof FAULT_KINDS)[number];

/** What the bastion shape's jump host takes: power, its leg on the hosts' segment (partition), ports. */
const BASTION_FAULTS: readonly FaultKind[] = ['stop', 'start', 'partition', 'heal', 'block-port', 'unblock-port', 'block-egress', 'unblock-egress'];

function isFaultKind(k: string): k is FaultKind {
  return (FAULT_KINDS as readonly string[]).includes(k);
}

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const FILL_FILE = '/var/lib/rancher/.lab-fill-disk';

function parsePort(arg: string | undefined): number {
  const port = Number(arg);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new LabUsage(`a port is 1..65535, not ${arg ?? '(none)'}`);
  return port;
}

/** `block-egress`'s argument: an IPv4 address and a port, `10.77.0.9:6443`. */
function parseEgressTarget(arg: string | undefined): { address: string; port: number } {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d+)$/.exec(arg ?? '');
  if (!m || m[1]!.split('.').some((o) => Number(o) > 255))
    throw new LabUsage(`block-egress takes an IPv4 address and a port (e.g. 10.77.0.9:6443), not ${arg ?? '(none)'}`);
  return { address: m[1]!, port: parsePort(m[2]) };
}

/** faketime's offset syntax: "+300" / "-300" seconds. */
export function faketimeOffset(arg: string | undefined): string {
  const s = Number(arg);
  if (arg === undefined || !Number.isInteger(s)) throw new LabUsage(`clock-skew takes whole seconds (e.g. 300 or -300), not ${arg ?? '(none)'}`);
  return s >= 0 ? `+${s}` : `${s}`;
}

/** nftables in the host's own network namespace; a table of the lab's, so the engine's rules stay apart. */
function nftScript(port: number, add: boolean): string {
  const setup = [
    'add table inet bootstrap_lab',
    'add set inet bootstrap_lab blocked { type inet_service; }',
    'add chain inet bootstrap_lab input { type filter hook input priority -10; policy accept; }',
  ];
  const rules =
    'flush chain inet bootstrap_lab input\nadd rule inet bootstrap_lab input tcp dport @blocked reject with tcp reset\nadd rule inet bootstrap_lab input udp dport @blocked reject';
  return [...setup, rules, `${add ? 'add' : 'delete'} element inet bootstrap_lab blocked { ${port} }`].join('\n');
}

/** The table of `cut-peers`: a table of its own, so `heal-peers` and `unblock-port` never undo each other. */
const PEERS_TABLE = 'inet bootstrap_lab_peers';

/**
 * `cut-peers`: nftables in the host's own network namespace DROPS every IPv4 packet to and from the other
 * lab hosts and the VIP, as a cut link between two switches (or a firewall that drops) does: a peer's
 * connection waits for its timeout, nothing is refused. The operator's side (.1, the hosts' gateway) and
 * anything else stay reachable, so SSH from the operator still works. ARP is not filtered (the inet family
 * sees IP only). The table is replaced whole: cutting twice leaves one set of rules.
 */
function peersCutScript(peers: string[]): string {
  return [
    `table ${PEERS_TABLE}`,
    `delete table ${PEERS_TABLE}`,
    `table ${PEERS_TABLE} {`,
    `  set peers { type ipv4_addr; elements = { ${peers.join(', ')} } }`,
    '  chain input { type filter hook input priority -10; policy accept; ip saddr @peers drop; }',
    '  chain output { type filter hook output priority -10; policy accept; ip daddr @peers drop; }',
    '}',
  ].join('\n');
}

/** Every other cluster host of the lab, and the control-plane VIP. */
function peersOf(host: HostPlan, hosts: HostPlan[]): string[] {
  return [...hosts.filter((h) => h.name !== host.name && h.role !== 'bastion').map((h) => h.address), NET.vip];
}

/**
 * A firewall on the host's way OUT (its own netns, chain `output`): TCP from the host to address:port gets
 * a reset (the host's programs see "connection refused"), UDP an ICMP port unreachable; every other
 * destination, and every connection towards the host, is left alone. The same table as block-port, its
 * own set and chain.
 */
function egressScript(address: string, port: number, add: boolean): string {
  const setup = [
    'add table inet bootstrap_lab',
    'add set inet bootstrap_lab egress { type ipv4_addr . inet_service; }',
    'add chain inet bootstrap_lab output { type filter hook output priority -10; policy accept; }',
  ];
  const rules =
    'flush chain inet bootstrap_lab output\nadd rule inet bootstrap_lab output ip daddr . tcp dport @egress reject with tcp reset\nadd rule inet bootstrap_lab output ip daddr . udp dport @egress reject';
  return [...setup, rules, `${add ? 'add' : 'delete'} element inet bootstrap_lab egress { ${address} . ${port} }`].join('\n');
}

export async function fault(host: HostPlan, kind: string, arg?: string): Promise<void> {
  if (!isFaultKind(kind)) throw new LabUsage(`unknown fault ${kind} (kinds: ${FAULT_KINDS.join(', ')})`);
  if (host.role === 'bastion' && !BASTION_FAULTS.includes(kind)) throw new LabUsage(`the bastion takes ${BASTION_FAULTS.join(', ')}, not ${kind}`);
  switch (kind) {
    case 'stop':
      return stop(host);
    case 'start':
      return start(host);
    case 'wipe':
      return wipe(host);
    case 'partition':
      return setCable(host, false);
    case 'heal':
      return setCable(host, true);
    case 'block-port':
    case 'unblock-port': {
      const port = parsePort(arg);
      const res = await run('ip', ['netns', 'exec', host.netns, 'nft', '-f', '-'], { input: nftScript(port, kind === 'block-port'), allowFail: true });
      // unblocking a port that is not blocked is fine
      if (res.code !== 0 && kind === 'block-port') throw new Error(`${host.name}: nft failed: ${res.stderr.trim()}`);
      return;
    }
    case 'cut-peers': {
      const res = await run('ip', ['netns', 'exec', host.netns, 'nft', '-f', '-'], { input: peersCutScript(peersOf(host, labHosts())), allowFail: true });
      if (res.code !== 0) throw new Error(`${host.name}: nft failed: ${res.stderr.trim()}`);
      return;
    }
    case 'heal-peers':
      // healing a host that is not cut is fine
      await run('ip', ['netns', 'exec', host.netns, 'nft', 'delete', 'table', ...PEERS_TABLE.split(' ')], { allowFail: true });
      return;
    case 'block-egress':
    case 'unblock-egress': {
      const { address, port } = parseEgressTarget(arg);
      const res = await run('ip', ['netns', 'exec', host.netns, 'nft', '-f', '-'], {
        input: egressScript(address, port, kind === 'block-egress'),
        allowFail: true,
      });
      // unblocking what is not blocked is fine
      if (res.code !== 0 && kind === 'block-egress') throw new Error(`${host.name}: nft failed: ${res.stderr.trim()}`);
      return;
    }
    case 'clock-skew': {
      const offset = faketimeOffset(arg);
      // Heal: the preload goes first, so no new process loads libfaketime while its files go away.
      const heal = `rm -f ${FAKETIME_RUN}/ld.so.preload; rm -rf ${FAKETIME_RUN}; rm -f /dev/shm/sem.${FAKETIME_SEM.slice(1)} /dev/shm/${FAKETIME_SHM.slice(1)}`;
      if (offset === '+0') await hostExec(host, heal);
      else
        await hostExec(
          host,
          // The segment libfaketime expects: a POSIX semaphore (32 bytes) and an 8-byte counter, readable
          // by every user; then the offset; the preload last, once everything it needs exists. The
          // semaphore starts at 2^30, not 1: what it guards (a start time, tick counters) a fixed offset
          // does not use, and as a mutex one process that dies holding it (SIGPIPE, a timeout's kill)
          // leaves every later process on the host waiting forever.
          `mkdir -p ${FAKETIME_RUN} && ` +
            `{ printf '\\000\\000\\000\\100'; head -c 28 /dev/zero; } > /dev/shm/sem.${FAKETIME_SEM.slice(1)} && ` +
            `head -c 8 /dev/zero > /dev/shm/${FAKETIME_SHM.slice(1)} && ` +
            `chmod 666 /dev/shm/sem.${FAKETIME_SEM.slice(1)} /dev/shm/${FAKETIME_SHM.slice(1)} && ` +
            `printf '%s\\n' '${offset}' > ${FAKETIME_RUN}/faketimerc && ` +
            `printf '%s\\n' ${LIBFAKETIME} > ${FAKETIME_RUN}/ld.so.preload`,
        );
      return;
    }
    case 'fill-disk':
      await hostExec(
        host,
        `avail=$(df -B1 --output=avail /var/lib/rancher | tail -1); fallocate -l "$avail" ${FILL_FILE} 2>/dev/null || true; ` +
          `dd if=/dev/zero of=${FILL_FILE}.tail bs=4096 2>/dev/null || true; sync`,
      );
      return;
    case 'free-disk':
      await hostExec(host, `rm -f ${FILL_FILE} ${FILL_FILE}.tail`);
      return;
    case 'rename-nic':
      if (!arg || !isValidNicName(arg)) throw new LabUsage(`rename-nic needs a NIC name (1-15 of A-Z a-z 0-9 _ . -), not ${arg ?? '(none)'}`);
      return renameNic(host, arg);
  }
}

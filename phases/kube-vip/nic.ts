// Which NIC kube-vip announces the VIP on. kube-vip's vip_interface is ONE value for the whole DaemonSet,
// so every server must use the same name. Decision: with controlPlane.interface `auto`, each server's NIC on
// the node network is probed; if they differ (or one has none) the run stops with VIP_INTERFACE_INVALID
// naming each server's NIC, rather than guessing or rendering per-node manifests (an empty vip_interface
// would make kube-vip pick the default-route NIC: the wrong one on multi-NIC hosts, kube-vip #903).
// A named controlPlane.interface wins; it must exist on every server (NIC_NOT_FOUND otherwise).
import { CauseError } from '../../src/errors.ts';
import { cidrContains, parseCidr, parseIPv4 } from '../../src/inventory/ipv4.ts';

interface AddrLine {
  nic: string;
  address: string;
}

function addrLines(ipAddrOutput: string): AddrLine[] {
  const lines: AddrLine[] = [];
  for (const line of ipAddrOutput.split('\n')) {
    // "2: eth0    inet 192.168.2.10/24 brd 192.168.2.255 scope global eth0\       valid_lft forever ..."
    const m = /^\d+:\s+(\S+)\s+inet\s+([\d.]+)\/\d+/.exec(line);
    if (m) lines.push({ nic: m[1].replace(/@.*$/, ''), address: m[2] });
  }
  return lines;
}

/**
 * The NIC for the VIP on one server, from `ip -o -4 addr show`: the NIC holding the server's own address
 * when that address is on nodeCidr; otherwise the only NIC holding an address on nodeCidr. Undefined when
 * there is none, or several NICs hold nodeCidr addresses and none holds the server's.
 */
export function nicForVip(ipAddrOutput: string, serverAddress: string, nodeCidr: string): string | undefined {
  const net = parseCidr(nodeCidr);
  const lines = addrLines(ipAddrOutput);
  const onNet = lines.filter((l) => {
    const a = parseIPv4(l.address);
    return net !== null && a !== null && cidrContains(net, a);
  });
  const own = onNet.find((l) => l.address === serverAddress);
  if (own) return own.nic;
  const nics = [...new Set(onNet.map((l) => l.nic))];
  return nics.length === 1 ? nics[0] : undefined;
}

export interface ServerNic {
  host: string;
  /** nicForVip's answer for the server. */
  nic?: string;
  /** The NIC names the server has (from `ip -o link show`), to check a named interface. */
  links?: string[];
}

export type VipInterfaceChoice = { interfaceName: string; stops: [] } | { interfaceName?: undefined; stops: CauseError[] };

/** The one vip_interface for the DaemonSet, or the stops that forbid choosing one. */
export function chooseVipInterface(configured: string, servers: ServerNic[]): VipInterfaceChoice {
  if (configured !== 'auto') {
    const missing = servers.filter((s) => s.links !== undefined && !s.links.includes(configured));
    if (!missing.length) return { interfaceName: configured, stops: [] };
    return {
      stops: missing.map(
        (s) =>
          new CauseError('NIC_NOT_FOUND', {
            host: s.host,
            evidence: { command: 'ip -o link show', seen: `controlPlane.interface ${configured} does not exist (interfaces: ${(s.links ?? []).join(', ')})` },
          }),
      ),
    };
  }
  const names = [...new Set(servers.map((s) => s.nic))];
  if (names.length === 1 && names[0] !== undefined) return { interfaceName: names[0], stops: [] };
  const seen = servers.map((s) => `${s.host}: ${s.nic ?? 'none on the node network'}`).join(', ');
  return {
    stops: [
      new CauseError('VIP_INTERFACE_INVALID', {
        host:
          servers
            .filter((s) => s.nic === undefined)
            .map((s) => s.host)
            .join(', ') || undefined,
        evidence: {
          command: 'ip -o -4 addr show',
          seen: `kube-vip takes one interface name for every server, but the servers' NICs on the node network differ (${seen}); set controlPlane.interface`,
        },
      }),
    ],
  };
}

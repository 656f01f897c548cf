// The arguments every server must share (k3s-io/k3s v1.33.5+k3s1 pkg/daemons/config/types.go
// CriticalControlArgs), compared as pkg/cluster/bootstrap.go compareConfig does: go-test/deep diffs the two
// structs, and each difference is logged as "critical configuration mismatched: <name>", where <name> is the
// field's `cli` tag when the diff is on a whole field (a scalar, or a net.IP, which deep compares with its
// Equal method) and the diff's Go field path otherwise (an element of a slice, a field of a *net.IPNet:
// `ClusterIPRanges.slice[0].IP`, `ClusterIPRange.IP`, `ClusterDNSs.slice[0]`); then the error "critical
// configuration value mismatch between servers". The twin exchanges the values keyed by flag.
import { type Settings, bool, list, str } from '../config.ts';
import { clusterDnsIP, serviceRange } from '../service-network.ts';

export type CriticalArgs = Record<string, string>;

const DEFAULTS: Record<string, string> = {
  'cluster-cidr': '10.42.0.0/16',
  'service-cidr': '10.43.0.0/16',
  'cluster-domain': 'cluster.local',
  'flannel-backend': 'vxlan',
  'egress-selector-mode': 'agent',
  'secrets-encryption-provider': 'aescbc',
};
const BOOLEANS = [
  'disable-cloud-controller',
  'disable-helm-controller',
  'disable-network-policy',
  'secrets-encryption',
  'embedded-registry',
  'flannel-ipv6-masq',
  'flannel-ip-masq-disable-random-fully',
  'flannel-external-ip',
  'supervisor-metrics',
];

export function criticalArgs(s: Settings): CriticalArgs {
  const out: CriticalArgs = {};
  for (const [k, d] of Object.entries(DEFAULTS)) out[k] = str(s, k, d);
  // Unset, cluster DNS is the tenth address of the service range (pkg/cli/server/server.go), so a server
  // with another service-cidr differs in ClusterDNS too, as on real k3s.
  out['cluster-dns'] = str(s, 'cluster-dns') || clusterDnsIP(serviceRange(out['service-cidr']));
  for (const k of BOOLEANS) out[k] = String(bool(s, k));
  // servicelb is disabled through `disable: [servicelb]`; k3s compares it as its own field (cli tag
  // "disable-service-lb").
  out['disable-service-lb'] = String(list(s, 'disable').includes('servicelb'));
  return out;
}

/** The struct's fields in declaration order: Go field name, the flag it holds, and how deep sees it. */
type Kind = 'scalar' | 'ip' | 'ips' | 'net' | 'nets';
const FIELDS: [string, string, Kind][] = [
  ['ClusterDNSs', 'cluster-dns', 'ips'],
  ['ClusterIPRanges', 'cluster-cidr', 'nets'],
  ['ClusterDNS', 'cluster-dns', 'ip'],
  ['ClusterDomain', 'cluster-domain', 'scalar'],
  ['ClusterIPRange', 'cluster-cidr', 'net'],
  ['DisableCCM', 'disable-cloud-controller', 'scalar'],
  ['DisableHelmController', 'disable-helm-controller', 'scalar'],
  ['DisableNPC', 'disable-network-policy', 'scalar'],
  ['DisableServiceLB', 'disable-service-lb', 'scalar'],
  ['EncryptSecrets', 'secrets-encryption', 'scalar'],
  ['EncryptProvider', 'secrets-encryption-provider', 'scalar'],
  ['EmbeddedRegistry', 'embedded-registry', 'scalar'],
  ['FlannelBackend', 'flannel-backend', 'scalar'],
  ['FlannelIPv6Masq', 'flannel-ipv6-masq', 'scalar'],
  ['FlannelIPMasqDisableRandomFully', 'flannel-ip-masq-disable-random-fully', 'scalar'],
  ['FlannelExternalIP', 'flannel-external-ip', 'scalar'],
  ['EgressSelectorMode', 'egress-selector-mode', 'scalar'],
  ['ServiceIPRange', 'service-cidr', 'net'],
  ['ServiceIPRanges', 'service-cidr', 'nets'],
  ['SupervisorMetrics', 'supervisor-metrics', 'scalar'],
];

/** An IPv4 CIDR as deep sees a net.IPNet: the network address, and the mask's bytes. */
function ipNet(cidr: string): { ip: string; mask: number[] } {
  const [addr, bits] = cidr.split('/');
  const n = Number(bits ?? 32);
  const mask = [0, 1, 2, 3].map((i) => (0xff << (8 - Math.max(0, Math.min(8, n - 8 * i)))) & 0xff);
  const ip = addr
    .split('.')
    .map((o, i) => Number(o) & mask[i])
    .join('.');
  return { ip, mask };
}

function netDiff(prefix: string, ours: string, theirs: string): string[] {
  const a = ipNet(ours);
  const b = ipNet(theirs);
  const out = a.ip !== b.ip ? [`${prefix}.IP`] : [];
  a.mask.forEach((m, i) => m !== b.mask[i] && out.push(`${prefix}.Mask.slice[${i}]`));
  return out;
}

/** What k3s logs for each difference, in the order it logs them. */
export function mismatched(ours: CriticalArgs, theirs: CriticalArgs): string[] {
  const out: string[] = [];
  for (const [field, flag, kind] of FIELDS) {
    const a = ours[flag];
    // A down-level server that does not send a field is not compared (egress-selector-mode upstream).
    const b = theirs[flag];
    if (a === undefined || b === undefined || a === b) continue;
    if (kind === 'scalar' || kind === 'ip') out.push(flag);
    else if (kind === 'ips') out.push(`${field}.slice[0]`);
    else if (kind === 'net') out.push(...netDiff(field, a, b));
    else out.push(...netDiff(`${field}.slice[0]`, a, b));
  }
  return out;
}

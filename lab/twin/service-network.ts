// The service network as k3s takes it from its config: `service-cidr` (a comma list; k3s's ServiceIPRange is
// its first entry, default 10.43.0.0/16), the `kubernetes` Service's ClusterIP as its first address
// (kube-apiserver's ServiceIPRange, index 1, also a SAN of the serving certificate) and cluster DNS, when
// `cluster-dns` is not set, as its tenth (k3s-io/k3s pkg/cli/server/server.go, `GetIndexedIP(svcCIDR, 10)`).
// IPv4 only, as the inventory is: an IPv6 range stops the twin (see lab/TWIN.md).
const DEFAULT_SERVICE_CIDR = '10.43.0.0/16';

/** ServiceIPRange: the first network of the `service-cidr` setting. */
export function serviceRange(setting: string | undefined): string {
  return (
    (setting ?? '')
      .split(',')
      .map((x) => x.trim())
      .find(Boolean) ?? DEFAULT_SERVICE_CIDR
  );
}

/** The address `index` places into an IPv4 network, or undefined (not IPv4, or the network is too small). */
function indexedIPv4(cidr: string, index: number): string | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!m) return undefined;
  const bits = Number(m[5]);
  const size = 2 ** (32 - bits);
  const addr = m.slice(1, 5).reduce((n, o) => n * 256 + Number(o), 0);
  const base = addr - (addr % size);
  if (index >= size) return undefined;
  const v = base + index;
  return [24, 16, 8, 0].map((s) => Math.floor(v / 2 ** s) % 256).join('.');
}

function indexed(range: string, index: number, what: string): string {
  const ip = indexedIPv4(range, index);
  if (ip) return ip;
  throw new Error(
    /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(range)
      ? `${what}: can't generate IP with index ${index} from subnet. subnet too small. subnet: "${range}"`
      : `invalid service-cidr ${range} (the twin derives IPv4 service addresses only)`,
  );
}

/** The `kubernetes` Service's ClusterIP. */
export const kubernetesServiceIP = (range: string) => indexed(range, 1, 'service IP');

/** k3s's default cluster-dns (its error when the network has no tenth address). */
export const clusterDnsIP = (range: string) => indexed(range, 10, 'cannot configure default cluster-dns address');

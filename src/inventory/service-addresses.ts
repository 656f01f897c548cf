// The two addresses k3s takes from its service network, derived here once so that no gate, renderer or
// message restates 10.43.0.1. The `kubernetes` Service's ClusterIP is the network's first address
// (kubernetes/kubernetes pkg/controlplane/services.go ServiceIPRange: `GetIndexedIP(…, 1)`; k3s-io/k3s
// pkg/cli/server/server.go adds it to the SANs); cluster DNS, when cluster-dns is not set (bootstrap never
// sets it), is the tenth (k3s-io/k3s pkg/cli/server/server.go: `GetIndexedIP(svcCIDR, 10)`). The inventory
// is IPv4 only (schema format ipv4-cidr), so one address each.
import { formatIPv4, parseCidr } from './ipv4.ts';

export interface ServiceAddresses {
  /** The `kubernetes` Service's ClusterIP: what a pod without KUBERNETES_SERVICE_HOST dials (port 443). */
  kubernetes: string;
  /** CoreDNS's Service IP, k3s's default cluster-dns. */
  dns: string;
}

/** k3s refuses a service network without a tenth address ("cannot configure default cluster-dns address"). */
export const DNS_INDEX = 10;

/** The address at `index` of an IPv4 network, or undefined when the text is no network or too small. */
function indexedAddress(cidr: string, index: number): string | undefined {
  const net = parseCidr(cidr);
  if (!net || index >= net.size) return undefined;
  return formatIPv4(net.base + index);
}

/** Requires a validated inventory (checkContracts refuses a service network too small for both). */
export function serviceAddresses(serviceCidr: string): ServiceAddresses {
  const kubernetes = indexedAddress(serviceCidr, 1);
  const dns = indexedAddress(serviceCidr, DNS_INDEX);
  if (!kubernetes || !dns) throw new Error(`serviceAddresses: ${serviceCidr} has no address ${DNS_INDEX} (the inventory was not validated)`);
  return { kubernetes, dns };
}

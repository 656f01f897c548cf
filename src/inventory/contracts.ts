// The semantic contracts of an inventory whose shape is already right (schema-check.ts). Each
// broken contract is a named cause with the path it concerns; all of them are reported at once.
// Values that do not parse (a placeholder where an address belongs) are skipped here: the
// placeholder scan has already named them, and one wrong value should yield one cause.
import type { Violation } from '../errors.ts';
import { checkFields } from './contracts-fields.ts';
import { cidrContains, cidrsOverlap, formatCidr, parseCidr, parseIPv4, type IPv4Network } from './ipv4.ts';
import { placeholderReason } from './placeholders.ts';
import { DNS_INDEX } from './service-addresses.ts';
import type { Inventory, InventoryWarning } from './types.ts';
import { isWaivable, WAIVABLE_CAUSES } from './waivers.ts';

export interface ContractResult {
  violations: Violation[];
  warnings: InventoryWarning[];
}

/** RFC 1123 label: what Kubernetes accepts as a node name segment and we accept as an environment. */
function isRfc1123Label(name: string): boolean {
  return name.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name);
}

interface Node {
  kind: 'servers' | 'agents';
  index: number;
  name: string;
  address: string;
  path: string;
}

/**
 * Check every contract. `fileBaseName` is the inventory file's name without `.yaml`; when given,
 * `environment` must equal it (ENVIRONMENT_MISMATCH).
 */
export function checkContracts(inv: Inventory, fileBaseName?: string): ContractResult {
  const violations: Violation[] = [];
  const warnings: InventoryWarning[] = [];
  const add = (id: Violation['id'], path: string, message: string) => violations.push({ id, path, message });

  const nodes: Node[] = [
    ...inv.servers.map((s, index) => ({ kind: 'servers' as const, index, name: s.name, address: s.address, path: `servers[${index}]` })),
    ...inv.agents.map((a, index) => ({ kind: 'agents' as const, index, name: a.name, address: a.address, path: `agents[${index}]` })),
  ];

  checkNames(inv, nodes, fileBaseName, add);
  checkServers(inv, add, warnings);
  checkDuplicates(nodes, add);
  checkAddresses(inv, nodes, add);
  checkNetworks(inv, add);
  checkWaivers(inv, add);
  checkFields(inv, add, nodes);
  if (inv.cilium && !inv.gitops) {
    add('INVENTORY_SCHEMA', 'cilium.helmRelease', 'cilium.helmRelease is a file of the GitOps checkout, but there is no gitops.checkout');
  }
  return { violations, warnings };
}

type Add = (id: Violation['id'], path: string, message: string) => void;

function checkNames(inv: Inventory, nodes: Node[], fileBaseName: string | undefined, add: Add): void {
  const label = 'lower-case letters, digits and "-", at most 63 characters, no "-" at either end';
  if (!placeholderReason(inv.environment) && !isRfc1123Label(inv.environment)) {
    add('NAME_INVALID', 'environment', `environment "${inv.environment}" is not an RFC 1123 label (${label})`);
  }
  if (fileBaseName !== undefined && !placeholderReason(inv.environment) && inv.environment !== fileBaseName) {
    add(
      'ENVIRONMENT_MISMATCH',
      'environment',
      `environment is "${inv.environment}" but the file is ${fileBaseName}.yaml: they must say the same name`,
    );
  }
  for (const n of nodes) {
    if (!placeholderReason(n.name) && !isRfc1123Label(n.name)) {
      add('NAME_INVALID', `${n.path}.name`, `${n.path}.name "${n.name}" is not an RFC 1123 label (${label})`);
    }
  }
}

function checkServers(inv: Inventory, add: Add, warnings: InventoryWarning[]): void {
  const founders = inv.servers.flatMap((s, i) => (s.founder === true ? [i] : []));
  if (founders.length === 0) {
    add('FOUNDER_NOT_UNIQUE', 'servers', 'no server is marked `founder: true`; exactly one must be');
  }
  for (const i of founders.slice(1)) {
    add(
      'FOUNDER_NOT_UNIQUE',
      `servers[${i}].founder`,
      `${inv.servers[i].name} is a founder too, but ${inv.servers[founders[0]].name} already is; exactly one server may be`,
    );
  }
  const count = inv.servers.length;
  if (count % 2 === 0) {
    add(
      'SERVER_COUNT_EVEN',
      'servers',
      `${count} servers: an even count tolerates no more failures than ${count - 1}; use ${count - 1} or ${count + 1}`,
    );
  } else if (count === 1) {
    warnings.push({ path: 'servers', message: 'a single server: the control plane is not HA (3 servers tolerate one failure)' });
  }
}

function checkDuplicates(nodes: Node[], add: Add): void {
  const names = new Map<string, Node>();
  const addresses = new Map<string, Node>();
  for (const n of nodes) {
    const sameName = placeholderReason(n.name) ? undefined : names.get(n.name);
    if (sameName) add('DUPLICATE_NAME', `${n.path}.name`, `${n.path}.name "${n.name}" is already the name of ${sameName.path}`);
    else names.set(n.name, n);
    const ip = parseIPv4(n.address);
    const key = ip === null ? n.address : String(ip);
    const sameAddress = ip === null ? undefined : addresses.get(key);
    if (sameAddress) {
      add('DUPLICATE_ADDRESS', `${n.path}.address`, `${n.path}.address ${n.address} is already the address of ${sameAddress.name}`);
    } else addresses.set(key, n);
  }
}

function checkAddresses(inv: Inventory, nodes: Node[], add: Add): void {
  const vip = parseIPv4(inv.controlPlane.vip);
  const nodeNet = parseCidr(inv.network.nodeCidr);
  if (vip !== null) {
    for (const n of nodes) {
      if (parseIPv4(n.address) === vip) {
        add('VIP_IS_NODE_ADDRESS', 'controlPlane.vip', `controlPlane.vip ${inv.controlPlane.vip} is the address of ${n.name} (${n.path}); the VIP must be a free address`);
      }
    }
  }
  if (nodeNet) {
    const outside = (path: string, what: string, text: string) => {
      const ip = parseIPv4(text);
      if (ip !== null && !cidrContains(nodeNet, ip)) {
        add('VIP_OUTSIDE_NODE_CIDR', path, `${what} ${text} is outside network.nodeCidr ${inv.network.nodeCidr}`);
      }
    };
    outside('controlPlane.vip', 'controlPlane.vip', inv.controlPlane.vip);
    for (const n of nodes) outside(`${n.path}.address`, `${n.name}'s address`, n.address);
  }
  const pool = inv.network.lbPool;
  const start = pool ? parseIPv4(pool.start) : null;
  const stop = pool ? parseIPv4(pool.stop) : null;
  const poolOk = start !== null && stop !== null && start <= stop;
  if (pool && start !== null && stop !== null && start > stop) {
    add('INVENTORY_SCHEMA', 'network.lbPool', `network.lbPool starts at ${pool.start}, after its stop ${pool.stop}`);
  }
  if (pool && poolOk && vip !== null && vip >= start && vip <= stop) {
    add('VIP_IN_LB_POOL', 'controlPlane.vip', `controlPlane.vip ${inv.controlPlane.vip} lies in network.lbPool ${pool.start}-${pool.stop}`);
  }
  const gateway = inv.network.gatewayVip;
  const gw = gateway === undefined ? null : parseIPv4(gateway);
  if (gateway !== undefined && gw !== null) {
    if (!pool) {
      add('GATEWAY_VIP_OUTSIDE_POOL', 'network.gatewayVip', `network.gatewayVip ${gateway} is set, but there is no network.lbPool to allocate it from`);
    } else if (poolOk && (gw < start || gw > stop)) {
      add('GATEWAY_VIP_OUTSIDE_POOL', 'network.gatewayVip', `network.gatewayVip ${gateway} is outside network.lbPool ${pool.start}-${pool.stop}`);
    }
  }
}

function checkNetworks(inv: Inventory, add: Add): void {
  const nets: { path: string; text: string }[] = [
    { path: 'k3s.clusterCidr', text: inv.k3s.clusterCidr },
    { path: 'k3s.serviceCidr', text: inv.k3s.serviceCidr },
    { path: 'network.nodeCidr', text: inv.network.nodeCidr },
  ];
  const parsed: { path: string; text: string; net: IPv4Network }[] = [];
  for (const n of nets) {
    const net = parseCidr(n.text);
    if (!net) continue;
    if (!net.aligned) {
      add('INVENTORY_SCHEMA', n.path, `${n.path} ${n.text} has host bits set; did you mean ${formatCidr(net)}?`);
    }
    parsed.push({ ...n, net });
    if (n.path === 'k3s.serviceCidr' && net.size <= DNS_INDEX) {
      add('INVENTORY_SCHEMA', n.path, `${n.path} ${n.text} is too small: k3s gives cluster DNS the network's address ${DNS_INDEX}, so it must be a /28 or larger`);
    }
  }
  for (let i = 0; i < parsed.length; i++) {
    for (let j = i + 1; j < parsed.length; j++) {
      const [a, b] = [parsed[i], parsed[j]];
      if (cidrsOverlap(a.net, b.net)) {
        add('CIDR_OVERLAP', b.path, `${b.path} ${b.text} overlaps ${a.path} ${a.text}`);
      }
    }
  }
}

function checkWaivers(inv: Inventory, add: Add): void {
  const seen = new Set<string>();
  inv.waivers.forEach((w, i) => {
    const path = `waivers[${i}]`;
    if (!isWaivable(w.cause)) {
      add('WAIVER_INVALID', `${path}.cause`, `${w.cause} cannot be waived; only ${WAIVABLE_CAUSES.join(', ')} can`);
    } else if (seen.has(w.cause)) {
      add('WAIVER_INVALID', `${path}.cause`, `${w.cause} is waived twice`);
    }
    seen.add(w.cause);
    const why = placeholderReason(w.reason);
    if (why) add('WAIVER_INVALID', `${path}.reason`, `the waiver of ${w.cause} needs a reason; its reason ${why}`);
  });
}

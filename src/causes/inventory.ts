import { defineCauses } from './define.ts';

// Contracts of the inventory file, checked before any connection (src/inventory/contracts.ts),
// and the files it names, checked when a run starts (src/inventory/artifacts.ts).
export const inventoryCauses = defineCauses({
  ADDRESS_RESERVED: {
    title: 'An address is the network or broadcast address of the node network',
    meaning:
      'The first and last addresses of network.nodeCidr are not host addresses: a VIP, a Gateway address or a node there is unreachable or answers everyone.',
    remedy: 'Pick a host address inside network.nodeCidr for the path named (not its first or last address).',
  },
  LB_POOL_INVALID: {
    title: 'The LoadBalancer pool can hand out addresses it must not',
    meaning:
      'network.lbPool is the range Cilium gives LoadBalancer Services and announces on the nodes LAN: it must lie inside network.nodeCidr and hold no node address and neither the network nor the broadcast address.',
    remedy: 'Move network.lbPool.start and stop to a free range of network.nodeCidr that no node uses.',
  },
  INVENTORY_SCHEMA: {
    title: 'The inventory does not match the schema',
    meaning: 'A key is unknown, a value has the wrong type, or a required field is missing.',
    remedy:
      'Fix the key or value at the path named (a file that cannot be read or parsed names no path: fix what its message names, the YAML line or the file itself); inventory/schema.json describes every field (editors can validate with it).',
  },
  ENVIRONMENT_MISMATCH: {
    title: "The inventory's environment is not its file name",
    meaning:
      '`environment` must equal the base name of the file (inventory/prod.yaml says `environment: prod`), so a copied file cannot run against the wrong cluster.',
    remedy: 'Rename the file or fix `environment` so that both say the same name.',
  },
  NAME_INVALID: {
    title: 'A name is not an RFC 1123 label',
    meaning:
      'Node names and the environment become Kubernetes node names and file names: lower-case letters, digits and "-", at most 63 characters, starting and ending with a letter or digit.',
    remedy: 'Rename the node (or environment) at the path named, e.g. `k3s-prod-1`.',
  },
  FOUNDER_NOT_UNIQUE: {
    title: 'Not exactly one server is the founder',
    meaning:
      'The founder initialises the cluster and every other server joins it; with none or several, a cold build cannot know which server starts the cluster.',
    remedy: 'Mark exactly one server `founder: true`.',
  },
  SERVER_COUNT_EVEN: {
    title: 'An even number of servers',
    meaning: 'etcd needs a majority: 2 servers tolerate no failure (like 1), 4 tolerate one (like 3). An even count adds risk, not availability.',
    remedy:
      'Use an odd number of servers (3 for HA; 1 is allowed but is not HA); move the extra machine to `agents`. To run with an even count knowingly (e.g. between two removals), give --allow-even.',
  },
  DUPLICATE_NAME: {
    title: 'Two nodes have the same name',
    meaning: 'Node names must be unique across servers and agents; Kubernetes would treat them as one node.',
    remedy: 'Give each node its own name.',
  },
  DUPLICATE_ADDRESS: {
    title: 'Two nodes have the same address',
    meaning: 'Each server and agent must have its own address; the tool would configure one machine twice.',
    remedy: 'Fix the address at the path named.',
  },
  VIP_IS_NODE_ADDRESS: {
    title: 'The control-plane VIP is a node address',
    meaning: 'The VIP must be a free address that kube-vip announces; if it is a node\'s own address, the "HA" endpoint dies with that node.',
    remedy: 'Pick an unused address in nodeCidr for `controlPlane.vip`.',
  },
  VIP_OUTSIDE_NODE_CIDR: {
    title: 'An address is outside the node network',
    meaning: 'The VIP and every server/agent address must lie in `network.nodeCidr`: kube-vip announces the VIP by ARP on that LAN only.',
    remedy: 'Fix the address, or `network.nodeCidr` if the LAN is really larger.',
  },
  VIP_IN_LB_POOL: {
    title: 'The control-plane VIP lies in the load-balancer pool',
    meaning: 'Cilium hands out pool addresses to Services; the control-plane VIP would be given away twice.',
    remedy: 'Move the VIP out of `network.lbPool`, or shrink the pool.',
  },
  GATEWAY_VIP_OUTSIDE_POOL: {
    title: 'The gateway VIP is not in the load-balancer pool',
    meaning: "The Gateway's address is allocated from `network.lbPool`; an address outside it is never announced.",
    remedy: 'Pick `network.gatewayVip` inside the pool (or widen the pool).',
  },
  CIDR_OVERLAP: {
    title: 'Two networks overlap',
    meaning:
      'The pod network (clusterCidr), the service network (serviceCidr) and the node LAN (nodeCidr) must be disjoint, or traffic is routed to the wrong place.',
    remedy: 'Change one of the two networks named.',
  },
  PLACEHOLDER_VALUE: {
    title: 'A value is still a placeholder',
    meaning:
      'A value reads `TBD…`, contains `${…}`, or is empty. An invalid value that fails loudly is safer than a plausible one that comes up on the wrong network.',
    remedy: 'Decide the value and write it in at the path named.',
  },
  WAIVER_INVALID: {
    title: 'A waiver is not allowed or has no reason',
    meaning: 'Only some environment gates may be waived (see `waivers` in inventory/schema.json), and each waiver needs a real reason.',
    remedy: 'Remove the waiver, or name a waivable cause and write why the gate cannot be met here.',
  },
  INVENTORY_SECTION_MISSING: {
    title: 'A phase needs an inventory section the file does not have',
    meaning:
      'The gitops, cilium and flux sections are optional for a run that ends before the phases that use them; the cilium phase reads its values from the GitOps HelmRelease (gitops, cilium) and the flux phase installs Flux and syncs the repository (gitops, flux). The stop names the missing sections and shows an example of each. Nothing was changed.',
    remedy: 'Add the named sections to the inventory (inventory/prod.yaml shows each), or end the run before that phase with --until.',
  },
  ARTIFACT_MISSING: {
    title: 'A file the inventory names is missing',
    meaning:
      'A file or folder named by the inventory (k3s artifacts, Cilium chart, Flux install, deploy key, GitOps checkout) does not exist on this machine. Nothing was contacted.',
    remedy:
      "Put the file at the path named (relative paths are relative to the inventory file's folder) or fix the path. The k3s binary and images, the Cilium chart and the Flux install are downloaded and verified by `bootstrap artifacts <env>`.",
  },
  ARTIFACT_INVALID: {
    title: 'A file the inventory names is not what it should be',
    meaning:
      'A file named by the inventory is there but cannot be what its key says: the Cilium chart (cilium.chart) is not a gzip-compressed Helm chart (garbage bytes, a torn download, a plain tar, an HTML error page). Found while the run prepares, before any host is contacted.',
    remedy:
      'Download the file again (the chart: `bootstrap artifacts <env>` gets and verifies it after you remove the bad one; or `helm pull cilium/cilium --version X`) and check it (`tar -tzf FILE` lists cilium/Chart.yaml), or fix the path.',
  },
});

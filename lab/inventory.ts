// The inventory `lab up` writes for `bootstrap lab` (inventory format v1). Generated and git-ignored,
// so absolute paths to the lab's key and known_hosts are fine here.
import { stringify } from 'yaml';
import type { CgroupLayout } from './cgroups.ts';
import { NET, OPS_USER, type HostPlan, type LabPaths } from './config.ts';
import { gitopsSections } from './gitops-sections.ts';
import { LAB_IMAGE_ARCHIVES } from './image-archives.ts';
import { DEFAULT_TWIN_RELEASE } from './twin/releases.ts';

/** The release the lab installs: the twin's default one, the artifacts folder's own `k3s`. */
export const K3S_VERSION = DEFAULT_TWIN_RELEASE.version;

/**
 * Not k3s's defaults (10.42.0.0/16, 10.43.0.0/16): every lab build runs on other pod and service networks,
 * so an address the engine or a twin took from the defaults instead of the inventory shows in every lab
 * test. Clear of the lab subnets 10.77.<n>.0/24.
 */
export const LAB_CLUSTER_CIDR = '10.44.0.0/16';
export const LAB_SERVICE_CIDR = '10.45.0.0/16';

function waiverReason(layout: CgroupLayout): string | undefined {
  if (layout === 'unified') return undefined;
  return layout === 'hybrid'
    ? "lab hosts share the lab machine's cgroups, a v1/v2 hybrid (v1 controllers, cgroup2 at /sys/fs/cgroup/unified without controllers); the lab cannot offer cgroup v2 alone"
    : "lab hosts share the lab machine's cgroups, which are v1 only; the lab cannot offer cgroup v2";
}

const yamlString = (s: string) => JSON.stringify(s);

/**
 * Every section a build of every phase needs: the GitOps repository `lab up` publishes to the lab's git
 * server, the Cilium chart and the Flux install in the artifacts folder, the deploy key and its known_hosts.
 * `bastion`: the bastion shape's jump host; the engine then reaches every host (and the API) through it.
 */
export function renderInventory(hosts: HostPlan[], p: LabPaths, layout: CgroupLayout, bastion?: HostPlan): string {
  const servers = hosts.filter((h) => h.role === 'server');
  const agents = hosts.filter((h) => h.role === 'agent');
  const line = (h: HostPlan, founder: boolean) => `  - { name: ${h.name}, address: ${h.address}${founder ? ', founder: true' : ''} }`;
  const reason = waiverReason(layout);
  return [
    '# Written by `npm run lab -- up`; regenerated on every lab up. Not committed.',
    'environment: lab',
    `ssh: { user: ${OPS_USER}, identityFile: ${p.key}, knownHostsFile: ${p.knownHosts}${bastion ? `, bastion: ${OPS_USER}@${bastion.address}:22` : ''} }`,
    `k3s:`,
    `  version: ${K3S_VERSION}`,
    `  artifacts: ${p.artifacts}`,
    `  clusterCidr: ${LAB_CLUSTER_CIDR}`,
    `  serviceCidr: ${LAB_SERVICE_CIDR}`,
    '  # the add-on images (the lab hosts reach no registry), written by `lab up` (lab/image-archives.ts)',
    '  imageArchives:',
    ...LAB_IMAGE_ARCHIVES.map((a) => `    - { file: ${p.artifacts}/${a} }`),
    `controlPlane: { vip: ${NET.vip}, interface: auto }`,
    `network: { nodeCidr: ${NET.subnet} }`,
    'servers:',
    ...servers.map((h, i) => line(h, i === 0)),
    agents.length ? 'agents:' : 'agents: []',
    ...agents.map((h) => line(h, false)),
    ...(reason ? ['waivers:', `  - { cause: CGROUP_V2_MISSING, reason: ${yamlString(reason)} }`] : []),
    "# the GitOps fixture repository as `lab up` published it to the lab's git server (lab/gitops-inventory.ts)",
    stringify(gitopsSections(p, p.gitopsCheckout)),
  ].join('\n');
}

// Values computed from a valid inventory, so that nothing is written twice. The split that the
// operator's Ansible once conflated: servers JOIN the founder (on a cold build no VIP exists yet),
// while Cilium and agents DIAL the VIP (the HA address). Both are derived here, from one place each.
import { isAbsolute, join, resolve } from 'node:path';
import { serviceAddresses } from './service-addresses.ts';
import type { Derived, Inventory, ResolvedPaths } from './types.ts';

export interface DeriveOptions {
  /** The folder of the inventory file: relative paths resolve against it. */
  inventoryDir: string;
  /** The operator's home, for `~`. */
  home: string;
}

/** Requires an inventory that passed checkContracts (exactly one founder). */
export function deriveInventory(inv: Inventory, opts: DeriveOptions): Derived {
  const founder = inv.servers.find((s) => s.founder === true);
  if (!founder) throw new Error('deriveInventory: no founder (the inventory was not validated)');
  const port = inv.controlPlane.port;
  return {
    environment: inv.environment,
    founder,
    joiners: inv.servers.filter((s) => s !== founder),
    servers: inv.servers,
    agents: inv.agents,
    apiEndpoint: { host: inv.controlPlane.vip, port },
    apiUrl: `https://${inv.controlPlane.vip}:${port}`,
    joinTarget: `https://${founder.address}:${port}`,
    // The SANs every server shares: the VIP and loopback. Each server's own address is added where its config
    // is rendered (phases/k3s/render.ts), never the others': a server's config must not change when servers
    // are added or removed (a restart of every server for nothing).
    tlsSans: [inv.controlPlane.vip, '127.0.0.1'],
    serviceAddresses: serviceAddresses(inv.k3s.serviceCidr),
    bastion: inv.ssh.bastion === undefined ? undefined : parseBastion(inv.ssh.bastion),
    paths: resolvePaths(inv, opts),
    waivers: inv.waivers,
    highlyAvailable: inv.servers.length >= 3,
  };
}

/** `[user@]host[:port]` → parts; what is not written stays undefined (an ssh config alias may supply it). */
export function parseBastion(text: string): { user?: string; host: string; port?: number } {
  const m = /^(?:([^@]+)@)?([^:]+)(?::(\d+))?$/.exec(text);
  if (!m) return { host: text };
  return {
    ...(m[1] !== undefined && { user: m[1] }),
    host: m[2],
    ...(m[3] !== undefined && { port: Number(m[3]) }),
  };
}

/** `~` or `~/x` → the home folder; an absolute path stays; anything else is relative to `base`. */
export function resolveFrom(base: string, path: string, home: string): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return join(home, path.slice(2));
  return isAbsolute(path) ? resolve(path) : resolve(base, path);
}

function resolvePaths(inv: Inventory, { inventoryDir, home }: DeriveOptions): ResolvedPaths {
  const dir = resolve(inventoryDir);
  const at = (p: string) => resolveFrom(dir, p, home);
  const k3sArtifacts = at(inv.k3s.artifacts);
  const gitopsCheckout = inv.gitops ? at(inv.gitops.checkout) : undefined;
  return {
    inventoryDir: dir,
    k3sArtifacts,
    k3sBinary: join(k3sArtifacts, 'k3s'),
    sshKnownHostsFile: at(inv.ssh.knownHostsFile),
    imageArchives: (inv.k3s.imageArchives ?? []).map((a) => ({ path: at(a.file), ...(a.sha256 ? { sha256: a.sha256 } : {}) })),
    sshIdentityFile: inv.ssh.identityFile === undefined ? undefined : at(inv.ssh.identityFile),
    gitopsCheckout,
    ciliumChart: inv.cilium ? at(inv.cilium.chart) : undefined,
    // NOTE: the HelmRelease is a file of the GitOps repository, so it resolves against the checkout,
    // not the inventory folder (contracts.ts refuses cilium without gitops).
    ciliumHelmRelease:
      inv.cilium && gitopsCheckout ? resolveFrom(gitopsCheckout, inv.cilium.helmRelease, home) : undefined,
    fluxInstall: inv.flux ? at(inv.flux.install) : undefined,
    fluxDeployKeyFile: inv.flux ? at(inv.flux.deployKeyFile) : undefined,
    fluxKnownHostsFile: inv.flux ? at(inv.flux.knownHostsFile) : undefined,
  };
}

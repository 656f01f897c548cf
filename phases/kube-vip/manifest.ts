// From what the read-only probe saw on every server to the one kube-vip manifest (or the stops).
// Pure; the phase runs VIP_NIC_PROBES on each server (check mode too) and passes the outputs here.
import type { CauseError } from '../../src/errors.ts';
import type { LoadedInventory } from '../../src/inventory/load.ts';
import type { ProbeCommand } from '../../src/engine/phase.ts';
import { linkNames } from '../../src/util/ip-link.ts';
import { chooseVipInterface, nicForVip } from './nic.ts';
import { renderKubeVip } from './render.ts';

export const VIP_NIC_PROBES: Record<'addrs' | 'links', ProbeCommand> = {
  addrs: { command: 'ip -o -4 addr show' },
  links: { command: 'ip -o link show' },
};

export interface ServerNicProbe {
  name: string;
  address: string;
  /** stdout of `ip -o -4 addr show` */
  addrs: string;
  /** stdout of `ip -o link show` */
  links: string;
}

export interface KubeVipManifest {
  /** The file content for every server's auto-deploy folder, when no stop forbids it. */
  content?: string;
  interfaceName?: string;
  stops: CauseError[];
}

export function kubeVipManifest(inv: LoadedInventory, servers: ServerNicProbe[], opts: { image?: string } = {}): KubeVipManifest {
  const { controlPlane, network } = inv.inventory;
  const choice = chooseVipInterface(
    controlPlane.interface,
    servers.map((s) => ({ host: s.name, nic: nicForVip(s.addrs, s.address, network.nodeCidr), links: linkNames(s.links) })),
  );
  if (choice.interfaceName === undefined) return { stops: choice.stops };
  const content = renderKubeVip({
    vip: inv.derived.apiEndpoint.host,
    port: inv.derived.apiEndpoint.port,
    interfaceName: choice.interfaceName,
    image: opts.image,
  });
  return { content, interfaceName: choice.interfaceName, stops: [] };
}

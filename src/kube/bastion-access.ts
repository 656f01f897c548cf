// How the operator reaches the API when the nodes sit behind a bastion. The fetched kubeconfig dials the
// VIP, which only hosts on the node LAN reach; from the operator's machine the way in is a local port
// forwarded through the bastion (the same jump the engine's SSH connections take). The API's serving
// certificate names 127.0.0.1 (one of the TLS SANs the engine gives k3s), so TLS still verifies against the
// cluster CA when kubectl dials the local end. Pure text: no secret goes into it (the kubeconfig's client
// key stays in the file, the command line carries only addresses and file names).
import { join } from 'node:path';
import type { Derived, Inventory } from '../inventory/types.ts';
import { shq } from '../util/shell.ts';

/** The local port the tunnel listens on: the API's own, so the printed URL reads as usual. */
const TUNNEL_LOCAL_PORT = 6443;

export interface BastionAccess {
  /** `ssh -N -L 6443:<vip>:6443 … <user>@<bastion>`: keeps the tunnel open until Ctrl-C. */
  tunnel: string;
  /** The kubectl command that uses the fetched kubeconfig through the tunnel. */
  kubectl: string;
  /** The lines written at the top of the kubeconfig (YAML comments). */
  comment: string[];
}

export interface AccessInput {
  inventory: Pick<Inventory, 'ssh'>;
  derived: Pick<Derived, 'bastion' | 'apiEndpoint' | 'paths'>;
  /** The kubeconfig's path on the operator's machine. */
  kubeconfig: string;
  home: string;
}

/** Undefined without a bastion: then the operator's machine is expected to route to the VIP. */
export function bastionAccess({ inventory, derived, kubeconfig, home }: AccessInput): BastionAccess | undefined {
  const jump = derived.bastion;
  if (!jump) return undefined;
  const { host: vip, port } = derived.apiEndpoint;
  // The bastion as the engine connects to it: its own user and port when written, else the inventory's
  // user (ssh's own defaults, or ~/.ssh/config when the bastion is an alias, fill the port).
  const args = ['ssh', '-N', '-L', `${TUNNEL_LOCAL_PORT}:${vip}:${port}`];
  if (derived.paths.sshIdentityFile) args.push('-i', shq(derived.paths.sshIdentityFile));
  if (derived.paths.sshKnownHostsFile !== join(home, '.ssh', 'known_hosts')) args.push('-o', shq(`UserKnownHostsFile=${derived.paths.sshKnownHostsFile}`));
  if (jump.port !== undefined) args.push('-p', String(jump.port));
  args.push(shq(`${jump.user ?? inventory.ssh.user}@${jump.host}`));
  const tunnel = args.join(' ');
  const kubectl = `kubectl --kubeconfig ${shq(kubeconfig)} --server https://127.0.0.1:${TUNNEL_LOCAL_PORT} get nodes`;
  const comment = [
    `# This kubeconfig dials the control-plane VIP https://${vip}:${port}, which is on the node LAN behind the`,
    `# bastion ${jump.host}. From the operator's machine, open a tunnel through the bastion first:`,
    `#   ${tunnel}`,
    `# and then, in another terminal, dial its local end (127.0.0.1 is a SAN of the API's certificate):`,
    `#   ${kubectl}`,
  ];
  return { tunnel, kubectl, comment };
}

// What the engine writes for k3s on a server: config.yaml, the systemd unit and its env file.
// Pure: rendered from the inventory's derived values, never typed twice.
import { stringify } from 'yaml';
import type { LoadedInventory } from '../../src/inventory/load.ts';
import type { HostRef } from '../../src/engine/phase.ts';
import type { JoinKey } from './join-mode.ts';
import { K3S_BIN, SERVER_ROLE, type K3sRole } from '../../src/k3s/paths.ts';

/**
 * config.yaml for a server. The founder initialises the cluster; a joiner dials the FOUNDER (on a
 * cold build no VIP answers yet: the founder-versus-VIP split). Flags are those Cilium needs to
 * replace flannel and kube-proxy; CIDRs are critical args that must match on every server.
 */
export function serverConfig(inv: LoadedInventory, host: HostRef, token: string, join?: JoinKey): string {
  const { k3s } = inv.inventory;
  const config: Record<string, unknown> = {
    // `join` is how the server already joined, once it holds a datastore (join-mode.ts).
    ...(join ?? (host.founder ? { 'cluster-init': true } : { server: inv.derived.joinTarget })),
    token,
    'node-name': host.name,
    'node-ip': host.address,
    // Its own address, the VIP and loopback; k3s adds the node IP and 127.0.0.1 itself too (k3s-io/k3s
    // v1.33.5+k3s1 pkg/cli/server/server.go: SANs += "127.0.0.1", node name, node IPs). The other servers'
    // addresses are left out so that adding or removing a server changes no other server's config.
    'tls-san': [...new Set([host.address, ...inv.derived.tlsSans])],
    'cluster-cidr': k3s.clusterCidr,
    'service-cidr': k3s.serviceCidr,
    'flannel-backend': 'none',
    'disable-network-policy': true,
    'disable-kube-proxy': true,
    disable: ['traefik', 'servicelb'],
    'write-kubeconfig-mode': '0600',
  };
  return `# Written by bootstrap for ${inv.inventory.environment}; edits are replaced on the next run.\n${stringify(config)}`;
}

/** config.yaml for an agent: it dials the control-plane VIP (agents join after the VIP answers). */
function agentConfig(inv: LoadedInventory, host: HostRef, token: string): string {
  const config = { server: inv.derived.apiUrl, token, 'node-name': host.name, 'node-ip': host.address };
  return `# Written by bootstrap for ${inv.inventory.environment}; edits are replaced on the next run.\n${stringify(config)}`;
}

export function configFor(inv: LoadedInventory, host: HostRef, token: string, join?: JoinKey): string {
  return host.role === 'agent' ? agentConfig(inv, host, token) : serverConfig(inv, host, token, join);
}

/**
 * The unit, with the settings of k3s's own install.sh unit (Type=notify, restart every 5 s, …) but one: install.sh's
 * unit also reads /etc/default/%N and /etc/sysconfig/%N, which bootstrap leaves out so that nothing but its own
 * files configures k3s (what could still, a drop-in, is checked: dropins.ts). Any change to the rendered text restarts
 * k3s on every node (the rolling phases).
 */
export function serverUnit(r: K3sRole = SERVER_ROLE): string {
  return `# Written by bootstrap. The same settings as the unit k3s's installer writes.
[Unit]
Description=Lightweight Kubernetes
Documentation=https://k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
# NOTE: readiness may be signalled by a helper process of k3s, so any process of the unit may notify.
NotifyAccess=all
EnvironmentFile=-${r.envFile}
KillMode=process
Delegate=yes
User=root
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=${K3S_BIN} ${r.subcommand}
`;
}

/** The env file (0600, as k3s's installer makes it). Settings live in config.yaml; this file stays for operators' overrides. */
export function serverEnv(r: K3sRole = SERVER_ROLE): string {
  return `# Written by bootstrap (mode 0600). Environment for ${r.unit}; configuration is in /etc/rancher/k3s/config.yaml.\n`;
}

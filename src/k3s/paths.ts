// Where k3s keeps its files on a host, and the systemd units it runs as (as k3s's installer names them).
// One place for every phase, mode and backup that reads or writes them.

import type { ProbeCommand } from '../engine/probe-types.ts';

export const K3S_BIN = '/usr/local/bin/k3s';

/**
 * The host's machine-id (the kubelet reports it as its Node's nodeInfo.machineID), read as a probe by
 * node-baseline (cloned machines) and by the agents' gate: the one command, so the run's probe memo answers the
 * second from the first.
 */
export const MACHINE_ID_PROBE: ProbeCommand = { command: 'cat /etc/machine-id' };
export const CONFIG_FILE = '/etc/rancher/k3s/config.yaml';

/** Servers run `k3s server` as k3s.service; agents `k3s agent` as k3s-agent.service (as k3s's installer names them). */
export interface K3sRole {
  subcommand: 'server' | 'agent';
  unit: string;
  unitFile: string;
  envFile: string;
}

const role = (subcommand: 'server' | 'agent', unit: string): K3sRole => ({
  subcommand,
  unit,
  unitFile: `/etc/systemd/system/${unit}`,
  envFile: `/etc/systemd/system/${unit}.env`,
});
export const SERVER_ROLE = role('server', 'k3s.service');
const AGENT_ROLE = role('agent', 'k3s-agent.service');
export const roleOf = (host: { role: 'server' | 'agent' }): K3sRole => (host.role === 'agent' ? AGENT_ROLE : SERVER_ROLE);

export const DATA_DIR = '/var/lib/rancher/k3s';
export const DB_DIR = `${DATA_DIR}/server/db`;
export const TOKEN_FILE = `${DATA_DIR}/server/token`;
export const KUBECONFIG_FILE = '/etc/rancher/k3s/k3s.yaml';
export const IMAGES_DIR = `${DATA_DIR}/agent/images`;
export const MANIFESTS_DIR = `${DATA_DIR}/server/manifests`;
/** The CA that signs the API server's serving certificate (what a client checks the VIP's certificate against). */
export const SERVER_CA = `${DATA_DIR}/server/tls/server-ca.crt`;

// The engine's Kubernetes client: the admin kubeconfig from the state folder, dialling either a tunnel's
// local port (default) or the address in the file (direct).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

export function kubeConfigFor(stateDir: string, opts: { tunnelPort?: number }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(readFileSync(join(stateDir, 'kubeconfig'), 'utf8'));
  if (opts.tunnelPort !== undefined) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig names no current cluster');
    kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: `https://127.0.0.1:${opts.tunnelPort}` } : c));
  }
  return kc;
}
